// Unit tests of the rootfs plan: no root, nothing mounted. They check the
// order and flags that apply_mount_plan relies on, and the exact messages
// users get for bad --rootfs / --workspace values.
#include <doctest/doctest.h>
#include <sys/sysmacros.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "base/sys_error.hpp"
#include "rootfs/minimal_etc.hpp"
#include "rootfs/mount_plan.hpp"

namespace fs = std::filesystem;
using namespace corral::rootfs;

namespace {

// A temporary directory tree removed at scope exit.
struct ScratchTree {
    fs::path path;
    explicit ScratchTree(const std::string& name_part = "corral-rootfs-unit") {
        std::string tmpl = (fs::temp_directory_path() / (name_part + "-XXXXXX")).string();
        REQUIRE(mkdtemp(tmpl.data()) != nullptr);
        path = tmpl;
    }
    ~ScratchTree() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

RootfsSpec base_spec() {
    RootfsSpec s;
    s.scratch_dir = "/run/corral/scratch/20261130T000000Z-abcdef";
    s.agent_uid = 1900000007;
    s.agent_gid = 1900000007;
    s.hostname = "corral-abcdef";
    return s;
}

std::string usage_error_of(const RootfsSpec& spec) {
    try {
        plan_rootfs(spec);
    } catch (const corral::UsageError& e) {
        return e.what();
    }
    return "(no error)";
}

std::string parent_of(const std::string& p) {
    auto slash = p.rfind('/');
    return slash == 0 ? "/" : p.substr(0, slash);
}

bool at_or_below(const std::string& path, const std::string& dir) {
    return dir == "/" || path == dir || (path.rfind(dir + "/", 0) == 0);
}

// The mounts that hold device nodes: /dev's tmpfs (the mknod'ed nodes) and devpts.
bool is_device_mount(const std::string& target) { return target == "/dev" || target == "/dev/pts"; }

std::size_t index_of_root_mount(const MountPlan& plan) {
    for (std::size_t i = 0; i < plan.ops.size(); ++i)
        if ((plan.ops[i].kind == MountKind::Mount || plan.ops[i].kind == MountKind::Overlay) && !plan.ops[i].in_root &&
            plan.ops[i].target == plan.new_root)
            return i;
    return plan.ops.size();
}

const MountOp* find_op(const MountPlan& plan, MountKind kind, const std::string& target) {
    for (const auto& op : plan.ops)
        if (op.kind == kind && op.in_root && op.target == target) return &op;
    return nullptr;
}

// The structural rules every plan must follow (both modes).
void check_plan_invariants(const MountPlan& plan) {
    REQUIRE(!plan.ops.empty());
    // 1. Propagation is cut first.
    CHECK(plan.ops[0].kind == MountKind::Mount);
    CHECK(plan.ops[0].target == "/");
    CHECK_FALSE(plan.ops[0].in_root);
    CHECK(plan.ops[0].flags == (MS_REC | MS_PRIVATE));

    // 2. The root exists before anything inside it is touched.
    const std::size_t root_at = index_of_root_mount(plan);
    REQUIRE(root_at < plan.ops.size());
    for (std::size_t i = 0; i < root_at; ++i) CHECK_FALSE(plan.ops[i].in_root);
    for (std::size_t i = 0; i < plan.ops.size(); ++i)
        if (!plan.ops[i].in_root) {
            INFO(describe(plan.ops[i]));
            CHECK((at_or_below(plan.ops[i].target, plan.scratch_dir) || i == 0 || plan.ops[i].kind == MountKind::MakeDir));
        }

    std::set<std::string> made_dirs = {"/"}, made_files, mounted;
    std::set<std::string> host_dirs;
    for (std::size_t i = 0; i < plan.ops.size(); ++i) {
        const MountOp& op = plan.ops[i];
        INFO("op ", i, ": ", describe(op));
        if (!op.in_root) {
            if (op.kind == MountKind::MakeDir) {
                // Host-side directories: parents first.
                std::string parent = parent_of(op.target);
                CHECK((parent == "/" || host_dirs.count(parent) || parent == "/run"));
                host_dirs.insert(op.target);
            }
            if (op.kind == MountKind::WriteFile) CHECK(host_dirs.count(parent_of(op.target)));
            continue;
        }
        const bool under_mounted_proc = at_or_below(op.target, "/proc") && mounted.count("/proc");
        switch (op.kind) {
            case MountKind::MakeDir:
            case MountKind::MakeFile:
            case MountKind::MakeNode:
            case MountKind::Symlink:
            case MountKind::WriteFile:
                // 3. Parents before children.
                CHECK(made_dirs.count(parent_of(op.target)));
                (op.kind == MountKind::MakeDir ? made_dirs : made_files).insert(op.target);
                if (op.kind == MountKind::Symlink) made_files.insert(op.target);
                break;
            case MountKind::AppendFile:
                CHECK(op.optional);  // only into an image's existing files
                break;
            case MountKind::Mount:
            case MountKind::Bind:
            case MountKind::AttachTree:
                // 4. Targets created before use (or provided by the fresh /proc).
                CHECK((made_dirs.count(op.target) || made_files.count(op.target) || under_mounted_proc));
                mounted.insert(op.target);
                break;
            case MountKind::Remount:
                CHECK((mounted.count(op.target) || op.target == "/"));
                break;
            case MountKind::Overlay:
                FAIL("an image's overlay is mounted on the host path of the new root, never in the box");
                break;
        }
        // 6. Every bind is immediately followed by the remount that sets its flags.
        if (op.kind == MountKind::Bind || op.kind == MountKind::AttachTree) {
            REQUIRE(i + 1 < plan.ops.size());
            const MountOp& next = plan.ops[i + 1];
            CHECK(next.kind == MountKind::Remount);
            CHECK(next.target == op.target);
            CHECK(next.flags == op.flags);
            CHECK(next.optional == op.optional);
        }
        // 7. nosuid everywhere; nodev everywhere but /dev and devpts (which get noexec).
        if (op.kind == MountKind::Mount || op.kind == MountKind::Remount || op.kind == MountKind::Bind ||
            op.kind == MountKind::AttachTree) {
            CHECK((op.flags & MS_NOSUID));
            if (is_device_mount(op.target)) CHECK((op.flags & MS_NOEXEC));
            else CHECK((op.flags & MS_NODEV));
        }
    }
    // 5. No mount lands on an ancestor of an earlier mount.
    std::vector<std::string> order;
    for (const auto& op : plan.ops)
        if (op.in_root && (op.kind == MountKind::Mount || op.kind == MountKind::Bind || op.kind == MountKind::AttachTree))
            order.push_back(op.target);
    for (std::size_t a = 0; a < order.size(); ++a)
        for (std::size_t b = a + 1; b < order.size(); ++b) {
            INFO(order[b], " is mounted after ", order[a]);
            CHECK_FALSE((order[b] != order[a] && at_or_below(order[a], order[b])));
        }
    // 8. Read-write only where the box is meant to write.
    static const std::set<std::string> writable = {"/workspace", "/tmp", "/dev/shm", "/dev/pts", "/proc"};
    for (const auto& op : plan.ops) {
        if (!op.in_root || op.kind != MountKind::Remount) continue;
        INFO(describe(op));
        if (op.target.rfind("/home/", 0) == 0 || writable.count(op.target)) continue;
        CHECK((op.flags & MS_RDONLY));
    }
}

}  // namespace

TEST_CASE("host mode: private propagation, scratch tmpfs, fresh root, read-only host dirs") {
    RootfsSpec spec = base_spec();
    MountPlan plan = plan_rootfs(spec);
    check_plan_invariants(plan);
    CHECK(plan.new_root == spec.scratch_dir + "/root");
    CHECK(plan.scratch_dir == spec.scratch_dir);

    // Scratch: created root-only, then a size-capped tmpfs.
    bool saw_scratch_tmpfs = false;
    for (const auto& op : plan.ops)
        if (!op.in_root && op.kind == MountKind::Mount && op.target == spec.scratch_dir) {
            saw_scratch_tmpfs = true;
            CHECK(op.fstype == "tmpfs");
            CHECK(op.data == "mode=0700,size=" + std::to_string(default_scratch_size_bytes));
        }
    CHECK(saw_scratch_tmpfs);

    // /usr is bound read-only; the top-level dirs mirror the host (symlinks stay symlinks).
    const MountOp* usr = find_op(plan, MountKind::Bind, "/usr");
    REQUIRE(usr);
    CHECK(usr->source == "/usr");
    CHECK((usr->flags & (MS_RDONLY | MS_NOSUID | MS_NODEV)) == (MS_RDONLY | MS_NOSUID | MS_NODEV));
    for (const char* top : {"/bin", "/sbin", "/lib", "/lib64"}) {
        INFO(top);
        struct stat st {};
        if (lstat(top, &st) != 0) continue;
        if (S_ISLNK(st.st_mode)) {
            const MountOp* link = find_op(plan, MountKind::Symlink, top);
            REQUIRE(link);
            CHECK(link->source == fs::read_symlink(top).string());
            CHECK_FALSE(find_op(plan, MountKind::Bind, top));
        } else {
            CHECK(find_op(plan, MountKind::Bind, top));
        }
    }

    // The generated /etc: the agent's account, localhost and our hostname, no DNS.
    const MountOp* passwd = find_op(plan, MountKind::WriteFile, "/etc/passwd");
    REQUIRE(passwd);
    CHECK(passwd->data.find("agent:x:1900000007:1900000007:corral agent:/home/agent:/bin/sh\n") != std::string::npos);
    CHECK(passwd->data.rfind("root:x:0:0:", 0) == 0);
    const MountOp* hosts = find_op(plan, MountKind::WriteFile, "/etc/hosts");
    REQUIRE(hosts);
    CHECK(hosts->data.find("127.0.0.1\tlocalhost\n") != std::string::npos);
    CHECK(hosts->data.find("::1\tlocalhost") != std::string::npos);
    CHECK(hosts->data.find("127.0.1.1\tcorral-abcdef\n") != std::string::npos);
    REQUIRE(find_op(plan, MountKind::WriteFile, "/etc/resolv.conf"));
    CHECK(find_op(plan, MountKind::WriteFile, "/etc/resolv.conf")->data.find("nameserver 127.0.0.1\n") != std::string::npos);
    REQUIRE(find_op(plan, MountKind::WriteFile, "/etc/hostname"));
    CHECK(find_op(plan, MountKind::WriteFile, "/etc/hostname")->data == "corral-abcdef\n");
    CHECK(find_op(plan, MountKind::WriteFile, "/etc/nsswitch.conf"));

    // Nothing else of the host's /etc: only these are ever bound from it.
    static const std::set<std::string> allowed_etc = {"/etc/ssl/certs", "/etc/ca-certificates", "/etc/alternatives",
                                                      "/etc/ld.so.cache"};
    for (const auto& op : plan.ops) {
        if (op.kind != MountKind::Bind || op.source.rfind("/etc", 0) != 0) continue;
        INFO(describe(op));
        CHECK(allowed_etc.count(op.source));
    }
    for (const auto& op : plan.ops) CHECK(op.target.find("shadow") == std::string::npos);
    if (fs::is_directory("/etc/ssl/certs")) CHECK(find_op(plan, MountKind::Bind, "/etc/ssl/certs"));

    // The agent's home is on scratch, owned by the agent, writable, nosuid/nodev.
    const MountOp* home = find_op(plan, MountKind::Bind, "/home/agent");
    REQUIRE(home);
    CHECK(home->source == spec.scratch_dir + "/home");
    CHECK_FALSE((home->flags & MS_RDONLY));
    bool home_owned = false;
    for (const auto& op : plan.ops)
        if (!op.in_root && op.target == spec.scratch_dir + "/home")
            home_owned = op.set_owner && op.uid == spec.agent_uid && op.gid == spec.agent_gid && op.mode == 0700;
    CHECK(home_owned);

    // Without --workspace, /workspace is an empty directory of the agent's on scratch.
    const MountOp* ws = find_op(plan, MountKind::Bind, "/workspace");
    REQUIRE(ws);
    CHECK(ws->source == spec.scratch_dir + "/workspace");
    CHECK_FALSE((ws->flags & MS_RDONLY));

    // No /sys mount at all; the root is made read-only as the very last step.
    for (const auto& op : plan.ops) CHECK_FALSE((op.in_root && op.target.rfind("/sys/", 0) == 0));
    CHECK_FALSE(find_op(plan, MountKind::Mount, "/sys"));
    CHECK(plan.ops.back().kind == MountKind::Remount);
    CHECK(plan.ops.back().target == "/");
    CHECK(plan.ops.back().flags == (MS_RDONLY | MS_NOSUID | MS_NODEV));
}

TEST_CASE("both modes: /proc, /dev, /tmp and /workspace") {
    ScratchTree image, ws;
    for (bool host_mode : {true, false}) {
        CAPTURE(host_mode);
        RootfsSpec spec = base_spec();
        if (!host_mode) spec.image = image.path.string();
        spec.workspace = ws.path.string();
        spec.tmp_size_bytes = 1 << 20;
        MountPlan plan = plan_rootfs(spec);
        check_plan_invariants(plan);

        const MountOp* proc = find_op(plan, MountKind::Mount, "/proc");
        REQUIRE(proc);
        CHECK(proc->fstype == "proc");
        CHECK(proc->flags == (MS_NOSUID | MS_NODEV | MS_NOEXEC));
        for (const char* p : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}) {
            INFO(p);
            const MountOp* ro = find_op(plan, MountKind::Remount, p);
            REQUIRE(ro);
            CHECK((ro->flags & MS_RDONLY));
            CHECK(find_op(plan, MountKind::Bind, p)->source.empty());  // bound onto itself
        }

        const MountOp* dev = find_op(plan, MountKind::Mount, "/dev");
        REQUIRE(dev);
        CHECK(dev->fstype == "tmpfs");
        CHECK_FALSE((dev->flags & MS_NODEV));  // it holds the nodes; read-only below
        CHECK((dev->flags & MS_NOEXEC));
        const MountOp* dev_ro = find_op(plan, MountKind::Remount, "/dev");
        REQUIRE(dev_ro);
        CHECK((dev_ro->flags & MS_RDONLY));
        const std::map<std::string, dev_t> nodes = {{"/dev/null", makedev(1, 3)},    {"/dev/zero", makedev(1, 5)},
                                                    {"/dev/full", makedev(1, 7)},    {"/dev/random", makedev(1, 8)},
                                                    {"/dev/urandom", makedev(1, 9)}, {"/dev/tty", makedev(5, 0)}};
        std::size_t node_ops = 0;
        for (const auto& op : plan.ops) node_ops += op.kind == MountKind::MakeNode;
        CHECK(node_ops == nodes.size());  // nothing but these six
        for (const auto& node : nodes) {
            // Named copies: clang 14 cannot capture structured bindings in doctest's lambdas.
            const std::string& n = node.first;
            const dev_t rdev = node.second;
            INFO(n);
            const MountOp* m = find_op(plan, MountKind::MakeNode, n);
            REQUIRE(m);
            CHECK(m->rdev == rdev);
            CHECK(m->mode == 0666);
            CHECK_FALSE(find_op(plan, MountKind::Bind, n));  // never a host bind
        }
        const MountOp* pts = find_op(plan, MountKind::Mount, "/dev/pts");
        REQUIRE(pts);
        CHECK(pts->fstype == "devpts");
        CHECK(pts->data.find("newinstance") != std::string::npos);
        CHECK(pts->data.find("ptmxmode=0666") != std::string::npos);
        CHECK(pts->data.find("max=" + std::to_string(kBoxPtyMax)) != std::string::npos);
        REQUIRE(find_op(plan, MountKind::Symlink, "/dev/ptmx"));
        CHECK(find_op(plan, MountKind::Symlink, "/dev/ptmx")->source == "pts/ptmx");
        CHECK(find_op(plan, MountKind::Symlink, "/dev/fd")->source == "/proc/self/fd");
        CHECK(find_op(plan, MountKind::Symlink, "/dev/stderr")->source == "/proc/self/fd/2");
        const MountOp* shm = find_op(plan, MountKind::Mount, "/dev/shm");
        REQUIRE(shm);
        CHECK(shm->data == "mode=1777,size=" + std::to_string(default_shm_size_bytes));

        const MountOp* tmp = find_op(plan, MountKind::Mount, "/tmp");
        REQUIRE(tmp);
        CHECK(tmp->fstype == "tmpfs");
        CHECK(tmp->data == "mode=1777,size=1048576");

        // The workspace is ID-mapped: its on-disk owner and group show as the agent's.
        CHECK_FALSE(find_op(plan, MountKind::Bind, "/workspace"));
        const MountOp* w = find_op(plan, MountKind::AttachTree, "/workspace");
        REQUIRE(w);
        CHECK(w->source == ws.path.string());
        CHECK_FALSE((w->flags & MS_RDONLY));
        CHECK((w->flags & (MS_NOSUID | MS_NODEV)) == (MS_NOSUID | MS_NODEV));
        struct stat st {};
        REQUIRE(stat(ws.path.c_str(), &st) == 0);
        CHECK(w->disk_uid == st.st_uid);
        CHECK(w->disk_gid == st.st_gid);
        CHECK(w->uid == spec.agent_uid);
        CHECK(w->gid == spec.agent_gid);
        CHECK(w->tree_fd == -1);  // made by prepare_idmapped_trees(), in the supervisor
        CHECK(describe(*w).find("ID-mapped") != std::string::npos);
    }
}

