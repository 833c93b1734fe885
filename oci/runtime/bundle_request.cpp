// oci/runtime/bundle_request.cpp — BundleConfig → run::RunRequest.
#include "oci/runtime/bundle_request.hpp"
#include "oci/runtime/seccomp_profile.hpp"

#include "base/parse.hpp"
#include "base/sys_error.hpp"

namespace corral::oci {

namespace {

void note(BundleRequest& out, NoteKind kind, std::string field, std::string text) {
    out.notes.push_back(ConfigNote{kind, std::move(field), std::move(text)});
}

// What the request cannot carry is refused, named, rather than dropped: a
// box that silently lacked a mount its program expects would fail later,
// somewhere else, for a reason nobody could see.
void map_mounts(const BundleConfig& c, BundleRequest& out) {
    run::RunRequest& r = out.request;
    for (const auto& b : c.binds) r.binds.push_back(run::BindRequest{b.source, b.target, b.read_only, b.noexec});
    for (const auto& t : c.tmpfs) {
        rootfs::BoxTmpfs m;
        m.target = t.target;
        if (t.size_bytes) m.size_bytes = *t.size_bytes;
        if (t.mode) m.mode = static_cast<mode_t>(*t.mode);
        m.read_only = t.read_only;
        m.noexec = t.noexec;
        m.option = "config.json " + t.field;
        r.tmpfs.push_back(std::move(m));
    }
    if (c.tmp_bytes) r.tmp_bytes = c.tmp_bytes;
    if (c.shm_bytes)
        note(out, NoteKind::reduced, "mounts", "/dev/shm's size= is not applied: the box's /dev/shm is corral's");
}

void map_process(const BundleConfig& c, BundleRequest& out) {
    const ProcessPlan& p = c.process;
    run::RunRequest& r = out.request;
    out.terminal = p.terminal;
    if (p.terminal && p.console_size) {
        // A window larger than a terminal's 16 bits cannot be set: such a size is left to the engine.
        const auto [height, width] = *p.console_size;
        if (height <= UINT16_MAX && width <= UINT16_MAX) {
            out.console_rows = static_cast<std::uint16_t>(height);
            out.console_cols = static_cast<std::uint16_t>(width);
        }
    }
    r.command = p.args;
    r.env = p.env;
    r.cwd = p.cwd;
    r.open_files = p.open_files;
    if (p.umask) note(out, NoteKind::ignored, "process.user.umask", "the box's processes start with umask 022");
    for (const auto& l : p.rlimits) {
        if (l.type == "RLIMIT_NOFILE") continue;
        if (l.type == "RLIMIT_NPROC")
            note(out, NoteKind::replaced, "process.rlimits", "RLIMIT_NPROC is corral's task limit for the box");
        else
            note(out, NoteKind::ignored, "process.rlimits", l.type + " is not set: the box keeps the host's default");
    }
}

}  // namespace

BundleRequest bundle_request(const BundleConfig& c, const std::string& state_dir) {
    BundleRequest out;
    out.notes = c.notes;
    run::RunRequest& r = out.request;
    // The box's root: the bundle's directory as an image's (read-only lower
    // layer, the box's writes in corral's capped scratch layer).
    r.rootfs = names::DirRootfs{c.root_path, c.root_path};
    if (!state_dir.empty()) r.state_dir = state_dir;
    map_process(c, out);
    map_mounts(c, out);
    if (!c.hostname.empty()) r.hostname = c.hostname;
    r.memory_bytes = c.limits.memory_bytes;
    r.pids = c.limits.pids;
    r.cpus = c.limits.cpus;
    if (c.config_dir) r.config_dir = c.config_dir;
    // The bundle's seccomp profile, stacked after corral's own filter.
    if (c.seccomp_profile) r.stacked_seccomp = seccomp_filter_of(*c.seccomp_profile, out.notes);
    if (c.worker) r.worker = c.worker;
    if (r.worker && !r.config_dir)
        throw UsageError("config.json: annotations." + std::string(kWorkerAnnotation) + ": a worker needs its "
                         "organisation directory (annotation " + std::string(kConfigAnnotation) + ")");
    // The engine's stdio are the container's (conmon's pipes, a shim's
    // FIFOs); corral's own start and summary lines would land in them.
    r.quiet = true;
    return out;
}

}  // namespace corral::oci
