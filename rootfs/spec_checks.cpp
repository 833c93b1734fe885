// rootfs/spec_checks.cpp — see spec_checks.hpp: the rootfs options checked
// before any mount is planned.
#include "rootfs/spec_checks.hpp"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "base/sys_error.hpp"
#include "rootfs/box_path.hpp"
#include "rootfs/host_paths.hpp"

namespace corral::rootfs {

void require_directory(std::string_view option, const std::string& path) {
    if (path.empty() || path.front() != '/')
        throw UsageError(std::string(option) + " " + path + ": expected an absolute path to a directory");
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
        int err = errno;
        if (err == ENOENT || err == ENOTDIR) throw UsageError(std::string(option) + " " + path + ": no such directory");
        throw UsageError(std::string(option) + " " + path + ": cannot access: " + errno_text(err));
    }
    if (!S_ISDIR(st.st_mode)) throw UsageError(std::string(option) + " " + path + ": is not a directory");
}

namespace {

// Box paths no extra file may be placed under: kernel filesystems and the user's own data.
constexpr std::array<std::string_view, 4> kNoExtraFilesUnder = {"/proc", "/dev", "/sys", "/workspace"};

}  // namespace

void validate_names(const RootfsSpec& spec) {
    const std::string& n = spec.agent_name;
    bool name_ok = !n.empty() && n.size() <= 32 && ((n[0] >= 'a' && n[0] <= 'z') || n[0] == '_');
    for (char c : n) name_ok = name_ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
    if (!name_ok || n == "root" || n == "nobody")
        throw UsageError("agent name \"" + n + "\": expected 1-32 of a-z, 0-9, '_', '-' starting with a letter or '_' (not root or nobody)");
    if (spec.agent_uid == 0 || spec.agent_gid == 0)
        throw UsageError("agent UID/GID " + std::to_string(spec.agent_uid) + "/" + std::to_string(spec.agent_gid) +
                         ": 0 is root; the agent must run with an unprivileged UID and GID");
    const std::string& h = spec.hostname;
    bool host_ok = h.size() <= 64;
    for (char c : h) host_ok = host_ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.');
    if (!host_ok) throw UsageError("--hostname " + h + ": expected at most 64 letters, digits, '-' or '.'");
}

void validate_sizes(const RootfsSpec& spec) {
    // tmpfs reads size=0 as "unlimited": refuse it rather than lift the cap.
    if (spec.tmp_size_bytes == 0) throw UsageError("/tmp size 0: expected at least one byte (0 would mean unlimited)");
    if (spec.scratch_size_bytes == 0) throw UsageError("scratch size 0: expected at least one byte (0 would mean unlimited)");
    if (spec.shm_size_bytes == 0) throw UsageError("/dev/shm size 0: expected at least one byte (0 would mean unlimited)");
}

void validate_extra_files(const RootfsSpec& spec) {
    for (std::size_t i = 0; i < spec.extra_files.size(); ++i) {
        const auto& f = spec.extra_files[i];
        if (!is_normalized_absolute(f.path_in_box) || f.path_in_box == "/")
            throw UsageError("extra file \"" + f.path_in_box + "\": expected an absolute path without '.', '..', '//' or a trailing '/'");
        for (auto dir : kNoExtraFilesUnder)
            if (is_at_or_below(f.path_in_box, dir))
                throw UsageError("extra file " + f.path_in_box + ": may not be placed under " + std::string(dir));
        if (f.mode & ~static_cast<mode_t>(0777))
            throw UsageError("extra file " + f.path_in_box + ": mode must be within 0777 (no setuid, setgid or sticky bits)");
        for (std::size_t j = 0; j < i; ++j)
            if (spec.extra_files[j].path_in_box == f.path_in_box)
                throw UsageError("extra file " + f.path_in_box + ": given twice");
    }
}