TEST_CASE("image mode: the image is only ever an overlay's lower layer") {
    ScratchTree image;
    fs::create_directories(image.path / "sub");
    fs::create_symlink(image.path / "sub", image.path / "link");
    RootfsSpec spec = base_spec();
    spec.image = (image.path / "link").string();  // resolved: overlayfs gets the real path
    MountPlan plan = plan_rootfs(spec);
    check_plan_invariants(plan);

    std::size_t root_at = index_of_root_mount(plan);
    REQUIRE(root_at < plan.ops.size());
    const MountOp& overlay = plan.ops[root_at];
    CHECK(overlay.fstype == "overlay");
    CHECK(overlay.data == "lowerdir=" + fs::canonical(image.path / "sub").string() + ",upperdir=" + spec.scratch_dir +
                              "/upper,workdir=" + spec.scratch_dir + "/work");
    CHECK((overlay.flags & (MS_NOSUID | MS_NODEV)) == (MS_NOSUID | MS_NODEV));
    // No op writes or mounts at a host path inside the image.
    for (const auto& op : plan.ops) {
        INFO(describe(op));
        if (!op.in_root) CHECK_FALSE(at_or_below(op.target, image.path.string()));
        if (op.kind == MountKind::Bind) CHECK_FALSE(at_or_below(op.source, image.path.string()));
    }
    // No host /usr or /etc in image mode; the agent's account is appended (copied up) to the image's.
    CHECK_FALSE(find_op(plan, MountKind::Bind, "/usr"));
    CHECK_FALSE(find_op(plan, MountKind::WriteFile, "/etc/passwd"));
    const MountOp* passwd = find_op(plan, MountKind::AppendFile, "/etc/passwd");
    REQUIRE(passwd);
    CHECK(passwd->data == "agent:x:1900000007:1900000007:corral agent:/home/agent:/bin/sh\n");
    const MountOp* home = find_op(plan, MountKind::MakeDir, "/home/agent");
    REQUIRE(home);
    CHECK(home->set_owner);
    CHECK(home->uid == spec.agent_uid);
    // The root stays writable (writes go to the upper layer on scratch): no final read-only remount.
    CHECK_FALSE(find_op(plan, MountKind::Remount, "/"));
    // Without --workspace, /workspace is the agent's directory in the overlay (upper layer).
    CHECK_FALSE(find_op(plan, MountKind::Bind, "/workspace"));
    const MountOp* ws = find_op(plan, MountKind::MakeDir, "/workspace");
    REQUIRE(ws);
    CHECK(ws->set_owner);
    CHECK(ws->uid == spec.agent_uid);
}

