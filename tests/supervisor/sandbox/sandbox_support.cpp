#include "tests/supervisor/sandbox/sandbox_support.hpp"
#include "tests/supervisor/sandbox/probe_sources.hpp"

#include <doctest/doctest.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace fs = std::filesystem;

namespace corral::test::sandbox {

namespace {

std::string g_uid_range;
std::string g_base;      // per-executable temp dir, removed at exit
std::string g_rootfs;    // assembled lazily
int g_counter = 0;

const std::string& base_dir() {
    if (g_base.empty()) {
        char tmpl[] = "/tmp/corral-sbt-XXXXXX";
        if (!mkdtemp(tmpl)) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
        // 0755: files the tests place here "outside the rootfs" must be readable
        // by the agent UID if it could only reach them, or the read test proves nothing.
        chmod(tmpl, 0755);
        g_base = tmpl;
    }
    return g_base;
}

void must(bool ok, const std::string& what) {
    if (!ok) throw std::runtime_error(what + ": " + std::strerror(errno));
}

void run_or_throw(const std::vector<std::string>& argv) {
    Result r = run(argv);
    if (r.exit_code != 0) {
        std::string cmd;
        for (const auto& a : argv) cmd += a + " ";
        throw std::runtime_error("fixture command failed: " + cmd + "\n" + r.out + r.err);
    }
}

// Compiles one of the probe sources (probe_sources.hpp) into <root>/bin/<name>, static
// (the rootfs has no libc of its own). Returns the binary's path.
std::string build_probe(const std::string& root, const std::string& name, const char* source) {
    std::string src = base_dir() + "/" + name + ".c";
    write_file(src, source);
    std::string bin = root + "/bin/" + name;
    run_or_throw({"cc", "-static", "-O1", "-o", bin, src});
    return bin;
}

void build_suid_probe(const std::string& root) {
    std::string bin = build_probe(root, "suid-probe", kSuidProbeSource);
    must(chown(bin.c_str(), 0, 0) == 0, "chown " + bin);
    must(chmod(bin.c_str(), 04755) == 0, "chmod 4755 " + bin);
}

void assemble_rootfs(const std::string& root) {
    for (const char* d : {"bin", "sbin", "etc", "proc", "dev", "workspace", "root", "home", "var", "run", "usr",
                          "usr/bin"})
        fs::create_directories(root + "/" + d);
    chmod(root.c_str(), 0755);
    chmod((root + "/root").c_str(), 0700);
    fs::create_directories(root + "/tmp");
    chmod((root + "/tmp").c_str(), 01777);
    fs::create_directories(root + "/data");
    chmod((root + "/data").c_str(), 0777);  // world-writable on purpose: writes must still not reach the image

    fs::copy_file("/bin/busybox", root + "/bin/busybox");
    chmod((root + "/bin/busybox").c_str(), 0755);
    Result list = run({"/bin/busybox", "--list"});
    if (list.exit_code != 0) throw std::runtime_error("busybox --list failed: " + list.err);
    for (const auto& applet : lines(list.out)) {
        if (applet.empty() || applet == "busybox") continue;
        must(symlink("busybox", (root + "/bin/" + applet).c_str()) == 0, "symlink bin/" + applet);
    }
    write_file(root + "/etc/passwd",
               "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n");
    write_file(root + "/etc/group", "root:x:0:\nnogroup:x:65534:\n");
    write_file(root + "/etc/writable", "original content\n");
    chmod((root + "/etc/writable").c_str(), 0666);
    build_suid_probe(root);
    build_probe(root, "connect-probe", kConnectProbeSource);
    build_probe(root, "setid-probe", kSetidProbeSource);
    build_probe(root, "kernel-probe", kKernelProbeSource);
    build_probe(root, "conn-hold", kConnHoldSource);
}

bool is_number(const char* s) {
    if (!*s) return false;
    for (; *s; ++s)
        if (*s < '0' || *s > '9') return false;
    return true;
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
    return s;
}

}  // namespace

int run_suite(int argc, char** argv, const char* range) {
    g_uid_range = range;
    if (!running_as_root()) {
        std::cerr << "SKIP: sandbox integration tests need root (corral run creates namespaces and cgroups)\n";
        return 77;
    }
    if (access("/bin/busybox", X_OK) != 0) {
        std::cerr << "SKIP: /bin/busybox (busybox-static) is missing: apt-get install busybox-static\n";
        return 77;
    }
    if (!have_program("cc")) {
        std::cerr << "SKIP: no C compiler (cc) to build the setuid probe\n";
        return 77;
    }
    if (access(corral_bin().c_str(), X_OK) != 0) {
        // Not a skip: meson builds corral before these tests, so this is a broken build.
        std::cerr << "FAIL: the corral binary " << corral_bin() << " is missing or not executable\n";
        return 1;
    }
    int rc = 0;
    {
        doctest::Context context(argc, argv);
        rc = context.run();
    }
    if (!g_base.empty()) {
        std::error_code ec;
        fs::remove_all(g_base, ec);
        if (ec) std::cerr << "warning: could not remove " << g_base << ": " << ec.message() << "\n";
    }
    return rc;
}

const std::string& uid_range() { return g_uid_range; }

const std::string& rootfs() {
    if (g_rootfs.empty()) {
        std::string root = base_dir() + "/rootfs";
        assemble_rootfs(root);
        g_rootfs = root;
    }
    return g_rootfs;
}

std::string fresh_path(const std::string& stem) {
    return base_dir() + "/" + stem + "-" + std::to_string(++g_counter);
}

std::string fresh_dir(const std::string& stem, mode_t mode) {
    std::string p = fresh_path(stem);
    fs::create_directories(p);
    chmod(p.c_str(), mode);
    return p;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_file(const std::string& path, const std::string& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + path);
    out << content;
}

std::vector<std::string> corral_argv(const CorralArgs& args, const std::string& run_dir,
                                     const std::vector<std::string>& command) {
    std::vector<std::string> argv{corral_bin(), "run", "--rootfs", args.rootfs.empty() ? rootfs() : args.rootfs};
    if (!run_dir.empty()) {
        argv.push_back("--run-dir");
        argv.push_back(run_dir);
    }
    if (args.own_uid_range) {
        argv.push_back("--uid-range");
        argv.push_back(uid_range());
    }
    argv.insert(argv.end(), args.flags.begin(), args.flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
}

std::optional<nlohmann::json> read_record(const std::string& run_dir) {
    if (run_dir.empty()) return std::nullopt;
    std::string text = read_file(run_dir + "/run.json");
    if (text.empty()) return std::nullopt;
    try {
        return nlohmann::json::parse(text);
    } catch (const std::exception& e) {
        FAIL_CHECK("run.json in " << run_dir << " is not valid JSON: " << e.what() << "\n" << text);
        return std::nullopt;
    }
}

CorralRun corral_run(const std::vector<std::string>& command, const CorralArgs& args) {
    CorralRun r;
    if (args.own_run_dir) r.run_dir = fresh_path("run");
    RunOptions opts = args.process;
    if (opts.timeout == RunOptions{}.timeout) opts.timeout = std::chrono::seconds(120);
    r.result = run(corral_argv(args, r.run_dir, command), opts);
    r.record = read_record(r.run_dir);
    // SBT_VERBOSE=1 shows what every run printed, for reading passing tests too.
    if (std::getenv("SBT_VERBOSE")) std::cerr << "[corral run] " << transcript(r.result) << "\n";
    return r;
}

void require_ran(const CorralRun& run) {
    REQUIRE_MESSAGE(run.result.out.find("START") != std::string::npos, "the sandbox never ran the script");
    REQUIRE_MESSAGE(run.result.out.find("DONE") != std::string::npos, "the script did not finish");
}

CorralRun corral_sh(const std::string& script, const CorralArgs& args) {
    return corral_run({"/bin/sh", "-c", script}, args);
}

// --- CorralProcess ---

CorralProcess::CorralProcess(const std::vector<std::string>& command, const CorralArgs& args) {
    if (args.own_run_dir) run_dir_ = fresh_path("run");
    out_path_ = fresh_path("bg-stdout");
    err_path_ = fresh_path("bg-stderr");
    std::vector<std::string> argv = corral_argv(args, run_dir_, command);
    std::vector<std::string> env_store;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        if (!args.process.env.count(kv.substr(0, kv.find('=')))) env_store.push_back(kv);
    }
    for (const auto& [k, v] : args.process.env) env_store.push_back(k + "=" + v);
    std::vector<char*> cargv, cenv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    for (auto& e : env_store) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    must(in >= 0 && out >= 0 && err >= 0, "open background corral stdio");
    pid_ = fork();
    must(pid_ >= 0, "fork");
    if (pid_ == 0) {
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        execve(cargv[0], cargv.data(), cenv.data());
        _exit(127);
    }
    close(in);
    close(out);
    close(err);
}

CorralProcess::~CorralProcess() {
    if (pid_ > 0 && !reaped_) {
        kill(pid_, SIGKILL);
        int status;
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
}

std::string CorralProcess::out() const { return read_file(out_path_); }
std::string CorralProcess::err() const { return read_file(err_path_); }

namespace {
// Polls a growing capture file until it contains `needle` or the bound passes.
bool wait_for_text(const std::string& path, const std::string& needle, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
        if (read_file(path).find(needle) != std::string::npos) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    return read_file(path).find(needle) != std::string::npos;
}
}  // namespace

bool CorralProcess::wait_for_out(const std::string& needle, std::chrono::milliseconds timeout) const {
    return wait_for_text(out_path_, needle, timeout);
}

bool CorralProcess::wait_for_err(const std::string& needle, std::chrono::milliseconds timeout) const {
    return wait_for_text(err_path_, needle, timeout);
}

int CorralProcess::wait(std::chrono::milliseconds timeout) {
    if (reaped_) return -1;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int status = 0;
        pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            reaped_ = true;
            if (WIFEXITED(status)) return WEXITSTATUS(status);
            if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
            return -1;
        }
        if (std::chrono::steady_clock::now() >= deadline) return -1;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

void CorralProcess::kill_supervisor_only() {
    if (pid_ > 0 && !reaped_) kill(pid_, SIGKILL);
}

void CorralProcess::signal(int sig) {
    if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

// --- host observations ---

std::vector<pid_t> processes_of_uid(uid_t uid) {
    std::vector<pid_t> found;
    DIR* d = opendir("/proc");
    if (!d) return found;
    while (dirent* e = readdir(d)) {
        if (!is_number(e->d_name)) continue;
        std::string status = read_file(std::string("/proc/") + e->d_name + "/status");
        for (const auto& line : lines(status)) {
            if (line.rfind("Uid:", 0) != 0) continue;
            std::istringstream in(line.substr(4));
            unsigned long v;
            while (in >> v)
                if (v == uid) {
                    found.push_back(static_cast<pid_t>(std::atol(e->d_name)));
                    break;
                }
            break;
        }
    }
    closedir(d);
    return found;
}

std::string describe_processes(const std::vector<pid_t>& pids) {
    std::string s;
    for (pid_t p : pids) {
        std::string base = "/proc/" + std::to_string(p);
        std::string cmd = read_file(base + "/cmdline");
        for (auto& c : cmd)
            if (c == '\0') c = ' ';
        s += std::to_string(p) + " (" + trim(read_file(base + "/comm")) + ") " + cmd + "\n";
    }
    return s;
}

bool process_alive(pid_t pid) {
    std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    if (stat.empty()) return false;
    auto close_paren = stat.rfind(')');
    if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) return false;
    char state = stat[close_paren + 2];
    return state != 'Z' && state != 'X';
}

std::vector<std::string> cgroup_mount_points() {
    std::vector<std::string> points;
    for (const auto& line : lines(read_file("/proc/self/mountinfo"))) {
        auto sep = line.find(" - ");
        if (sep == std::string::npos) continue;
        std::istringstream after(line.substr(sep + 3));
        std::string fstype;
        after >> fstype;
        if (fstype != "cgroup" && fstype != "cgroup2") continue;
        std::istringstream before(line.substr(0, sep));
        std::string id, parent, devno, root, mount_point;
        before >> id >> parent >> devno >> root >> mount_point;
        points.push_back(mount_point);
    }
    return points;
}

std::vector<std::string> cgroup_dirs_of_run(const std::string& run_id) {
    std::vector<std::string> dirs;
    for (const auto& mp : cgroup_mount_points()) {
        std::string p = mp + "/corral/" + run_id;
        if (access(p.c_str(), F_OK) == 0) dirs.push_back(p);
    }
    return dirs;
}

std::vector<std::string> mount_lines_mentioning(const std::string& needle) {
    std::vector<std::string> found;
    for (const auto& line : lines(read_file("/proc/self/mountinfo")))
        if (line.find(needle) != std::string::npos) found.push_back(line);
    return found;
}

std::string lock_path(uid_t uid) { return "/run/corral/uids/" + std::to_string(uid) + ".lock"; }
std::string scratch_path(const std::string& run_id) { return "/run/corral/scratch/" + run_id; }

std::vector<pid_t> wait_until_no_process_of_uid(uid_t uid, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        auto left = processes_of_uid(uid);
        if (left.empty() || std::chrono::steady_clock::now() >= deadline) return left;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

void check_nothing_left(const std::string& run_id, uid_t uid) {
    // Another run (another test executable sharing the default range) may
    // lease the same UID right after ours ended: its lock file names its run
    // id, and its processes sit in its own corral/<id> cgroup. Those are not ours.
    std::string lease_owner = trim(read_file(lock_path(uid)));
    const bool other_run_holds_uid = !lease_owner.empty() && lease_owner != run_id;
    std::vector<pid_t> procs;
    for (pid_t p : processes_of_uid(uid)) {
        if (other_run_holds_uid &&
            read_file("/proc/" + std::to_string(p) + "/cgroup").find("/corral/" + lease_owner) != std::string::npos)
            continue;
        procs.push_back(p);
    }
    CHECK_MESSAGE(procs.empty(), "processes of run UID " << uid << " survived:\n" << describe_processes(procs));
    if (!run_id.empty()) {
        auto cg = cgroup_dirs_of_run(run_id);
        std::string cgs;
        for (const auto& c : cg) cgs += c + "\n";
        CHECK_MESSAGE(cg.empty(), "cgroup dirs of run " << run_id << " left:\n" << cgs);
        auto mounts = mount_lines_mentioning(run_id);
        std::string ms;
        for (const auto& m : mounts) ms += m + "\n";
        CHECK_MESSAGE(mounts.empty(), "host mounts mentioning run " << run_id << " left:\n" << ms);
        CHECK_MESSAGE(access(scratch_path(run_id).c_str(), F_OK) != 0,
                      "scratch dir left: " << scratch_path(run_id));
    }
    if (!other_run_holds_uid)
        CHECK_MESSAGE(access(lock_path(uid).c_str(), F_OK) != 0, "lock file left: " << lock_path(uid));
}

void check_nothing_left(const CorralRun& run) {
    REQUIRE_MESSAGE(run.record.has_value(),
                    "no run.json in " << run.run_dir << " to learn the run's id and UID from\n" << transcript(run.result));
    const auto& rec = *run.record;
    REQUIRE_MESSAGE((rec.contains("id") && rec["id"].is_string() && rec.contains("uid") && rec["uid"].is_number()),
                    "run.json lacks id/uid: " << rec.dump());
    if (rec.contains("teardown") && rec["teardown"].is_object()) {
        CHECK_MESSAGE(rec["teardown"].value("verdict", "") == "clean",
                      "teardown verdict is not clean: " << rec["teardown"].dump());
    } else {
        FAIL_CHECK("run.json has no teardown object: " << rec.dump());
    }
    check_nothing_left(rec["id"].get<std::string>(), rec["uid"].get<uid_t>());
}

std::string field(const std::string& text, const std::string& key) {
    for (const auto& line : lines(text))
        if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
    return {};
}

std::string transcript(const Result& r) {
    return "exit=" + std::to_string(r.exit_code) + (r.timed_out ? " (timed out)" : "") + "\n--- stdout ---\n" + r.out +
           "--- stderr ---\n" + r.err;
}

std::map<std::string, std::string> tree_manifest(const std::string& root) {
    std::map<std::string, std::string> m;
    auto describe = [&](const fs::path& p) {
        struct stat st {};
        if (lstat(p.c_str(), &st) != 0) return std::string("lstat failed: ") + std::strerror(errno);
        std::ostringstream d;
        d << "mode=" << std::oct << st.st_mode << std::dec << " uid=" << st.st_uid << " gid=" << st.st_gid
          << " size=" << st.st_size << " mtime=" << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec
          << " ctime=" << st.st_ctim.tv_sec << "." << st.st_ctim.tv_nsec;
        if (S_ISLNK(st.st_mode)) d << " link=" << fs::read_symlink(p).string();
        if (S_ISREG(st.st_mode)) d << " content=" << read_file(p.string());
        return d.str();
    };
    m["."] = describe(root);
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::none);
         it != fs::recursive_directory_iterator(); ++it)
        m[fs::relative(it->path(), root).string()] = describe(it->path());
    return m;
}

}  // namespace corral::test::sandbox
