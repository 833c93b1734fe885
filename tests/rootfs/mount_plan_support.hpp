// tests/rootfs/mount_plan_support.hpp — what the mount-plan unit tests
// share: a scratch tree, a base RootfsSpec, the usage error a spec gets, and
// the invariants every plan keeps (check_plan_invariants).
#pragma once

#include <doctest/doctest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "base/sys_error.hpp"
#include "rootfs/mount_plan.hpp"

namespace corral::rootfs::plan_test {

namespace fs = std::filesystem;

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

// --rootfs DIR exactly as given (the parse would make it absolute and
// normalised: these tests also give plan_rootfs what the parse never makes).
inline names::RootfsSource dir_source(const std::string& path) { return names::DirRootfs{path, path}; }

inline RootfsSpec base_spec() {
    RootfsSpec s;
    s.scratch_dir = "/run/corral/scratch/20261130T000000Z-abcdef";
    s.agent_uid = 1900000007;
    s.agent_gid = 1900000007;
    s.hostname = "corral-abcdef";
    return s;
}

inline std::string usage_error_of(const RootfsSpec& spec) {
    try {
        plan_rootfs(spec);
    } catch (const corral::UsageError& e) {
        return e.what();
    }
    return "(no error)";
}

inline std::string parent_of(const std::string& p) {
    auto slash = p.rfind('/');
    return slash == 0 ? "/" : p.substr(0, slash);
}

inline bool at_or_below(const std::string& path, const std::string& dir) {
    return dir == "/" || path == dir || (path.rfind(dir + "/", 0) == 0);
}

// The mounts that hold device nodes: /dev's tmpfs (the mknod'ed nodes) and devpts.
inline bool is_device_mount(const std::string& target) { return target == "/dev" || target == "/dev/pts"; }

inline std::size_t index_of_root_mount(const MountPlan& plan) {
    for (std::size_t i = 0; i < plan.ops.size(); ++i)
        if ((plan.ops[i].kind == MountKind::Mount || plan.ops[i].kind == MountKind::Overlay) && !plan.ops[i].in_root &&
            plan.ops[i].target == plan.new_root)
            return i;
    return plan.ops.size();
}

inline const MountOp* find_op(const MountPlan& plan, MountKind kind, const std::string& target) {
    for (const auto& op : plan.ops)
        if (op.kind == kind && op.in_root && op.target == target) return &op;
    return nullptr;
}

// The structural rules every plan must follow (both modes).
inline void check_plan_invariants(const MountPlan& plan) {
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
                // An image's overlay is mounted on the host path of the new root; in the box only the
                // reviewed workspace's.
                CHECK(op.review);
                CHECK(made_dirs.count(op.target));
                mounted.insert(op.target);
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

}  // namespace corral::rootfs::plan_test
