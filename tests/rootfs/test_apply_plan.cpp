// Integration tests of the rootfs (root only): each test forks a child that
// unshares a mount and a PID namespace, forks the namespace's PID 1, which
// applies a real plan, pivots into it and runs a shell script there (busybox
// in image mode, the host's /bin/sh in host mode). The script's output and the
// host's state afterwards (image untouched, no mount left, scratch removable)
// are what is checked. The supervisor builds the full sandbox; this
// checks the filesystem view alone, with nothing else in the way.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/sys_error.hpp"
#include "rootfs/mount_plan.hpp"

namespace fs = std::filesystem;
using namespace corral::rootfs;

namespace {

corral::names::RootfsSource dir_source(const std::string& path) { return corral::names::DirRootfs{path, path}; }

constexpr uid_t kAgentUid = 1899999001;  // below corral's default range: cannot collide with a real run's lease

struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "corral-rootfs-it-XXXXXX").string();
        REQUIRE(mkdtemp(tmpl.data()) != nullptr);
        path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

// A minimal image: busybox-static and one link per applet, plus an /etc with root only.
void make_busybox_image(const fs::path& root) {
    fs::permissions(root, fs::perms(0755));  // mkdtemp made it 0700; an image's root is traversable
    fs::create_directories(root / "bin");
    fs::create_directories(root / "etc");
    fs::copy_file("/bin/busybox", root / "bin/busybox");
    FILE* list = popen("/bin/busybox --list", "r");
    REQUIRE(list);
    char name[128];
    while (std::fscanf(list, "%127s", name) == 1)
        if (std::string(name) != "busybox") fs::create_symlink("busybox", root / "bin" / name);
    pclose(list);
    std::ofstream(root / "etc/passwd") << "root:x:0:0:root:/root:/bin/sh\n";
    std::ofstream(root / "etc/group") << "root:x:0:\n";
}

// Every path below `root` with its type, size and content hash-ish (the bytes for small files).
std::map<std::string, std::string> snapshot(const fs::path& root) {
    std::map<std::string, std::string> out;
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::none); it != fs::recursive_directory_iterator(); ++it) {
        const auto& p = it->path();
        auto st = fs::symlink_status(p);
        std::string v = std::to_string(static_cast<int>(st.type())) + ":" + std::to_string(static_cast<unsigned>(st.permissions()));
        if (fs::is_symlink(st)) v += "->" + fs::read_symlink(p).string();
        else if (fs::is_regular_file(st)) {
            v += ":" + std::to_string(fs::file_size(p));
            if (fs::file_size(p) < 4096) {
                std::ifstream f(p);
                v += ":" + std::string(std::istreambuf_iterator<char>(f), {});
            }
        }
        out[fs::relative(p, root).string()] = v;
    }
    return out;
}

struct BoxRun {
    int status = -1;                       // the script's exit status (or 128+signal)
    std::string out;                       // stdout+stderr of the script
    std::optional<MountFailure> failure;   // set when the plan failed to apply
};

bool read_exact(int fd, void* buf, std::size_t n) {
    auto* p = static_cast<char*>(buf);
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0) return false;
        p += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

// Applies `plan` in fresh mount+PID namespaces and runs `script` with /bin/sh
// inside the box, as root or as the agent.
BoxRun run_in_box(MountPlan plan, const std::string& script, bool as_agent) {
    // As the supervisor does before its clone: the workspace's ID-mapped tree.
    PreparedTrees trees = prepare_idmapped_trees(plan);
    int out[2], report[2];
    REQUIRE(pipe2(out, O_CLOEXEC) == 0);
    REQUIRE(pipe2(report, O_CLOEXEC) == 0);
    pid_t outer = fork();
    REQUIRE(outer >= 0);
    if (outer == 0) {
        if (unshare(CLONE_NEWNS | CLONE_NEWPID) != 0) _exit(120);
        pid_t init = fork();
        if (init < 0) _exit(121);
        if (init == 0) {
            alarm(60);  // a bound for hangs, not a timing check
            auto fail = [&](const MountFailure& f) {
                (void)!write(report[1], &f, sizeof f);
                _exit(125);
            };
            if (auto f = apply_mount_plan(plan)) fail(*f);
            if (auto f = enter_rootfs(plan)) fail(*f);
            dup2(out[1], 1);
            dup2(out[1], 2);
            int devnull = open("/dev/null", O_RDONLY);
            if (devnull >= 0) dup2(devnull, 0);
            if (as_agent) {
                if (setgroups(0, nullptr) != 0 || setresgid(kAgentUid, kAgentUid, kAgentUid) != 0 ||
                    setresuid(kAgentUid, kAgentUid, kAgentUid) != 0)
                    _exit(122);
            }
            execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        int st = 0;
        while (waitpid(init, &st, 0) < 0) {
        }
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    }
    close(out[1]);
    close(report[1]);
    BoxRun run;
    char buf[4096];
    for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) run.out.append(buf, static_cast<std::size_t>(n));
    MountFailure f{};
    if (read_exact(report[0], &f, sizeof f)) run.failure = f;
    close(out[0]);
    close(report[0]);
    int st = 0;
    REQUIRE(waitpid(outer, &st, 0) == outer);
    run.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return run;
}