// image:NAME: the layers the store gave, each a root-only directory.
void validate_layers(const RootfsSpec& spec) {
    const std::string image = names::to_string(spec.source);
    if (spec.image_layers.empty())
        throw UsageError("--rootfs " + image + ": the image has no layers");
    if (spec.image_layers.size() > kMaxImageLayers)
        throw UsageError("--rootfs " + image + ": " + std::to_string(spec.image_layers.size()) +
                         " layers; at most " + std::to_string(kMaxImageLayers) + " are mounted (squash the image)");
    for (const auto& l : spec.image_layers) {
        if (!is_normalized_absolute(l) || l == "/")
            throw UsageError("--rootfs " + image + ": layer directory \"" + l + "\": expected a normalized absolute path");
        require_directory("--rootfs " + image, l);
        // Mounted by path: nobody but root may be able to redirect it.
        require_root_only_tree("--rootfs " + image, l);
        if (is_at_or_below(spec.scratch_dir, l))
            throw UsageError("--rootfs " + image + ": layer " + l + " contains corral's scratch directory");
    }
    validate_working_dir(spec);
}

void validate_working_dir(const RootfsSpec& spec) {
    const std::string& wd = spec.image_working_dir;
    if (!wd.empty() && (!is_normalized_absolute(wd) || is_at_or_below(wd, "/proc") || is_at_or_below(wd, "/dev") ||
                        is_at_or_below(wd, "/sys")))
        throw UsageError("--rootfs " + names::to_string(spec.source) + ": WorkingDir \"" + wd +
                         "\" (the box's working directory): expected a normalized absolute path outside /proc, /dev and /sys");
}

