#include "supervisor/doctor.hpp"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include "base/fd.hpp"
#include "base/sys_error.hpp"
#include "rootfs/host_paths.hpp"
#include "rootfs/idmapped_tree.hpp"
#include "supervisor/cgroup.hpp"

namespace corral::supervisor {
namespace {

std::string failure(const char* call, int err) { return std::string(call) + ": " + errno_text(err); }

// Runs body in a forked child (so namespaces, filters and mounts it creates die with
// it) and returns "" on success or what failed. The doctor is single-threaded, so
// the child may allocate.
std::string probe_in_child(const std::function<std::string()>& body) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return failure("pipe2", errno);
    Fd read_end(fds[0]), write_end(fds[1]);
    pid_t pid = ::fork();
    if (pid < 0) return failure("fork", errno);
    if (pid == 0) {
        read_end.reset();
        std::string problem;
        try {
            problem = body();
        } catch (const std::exception& e) {
            problem = e.what();
        }
        if (!problem.empty()) {
            ssize_t ignored = ::write(write_end.get(), problem.data(), problem.size());
            (void)ignored;
        }
        ::_exit(problem.empty() ? 0 : 1);
    }
    write_end.reset();
    std::string problem;
    char buf[512];
    for (;;) {
        ssize_t n = ::read(read_end.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        problem.append(buf, static_cast<std::size_t>(n));
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) return "probe killed by signal " + std::to_string(WTERMSIG(status)) + " (" + problem + ")";
    if (WEXITSTATUS(status) != 0 && problem.empty()) return "probe failed with exit status " + std::to_string(WEXITSTATUS(status));
    return problem;
}

// Waits for a direct child; returns its exit status, or 128+signal.
int wait_child(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Check make_check(std::string feature, const std::string& problem, std::string ok_detail, std::string remedy) {
    Check c;
    c.feature = std::move(feature);
    c.ok = problem.empty();
    c.detail = c.ok ? std::move(ok_detail) : problem;
    if (!c.ok) c.remedy = std::move(remedy);
    return c;
}

std::string remedy_for_privilege(const std::string& base) {
    return ::geteuid() == 0 ? base : "run `corral doctor` as root (corral run needs root); " + base;
}

Check check_root() {
    Check c{"running as root", ::geteuid() == 0, "", ""};
    if (c.ok) {
        c.detail = "euid 0";
    } else {
        c.detail = "euid is " + std::to_string(::geteuid());
        c.remedy = "run corral as root (e.g. sudo corral ...): it creates namespaces and cgroups";
    }
    return c;
}

Check check_namespace(const char* name, int flag, const char* flag_name, const char* kconfig, const char* max_sysctl) {
    std::string problem = probe_in_child([&]() -> std::string {
        if (::unshare(flag) != 0) return failure((std::string("unshare(") + flag_name + ")").c_str(), errno);
        if (flag == CLONE_NEWPID) {
            // Only children enter a new PID namespace: the first one must be its PID 1.
            pid_t child = ::fork();
            if (child < 0) return failure("fork into new pid namespace", errno);
            if (child == 0) ::_exit(::getpid() == 1 ? 0 : 1);
            if (wait_child(child) != 0) return "the first process in the new pid namespace is not PID 1";
        }
        return "";
    });
    std::string remedy = remedy_for_privilege(std::string("build the kernel with ") + kconfig +
                                              ", check that /proc/sys/user/" + max_sysctl +
                                              " is above 0 and that no outer seccomp profile blocks unshare");
    return make_check(std::string(name) + " namespace", problem, std::string("unshare(") + flag_name + ") works",
                      remedy);
}

Check check_clone3() {
    std::string problem = probe_in_child([]() -> std::string {
        int pidfd = -1;
        clone_args args{};
        args.flags = CLONE_PIDFD;
        args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
        args.exit_signal = SIGCHLD;
        long pid = ::syscall(SYS_clone3, &args, sizeof args);
        if (pid < 0) return failure("clone3(CLONE_PIDFD)", errno);
        if (pid == 0) ::syscall(SYS_exit_group, 0);  // raw child: no libc state is safe here
        Fd owned(pidfd);
        if (!owned.valid()) return "clone3(CLONE_PIDFD) returned no pidfd";
        if (wait_child(static_cast<pid_t>(pid)) != 0) return "clone3 child did not exit cleanly";
        return "";
    });
    return make_check("clone3", problem, "clone3(CLONE_PIDFD) returns a pidfd",
                      "corral needs Linux >= 5.3 for clone3 with CLONE_PIDFD; if the kernel is newer, an outer "
                      "seccomp profile (container runtime) is answering clone3 with ENOSYS/EPERM: run on the host");
}

Check check_pidfd() {
    std::string problem = probe_in_child([]() -> std::string {
        pid_t child = ::fork();
        if (child < 0) return failure("fork", errno);
        if (child == 0) {
            ::pause();
            ::_exit(0);
        }
        long fd = ::syscall(SYS_pidfd_open, child, 0);
        if (fd < 0) {
            int err = errno;
            ::kill(child, SIGKILL);
            wait_child(child);
            return failure("pidfd_open", err);
        }
        Fd pidfd(static_cast<int>(fd));
        if (::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0) != 0) {
            int err = errno;
            ::kill(child, SIGKILL);
            wait_child(child);
            return failure("pidfd_send_signal", err);
        }
        if (wait_child(child) != 128 + SIGKILL) return "pidfd_send_signal(SIGKILL) did not kill the child";
        return "";
    });
    return make_check("pidfd", problem, "pidfd_open + pidfd_send_signal work",
                      "corral needs Linux >= 5.3 (pidfd_open, pidfd_send_signal)");
}

Check check_no_new_privs() {
    std::string problem = probe_in_child([]() -> std::string {
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return failure("prctl(PR_SET_NO_NEW_PRIVS)", errno);
        if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) return "PR_GET_NO_NEW_PRIVS does not report 1";
        return "";
    });
    return make_check("no_new_privs", problem, "PR_SET_NO_NEW_PRIVS sticks", "corral needs Linux >= 3.5");
}

Check check_seccomp() {
    std::string problem = probe_in_child([]() -> std::string {
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return failure("prctl(PR_SET_NO_NEW_PRIVS)", errno);
        scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_ALLOW);
        if (ctx == nullptr) return "seccomp_init failed";
        int rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTSUP), SCMP_SYS(getppid), 0);
        if (rc == 0) rc = ::seccomp_load(ctx);
        ::seccomp_release(ctx);
        if (rc != 0) return failure("seccomp_load", -rc);
        errno = 0;
        long r = ::syscall(SYS_getppid);
        if (r != -1 || errno != ENOTSUP) return "an installed filter did not take effect (getppid was not denied)";
        return "";
    });
    return make_check("seccomp filter", problem, "a libseccomp filter installs and denies a syscall",
                      "the kernel needs CONFIG_SECCOMP_FILTER; if it has it, an outer seccomp profile or LSM "
                      "forbids filters: run on the host");
}

