// image/store.hpp — the content-addressed image store in STATE_DIR/images.
//
//   images/lock                         flock: one import or removal at a time
//   images/use/<name>                   flock: shared by each run on the image, for as long as it runs
//   images/layers/sha256/<hex>/         one extracted layer (overlayfs form), named by its digest
//   images/images/<name>.json           an image: its layers (bottom first) and its config
//   images/tmp/                         imports in progress; emptied by the next import
//
// A layer is extracted into tmp/, its digest checked against the manifest
// while it is read, synced and renamed into layers/ only when all is well, so
// a layer directory that exists is complete. A layer any image already has
// is not read again. An image's JSON is written to a temp file, fsynced and
// renamed. Removing an image removes the layers no other image names; an
// image a run holds (hold()) is not removed.
// Everything below images/ is root's; the box never sees the store's paths.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.hpp"
#include "image/extract.hpp"
#include "image/manifest.hpp"

namespace corral::image {

struct StoredImage {
    std::string name;
    std::string source;                // the path it was imported from
    std::string format;                // format_name(SourceKind)
    std::vector<std::string> layers;   // sha256:<hex>, bottom first
    ImageConfig config;                // env, working dir, entrypoint, cmd, ignored settings
    std::uint64_t size_bytes = 0;      // of its layers' sources as read
    std::string imported_at;           // RFC 3339, UTC
};

// [A-Za-z0-9][A-Za-z0-9._-]{0,127}: a file name in images/ and the NAME of
// --rootfs image:NAME (the rule is names::is_image_name, names/rootfs_source.hpp).
bool is_valid_image_name(std::string_view name);

// One event of an import, for a progress display.
struct ImportProgress {
    std::size_t layer = 0;       // 1-based
    std::size_t layers = 0;
    std::string digest;          // "" while unknown (a rootfs tarball)
    std::uint64_t bytes = 0;     // read so far of this layer
    std::uint64_t total = 0;     // its size, 0 if unknown
    bool done = false;           // this layer is finished
    bool reused = false;         // already in the store: not read again
};
using ImportObserver = std::function<void(const ImportProgress&)>;

struct ImportOptions {
    bool replace = false;      // --replace: the default name may replace an image of that name
    ExpansionLimits limits;    // --max-expanded, --max-ratio
};

struct ImportResult {
    StoredImage image;
    std::size_t layers_added = 0;
    std::size_t layers_reused = 0;
    std::vector<std::string> notes;   // what the extractor skipped, what the config says is ignored
};

// remove() of an image a run holds: nothing was removed.
class ImageInUse : public ImageError {
public:
    using ImageError::ImageError;
};

// A run's hold on an image, from hold() until it is destroyed: a shared
// flock on images/use/<name> (`image rm NAME` is refused while it is held)
// and one on images/use-layers/<hex> for each of its layers (no removal of a
// layer, by `image rm` of another image or by the sweep after a re-import
// under the same name, takes a layer a running box stands on). The lock
// files' fds are close-on-exec, and the sandbox's init closes what it
// inherited, so the box never has them.
class ImageHold {
public:
    explicit ImageHold(std::vector<Fd> locks) : locks_(std::move(locks)) {}

private:
    std::vector<Fd> locks_;
};

struct RemoveResult {
    std::vector<std::string> layers_removed;  // digests
    std::vector<std::string> layers_kept;     // still used by another image, or by a running box
};

class ImageStore {
public:
    // The store of the state dir `state_dir` (real path, root-only).
    explicit ImageStore(std::string state_dir);

    const std::string& root() const { return root_; }
    std::string layer_dir(const std::string& digest) const;

    // Imports SOURCE (image/source.hpp) as `name` (default: the source's own
    // name for it, else its file name). An image of that name is replaced
    // only when the name was given or options.replace says so: an archive
    // that tags itself with an existing image's name is refused otherwise.
    // Throws UsageError / ImageError / SysError; nothing of a failed import is left.
    ImportResult import(const std::string& source, const std::optional<std::string>& name,
                        const ImportObserver& observer = {}, const ImportOptions& options = {});

    std::vector<StoredImage> list() const;
    // Throws UsageError "image NAME: not in the store (STORE); `corral image ls` lists ..."
    StoredImage get(const std::string& name) const;
    // Holds image `name` for a run: get() it after, so that a removal that
    // ran first is seen, and one that comes later is refused. Waits while a
    // removal of it is under way. Throws what get() throws for a missing image.
    ImageHold hold(const std::string& name) const;
    // Throws ImageInUse when a run holds the image (checked under the store's
    // lock, so no run can take a hold between the check and the removal).
    RemoveResult remove(const std::string& name);

private:
    std::string root_;
};

// The image as JSON (images/<name>.json and `corral image inspect`), and back.
std::string to_json_text(const StoredImage& image);
StoredImage from_json_text(const std::string& text, const std::string& where);

}  // namespace corral::image