// A host directory the box gets writable or readable access to (--workspace,
// --bind, --ro-bind): a real directory, not "/", not overlapping corral's
// records or the host's pseudo file systems, not overlapping the image (which
// must stay read-only). The same source is checked again on its one fd by
// inode when its tree is made (prepare_idmapped_trees).
void check_host_source(std::string_view option, const std::string& source, const RootfsSpec& spec, bool host_mode,
                       const std::string& image_real) {
    const std::string opt(option);
    // A bind may show one file (a config, a socket-free credential helper's
    // output); the workspace is a directory.
    struct stat st {};
    const bool one_file = option != "--workspace" && !source.empty() && source.front() == '/' &&
                          stat(source.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    if (!one_file && option != "--workspace" && stat(source.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
        throw UsageError(opt + " " + source + ": is neither a directory nor a regular file; allowed: one of them");
    if (!one_file) require_directory(option, source);
    char* src_c = realpath(source.c_str(), nullptr);
    if (!src_c) throw UsageError(opt + " " + source + ": cannot resolve: " + errno_text(errno));
    const std::string src_real = src_c;
    std::free(src_c);
    if (src_real == "/")
        throw UsageError(opt + " " + source + ": the host's root directory cannot be shown to the box; use a project directory");
    for (const auto& dir : spec.protected_dirs) {
        char* c = realpath(dir.c_str(), nullptr);
        const std::string real = c ? std::string(c) : dir;  // not created yet: compare as given
        std::free(c);
        if (is_at_or_below(real, src_real) || is_at_or_below(src_real, real))
            throw UsageError(opt + " " + source + ": overlaps " + dir +
                             " (corral's records and the host's /proc, /sys and /dev are off limits to the box); use a directory outside it");
    }
    // A writable bind overlapping the image would let the command write into DIR.
    if (std::holds_alternative<names::ImageRootfs>(spec.source)) {
        for (const auto& l : spec.image_layers)
            if (is_at_or_below(src_real, l) || is_at_or_below(l, src_real))
                throw UsageError(opt + " " + source + ": overlaps the image's layer " + l +
                                 ", which must stay read-only; use a directory outside the image store");
    } else if (!host_mode) {
        if (is_at_or_below(src_real, image_real))
            throw UsageError(opt + " " + source + ": is inside the image " + names::to_string(spec.source) +
                             ", which must stay read-only; use a directory outside it");
        if (is_at_or_below(image_real, src_real))
            throw UsageError(opt + " " + source + ": contains the image " + names::to_string(spec.source) +
                             ", which must stay read-only; use a directory that does not contain it");
    }
}

// Every --bind/--ro-bind: its source as the workspace's, its target one of
// check_bind_target's, and no two targets equal or nested (a mount point made
// inside another bind would be made in that host directory).
void check_binds(const RootfsSpec& spec, bool host_mode, const std::string& image_real) {
    for (std::size_t i = 0; i < spec.binds.size(); ++i) {
        const HostBind& b = spec.binds[i];
        check_host_source(b.option, b.source, spec, host_mode, image_real);
        if (check_bind_target(b.option, b.target) != b.target)
            throw UsageError(b.option + " " + b.source + ":" + b.target + ": the target is not normalised");
        // A file corral places in the box (the CA bundle) would get its
        // mount point made in the bound host directory.
        for (const auto& f : spec.extra_files)
            if (is_at_or_below(f.path_in_box, b.target))
                throw UsageError(b.option + " " + b.source + ":" + b.target + ": would hold " + f.path_in_box +
                                 ", a file corral places in the box; allowed: a target outside it");
        for (std::size_t k = 0; k < i; ++k) {
            const HostBind& o = spec.binds[k];
            if (o.target == b.target)
                throw UsageError(b.option + " " + b.source + ":" + b.target + ": " + o.option + " " + o.source +
                                 " already goes to " + b.target + "; allowed: one bind per target");
            if (is_at_or_below(o.target, b.target) || is_at_or_below(b.target, o.target))
                throw UsageError(b.option + " " + b.source + ":" + b.target + ": overlaps " + o.option + " " +
                                 o.source + ":" + o.target + "; allowed: targets neither equal to nor inside each other");
        }
    }
}

void check_box_tmpfs(const RootfsSpec& spec) {
    for (std::size_t i = 0; i < spec.tmpfs.size(); ++i) {
        const BoxTmpfs& t = spec.tmpfs[i];
        if (check_bind_target(t.option, t.target) != t.target)
            throw UsageError(t.option + ": tmpfs at " + t.target + ": the target is not normalised");
        if (t.size_bytes == 0 || (t.mode & ~static_cast<mode_t>(07777)) != 0)
            throw UsageError(t.option + ": tmpfs at " + t.target + ": expected a size above 0 and a mode within 07777");
        for (std::size_t k = 0; k < i; ++k)
            if (spec.tmpfs[k].target == t.target)
                throw UsageError(t.option + ": tmpfs at " + t.target + ": " + spec.tmpfs[k].option +
                                 " mounts one there already; allowed: one mount per target");
        for (const auto& b : spec.binds)
            if (is_at_or_below(t.target, b.target))
                throw UsageError(t.option + ": tmpfs at " + t.target + ": inside " + b.option + " " + b.source + ":" +
                                 b.target + " (its mount point would be made in the host directory); allowed: a "
                                 "target outside every bind");
    }
}

std::string check_bind_target(std::string_view option, const std::string& target) {
    const std::string opt(option);
    if (target.empty() || target.front() != '/')
        throw UsageError(opt + ": target \"" + target + "\": expected an absolute path in the box, e.g. /src");
    std::string norm = std::filesystem::path(target).lexically_normal().string();
    while (norm.size() > 1 && norm.back() == '/') norm.pop_back();
    // The box's own mounts: a bind may not replace, hide or go into them
    // (a mount point made in /workspace or the agent's home would be made in
    // a host directory). /tmp is the box's private tmpfs: a bind below it is
    // fine (a repository under /tmp keeps its path), over it is not.
    static constexpr std::array<std::string_view, 7> kReserved = {"/proc", "/sys",  "/dev",       "/etc",
                                                                  "/workspace", "/root", "/home/agent"};
    const std::string allowed = ", one of the box's own mounts (/proc, /sys, /dev, /etc, /workspace, /root, /home/agent "
                                "and below; /tmp itself); allowed: any other absolute path, e.g. /src, /opt/data or "
                                "/tmp/x";
    if (norm == "/")
        throw UsageError(opt + ": target \"" + target + "\": the box's root cannot be replaced; use --rootfs DIR");
    if (is_at_or_below("/tmp", norm)) throw UsageError(opt + ": target \"" + target + "\": is or contains /tmp" + allowed);
    for (auto r : kReserved)
        if (is_at_or_below(norm, r) || is_at_or_below(r, norm))
            throw UsageError(opt + ": target \"" + target + "\": " +
                             (is_at_or_below(norm, r) ? "is at or below " : "contains ") + std::string(r) + allowed);
    return norm;
}

}  // namespace corral::rootfs