TEST_CASE("image:NAME: the layers are the overlay's lower layers, top first; the box's /etc files are corral's") {
    ScratchTree store;
    RootfsSpec spec = base_spec();
    spec.image = "image:demo";
    for (const char* l : {"aaa", "bbb", "ccc"}) {
        fs::create_directories(store.path / l);
        spec.image_layers.push_back((store.path / l).string());  // bottom first, as stored
    }
    spec.image_working_dir = "/srv/app";
    MountPlan plan = plan_rootfs(spec);
    check_plan_invariants(plan);
    const MountOp& overlay = plan.ops[index_of_root_mount(plan)];
    REQUIRE(overlay.kind == MountKind::Overlay);
    CHECK(overlay.lowers == std::vector<std::string>{(store.path / "ccc").string(), (store.path / "bbb").string(),
                                                     (store.path / "aaa").string()});
    CHECK(overlay.source == spec.scratch_dir + "/upper");
    CHECK(overlay.data == spec.scratch_dir + "/work");
    CHECK((overlay.flags & (MS_NOSUID | MS_NODEV)) == (MS_NOSUID | MS_NODEV));
    // The merged root is root's 0755 whatever a layer's own root says.
    bool upper_found = false;
    for (const auto& op : plan.ops)
        if (!op.in_root && op.kind == MountKind::MakeDir && op.target == spec.scratch_dir + "/upper") {
            upper_found = true;
            CHECK(op.set_owner);
            CHECK(op.mode == 0755);
            CHECK(op.uid == 0);
        }
    CHECK(upper_found);
    for (const char* f : {"/etc/hosts", "/etc/hostname", "/etc/resolv.conf"}) {
        const MountOp* w = find_op(plan, MountKind::WriteFile, f);
        REQUIRE(w);
        CHECK(w->replace);
    }
    CHECK(find_op(plan, MountKind::WriteFile, "/etc/hosts")->data == hosts_file(spec));
    CHECK(find_op(plan, MountKind::WriteFile, "/etc/hostname")->data == "corral-abcdef\n");
    CHECK(find_op(plan, MountKind::MakeDir, "/srv"));
    CHECK(find_op(plan, MountKind::MakeDir, "/srv/app"));
    CHECK(image_lookup_dirs(spec) == overlay.lowers);
    CHECK(describe(overlay).find("3 lower layers") != std::string::npos);

    // The same /etc files for an image directory.
    RootfsSpec dir_spec = base_spec();
    dir_spec.image = (store.path / "aaa").string();
    MountPlan dir_plan = plan_rootfs(dir_spec);
    const MountOp* resolv = find_op(dir_plan, MountKind::WriteFile, "/etc/resolv.conf");
    REQUIRE(resolv);
    CHECK(resolv->replace);
    CHECK(resolv->data == resolv_conf());
}