// Runs `body(dir)` in a child, in a private mount namespace, with a private
// tmpfs (mount flags `flags`) mounted on a fresh /run/corral/doctor-XXXXXX
// directory (where corral keeps its scratch anyway; /tmp may be read-only):
// the host sees at most an empty directory, removed afterwards. Returns the
// problem ("" if none).
std::string probe_on_private_tmpfs(unsigned long flags, const std::function<std::string(const std::string&)>& body) {
    if (::mkdir("/run/corral", 0700) != 0 && errno != EEXIST) return failure("mkdir(/run/corral)", errno);
    char tmpl[] = "/run/corral/doctor-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return failure("mkdtemp(/run/corral/doctor-XXXXXX)", errno);
    std::string base = tmpl;
    std::string problem = probe_in_child([&]() -> std::string {
        if (::unshare(CLONE_NEWNS) != 0) return failure("unshare(CLONE_NEWNS)", errno);
        if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
            return failure("mount(/, MS_REC|MS_PRIVATE)", errno);
        if (::mount("corral-doctor", base.c_str(), "tmpfs", flags, "size=1m,mode=0700") != 0)
            return failure(("mount(tmpfs on " + base + ")").c_str(), errno);
        return body(base);
    });
    ::rmdir(tmpl);
    return problem;
}