std::vector<std::string> host_mounts_at_or_below(const std::string& dir) {
    std::ifstream in("/proc/self/mountinfo");
    std::vector<std::string> found;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string a, b, c, d, mp;
        f >> a >> b >> c >> d >> mp;
        if (mp == dir || mp.rfind(dir + "/", 0) == 0) found.push_back(mp);
    }
    return found;
}

// The lines between "--BEGIN name--" and "--END name--" in the script's output.
std::string section(const std::string& out, const std::string& name) {
    auto b = out.find("--BEGIN " + name + "--\n");
    auto e = out.find("--END " + name + "--");
    if (b == std::string::npos || e == std::string::npos) return {};
    b += name.size() + 11;
    return out.substr(b, e - b);
}

bool has_line(const std::string& out, const std::string& line) {
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);)
        if (l == line) return true;
    return false;
}

// Checks the box's own mount table (as the box printed it): nosuid on every
// mount, nodev on every mount but /dev (its six nodes) and devpts, and returns
// the mount points with their per-mount options.
std::map<std::string, std::string> check_box_mounts(const std::string& mountinfo) {
    static const std::set<std::string> device_mounts = {"/dev", "/dev/pts"};
    std::map<std::string, std::string> mounts;
    std::istringstream in(mountinfo);
    for (std::string line; std::getline(in, line);) {
        std::istringstream f(line);
        std::string id, parent, dev, root, mp, opts;
        if (!(f >> id >> parent >> dev >> root >> mp >> opts)) continue;
        mounts[mp] = opts;
        INFO(mp, " ", opts);
        CHECK(("," + opts + ",").find(",nosuid,") != std::string::npos);
        if (!device_mounts.count(mp)) CHECK(("," + opts + ",").find(",nodev,") != std::string::npos);
    }
    return mounts;
}

bool opt(const std::map<std::string, std::string>& mounts, const std::string& mp, const std::string& o) {
    auto it = mounts.find(mp);
    return it != mounts.end() && ("," + it->second + ",").find("," + o + ",") != std::string::npos;
}

RootfsSpec spec_for(const fs::path& scratch_parent) {
    RootfsSpec s;
    s.scratch_dir = (scratch_parent / "scratch").string();
    s.agent_uid = kAgentUid;
    s.agent_gid = kAgentUid;
    s.hostname = "corral-it";
    s.tmp_size_bytes = 4 << 20;
    s.scratch_size_bytes = 4 << 20;
    return s;
}

// After every run: nothing of the box is mounted on the host, and scratch goes away.
void check_nothing_left(const RootfsSpec& spec) {
    CHECK(host_mounts_at_or_below(spec.scratch_dir).empty());
    remove_scratch(spec.scratch_dir);
    CHECK_FALSE(fs::exists(spec.scratch_dir));
}

const char* kMountinfoScript = "echo --BEGIN mounts--; cat /proc/self/mountinfo; echo --END mounts--;";

}  // namespace