TEST_CASE("image:NAME: bad layer lists are refused") {
    ScratchTree store;
    RootfsSpec spec = base_spec();
    spec.image = "image:demo";
    CHECK(usage_error_of(spec) == "--rootfs image:demo: the image has no layers");
    spec.image_layers = {"layers/aaa"};
    CHECK(usage_error_of(spec) == "--rootfs image:demo: layer directory \"layers/aaa\": expected a normalized absolute path");
    spec.image_layers = {(store.path / "missing").string()};
    CHECK(usage_error_of(spec) == "--rootfs image:demo " + (store.path / "missing").string() + ": no such directory");
    spec.image_layers.assign(kMaxImageLayers + 1, store.path.string());
    CHECK(usage_error_of(spec).find("at most 128 are mounted") != std::string::npos);
    spec.image_layers = {store.path.string()};
    spec.image_working_dir = "/proc/x";
    CHECK(usage_error_of(spec).find("WorkingDir \"/proc/x\"") != std::string::npos);
}

TEST_CASE("extra files are staged on scratch and bound read-only") {
    RootfsSpec spec = base_spec();
    spec.extra_files.push_back({"/etc/ssl/certs/ca-certificates.crt", "BUNDLE", 0644});
    spec.extra_files.push_back({"/etc/corral/ca.pem", "CA", 0640});
    MountPlan plan = plan_rootfs(spec);
    check_plan_invariants(plan);
    const MountOp* b = find_op(plan, MountKind::Bind, "/etc/corral/ca.pem");
    REQUIRE(b);
    CHECK(b->source == spec.scratch_dir + "/files/1");
    CHECK((b->flags & MS_RDONLY));
    bool staged = false;
    for (const auto& op : plan.ops)
        if (!op.in_root && op.kind == MountKind::WriteFile && op.target == spec.scratch_dir + "/files/1")
            staged = op.data == "CA" && op.mode == 0640;
    CHECK(staged);
    CHECK(find_op(plan, MountKind::MakeDir, "/etc/corral"));
    // The bundle overlays the host's file in place: it is bound after the trust store itself.
    std::size_t store = 0, bundle = 0;
    for (std::size_t i = 0; i < plan.ops.size(); ++i) {
        if (plan.ops[i].kind == MountKind::Bind && plan.ops[i].target == "/etc/ssl/certs") store = i;
        if (plan.ops[i].kind == MountKind::Bind && plan.ops[i].target == "/etc/ssl/certs/ca-certificates.crt") bundle = i;
    }
    CHECK(bundle > 0);
    if (fs::is_directory("/etc/ssl/certs")) CHECK(store < bundle);
}