Check check_overlayfs() {
    bool listed = false;
    {
        std::ifstream in("/proc/filesystems");
        for (std::string line; std::getline(in, line);)
            if (line.size() >= 7 && line.compare(line.size() - 7, 7, "overlay") == 0) listed = true;
    }
    std::string problem = probe_on_private_tmpfs(MS_NOSUID | MS_NODEV, [](const std::string& base) -> std::string {
        for (const char* sub : {"/lower", "/upper", "/work", "/merged"})
            if (::mkdir((base + sub).c_str(), 0700) != 0) return failure(("mkdir(" + base + sub + ")").c_str(), errno);
        std::string opts = "lowerdir=" + base + "/lower,upperdir=" + base + "/upper,workdir=" + base + "/work";
        if (::mount("overlay", (base + "/merged").c_str(), "overlay", MS_NOSUID | MS_NODEV, opts.c_str()) != 0)
            return failure(("mount(overlay, " + opts + ")").c_str(), errno);
        Fd f(::open((base + "/merged/probe").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
        if (!f.valid()) return failure("create a file through the overlay", errno);
        struct stat st {};
        if (::stat((base + "/upper/probe").c_str(), &st) != 0) return "a file written through the overlay did not land in upperdir";
        return "";
    });
    if (!problem.empty() && !listed) problem = "overlay is not in /proc/filesystems and " + problem;
    return make_check("overlayfs", problem, "overlay mount with a tmpfs upper layer works (--rootfs DIR)",
                      remedy_for_privilege("load the module (modprobe overlay) or build the kernel with CONFIG_OVERLAY_FS"));
}

// The box's /dev nodes are made with mknod on a tmpfs (rootfs/mount_plan.cpp):
// that needs CAP_MKNOD and a device policy (cgroup) that lets root create and
// open a character device. The real thing, on a private tmpfs.
Check check_device_nodes() {
    std::string problem = probe_on_private_tmpfs(MS_NOSUID | MS_NOEXEC, [](const std::string& base) -> std::string {
        std::string node = base + "/null";
        if (::mknod(node.c_str(), S_IFCHR | 0600, makedev(1, 3)) != 0) return failure("mknod(null, char 1:3)", errno);
        Fd f(::open(node.c_str(), O_WRONLY | O_CLOEXEC));
        if (!f.valid()) return failure("open(a mknod'ed /dev/null)", errno);
        if (::write(f.get(), "x", 1) != 1) return failure("write(a mknod'ed /dev/null)", errno);
        return "";
    });
    return make_check("device nodes", problem, "mknod of a character device on a tmpfs works (the box's /dev)",
                      remedy_for_privilege("corral needs CAP_MKNOD and a device policy that allows "
                                           "null, zero, full, random, urandom and tty (a container's "
                                           "default capabilities or device cgroup may withhold them)"));
}

Check check_netlink() {
    std::string problem = probe_in_child([]() -> std::string {
        // The sandbox brings lo up over rtnetlink inside its own network namespace.
        if (::unshare(CLONE_NEWNET) != 0) return failure("unshare(CLONE_NEWNET)", errno);
        Fd sock(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
        if (!sock.valid()) return failure("socket(AF_NETLINK, NETLINK_ROUTE)", errno);
        sockaddr_nl addr{};
        addr.nl_family = AF_NETLINK;
        if (::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
            return failure("bind(NETLINK_ROUTE)", errno);
        return "";
    });
    return make_check("netlink", problem, "NETLINK_ROUTE socket in a new network namespace",
                      remedy_for_privilege("the kernel needs CONFIG_NETLINK (rtnetlink); an outer seccomp profile "
                                           "may forbid AF_NETLINK sockets"));
}

std::vector<Check> check_cgroup_controllers() {
    std::vector<Check> checks;
    CgroupHierarchies h;
    try {
        h = discover_cgroup_hierarchies();
    } catch (const std::exception& e) {
        checks.push_back({"cgroup hierarchies", false, e.what(), "mount /proc and the cgroup filesystems"});
        return checks;
    }
    Check v2{"cgroup v2", true, "", ""};
    if (h.v2_mount) {
        std::string list;
        for (const auto& c : h.v2_controllers) list += (list.empty() ? "" : " ") + c;
        v2.detail = "mounted at " + *h.v2_mount + ", controllers: [" + list + "]";
    } else {
        v2.detail = "not mounted; corral uses the v1 hierarchies below";
    }
    checks.push_back(v2);
    struct Want {
        const char* controller;
        const char* option;
    };
    for (Want w : {Want{"memory", "--memory"}, Want{"pids", "--pids"}, Want{"cpu", "--cpus"}}) {
        Check c{std::string("cgroup ") + w.controller + " controller", true, "", ""};
        bool in_v2 = h.v2_mount && std::find(h.v2_controllers.begin(), h.v2_controllers.end(), w.controller) !=
                                       h.v2_controllers.end();
        auto v1 = h.v1_mounts.find(w.controller);
        if (in_v2) {
            c.detail = std::string("cgroup v2 (") + *h.v2_mount + ")";
        } else if (v1 != h.v1_mounts.end()) {
            c.detail = "cgroup v1 (" + v1->second + ")";
        } else {
            c.ok = false;
            c.detail = std::string("neither in cgroup v2 nor mounted as v1, so ") + w.option + " cannot be enforced";
            c.remedy = std::string("enable it (cgroup2: boot with systemd.unified_cgroup_hierarchy=1; v1: mount -t "
                                   "cgroup -o ") + w.controller + " cgroup /sys/fs/cgroup/" + w.controller + ")";
        }
        checks.push_back(c);
    }
    return checks;
}

// The real thing: a run cgroup with every limit, a process in it, killed, removed.
Check check_cgroup_limits() {
    Check c{"cgroup limits", false, "", ""};
    if (::geteuid() != 0) {
        c.detail = "not checked: creating cgroups needs root";
        c.remedy = "run `corral doctor` as root";
        return c;
    }
    try {
        CgroupLimits limits;
        limits.memory_bytes = 64ull << 20;
        limits.pids = 16;
        limits.cpus = 0.5;
        auto cg = RunCgroup::create("doctor-" + std::to_string(::getpid()), limits);
        pid_t child = ::fork();
        if (child < 0) throw SysError("fork", errno);
        if (child == 0) {
            ::pause();
            ::_exit(0);
        }
        cg.add_process(child);
        bool had_it = !cg.empty();
        cg.kill_all();
        wait_child(child);
        bool emptied = cg.empty();
        auto paths = cg.paths();
        cg.remove();
        if (!had_it) throw std::runtime_error("a process added to the run cgroup was not listed in cgroup.procs");
        if (!emptied) throw std::runtime_error("kill_all left processes in the run cgroup");
        std::string list;
        for (const auto& p : paths) list += (list.empty() ? "" : " ") + p;
        c.ok = true;
        c.detail = "created, limited (memory, pids, cpu), killed and removed: " + list;
    } catch (const std::exception& e) {
        c.detail = e.what();
        c.remedy = "make the memory, pids and cpu controllers available (see the controller lines above)";
    }
    return c;
}

}  // namespace

std::vector<Check> run_doctor_checks() {
    std::vector<Check> checks;
    checks.push_back(check_root());
    checks.push_back(check_namespace("pid", CLONE_NEWPID, "CLONE_NEWPID", "CONFIG_PID_NS", "max_pid_namespaces"));
    checks.push_back(check_namespace("mount", CLONE_NEWNS, "CLONE_NEWNS", "CONFIG_NAMESPACES", "max_mnt_namespaces"));
    checks.push_back(check_namespace("network", CLONE_NEWNET, "CLONE_NEWNET", "CONFIG_NET_NS", "max_net_namespaces"));
    checks.push_back(check_namespace("ipc", CLONE_NEWIPC, "CLONE_NEWIPC", "CONFIG_IPC_NS", "max_ipc_namespaces"));
    checks.push_back(check_namespace("uts", CLONE_NEWUTS, "CLONE_NEWUTS", "CONFIG_UTS_NS", "max_uts_namespaces"));
    checks.push_back(check_namespace("cgroup", CLONE_NEWCGROUP, "CLONE_NEWCGROUP", "CONFIG_CGROUPS", "max_cgroup_namespaces"));
    checks.push_back(check_clone3());
    checks.push_back(check_pidfd());
    checks.push_back(check_no_new_privs());
    checks.push_back(check_seccomp());
    checks.push_back(check_overlayfs());
    checks.push_back(check_device_nodes());
    checks.push_back(check_netlink());
    for (auto& c : check_cgroup_controllers()) checks.push_back(std::move(c));
    checks.push_back(check_cgroup_limits());
    return checks;
}

const char* check_status(const Check& check) { return check.ok ? "ok" : check.required ? "fail" : "warn"; }

std::string format_check(const Check& check) {
    if (check.ok) return "ok   " + check.feature + ": " + check.detail;
    return std::string(check.required ? "FAIL " : "warn ") + check.feature + ": " + check.detail + " — " + check.remedy;
}

Check check_idmapped_mounts(const std::string& where) {
    std::string base = where;
    struct stat st {};
    if (::stat(base.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (::mkdir("/run/corral", 0700) != 0 && errno != EEXIST) {
            Check c{"idmapped mounts", false, failure("mkdir(/run/corral)", errno), "run as root", false};
            return c;
        }
        base = "/run/corral";
    }
    std::string tmpl = base + "/doctor-idmap-XXXXXX";
    std::string problem, detail;
    if (::mkdtemp(tmpl.data()) == nullptr) {
        problem = failure(("mkdtemp(" + tmpl + ")").c_str(), errno);
    } else {
        // Any unprivileged owner will do: mapping root is refused by design.
        constexpr uid_t kProbeOwner = 65533;
        if (::chown(tmpl.c_str(), kProbeOwner, kProbeOwner) != 0) {
            problem = failure(("chown(" + tmpl + ")").c_str(), errno);
        } else {
            try {
                rootfs::OwnerMapping m{.disk_uid = kProbeOwner, .disk_gid = kProbeOwner, .box_uid = 65532, .box_gid = 65532};
                rootfs::IdmappedTree t = rootfs::idmapped_tree("doctor", tmpl, m, {});
                if (t.refusal != rootfs::IdmapRefusal::none) problem = t.detail;
            } catch (const std::exception& e) {
                problem = e.what();
            }
        }
        ::rmdir(tmpl.c_str());
    }
    Check c = make_check("idmapped mounts", problem,
                         "an ID-mapped copy of a directory in " + base + " works (--workspace, --bind show the owner as the agent)",
                         "Linux 5.12+ and a file system that supports ID-mapped mounts (ext4, xfs, btrfs; tmpfs from 6.3); "
                         "without them a workspace is bound as is and the agent writes only where its UID may");
    c.required = false;
    return c;
}

Check check_state_dir(const std::string& dir) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) {
        if (errno == ENOENT)
            return make_check("state dir", "", dir + " does not exist yet; the first `corral run` makes it (0700, root's)", "");
        return make_check("state dir", failure(("lstat(" + dir + ")").c_str(), errno), "",
                          "fix the path or give --state-dir DIR");
    }
    std::string problem;
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    if (!S_ISDIR(st.st_mode)) problem = dir + " is not a directory";
    else if (st.st_uid != 0) problem = dir + " is owned by UID " + std::to_string(st.st_uid) + ", not root";
    else if (st.st_mode & 022) problem = dir + " has mode " + mode + ": writable by others than root";
    if (problem.empty()) {
        try {
            rootfs::require_root_only_tree("state dir", dir);
        } catch (const std::exception& e) {
            problem = e.what();
        }
    }
    return make_check("state dir", problem, dir + ": root's, mode " + std::string(mode) + ", on a root-only path",
                      "chown root " + dir + " && chmod go-w " + dir + " (corral never changes an existing one), or "
                      "give --state-dir DIR");
}

}  // namespace corral::supervisor