TEST_CASE("image mode: the box sees the image through an overlay; nothing it writes reaches the image") {
    TempDir image, work, ws;
    make_busybox_image(image.path);
    auto before = snapshot(image.path);
    RootfsSpec spec = spec_for(work.path);
    spec.source = dir_source(image.path.string());
    spec.workspace = ws.path.string();
    // An operator's (unprivileged) workspace: ID-mapped to the agent.
    REQUIRE(chown(ws.path.c_str(), 41001, 41002) == 0);
    MountPlan plan = plan_rootfs(spec);

    BoxRun run = run_in_box(plan, std::string(kMountinfoScript) +
        "echo hi > /marker && cat /marker;"
        "echo new > /bin/newfile && echo wrote-bin;"
        "rm /bin/ls && echo removed-ls;"
        "echo more >> /etc/passwd;"
        "echo pid=$$;"
        "echo procs=$(ls /proc | grep -c '^[0-9]');"
        "echo 1 > /proc/sys/kernel/domainname 2>/dev/null && echo proc-sys-writable || echo proc-sys-readonly;"
        "echo x > /dev/null && echo devnull-ok;"
        "cat /proc/timer_list >/dev/null 2>&1 || echo timer_list-masked;"
        "echo acpi=$(ls -A /proc/acpi 2>/dev/null | wc -l);"
        "echo urandom=$(head -c 5 /dev/urandom | wc -c);"
        "test -e /dev/pts/ptmx && echo pts-ok; echo ptmx=$(readlink /dev/ptmx);"
        "echo tmp=$(stat -c %a /tmp); echo shm=$(stat -c %a /dev/shm);"
        "test -e /sys/kernel || echo no-sys;"
        "grep '^agent:' /etc/passwd; echo home=$(stat -c %u:%a /home/agent);"
        // Only the agent is mapped on the ID-mapped workspace: root in the box cannot create there.
        "echo ws > /workspace/from-root 2>/dev/null && echo ws-root-wrote || echo ws-root-unmapped;"
        "head -c 6000000 /dev/zero > /big 2>/dev/null || echo scratch-capped;"
        "head -c 6000000 /dev/zero > /tmp/big 2>/dev/null || echo tmp-capped;",
        /*as_agent=*/false);
    INFO(run.out);
    REQUIRE_FALSE(run.failure);
    CHECK(run.status == 0);
    CHECK(has_line(run.out, "hi"));
    CHECK(has_line(run.out, "wrote-bin"));
    CHECK(has_line(run.out, "removed-ls"));
    CHECK(has_line(run.out, "pid=1"));        // the fresh /proc belongs to the new PID namespace
    // ...and shows only the box's processes: the shell and the few it runs for this line.
    auto procs_at = run.out.find("procs=");
    REQUIRE(procs_at != std::string::npos);
    CHECK(std::atoi(run.out.c_str() + procs_at + 6) >= 1);
    CHECK(std::atoi(run.out.c_str() + procs_at + 6) <= 5);
    CHECK(has_line(run.out, "proc-sys-readonly"));
    CHECK(has_line(run.out, "devnull-ok"));
    CHECK(has_line(run.out, "urandom=5"));
    CHECK(has_line(run.out, "pts-ok"));
    CHECK(has_line(run.out, "ptmx=pts/ptmx"));
    CHECK(has_line(run.out, "tmp=1777"));
    CHECK(has_line(run.out, "shm=1777"));
    CHECK(has_line(run.out, "no-sys"));
    CHECK(has_line(run.out, "agent:x:1899999001:1899999001:corral agent:/home/agent:/bin/sh"));
    CHECK(has_line(run.out, "home=1899999001:700"));
    CHECK(has_line(run.out, "ws-root-unmapped"));
    CHECK(has_line(run.out, "scratch-capped"));
    CHECK(has_line(run.out, "tmp-capped"));

    auto mounts = check_box_mounts(section(run.out, "mounts"));
    CHECK(mounts.count("/"));
    CHECK(mounts.count("/proc"));
    CHECK(opt(mounts, "/proc/sys", "ro"));
    if (fs::exists("/proc/sysrq-trigger")) CHECK(opt(mounts, "/proc/sysrq-trigger", "ro"));
    if (fs::exists("/proc/timer_list")) CHECK(run.out.find("timer_list-masked") != std::string::npos);
    if (fs::exists("/proc/kcore")) CHECK(opt(mounts, "/proc/kcore", "ro"));
    if (fs::exists("/proc/acpi")) CHECK(has_line(run.out, "acpi=0"));
    CHECK(opt(mounts, "/workspace", "rw"));
    CHECK(opt(mounts, "/dev", "ro"));
    CHECK(opt(mounts, "/dev/pts", "noexec"));
    CHECK(opt(mounts, "/dev", "noexec"));
    CHECK_FALSE(mounts.count("/dev/null"));  // a node on /dev's tmpfs, not a host bind
    CHECK_FALSE(mounts.count("/sys"));
    for (const auto& [mp, o] : mounts) CHECK(mp.find("corral") == std::string::npos);  // the old root is gone

    // As the agent: its home and /tmp are writable, the image's root-owned files are not.
    BoxRun agent = run_in_box(plan,
        "echo uid=$(id -u);"
        "echo a > /home/agent/f && cat /home/agent/f;"
        "echo t > /tmp/f && cat /tmp/f;"
        "echo x > /bin/agent-file 2>/dev/null || echo bin-denied;"
        "echo x >> /etc/passwd 2>/dev/null || echo passwd-denied;"
        "echo ws > /workspace/from-box && echo ws-ok;"
        "echo ws-owner=$(stat -c %u /workspace/from-box);",
        /*as_agent=*/true);
    INFO(agent.out);
    REQUIRE_FALSE(agent.failure);
    CHECK(has_line(agent.out, "uid=1899999001"));
    CHECK(has_line(agent.out, "a"));
    CHECK(has_line(agent.out, "t"));
    CHECK(has_line(agent.out, "bin-denied"));
    CHECK(has_line(agent.out, "passwd-denied"));
    CHECK(has_line(agent.out, "ws-ok"));
    CHECK(has_line(agent.out, "ws-owner=1899999001"));  // the agent sees its own file...

    // The image is exactly as it was; the workspace got the box's file, owned
    // on disk by the workspace's owner, not by the agent's UID.
    CHECK(snapshot(image.path) == before);
    CHECK(fs::exists(ws.path / "from-box"));
    CHECK_FALSE(fs::exists(ws.path / "from-root"));
    struct stat st {};
    REQUIRE(stat((ws.path / "from-box").c_str(), &st) == 0);
    CHECK(st.st_uid == 41001);
    CHECK(st.st_gid == 41002);
    check_nothing_left(spec);
}