TEST_CASE("bad --rootfs and --workspace values name the option, the value and the problem") {
    ScratchTree dir;
    std::ofstream(dir.path / "file") << "x";
    RootfsSpec spec = base_spec();

    spec.image = "/nonexistent/corral-image";
    CHECK(usage_error_of(spec) == "--rootfs /nonexistent/corral-image: no such directory");
    spec.image = (dir.path / "file").string();
    CHECK(usage_error_of(spec) == "--rootfs " + spec.image + ": is not a directory");
    spec.image = "images/debian";
    CHECK(usage_error_of(spec) == "--rootfs images/debian: expected \"host\" or an absolute path to a directory");
    spec.image = "";
    CHECK(usage_error_of(spec) == "--rootfs : expected \"host\" or an absolute path to a directory");
    spec.image = "/";
    CHECK(usage_error_of(spec) == "--rootfs /: the host's root directory cannot be an image; use --rootfs host");
    fs::create_directory(dir.path / "a,b");
    spec.image = (dir.path / "a,b").string();
    CHECK(usage_error_of(spec).find("overlayfs cannot take a path containing ',', ':' or '\\'") != std::string::npos);
    spec.image = dir.path.string();
    spec.scratch_dir = (dir.path / "scratch" / "run").string();
    CHECK(usage_error_of(spec) == "--rootfs " + spec.image + ": contains corral's scratch directory " + spec.scratch_dir +
                                      "; use an image directory outside it");

    spec = base_spec();
    spec.workspace = "/nonexistent/ws";
    CHECK(usage_error_of(spec) == "--workspace /nonexistent/ws: no such directory");
    spec.workspace = (dir.path / "file").string();
    CHECK(usage_error_of(spec) == "--workspace " + *spec.workspace + ": is not a directory");
    spec.workspace = "ws";
    CHECK(usage_error_of(spec) == "--workspace ws: expected an absolute path to a directory");
    spec.workspace = "/";
    CHECK(usage_error_of(spec) == "--workspace /: the host's root directory cannot be shown to the box; use a project directory");
    // Never where the supervisor keeps its records: not the dir, not above it, not inside it.
    fs::create_directories(dir.path / "state" / "runs" / "r1");
    spec.protected_dirs = {(dir.path / "state").string(), "/run/corral"};
    for (const fs::path& ws : {dir.path / "state", dir.path, dir.path / "state" / "runs"}) {
        spec.workspace = ws.string();
        CHECK(usage_error_of(spec) == "--workspace " + ws.string() + ": overlaps " + (dir.path / "state").string() +
                                          " (corral's records and the host's /proc, /sys and /dev are off limits to the box); use a directory outside it");
    }
    fs::create_directories(dir.path / "project");
    spec.workspace = (dir.path / "project").string();
    CHECK_NOTHROW(plan_rootfs(spec));
    spec.protected_dirs.clear();

    // The workspace is writable: it may not overlap the image in either direction.
    fs::create_directories(dir.path / "image" / "srv");
    spec = base_spec();
    spec.image = (dir.path / "image").string();
    spec.workspace = (dir.path / "image" / "srv").string();
    CHECK(usage_error_of(spec) == "--workspace " + *spec.workspace + ": is inside the image " + spec.image +
                                      ", which must stay read-only; use a directory outside it");
    spec.workspace = spec.image;
    CHECK(usage_error_of(spec) == "--workspace " + *spec.workspace + ": is inside the image " + spec.image +
                                      ", which must stay read-only; use a directory outside it");
    spec.workspace = dir.path.string();
    CHECK(usage_error_of(spec) == "--workspace " + *spec.workspace + ": contains the image " + spec.image +
                                      ", which must stay read-only; use a directory that does not contain it");
    fs::create_directories(dir.path / "ws");
    spec.workspace = (dir.path / "ws").string();
    CHECK_NOTHROW(plan_rootfs(spec));
}

