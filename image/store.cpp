// image/store.cpp — importing into, listing and removing from the layer store.
#include "image/store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/atomic_file.hpp"
#include "base/fd.hpp"
#include "base/remove_tree.hpp"
#include "base/sha256.hpp"
#include "base/sys_error.hpp"
#include "image/extract.hpp"
#include "image/source.hpp"
#include "names/rootfs_source.hpp"
#include "rootfs/host_paths.hpp"
#include "rootfs/mount_plan.hpp"

namespace corral::image {

using nlohmann::json;

namespace {

constexpr std::uint64_t kMaxMetadataBytes = 16u << 20;  // a manifest, index or config

// A file of the image, reached inside the image's own directory: links in it
// (old `docker save` links shared layers) resolve with that directory as "/".
// Opened non-blocking: a FIFO or device put where a layer or manifest belongs
// is refused by its type at once, never waited on (the store's lock is held).
Fd open_in_image(int base_fd, const std::string& rel, const std::string& what) {
    struct open_how how {};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    int fd;
    do {
        fd = static_cast<int>(syscall(SYS_openat2, base_fd, rel.c_str(), &how, sizeof how));
    } while (fd < 0 && (errno == EINTR || errno == EAGAIN));
    if (fd < 0) {
        if (errno == ENOENT) throw ImageError(what + ": " + rel + " is missing from the image");
        throw SysError("openat2", what + ": " + rel, errno);
    }
    Fd out(fd);
    struct stat st {};
    check_sys(fstat(fd, &st), "fstat", rel);
    if (!S_ISREG(st.st_mode)) throw ImageError(what + ": " + rel + " is not a regular file");
    return out;
}

std::uint64_t file_size(int fd) {
    struct stat st {};
    check_sys(fstat(fd, &st), "fstat");
    return static_cast<std::uint64_t>(st.st_size);
}

std::string read_small(int base_fd, const std::string& rel, const std::string& what) {
    Fd fd = open_in_image(base_fd, rel, what);
    if (file_size(fd.get()) > kMaxMetadataBytes)
        throw ImageError(what + ": " + rel + " is larger than " + std::to_string(kMaxMetadataBytes >> 20) + " MiB");
    return read_to_end(fd.get(), rel);
}

// A blob named by digest: read whole, its bytes checked against the digest.
std::string read_blob(int base_fd, const Descriptor& d, const std::string& what) {
    std::string text = read_small(base_fd, "blobs/sha256/" + digest_hex(d.digest), what);
    std::string got = "sha256:" + sha256_hex(text);
    if (got != d.digest) throw ImageError(what + ": digest mismatch: the manifest says " + d.digest + ", the bytes are " + got);
    return text;
}

std::string now_rfc3339() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string sanitize_name(std::string s) {
    for (char& c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            c = '-';
    while (!s.empty() && !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= '0' && s[0] <= '9')))
        s.erase(0, 1);
    if (s.size() > 128) s.resize(128);
    return s;
}

std::string name_from_path(const std::string& path) {
    std::string base = std::filesystem::path(path).filename().string();
    for (std::string_view ext : {".tar.gz", ".tar.xz", ".tar.zst", ".tar.bz2", ".tgz", ".tar", ".oci"})
        if (base.size() > ext.size() && base.compare(base.size() - ext.size(), ext.size(), ext) == 0) {
            base.resize(base.size() - ext.size());
            break;
        }
    return sanitize_name(base);
}

std::vector<std::string> entries_of(const std::string& dir) {
    std::vector<std::string> out;
    std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
    if (!d) {
        if (errno == ENOENT) return out;
        throw SysError("opendir", dir, errno);
    }
    while (dirent* e = readdir(d.get()))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) out.emplace_back(e->d_name);
    std::sort(out.begin(), out.end());
    return out;
}

// The store's lock, held for one import or removal. Waited for at most
// kStoreLockWait: an import stuck elsewhere must not hang every later one.
constexpr std::chrono::seconds kStoreLockWait{120};

