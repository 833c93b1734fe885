// names/rootfs_source.hpp — the rootfs a box is built on, as a type: the
// host's (`host`), a directory holding an image's root (DIR), or an image of
// the store (`image:NAME`). Parsed once where the text enters corral (the
// command line's --rootfs, org.toml and worker.toml's `rootfs`), carried
// typed through the request and the plan, printed back in one form (run.json,
// `corral validate`, the messages that name it). Pure but for the caller's
// directory a relative DIR is made absolute against.
#pragma once

#include <string>
#include <string_view>
#include <variant>

namespace corral::names {

// `host`: the host's /usr, /bin, /sbin, /lib* and a minimal /etc, read-only.
struct HostRootfs {
    bool operator==(const HostRootfs&) const = default;
};

// DIR: an image's root directory, the overlay's lower layer.
struct DirRootfs {
    std::string path;   // absolute and lexically normalised (the parse made it so)
    // The text as given (a relative DIR before it was made absolute): what
    // the messages about the text itself quote (a registry reference given
    // as a DIR) and what run.json records for a run refused before its plan.
    std::string given;
    bool operator==(const DirRootfs&) const = default;
};

// image:NAME: an image of `corral image import`, its layers the overlay's.
struct ImageRootfs {
    std::string name;   // is_image_name(name)
    bool operator==(const ImageRootfs&) const = default;
};

using RootfsSource = std::variant<HostRootfs, DirRootfs, ImageRootfs>;

// [A-Za-z0-9][A-Za-z0-9._-]{0,127}: the NAME of image:NAME and the image's
// file name in the store (image/store.hpp).
bool is_image_name(std::string_view name);

// What can be wrong with the text itself (whether DIR exists is the edge's
// check: a config file is checked when read, --rootfs when the run starts).
// A kind, not a sentence: each edge words it its own way (a command-line
// error, a config diagnostic's found and expected).
enum class RootfsProblem {
    empty,            // ""
    bad_image_name,   // image:NAME with NAME not is_image_name (also "image:")
};

// The source, or what is wrong with the text (as canonical_route_path's
// variant of the path and the refusal).
using RootfsParse = std::variant<RootfsSource, RootfsProblem>;

// "host" | "image:NAME" | DIR; a relative DIR is taken relative to
// `relative_to` (the caller's directory for --rootfs, the organisation
// directory for a config file), made absolute and lexically normalised.
RootfsParse parse_rootfs_source(std::string_view text, const std::string& relative_to);

// "host", "image:NAME", or DIR's absolute path: the one printed form.
std::string to_string(const RootfsSource& source);

// to_string, but DIR as given (DirRootfs::given).
std::string text_as_given(const RootfsSource& source);

}  // namespace corral::names