TEST_CASE("bad internal inputs are refused rather than weakening the box") {
    RootfsSpec spec = base_spec();
    spec.agent_uid = 0;
    CHECK(usage_error_of(spec) == "agent UID/GID 0/1900000007: 0 is root; the agent must run with an unprivileged UID and GID");
    spec = base_spec();
    spec.tmp_size_bytes = 0;
    CHECK(usage_error_of(spec) == "/tmp size 0: expected at least one byte (0 would mean unlimited)");
    spec = base_spec();
    spec.hostname = "bad host\n127.0.0.1 evil";
    CHECK(usage_error_of(spec).rfind("--hostname bad host", 0) == 0);
    spec = base_spec();
    spec.agent_name = "root";
    CHECK(usage_error_of(spec).find("agent name \"root\"") == 0);
    spec = base_spec();
    spec.scratch_dir = "run/corral";
    CHECK(usage_error_of(spec).rfind("scratch directory \"run/corral\"", 0) == 0);
    spec = base_spec();
    spec.scratch_dir = "/run/corral/scratch/../x";
    CHECK(usage_error_of(spec).rfind("scratch directory", 0) == 0);

    for (const char* bad : {"etc/x", "/etc/../x", "/etc//x", "/etc/x/", "/"}) {
        spec = base_spec();
        spec.extra_files.push_back({bad, "", 0644});
        CHECK(usage_error_of(spec) == "extra file \"" + std::string(bad) +
                                          "\": expected an absolute path without '.', '..', '//' or a trailing '/'");
    }
    for (const char* under : {"/workspace/x", "/proc/x", "/dev/x", "/sys/x", "/workspace"}) {
        spec = base_spec();
        spec.extra_files.push_back({under, "", 0644});
        CHECK(usage_error_of(spec).find(": may not be placed under /") != std::string::npos);
    }
    spec = base_spec();
    spec.extra_files.push_back({"/etc/x", "", 04755});
    CHECK(usage_error_of(spec) == "extra file /etc/x: mode must be within 0777 (no setuid, setgid or sticky bits)");
    spec = base_spec();
    spec.extra_files.push_back({"/etc/x", "", 0644});
    spec.extra_files.push_back({"/etc/x", "", 0644});
    CHECK(usage_error_of(spec) == "extra file /etc/x: given twice");
}