class StoreLock {
public:
    explicit StoreLock(const std::string& root) : fd_(open((root + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) {
        if (!fd_.valid()) throw SysError("open", root + "/lock", errno);
        const auto deadline = std::chrono::steady_clock::now() + kStoreLockWait;
        while (flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
            if (errno == EINTR) continue;
            if (errno != EWOULDBLOCK) throw SysError("flock(LOCK_EX)", root + "/lock", errno);
            if (std::chrono::steady_clock::now() >= deadline)
                throw UsageError("the image store " + root + " is busy: another import or removal has held " + root +
                                 "/lock for " + std::to_string(kStoreLockWait.count()) +
                                 " s; try again once it has ended (`ps -C corral` shows it)");
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }

private:
    Fd fd_;
};

// A directory below tmp/ removed when the import ends, however it ends.
class WorkDir {
public:
    explicit WorkDir(const std::string& tmp_root) : parent_(open(tmp_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
        if (!parent_.valid()) throw SysError("open", tmp_root, errno);
        std::string templ = tmp_root + "/import-XXXXXX";
        if (mkdtemp(templ.data()) == nullptr) throw SysError("mkdtemp", templ, errno);
        path_ = templ;
        name_ = std::filesystem::path(path_).filename().string();
    }
    ~WorkDir() {
        try {
            remove_tree_at(parent_.get(), name_);
        } catch (...) {
            // The next import empties tmp/ again.
        }
    }
    const std::string& path() const { return path_; }

private:
    Fd parent_;
    std::string path_, name_;
};

}  // namespace

bool is_valid_image_name(std::string_view n) { return names::is_image_name(n); }

std::string to_json_text(const StoredImage& im) {
    json j{{"name", im.name},
           {"source", im.source},
           {"format", im.format},
           {"layers", im.layers},
           {"size_bytes", im.size_bytes},
           {"imported_at", im.imported_at},
           {"config",
            {{"Env", im.config.env},
             {"WorkingDir", im.config.working_dir},
             {"Entrypoint", im.config.entrypoint},
             {"Cmd", im.config.cmd}}},
           {"ignored", im.config.ignored}};
    return j.dump(2) + "\n";
}

StoredImage from_json_text(const std::string& text, const std::string& where) {
    try {
        json j = json::parse(text);
        StoredImage im;
        im.name = j.at("name").get<std::string>();
        im.source = j.value("source", "");
        im.format = j.value("format", "");
        im.layers = j.at("layers").get<std::vector<std::string>>();
        im.size_bytes = j.value("size_bytes", std::uint64_t{0});
        im.imported_at = j.value("imported_at", "");
        const json& c = j.at("config");
        im.config.env = c.value("Env", std::vector<std::string>{});
        im.config.working_dir = c.value("WorkingDir", "");
        im.config.entrypoint = c.value("Entrypoint", std::vector<std::string>{});
        im.config.cmd = c.value("Cmd", std::vector<std::string>{});
        im.config.ignored = j.value("ignored", std::vector<std::string>{});
        for (const auto& l : im.layers)
            if (!is_sha256_digest(l)) throw ImageError(where + ": layer \"" + l + "\" is not a sha256 digest");
        if (!is_valid_image_name(im.name)) throw ImageError(where + ": name \"" + im.name + "\" is not a valid image name");
        return im;
    } catch (const json::exception& e) {
        throw ImageError(where + ": not an image record (" + e.what() + ")");
    }
}

ImageStore::ImageStore(std::string state_dir) : root_(std::move(state_dir) + "/images") {}

std::string ImageStore::layer_dir(const std::string& digest) const {
    return root_ + "/layers/sha256/" + digest_hex(digest);
}

namespace {

// ROOT/SUBDIR/<name>, opened (made if missing) for flock.
Fd open_lock_file(const std::string& root, const char* subdir, const std::string& name) {
    const std::string dir = root + "/" + subdir;
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw SysError("mkdir", dir, errno);
    const std::string path = dir + "/" + name;
    Fd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) throw SysError("open", path, errno);
    return fd;
}

Fd open_use_lock(const std::string& root, const std::string& name) { return open_lock_file(root, "use", name); }

Fd shared_lock(Fd fd, const std::string& what) {
    int r;
    do r = flock(fd.get(), LOCK_SH);
    while (r != 0 && errno == EINTR);
    check_sys(r, "flock(LOCK_SH)", what);
    return fd;
}

// Removes layer `hex` (under `layers_dir`) unless a run holds it (its
// use-layers lock taken shared): false when it was kept. The lock is taken
// exclusively, without waiting, for the removal: a run that asks for the
// hold meanwhile finds the layer gone and looks again (hold()).
bool remove_layer_unless_held(const std::string& root, int layers_dir, const std::string& hex) {
    Fd lock = open_lock_file(root, "use-layers", hex);
    if (flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) return false;
        throw SysError("flock(LOCK_EX)", root + "/use-layers/" + hex, errno);
    }
    remove_tree_at(layers_dir, hex);
    unlink((root + "/use-layers/" + hex).c_str());  // a later hold makes it again
    return true;
}

// What to read of an image: each layer's file, the digest it must have, its size.
struct LayerSource {
    std::string rel;  // inside the image's directory; "" = the source file itself (a tarball)
    std::optional<std::string> digest;
    std::uint64_t size = 0;
};

// An OCI layout (or archive, unpacked): its manifest, config and layers.
std::vector<LayerSource> oci_layers(int base_fd, const std::string& what, StoredImage& image) {
    json layout;
    try {
        layout = json::parse(read_small(base_fd, "oci-layout", what));
    } catch (const json::exception&) {
        throw ImageError(what + ": oci-layout is not JSON");
    }
    if (!layout.is_object() || layout.value("imageLayoutVersion", "") != "1.0.0")
        throw ImageError(what + ": oci-layout: expected {\"imageLayoutVersion\": \"1.0.0\"}");
    Descriptor md = pick_manifest(read_small(base_fd, "index.json", what), std::nullopt);
    Manifest m = parse_manifest(read_blob(base_fd, md, what + " manifest"));
    image.config = parse_config(read_blob(base_fd, m.config, what + " config"));
    std::vector<LayerSource> layers;
    for (const auto& l : m.layers) {
        (void)layer_compression(l);
        layers.push_back({"blobs/sha256/" + digest_hex(l.digest), l.digest, l.size});
    }
    return layers;
}

// A `docker save` directory (or archive, unpacked): manifest.json, the
// config (checked against the digest its file name is), the layers by
// diff_id; its first RepoTag becomes the default name.
std::vector<LayerSource> docker_layers(int base_fd, const std::string& what, StoredImage& image,
                                       std::string& default_name) {
    DockerImage d = parse_docker_manifest(read_small(base_fd, "manifest.json", what));
    std::string config_text = read_small(base_fd, d.config_path, what);
    // The config's file name is its digest ("<hex>.json" or "blobs/sha256/<hex>").
    std::string stem = std::filesystem::path(d.config_path).filename().string();
    if (stem.size() > 5 && stem.ends_with(".json")) stem.resize(stem.size() - 5);
    if (is_sha256_digest("sha256:" + stem) && "sha256:" + sha256_hex(config_text) != "sha256:" + stem)
        throw ImageError(what + ": " + d.config_path + ": digest mismatch: the bytes are sha256:" + sha256_hex(config_text));
    image.config = parse_config(config_text);
    if (image.config.diff_ids.size() != d.layer_paths.size())
        throw ImageError(what + ": manifest.json names " + std::to_string(d.layer_paths.size()) +
                         " layers, the config's rootfs.diff_ids " + std::to_string(image.config.diff_ids.size()));
    std::vector<LayerSource> layers;
    for (std::size_t i = 0; i < d.layer_paths.size(); ++i) layers.push_back({d.layer_paths[i], image.config.diff_ids[i], 0});
    if (!d.repo_tags.empty()) default_name = sanitize_name(d.repo_tags.front());
    return layers;
}

// The layers of whatever `source` is; refused here, not at the first run,
// when there are more than a box can mount (each is an overlay lower layer).
std::vector<LayerSource> layers_of(const Source& source, int base_fd, StoredImage& image, std::string& default_name) {
    const std::string what = std::string(describe(source.kind)) + " " + source.path;
    std::vector<LayerSource> layers;
    if (source.kind == SourceKind::oci_layout || source.kind == SourceKind::oci_archive)
        layers = oci_layers(base_fd, what, image);
    else if (source.kind == SourceKind::docker_dir || source.kind == SourceKind::docker_archive)
        layers = docker_layers(base_fd, what, image, default_name);
    else
        layers.push_back({"", std::nullopt, 0});
    if (layers.size() > rootfs::kMaxImageLayers)
        throw ImageError(what + ": " + std::to_string(layers.size()) + " layers; a box mounts at most " +
                         std::to_string(rootfs::kMaxImageLayers) +
                         " (squash the image: import the tarball of `docker export`, or rebuild it with fewer layers)");
    return layers;
}

// The layers one import added, removed again unless it completes: a later
// layer refused leaves them no image's.
struct UndoAddedLayers {
    int dir;
    std::vector<std::string> added;
    bool armed = true;
    ~UndoAddedLayers() {
        if (!armed) return;
        for (const auto& hex : added) try {
                remove_tree_at(dir, hex);
            } catch (...) {
                // Left for the next import's sweep of unused layers.
            }
    }
};

}  // namespace

// The image's own directory: the source itself, or an archive unpacked into `work`.
namespace {

// One layer to import and where it goes.
struct ImportLayer {
    std::size_t index, count;
    std::string rel;
    std::optional<std::string> digest;
    std::uint64_t size;
    std::string source_path;
    int base_fd;
    std::string work;
    int layers_dir;
    std::string layers_path;  // what layers_dir is, for messages
    const ImportObserver& observer;
};

std::string image_dir_of(const Source& source, const std::string& work, ExpansionBudget& budget,
                                     ImportResult& result) {
    if (source.kind != SourceKind::oci_archive && source.kind != SourceKind::docker_archive) return source.path;
    const std::string base = work + "/archive";
    check_sys(mkdir(base.c_str(), 0700), "mkdir", base);
    Fd in(open(source.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!in.valid()) throw SysError("open", source.path, errno);
    Fd dest(open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dest.valid()) throw SysError("open", base, errno);
    auto r = extract_archive(in.get(), source.path, dest.get(), ExtractMode::container, {}, &budget);
    result.notes.insert(result.notes.end(), r.notes.begin(), r.notes.end());
    return base;
}

// Layer `i` read, digest-checked and moved into layers/sha256 (unless a layer
// of that digest is there already); observed as it goes.
std::string import_layer(const ImportLayer& l, ExpansionBudget& budget, ImportResult& result,
                                     std::vector<std::string>& added) {
    ImportProgress ev{.layer = l.index + 1, .layers = l.count, .digest = l.digest.value_or("")};
    Fd in = l.rel.empty() ? Fd(open(l.source_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY))
                          : open_in_image(l.base_fd, l.rel, "layer " + std::to_string(l.index + 1));
    if (!in.valid()) throw SysError("open", l.source_path, errno);
    ev.total = l.size ? l.size : file_size(in.get());
    const std::string staging_path = l.work + "/layer-" + std::to_string(l.index);
    check_sys(mkdir(staging_path.c_str(), 0755), "mkdir", staging_path);
    Fd dest(open(staging_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dest.valid()) throw SysError("open", staging_path, errno);
    const std::string what = "layer " + std::to_string(l.index + 1) + "/" + std::to_string(l.count) +
                             (l.digest ? " " + *l.digest : std::string(" ") + l.source_path);
    Progress progress = [&](std::uint64_t n) {
        ev.bytes = n;
        if (l.observer) l.observer(ev);
    };
    ExtractResult r = extract_archive(in.get(), what, dest.get(), ExtractMode::layer, progress, &budget);
    result.notes.insert(result.notes.end(), r.notes.begin(), r.notes.end());
    const std::string got = "sha256:" + r.sha256_hex;
    if (l.digest && got != *l.digest)
        throw ImageError(what + ": digest mismatch: the manifest says " + *l.digest + ", the bytes read are " + got +
                         "; the layer is refused");
    if (l.size && r.source_bytes != l.size)
        throw ImageError(what + ": size mismatch: the manifest says " + std::to_string(l.size) + " bytes, read " +
                         std::to_string(r.source_bytes));
    result.image.size_bytes += r.source_bytes;
    ev.bytes = r.source_bytes;
    ev.digest = got;
    ev.done = true;
    if (faccessat(l.layers_dir, r.sha256_hex.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        ++result.layers_reused;  // a tarball whose digest was known only now
        ev.reused = true;
    } else {
        check_sys(syncfs(dest.get()), "syncfs", staging_path);
        check_sys(renameat(AT_FDCWD, staging_path.c_str(), l.layers_dir, r.sha256_hex.c_str()), "renameat",
                  staging_path + " -> " + l.layers_path + "/" + r.sha256_hex);
        ++result.layers_added;
        added.push_back(r.sha256_hex);
    }
    if (l.observer) l.observer(ev);
    return got;
}

// A re-import under the same name may leave layers no image names.
void remove_unused_layers(const ImageStore& store, int layers_dir, ImportResult& result) {
    std::set<std::string> used;
    for (const auto& im : store.list()) used.insert(im.layers.begin(), im.layers.end());
    for (const auto& hex : entries_of(store.root() + "/layers/sha256"))
        if (!used.count("sha256:" + hex) && !remove_layer_unless_held(store.root(), layers_dir, hex))
            result.notes.push_back("layer sha256:" + hex + " of the image this import replaced is kept: a running box "
                                   "stands on it (the next import or rm after that box removes it)");
}

}  // namespace

ImportResult ImageStore::import(const std::string& source_arg, const std::optional<std::string>& name_arg,
                                const ImportObserver& observer, const ImportOptions& options) {
    if (name_arg && !is_valid_image_name(*name_arg))
        throw UsageError("--name " + *name_arg + ": expected 1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit");
    const Source source = detect_source(source_arg);
    // The store is root's alone, like the state dir it is in.
    (void)rootfs::open_root_only_dir("image store", root_, 0700);
    for (const char* sub : {"/layers", "/layers/sha256", "/images", "/tmp"})
        if (mkdir((root_ + sub).c_str(), 0700) != 0 && errno != EEXIST) throw SysError("mkdir", root_ + sub, errno);
    StoreLock lock(root_);
    // Under the lock no other import runs: whatever tmp/ holds was left by one that died.
    {
        Fd tmp(open((root_ + "/tmp").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
        if (!tmp.valid()) throw SysError("open", root_ + "/tmp", errno);
        for (const auto& e : entries_of(root_ + "/tmp")) remove_tree_at(tmp.get(), e);
    }
    WorkDir work(root_ + "/tmp");
    ImportResult result;
    ExpansionBudget budget(options.limits);
    const std::string base = image_dir_of(source, work.path(), budget, result);
    StoredImage& image = result.image;
    image.source = source.path;
    image.format = std::string(format_name(source.kind));
    std::string default_name = name_from_path(source.path);
    Fd base_fd;
    if (source.kind != SourceKind::rootfs_tarball) {
        base_fd.reset(open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!base_fd.valid()) throw SysError("open", base, errno);
    }
    const std::vector<LayerSource> layers = layers_of(source, base_fd.get(), image, default_name);
    image.name = name_arg.value_or(default_name);
    if (!is_valid_image_name(image.name))
        throw UsageError(source_arg + ": no usable image name from \"" + image.name + "\"; give one with --name NAME");
    // A name the archive chose never replaces an image silently: boxes on
    // that name would run the archive's content from then on.
    if (!name_arg && !options.replace && faccessat(AT_FDCWD, (root_ + "/images/" + image.name + ".json").c_str(), F_OK,
                                                   AT_SYMLINK_NOFOLLOW) == 0)
        throw UsageError(source_arg + ": names itself \"" + image.name + "\", and an image of that name is in the store; "
                         "--name " + image.name + " or --replace replaces it, --name OTHER imports it beside it");
    Fd layers_dir(open((root_ + "/layers/sha256").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    if (!layers_dir.valid()) throw SysError("open", root_ + "/layers/sha256", errno);
    UndoAddedLayers undo{layers_dir.get(), {}};
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const LayerSource& ls = layers[i];
        if (ls.digest && faccessat(layers_dir.get(), digest_hex(*ls.digest).c_str(), F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
            image.layers.push_back(*ls.digest);
            ++result.layers_reused;
            ImportProgress ev{.layer = i + 1, .layers = layers.size(), .digest = *ls.digest};
            ev.done = ev.reused = true;
            if (observer) observer(ev);
            continue;
        }
        const ImportLayer l{i, layers.size(), ls.rel, ls.digest, ls.size, source.path, base_fd.get(), work.path(),
                            layers_dir.get(), root_ + "/layers/sha256", observer};
        image.layers.push_back(import_layer(l, budget, result, undo.added));
    }
    fsync(layers_dir.get());
    image.imported_at = now_rfc3339();
    write_file_atomically({root_ + "/images", image.name + ".json", 0600, Durability::durable}, to_json_text(image));
    undo.armed = false;
    for (const auto& n : image.config.ignored) result.notes.push_back(n);
    remove_unused_layers(*this, layers_dir.get(), result);
    return result;
}

std::vector<StoredImage> ImageStore::list() const {
    std::vector<StoredImage> out;
    for (const auto& f : entries_of(root_ + "/images")) {
        if (f.front() == '.' || !f.ends_with(".json")) continue;
        const std::string path = root_ + "/images/" + f;
        Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd.valid()) throw SysError("open", path, errno);
        out.push_back(from_json_text(read_to_end(fd.get(), path), path));
    }
    return out;
}

StoredImage ImageStore::get(const std::string& name) const {
    if (!is_valid_image_name(name))
        throw UsageError("image " + name + ": not a valid image name (A-Z a-z 0-9 . _ -, starting with a letter or digit)");
    const std::string path = root_ + "/images/" + name + ".json";
    Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) {
        if (errno == ENOENT)
            throw UsageError("image " + name + ": not in the store " + root_ + "; `corral image ls` lists the images, "
                             "`corral image import SOURCE --name " + name + "` adds one");
        throw SysError("open", path, errno);
    }
    StoredImage im = from_json_text(read_to_end(fd.get(), path), path);
    for (const auto& l : im.layers) {
        struct stat st {};
        if (lstat(layer_dir(l).c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
            throw UsageError("image " + name + ": its layer " + l + " is missing from " + root_ + "/layers; import it again");
    }
    return im;
}

ImageHold ImageStore::hold(const std::string& name) const {
    (void)get(name);  // its clear error for a name not in the store, before any lock file is made
    std::vector<Fd> locks;
    locks.push_back(shared_lock(open_use_lock(root_, name), root_ + "/use/" + name));
    // The layers the name stands for now, each held; a layer the sweep of a
    // re-import removed between get() and its lock is missing afterwards:
    // the name then stands for the new import's layers, looked up again.
    for (int attempt = 0;; ++attempt) {
        std::vector<Fd> layer_locks;
        bool all_there = true;
        for (const auto& l : get(name).layers) {
            const std::string hex = digest_hex(l);
            layer_locks.push_back(shared_lock(open_lock_file(root_, "use-layers", hex), root_ + "/use-layers/" + hex));
            struct stat st {};
            all_there = all_there && lstat(layer_dir(l).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
        }
        if (all_there || attempt == 2) {
            for (auto& fd : layer_locks) locks.push_back(std::move(fd));
            return ImageHold(std::move(locks));  // missing after three looks: get() says which, at the run's get()
        }
    }
}

RemoveResult ImageStore::remove(const std::string& name) {
    StoredImage target = get(name);
    StoreLock lock(root_);
    // Exclusive until the removal is done: a run asking for a hold now waits,
    // then finds the image gone.
    Fd use = open_use_lock(root_, name);
    if (flock(use.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) throw ImageInUse("image " + name + ": a running box uses it");
        throw SysError("flock(LOCK_EX)", root_ + "/use/" + name, errno);
    }
    check_sys(unlink((root_ + "/images/" + name + ".json").c_str()), "unlink", root_ + "/images/" + name + ".json");
    std::set<std::string> used;
    for (const auto& im : list()) used.insert(im.layers.begin(), im.layers.end());
    Fd layers_dir(open((root_ + "/layers/sha256").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    if (!layers_dir.valid()) throw SysError("open", root_ + "/layers/sha256", errno);
    RemoveResult out;
    std::set<std::string> seen;
    for (const auto& l : target.layers) {
        if (!seen.insert(l).second) continue;
        if (used.count(l) || !remove_layer_unless_held(root_, layers_dir.get(), digest_hex(l))) {
            out.layers_kept.push_back(l);
        } else {
            out.layers_removed.push_back(l);
        }
    }
    return out;
}

}  // namespace corral::image
