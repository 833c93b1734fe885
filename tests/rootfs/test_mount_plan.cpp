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
#include "tests/rootfs/mount_plan_support.hpp"

namespace fs = std::filesystem;
using namespace corral::rootfs;
using namespace corral::rootfs::plan_test;


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

TEST_CASE("--review: /workspace is an overlay of DIR's ID-mapped copy and the run's tmpfs, review options on") {
    ScratchTree image, ws;
    for (bool host_mode : {true, false}) {
        CAPTURE(host_mode);
        RootfsSpec spec = base_spec();
        if (!host_mode) spec.source = dir_source(image.path.string());
        spec.workspace = ws.path.string();
        spec.review = true;
        spec.scratch_size_bytes = 3 << 20;
        MountPlan plan = plan_rootfs(spec);
        check_plan_invariants(plan);
        CHECK_FALSE(find_op(plan, MountKind::AttachTree, "/workspace"));
        const MountOp* lower = nullptr;
        const MountOp* upper = nullptr;
        for (const auto& op : plan.ops) {
            if (op.kind == MountKind::AttachTree && op.target == spec.scratch_dir + "/ws-lower") lower = &op;
            if (op.kind == MountKind::AttachTree && op.target == spec.scratch_dir + "/ws-upper") upper = &op;
        }
        REQUIRE(lower);
        CHECK(lower->source == spec.workspace);
        CHECK(lower->tree_fd == -1);  // made by prepare_idmapped_trees, ID-mapped like the bound workspace
        CHECK(lower->uid == spec.agent_uid);
        REQUIRE(upper);
        CHECK(upper->option == "--review");  // prepare_idmapped_trees makes a tmpfs of this size for it
        CHECK(upper->data == std::to_string(3 << 20));
        CHECK_FALSE(upper->idmapped);
        const MountOp* overlay = find_op(plan, MountKind::Overlay, "/workspace");
        REQUIRE(overlay);
        CHECK(overlay->review);
        CHECK(overlay->lowers == std::vector<std::string>{spec.scratch_dir + "/ws-lower"});
        CHECK(overlay->source == spec.scratch_dir + "/ws-upper/upper");
        CHECK(overlay->data == spec.scratch_dir + "/ws-upper/work");
        CHECK((overlay->flags & (MS_NOSUID | MS_NODEV)) == (MS_NOSUID | MS_NODEV));
        CHECK(describe(*overlay).find("redirect_dir=off, metacopy=off, index=off") != std::string::npos);
    }
}

TEST_CASE("both modes: /proc, /dev, /tmp and /workspace") {
    ScratchTree image, ws;
    for (bool host_mode : {true, false}) {
        CAPTURE(host_mode);
        RootfsSpec spec = base_spec();
        if (!host_mode) spec.source = dir_source(image.path.string());
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
    spec.source = dir_source((image.path / "link").string());  // resolved: overlayfs gets the real path
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
    spec.source = corral::names::ImageRootfs{"demo"};
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
    dir_spec.source = dir_source((store.path / "aaa").string());
    MountPlan dir_plan = plan_rootfs(dir_spec);
    const MountOp* resolv = find_op(dir_plan, MountKind::WriteFile, "/etc/resolv.conf");
    REQUIRE(resolv);
    CHECK(resolv->replace);
    CHECK(resolv->data == resolv_conf());
}

TEST_CASE("image:NAME: bad layer lists are refused") {
    ScratchTree store;
    RootfsSpec spec = base_spec();
    spec.source = corral::names::ImageRootfs{"demo"};
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