TEST_CASE("describe names the call and the paths") {
    RootfsSpec spec = base_spec();
    MountPlan plan = plan_rootfs(spec);
    CHECK(describe(plan.ops[0]) == "mount(/, MS_REC|MS_PRIVATE)");
    CHECK(describe(*find_op(plan, MountKind::Mount, "/proc")) == "mount(proc -> box:/proc, proc, MS_NOSUID|MS_NODEV|MS_NOEXEC)");
    CHECK(describe(*find_op(plan, MountKind::Bind, "/usr")) == "mount(/usr -> box:/usr, MS_BIND)");
    CHECK(describe(*find_op(plan, MountKind::MakeDir, "/tmp")) == "mkdir(box:/tmp, 01777)");
    CHECK(describe(*find_op(plan, MountKind::Symlink, "/dev/ptmx")) == "symlink(box:/dev/ptmx -> pts/ptmx)");
    const MountOp* usr_ro = find_op(plan, MountKind::Remount, "/usr");
    REQUIRE(usr_ro);
    CHECK(describe(*usr_ro).rfind("mount(box:/usr, MS_RDONLY|MS_NOSUID|MS_NODEV", 0) == 0);

    std::size_t proc_index = 0;
    while (!(plan.ops[proc_index].kind == MountKind::Mount && plan.ops[proc_index].target == "/proc")) ++proc_index;
    CHECK(describe_failure(plan, {proc_index, EPERM, FailedCall::mount}) ==
          "rootfs setup: mount(proc -> box:/proc, proc, MS_NOSUID|MS_NODEV|MS_NOEXEC) failed in mount: " + corral::errno_text(EPERM));
    CHECK(describe_failure(plan, {plan.ops.size(), EINVAL, FailedCall::pivot_root}) ==
          "rootfs setup: pivot_root into " + plan.new_root + " failed in pivot_root: " + corral::errno_text(EINVAL));
}

TEST_CASE("remove_scratch: a missing directory is fine, an unmounted tree is removed") {
    ScratchTree dir;
    CHECK_NOTHROW(remove_scratch((dir.path / "never-created").string()));
    fs::create_directories(dir.path / "scratch" / "upper" / "deep");
    std::ofstream(dir.path / "scratch" / "upper" / "deep" / "f") << "x";
    remove_scratch((dir.path / "scratch").string());
    CHECK_FALSE(fs::exists(dir.path / "scratch"));
    CHECK(fs::exists(dir.path));
    CHECK_THROWS_AS(remove_scratch("relative/dir"), corral::UsageError);
}