TEST_CASE("host mode: host programs read-only, a generated /etc, the agent's home writable") {
    TempDir work;
    RootfsSpec spec = spec_for(work.path);
    MountPlan plan = plan_rootfs(spec);
    BoxRun run = run_in_box(plan, std::string(kMountinfoScript) +
        "echo uid=$(id -u) user=$(id -un) groups=$(id -G);"
        "echo --BEGIN etc--; ls -A /etc; echo --END etc--;"
        "test -e /etc/shadow || echo no-shadow;"
        "test -s /etc/ssl/certs/ca-certificates.crt && echo certs-ok;"
        "echo home > /home/agent/f && cat /home/agent/f;"
        "echo tmp > /tmp/f && cat /tmp/f;"
        "touch /etc/passwd 2>/dev/null || echo etc-not-writable;"
        "echo sys=$(ls -A /sys | wc -l);"
        "if command -v curl >/dev/null; then curl --version >/dev/null && echo curl-runs; else echo curl-runs; fi;"
        "getent hosts corral-it;"
        "echo ws-entries=$(ls -A /workspace | wc -l); echo w > /workspace/f && echo ws-writable;",
        /*as_agent=*/true);
    INFO(run.out);
    REQUIRE_FALSE(run.failure);
    CHECK(run.status == 0);
    CHECK(has_line(run.out, "uid=1899999001 user=agent groups=1899999001"));
    CHECK(has_line(run.out, "no-shadow"));
    CHECK(has_line(run.out, "certs-ok"));
    CHECK(has_line(run.out, "home"));
    CHECK(has_line(run.out, "tmp"));
    CHECK(has_line(run.out, "etc-not-writable"));
    CHECK(has_line(run.out, "sys=0"));
    CHECK(has_line(run.out, "curl-runs"));
    CHECK(has_line(run.out, "ws-entries=0"));
    CHECK(has_line(run.out, "ws-writable"));
    CHECK(run.out.find("127.0.1.1       corral-it") != std::string::npos);

    std::set<std::string> etc;
    std::istringstream in(section(run.out, "etc"));
    for (std::string l; std::getline(in, l);) etc.insert(l);
    std::set<std::string> expected = {"passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "hostname"};
    for (const char* optional : {"os-release", "localtime", "ld.so.cache", "alternatives", "ssl", "ca-certificates"})
        if (fs::exists(fs::path("/etc") / optional) || fs::is_symlink(fs::path("/etc") / optional)) expected.insert(optional);
    CHECK(etc == expected);

    auto mounts = check_box_mounts(section(run.out, "mounts"));
    CHECK(opt(mounts, "/", "ro"));
    CHECK(opt(mounts, "/usr", "ro"));
    CHECK(opt(mounts, "/etc/ssl/certs", "ro"));
    CHECK(opt(mounts, "/home/agent", "rw"));
    CHECK(opt(mounts, "/tmp", "rw"));

    // Even root in the box cannot write the host's programs or the generated root.
    BoxRun as_root = run_in_box(plan,
        "touch /usr/corral-it-probe 2>/dev/null || echo usr-ro;"
        "touch /corral-it-probe 2>/dev/null || echo root-ro;"
        "echo x >> /etc/passwd 2>/dev/null || echo etc-ro;",
        /*as_agent=*/false);
    INFO(as_root.out);
    CHECK(has_line(as_root.out, "usr-ro"));
    CHECK(has_line(as_root.out, "root-ro"));
    CHECK(has_line(as_root.out, "etc-ro"));
    CHECK_FALSE(fs::exists("/usr/corral-it-probe"));
    check_nothing_left(spec);
}

TEST_CASE("extra files appear read-only in the box and never touch the host's or the image's files") {
    TempDir work, image;
    make_busybox_image(image.path);
    auto image_before = snapshot(image.path);
    std::string host_bundle;
    const bool have_bundle = fs::exists("/etc/ssl/certs/ca-certificates.crt");
    if (have_bundle) {
        std::ifstream f("/etc/ssl/certs/ca-certificates.crt");
        host_bundle.assign(std::istreambuf_iterator<char>(f), {});
    }
    for (bool host_mode : {true, false}) {
        CAPTURE(host_mode);
        RootfsSpec spec = spec_for(work.path);
        if (!host_mode) spec.source = dir_source(image.path.string());
        spec.extra_files.push_back({"/etc/corral/ca.pem", "CORRAL-TEST-CA\n", 0644});
        if (host_mode && have_bundle) spec.extra_files.push_back({"/etc/ssl/certs/ca-certificates.crt", "BUNDLE+CA\n", 0644});
        MountPlan plan = plan_rootfs(spec);
        BoxRun run = run_in_box(plan,
            "cat /etc/corral/ca.pem;"
            "test -f /etc/ssl/certs/ca-certificates.crt && cat /etc/ssl/certs/ca-certificates.crt | head -1;"
            "echo evil > /etc/corral/ca.pem 2>/dev/null || echo ca-ro;",
            /*as_agent=*/false);
        INFO(run.out);
        REQUIRE_FALSE(run.failure);
        CHECK(has_line(run.out, "CORRAL-TEST-CA"));
        CHECK(has_line(run.out, "ca-ro"));
        if (host_mode && have_bundle) CHECK(has_line(run.out, "BUNDLE+CA"));
        check_nothing_left(spec);
    }
    CHECK(snapshot(image.path) == image_before);
    CHECK_FALSE(fs::exists("/etc/corral/ca.pem"));
    if (have_bundle) {
        std::ifstream f("/etc/ssl/certs/ca-certificates.crt");
        CHECK(std::string(std::istreambuf_iterator<char>(f), {}) == host_bundle);
    }
}

TEST_CASE("symlinks planted in an image are resolved inside the image, never on the host") {
    TempDir image, work, host_dir;
    make_busybox_image(image.path);
    std::ofstream(host_dir.path / "passwd") << "host-passwd\n";
    fs::create_directory(host_dir.path / "home");

    SUBCASE("/etc -> a host directory: the host's file is untouched") {
        fs::remove_all(image.path / "etc");
        fs::create_directory_symlink(host_dir.path, image.path / "etc");
        RootfsSpec spec = spec_for(work.path);
        spec.source = dir_source(image.path.string());
        BoxRun run = run_in_box(plan_rootfs(spec), "cat /etc/passwd 2>/dev/null || echo no-passwd-in-box;", false);
        INFO(run.out);
        REQUIRE_FALSE(run.failure);
        CHECK(has_line(run.out, "no-passwd-in-box"));
        check_nothing_left(spec);
    }
    SUBCASE("/etc/passwd -> an absolute link inside the image: followed inside the image, copied up") {
        fs::create_directories(image.path / "usr/share");
        fs::rename(image.path / "etc/passwd", image.path / "usr/share/corral-passwd");
        fs::create_symlink("/usr/share/corral-passwd", image.path / "etc/passwd");
        auto before = snapshot(image.path);
        RootfsSpec spec = spec_for(work.path);
        spec.source = dir_source(image.path.string());
        BoxRun run = run_in_box(plan_rootfs(spec), "cat /etc/passwd;", false);
        INFO(run.out);
        REQUIRE_FALSE(run.failure);
        CHECK(has_line(run.out, "root:x:0:0:root:/root:/bin/sh"));
        CHECK(has_line(run.out, "agent:x:1899999001:1899999001:corral agent:/home/agent:/bin/sh"));
        CHECK(snapshot(image.path) == before);
        check_nothing_left(spec);
    }
    SUBCASE("/home -> a host directory: the agent's home is not created on the host") {
        fs::create_directory_symlink(host_dir.path / "home", image.path / "home");
        RootfsSpec spec = spec_for(work.path);
        spec.source = dir_source(image.path.string());
        MountPlan plan = plan_rootfs(spec);
        BoxRun run = run_in_box(plan, "echo ran;", false);
        INFO(run.out);
        // Resolved inside the image, /home points at a directory that does not exist there.
        REQUIRE(run.failure);
        CHECK(run.failure->err == ENOENT);
        CHECK(describe_failure(plan, *run.failure).find("/home/agent") != std::string::npos);
        check_nothing_left(spec);
    }
    CHECK(fs::is_empty(host_dir.path / "home"));
    std::ifstream f(host_dir.path / "passwd");
    CHECK(std::string(std::istreambuf_iterator<char>(f), {}) == "host-passwd\n");
}

TEST_CASE("a failing step is reported with its op and errno, and leaves nothing mounted") {
    TempDir work, ws;
    RootfsSpec spec = spec_for(work.path);
    spec.home_dir = (ws.path / "gone").string();
    fs::create_directory(*spec.home_dir);
    MountPlan plan = plan_rootfs(spec);
    fs::remove(*spec.home_dir);  // vanishes between planning and applying
    BoxRun run = run_in_box(plan, "echo should-not-run;", false);
    REQUIRE(run.failure);
    CHECK(run.status == 125);
    CHECK(run.out.find("should-not-run") == std::string::npos);
    CHECK(run.failure->err == ENOENT);
    CHECK(describe_failure(plan, *run.failure) ==
          "rootfs setup: mount(" + *spec.home_dir + " -> box:/home/agent, MS_BIND) failed in mount: " + corral::errno_text(ENOENT));
    check_nothing_left(spec);
}

TEST_CASE("a workspace on a read-only mount stays read-only in the box") {
    TempDir work, ws;
    // The read-only bind is made in a private mount namespace of a helper
    // process, so the host's mount table never sees it.
    pid_t helper = fork();
    REQUIRE(helper >= 0);
    if (helper == 0) {
        if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(10);
        if (mount(ws.path.c_str(), ws.path.c_str(), nullptr, MS_BIND, nullptr) != 0) _exit(11);
        if (mount(nullptr, ws.path.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0) _exit(12);
        RootfsSpec spec = spec_for(work.path);
        spec.workspace = ws.path.string();
        MountPlan plan = plan_rootfs(spec);
        for (const auto& op : plan.ops)
            if (op.kind == MountKind::Remount && op.target == "/workspace") _exit((op.flags & MS_RDONLY) ? 0 : 13);
        _exit(14);
    }
    int st = 0;
    REQUIRE(waitpid(helper, &st, 0) == helper);
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
}

int main(int argc, char** argv) {
    if (geteuid() != 0) {
        std::puts("SKIP: the rootfs integration tests mount filesystems and need root");
        return 77;
    }
    if (!fs::exists("/bin/busybox")) {
        std::puts("SKIP: /bin/busybox (busybox-static) is needed to build the test image");
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
