// rootfs/mount_plan.hpp — the sandbox's filesystem view, as a plan and its application.
//
// plan_rootfs() turns a RootfsSpec into a MountPlan: an ordered list of plain
// operations (make a directory, write a file, mount, bind, remount, symlink).
// Planning runs on the host before clone3, validates the user's paths (it may
// stat them) and throws UsageError; it never mounts. Unit tests check the plan
// without root.
//
// apply_mount_plan() and enter_rootfs() run in the sandbox's init, in its new
// mount (and PID) namespace, as root, between clone3 and execve: they never
// throw and allocate nothing; the first failure is returned as {op, errno, call}
// so the parent can name the step (describe_failure()).
//
// Every target "in the box" is resolved below plan.new_root with
// openat2(RESOLVE_IN_ROOT): a symlink in an untrusted image cannot make corral
// write or mount outside the image. docs/rootfs.md has the full table of mounts.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/fd.hpp"
#include "names/rootfs_source.hpp"

namespace corral::rootfs {

// A file that must appear in the box with this content (the bridge puts the CA
// bundle in the trust store this way). Written to scratch and bind-mounted
// read-only at path_in_box: the image (or the host) is never modified.
// In host mode a path inside a read-only host bind (/usr/..., /etc/ssl/certs/...)
// must already exist there (it is overlaid, not created).
struct ExtraFile {
    std::string path_in_box;  // absolute, normalized; not under /proc, /dev, /sys, /workspace
    std::string content;
    mode_t mode = 0644;
};

inline constexpr std::uint64_t default_tmp_size_bytes = 256ull << 20;
inline constexpr std::uint64_t default_scratch_size_bytes = 256ull << 20;
inline constexpr std::uint64_t default_shm_size_bytes = 64ull << 20;
// The box's private devpts holds at most this many ptys (docs/rootfs.md).
inline constexpr unsigned kBoxPtyMax = 128;

// A host directory shown at `target` in the box (--bind, --ro-bind): ID-mapped
// as the workspace is, with the same refusals for the source.
struct HostBind {
    std::string source;      // host directory (absolute)
    std::string target;      // box path, as check_bind_target returned it
    bool read_only = false;
    std::string option;      // "--bind" or "--ro-bind", for messages
    bool noexec = false;     // MS_NOEXEC (an OCI bundle's bind option); a noexec source stays noexec regardless
};

// A tmpfs of the box's own at `target` (an OCI bundle's tmpfs mounts; /tmp
// and /dev/shm are corral's own and not these): capped, owned by the agent
// (the box's "root" is the agent), mounted before the binds so that a bind
// may go inside one. Its pages count against the box's memory limit.
struct BoxTmpfs {
    std::string target;           // box path, as check_bind_target returned it
    std::uint64_t size_bytes = default_tmp_size_bytes;
    mode_t mode = 0755;
    bool read_only = false;
    bool noexec = false;
    std::string option;           // what asked for it, for messages: "config.json mounts[6]"
};

// The box path a --bind/--ro-bind DST names, normalised (lexically: "/a/./b/"
// is "/a/b"). Refused: a relative path; "/"; a path at, below or above /proc,
// /sys, /dev, /etc, /workspace, /root or /home/agent, and /tmp itself (the
// box's own mounts: a bind there would hide or replace them; below /tmp, the
// box's private tmpfs, is allowed). Throws UsageError naming
// the option, the text and what is allowed.
std::string check_bind_target(std::string_view option, const std::string& target);

// Whether the box already hides `path` (a normalised absolute path) or shows
// it read-only: /proc's masked and read-only entries (plan_proc) and
// everything under /sys, which holds nothing but the box's own cgroups,
// read-only. What an OCI config's maskedPaths and readonlyPaths ask for.
bool box_protects_path(std::string_view path);

// The character device corral makes at `path` in the box's /dev ("/dev/null":
// 1, 3), or nullopt: the box's six nodes and no other.
std::optional<std::pair<unsigned, unsigned>> box_device_node(std::string_view path);

// One of the run's cgroup directories on the host (<hierarchy>/corral/<run-id>)
// and where the box sees it below /sys/fs/cgroup: "" for the v2 hierarchy at
// /sys/fs/cgroup itself (a pure v2 host), else the v1 hierarchy's name
// ("memory", "pids", "cpu,cpuacct") or "unified" for v2 beside them.
struct CgroupView {
    std::string host_dir;
    std::string box_dir;
};

struct RootfsSpec {
    names::RootfsSource source;             // host (the default), DIR or image:NAME (--rootfs, or the worker's)
    // image:NAME: the directories of its layers in the image store, bottom
    // first (image/store.hpp), mounted as the overlay's lower layers.
    std::vector<std::string> image_layers;
    // image:NAME: its WorkingDir, made in the overlay (0755, like `docker
    // run` does) when the layers lack it. "" = none.
    std::string image_working_dir;
    std::optional<std::string> workspace;   // absolute directory, bound read-write at /workspace; without it
                                            // /workspace is an empty directory of the agent's on scratch
    // Host directories the workspace may not be, contain or lie in (corral's
    // state dir, the run dir, /run/corral): the box must never write where the
    // root supervisor keeps its records. "/" is always refused.
    std::vector<std::string> protected_dirs;
    std::string scratch_dir;                // /run/corral/scratch/<run-id>: created by apply_mount_plan
    std::uint64_t tmp_size_bytes = default_tmp_size_bytes;          // cap of /tmp
    std::uint64_t scratch_size_bytes = default_scratch_size_bytes;  // cap of everything else the box writes
                                                                    // (overlay upper, agent home)
    std::uint64_t shm_size_bytes = default_shm_size_bytes;          // cap of /dev/shm
    uid_t agent_uid = 0;
    gid_t agent_gid = 0;
    std::string agent_name = "agent";       // passwd name; home is /home/<agent_name>
    std::string hostname;                   // goes into /etc/hosts and /etc/hostname (host mode)
    std::vector<ExtraFile> extra_files;
    // --bind/--ro-bind, after everything else (no two targets equal or one
    // inside another: checked by plan_rootfs).
    std::vector<HostBind> binds;
    // Tmpfs mounts of the box's own, before the binds (targets checked as
    // binds' are, none inside a bind: its mount point would be made in the
    // host directory).
    std::vector<BoxTmpfs> tmpfs;
    // Absolute host directory bound read-write at the agent's home instead of
    // the scratch home (agent runs: the homes live in the run dir, host-visible).
    std::optional<std::string> home_dir;
    // The box's own cgroups, shown read-only under /sys/fs/cgroup so that
    // programs sizing themselves from cgroup limits (node, the JVM, Go) see
    // the box's (docs/rootfs.md "The box's cgroups"). Empty: /sys stays empty.
    std::vector<CgroupView> cgroup_views;
    // --review: the workspace is the lower layer of an overlay at /workspace
    // whose upper layer is a detached tmpfs of scratch_size_bytes
    // (capped_tmpfs.hpp, made by prepare_idmapped_trees, kept by the run
    // after "ready"): DIR is never written during the run. false: the
    // workspace is an ID-mapped bind.
    bool review = false;
};

enum class MountKind {
    MakeDir,     // mkdir target (mode); an existing directory is fine; chown if set_owner
    MakeFile,    // create an empty file at target if nothing is there (a mount point for a file bind)
    MakeNode,    // mknod target as a character device (rdev, mode): the box's /dev nodes
    Symlink,     // symlink target -> source (the link text)
    WriteFile,   // create/truncate target with data as content (mode, owner)
    AppendFile,  // append data to an existing target (adds a newline first if the file lacks one)
    Mount,       // mount(source, target, fstype, flags, data): tmpfs, proc, devpts, overlay, propagation
    Bind,        // mount(source, target, MS_BIND): source is a host path; flags are applied by the Remount after it
    Remount,     // mount(target, MS_BIND|MS_REMOUNT|flags): set per-mount flags (ro, nosuid, nodev, noexec)
    AttachTree,  // move_mount(tree_fd -> target): a bind of source whose on-disk owner disk_uid:disk_gid shows
                 // as uid:gid (rootfs/idmapped_tree.hpp); tree_fd is made by prepare_idmapped_trees()
    Overlay,     // an overlay of lowers (top first) under source (upperdir) with data as workdir, on target
                 // (a host path, or in the box if in_root): fsconfig "lowerdir+" per layer where the kernel
                 // has it (6.8+), else mount(2) with one "lowerdir=" option naming each layer by an fd
                 // (fits kMaxLowerdirOption)
};

struct MountOp {
    MountKind kind{};
    std::string source;      // Bind: host path; Mount: fs source name; Symlink: the link text
    std::string target;      // absolute; a path in the box if in_root, else a host path (scratch)
    bool in_root = true;     // resolve target below plan.new_root (symlinks cannot escape it)
    std::string fstype;      // Mount only
    unsigned long flags = 0; // Mount/Remount: MS_* flags. Bind: the flags its Remount will set (documentation)
    std::string data;        // Mount: option string; WriteFile/AppendFile: the content
    mode_t mode = 0;         // MakeDir/MakeFile/MakeNode/WriteFile
    dev_t rdev = 0;          // MakeNode: the device number
    bool set_owner = false;  // MakeDir/WriteFile: chown to uid:gid and chmod mode even if it existed
    uid_t uid = 0;
    gid_t gid = 0;
    bool optional = false;   // skip this op when its target (or a Bind's source, a replaced file's directory) does not exist
    uid_t disk_uid = 0;      // AttachTree: the on-disk owner shown as uid
    gid_t disk_gid = 0;      // AttachTree: the on-disk group shown as gid
    int tree_fd = -1;        // AttachTree: the detached mount (owned by PreparedTrees, not by the op)
    bool idmapped = true;    // AttachTree: false once prepare_idmapped_trees() bound it as is
    bool replace = false;    // WriteFile: remove what the name holds first (an image's link or file; in
                             // the overlay, so the image is untouched), then create it
    std::vector<std::string> lowers;  // Overlay: the lower layers' host directories, top first
    std::string option;      // AttachTree: the option that asked for it ("--workspace", "--bind"), for messages
    // Overlay: the reviewed workspace's: redirect_dir, metacopy and index off, so
    // the upper layer is exactly the set of changes (a renamed directory is
    // copied, never a redirect xattr a diff would have to follow).
    bool review = false;
};

// An image of more layers than this is refused: overlayfs stacks at most 500
// lower layers, and corral keeps room below that limit.
inline constexpr std::size_t kMaxImageLayers = 128;
// mount(2)'s option string is one page: kernels without "lowerdir+" (before
// 6.8) get the layers as /proc/self/fd/N names in it, so kMaxImageLayers fit.
inline constexpr std::size_t kMaxLowerdirOption = 4000;

// Where files of the box's image can be looked up on the host before the run
// (CA bundles, an agent's CLI): {image} for a directory, the layers top first
// for image:NAME (a whiteout in a higher layer is not seen here: the lookups
// are advisory), {} in host mode.
std::vector<std::string> image_lookup_dirs(const RootfsSpec& spec);

// The host directories `--rootfs host` shows read-only whole: /usr and the
// top-level program and library directories that are directories (on merged-
// /usr hosts those are symlinks into /usr, and shown as such).
std::vector<std::string> host_rootfs_dirs();

struct MountPlan {
    std::string new_root;        // host path of the box's future "/" (a mount point after the plan is applied)
    std::string scratch_dir;     // everything below it disappears with the sandbox's mount namespace
    std::vector<MountOp> ops;
    std::vector<std::string> protected_dirs;  // RootfsSpec::protected_dirs, for prepare_idmapped_trees()
};

// Checks a user-given directory: absolute, exists, is a directory. Throws
// UsageError naming the option: "--rootfs /x: no such directory".
void require_directory(std::string_view option, const std::string& path);

// Validates the spec and builds the plan. Throws UsageError naming the option,
// the bad value and what is accepted, e.g. "--rootfs /x: no such directory".
MountPlan plan_rootfs(const RootfsSpec& spec);

// Moves the plan's /proc mounts (the proc mount and its masks; not the /proc
// directory) into a plan of their own, rooted at "/": for the invocation's
// PID 1 to apply after pivot_root, so the box's only /proc is the one of its
// nested PID namespace (supervisor/sandbox_init.cpp).
MountPlan take_proc_mounts(MountPlan& plan);

// One line naming the call and the paths, for error messages:
// "mount(proc -> /proc, proc, MS_NOSUID|MS_NODEV|MS_NOEXEC)".
std::string describe(const MountOp& op);

// The system call that failed (static names; safe to carry over a pipe as a number).
enum class FailedCall : std::uint8_t {
    open, mkdir, mknod, symlink, write, chown, chmod, stat, mount, pivot_root, umount, chdir, move_mount,
    fsopen, fsconfig, fsmount, unlink,
};
const char* call_name(FailedCall call) noexcept;

// op_index == plan.ops.size() means "while entering the root" (enter_rootfs).
struct MountFailure {
    std::size_t op_index = 0;
    int err = 0;
    FailedCall call = FailedCall::mount;
};

// Supervisor side, before clone3: makes the detached tree of every
// AttachTree op (for --review's upper layer, option "--review": a capped
// tmpfs of op.data bytes) (see idmapped_tree.hpp: one symlink-free open of the source,
// checked on that fd, copied with open_tree, ID-mapped where allowed) and
// stores its fd in the op. Where it is not ID-mapped (root-owned, or the file
// system cannot) the copy is attached as is (op.idmapped = false: the agent
// writes only where the directory's permissions let its UID) and `fallbacks`
// says which and why; the caller must tell the user. Throws UsageError for a
// refused source, SysError for any other failure.
struct PreparedTrees {
    std::vector<Fd> trees;               // keep alive until the init has attached them
    std::vector<std::string> idmapped;   // "/workspace: on-disk 1000:1000 shown as the agent"
    std::vector<std::string> fallbacks;  // "/workspace: mount_setattr(...): Invalid argument"
    Fd review_upper;                     // --review: the upper layer's tmpfs (the run keeps it past "ready")
};
PreparedTrees prepare_idmapped_trees(MountPlan& plan);

// "rootfs setup: mount(/home/u/ws -> /workspace, MS_BIND) failed in mount: Permission denied"
std::string describe_failure(const MountPlan& plan, const MountFailure& failure);

// In the child, new mount namespace, as root, before pivot. The plan's first ops
// make every mount private (MS_REC|MS_PRIVATE on /) and prepare scratch (mkdir +
// size-capped tmpfs); the rest are applied in order. Returns the first failure.
std::optional<MountFailure> apply_mount_plan(const MountPlan& plan) noexcept;

// pivot_root into plan.new_root, detach the old root (umount2 MNT_DETACH; the
// pivot_root(".", ".") form needs no put_old directory), chdir("/").
std::optional<MountFailure> enter_rootfs(const MountPlan& plan) noexcept;

// Host side, after the run (teardown, stale cleanup): unmounts anything still
// mounted at or below scratch_dir in the caller's mount namespace, then removes
// the directory tree. A missing scratch_dir is fine. Throws SysError if a mount
// cannot be removed (and then deletes nothing, so no bind-mounted host data is touched).
void remove_scratch(const std::string& scratch_dir);

}  // namespace corral::rootfs