TEST_CASE("--bind and --ro-bind: an ID-mapped tree at the target, its parents made, read-only for --ro-bind") {
    ScratchTree dir;
    fs::create_directories(dir.path / "data");
    fs::create_directories(dir.path / "repo" / ".git");
    RootfsSpec spec = base_spec();
    spec.binds = {{(dir.path / "data").string(), "/opt/data", false, "--bind"},
                  {(dir.path / "repo" / ".git").string(), "/srv/repo/.git", true, "--ro-bind"}};
    MountPlan plan = plan_rootfs(spec);
    const MountOp* rw = find_op(plan, MountKind::AttachTree, "/opt/data");
    REQUIRE(rw);
    CHECK(rw->source == (dir.path / "data").string());
    CHECK(rw->option == "--bind");
    CHECK(rw->uid == spec.agent_uid);
    CHECK((rw->flags & MS_RDONLY) == 0);
    const MountOp* ro = find_op(plan, MountKind::AttachTree, "/srv/repo/.git");
    REQUIRE(ro);
    CHECK(ro->option == "--ro-bind");
    CHECK((ro->flags & MS_RDONLY) != 0);
    for (const char* parent : {"/opt", "/srv", "/srv/repo", "/srv/repo/.git"}) {
        CAPTURE(parent);
        CHECK(find_op(plan, MountKind::MakeDir, parent));
    }
    // Its remount keeps read-only, nosuid and nodev; the root is made read-only after it.
    auto at = [&](MountKind k, const std::string& t) {
        for (std::size_t i = 0; i < plan.ops.size(); ++i)
            if (plan.ops[i].kind == k && plan.ops[i].target == t) return i;
        return plan.ops.size();
    };
    const std::size_t attach = at(MountKind::AttachTree, "/srv/repo/.git");
    REQUIRE(attach + 1 < plan.ops.size());
    CHECK(plan.ops[attach + 1].kind == MountKind::Remount);
    CHECK((plan.ops[attach + 1].flags & (MS_RDONLY | MS_NOSUID | MS_NODEV)) == (MS_RDONLY | MS_NOSUID | MS_NODEV));
    std::size_t root_ro = plan.ops.size();
    for (std::size_t i = 0; i < plan.ops.size(); ++i)
        if (plan.ops[i].kind == MountKind::Remount && plan.ops[i].target == "/") root_ro = i;
    CHECK(attach < root_ro);
}

TEST_CASE("--bind sources get the workspace's refusals; targets are never equal or nested") {
    ScratchTree dir;
    fs::create_directories(dir.path / "a" / "b");
    fs::create_directories(dir.path / "state");
    RootfsSpec spec = base_spec();
    spec.binds = {{"/nonexistent/src", "/x", false, "--bind"}};
    CHECK(usage_error_of(spec) == "--bind /nonexistent/src: no such directory");
    spec.binds = {{"/", "/x", false, "--bind"}};
    CHECK(usage_error_of(spec) == "--bind /: the host's root directory cannot be shown to the box; use a project directory");
    spec.protected_dirs = {(dir.path / "state").string()};
    spec.binds = {{dir.path.string(), "/x", true, "--ro-bind"}};
    CHECK(usage_error_of(spec).starts_with("--ro-bind " + dir.path.string() + ": overlaps " + (dir.path / "state").string()));
    spec.protected_dirs.clear();
    spec.binds = {{(dir.path / "a").string(), "/x", false, "--bind"}, {(dir.path / "a" / "b").string(), "/x", true, "--ro-bind"}};
    CHECK(usage_error_of(spec) == "--ro-bind " + (dir.path / "a" / "b").string() + ":/x: --bind " + (dir.path / "a").string() +
                                      " already goes to /x; allowed: one bind per target");
    spec.binds = {{(dir.path / "a").string(), "/x", false, "--bind"}, {(dir.path / "a" / "b").string(), "/x/y", false, "--bind"}};
    CHECK(usage_error_of(spec).find(": overlaps --bind " + (dir.path / "a").string() + ":/x") != std::string::npos);
    spec.binds = {{(dir.path / "a").string(), "/usr/share/certs", false, "--bind"}};
    spec.extra_files = {{"/usr/share/certs/bundle.pem", "pem", 0644}};
    CHECK(usage_error_of(spec) == "--bind " + (dir.path / "a").string() + ":/usr/share/certs: would hold "
                                  "/usr/share/certs/bundle.pem, a file corral places in the box; allowed: a target outside it");
    spec.extra_files.clear();
    spec.binds = {{(dir.path / "a").string(), "/proc/x", false, "--bind"}};
    CHECK(usage_error_of(spec).starts_with("--bind: target \"/proc/x\": is at or below /proc"));
    // The image stays read-only: no bind into or around it.
    fs::create_directories(dir.path / "image");
    spec = base_spec();
    spec.image = (dir.path / "image").string();
    spec.binds = {{dir.path.string(), "/x", false, "--bind"}};
    std::string e = usage_error_of(spec);
    CAPTURE(e);
    const bool named = e.find(": contains the image") != std::string::npos || e.starts_with("--rootfs");
    CHECK(named);
}
