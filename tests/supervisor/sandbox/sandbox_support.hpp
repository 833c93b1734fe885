// tests/supervisor/sandbox/sandbox_support.hpp — what every sandbox integration test needs:
// a busybox-static rootfs assembled once per test executable, a way to invoke
// `corral run` against it and read its run record, and the after-every-run
// check that nothing of the run survived (processes, cgroups, mounts, locks,
// scratch).
//
// Each test executable gets its own slice of UIDs (--uid-range) so that a run
// of one executable can never take the UID another executable's checks are
// still looking at when meson runs them in parallel.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.hpp"

namespace corral::test::sandbox {

// Called from each test executable's main(): skips (exit 77, reason on stderr)
// unless root and busybox-static are available, then runs doctest.
int run_suite(int argc, char** argv, const char* uid_range);

// The UID range this executable passes to every `corral run` unless a test
// asks for the default.
const std::string& uid_range();

// The shared rootfs of this executable: /bin/busybox (static) with every
// applet linked in /bin, etc/, tmp/, workspace/, proc/, dev/, a world-writable
// data/ and etc/writable (to prove writes never reach the image) and
// bin/suid-probe (a static setuid-root program printing its euid) and
// bin/setid-probe (tries every call that can set a set-ID bit in the cwd)
// bin/kernel-probe (socket families, netlink, AIO, rlimits, OOM score, TIOCSETD,
// the pty cap; `sockets` fills socket buffers, `tty` abuses fd 0's terminal) and
// bin/conn-hold N (holds N connections to the bridge, counts those closed).
// Assembled on first use; removed when the executable exits.
const std::string& rootfs();

// A fresh directory under this executable's temp base (removed at exit).
std::string fresh_dir(const std::string& stem, mode_t mode = 0755);
// A path under the temp base that does not exist yet (for --run-dir).
std::string fresh_path(const std::string& stem);

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& content);

struct CorralRun {
    Result result;
    std::string run_dir;
    std::optional<nlohmann::json> record;  // run.json, if corral wrote one
};

struct CorralArgs {
    std::vector<std::string> flags;          // extra options before `--`
    std::string rootfs;                      // default: the shared rootfs
    bool own_uid_range = true;               // false: use corral's default range
    bool own_run_dir = true;                 // false: pass no --run-dir
    RunOptions process;                      // timeout, env, stdin for the corral process
};

// argv for `corral run` with our rootfs, run dir and UID range, then `-- command`.
std::vector<std::string> corral_argv(const CorralArgs& args, const std::string& run_dir,
                                     const std::vector<std::string>& command);
CorralRun corral_run(const std::vector<std::string>& command, const CorralArgs& args = {});
// Convenience: corral run ... -- /bin/sh -c SCRIPT
CorralRun corral_sh(const std::string& script, const CorralArgs& args = {});
// A script that prints START first and DONE last ran to its end in the box.
void require_ran(const CorralRun& run);
std::optional<nlohmann::json> read_record(const std::string& run_dir);

// A `corral run` left running in the background; stdout/stderr go to files so
// the test can watch them while the run is alive.
class CorralProcess {
public:
    CorralProcess(const std::vector<std::string>& command, const CorralArgs& args = {});
    CorralProcess(const CorralProcess&) = delete;
    CorralProcess& operator=(const CorralProcess&) = delete;
    ~CorralProcess();  // SIGKILLs corral (only its pid) if still running, reaps it
    pid_t pid() const { return pid_; }
    const std::string& run_dir() const { return run_dir_; }
    std::string out() const;
    std::string err() const;
    bool wait_for_out(const std::string& needle, std::chrono::milliseconds timeout) const;
    bool wait_for_err(const std::string& needle, std::chrono::milliseconds timeout) const;
    // Waits for corral to exit (bounded); returns exit code or 128+signal, -1 on timeout.
    int wait(std::chrono::milliseconds timeout = std::chrono::seconds(60));
    void kill_supervisor_only();  // SIGKILL to corral's pid alone, not its process group
    void signal(int sig);         // `sig` to corral's pid alone

private:
    pid_t pid_ = -1;
    bool reaped_ = false;
    std::string run_dir_, out_path_, err_path_;
};

// --- observations of the host ---
std::vector<pid_t> processes_of_uid(uid_t uid);  // real, effective, saved or fs uid
std::string describe_processes(const std::vector<pid_t>& pids);
std::vector<std::string> cgroup_mount_points();  // every cgroup v1/v2 mount on the host
std::vector<std::string> cgroup_dirs_of_run(const std::string& run_id);
std::vector<std::string> mount_lines_mentioning(const std::string& needle);
bool process_alive(pid_t pid);  // exists and is not a zombie
std::string lock_path(uid_t uid);
std::string scratch_path(const std::string& run_id);

// Polls until no process of `uid` exists or `timeout` passes (a bound, not a
// timing assertion); returns what is still left.
std::vector<pid_t> wait_until_no_process_of_uid(uid_t uid, std::chrono::milliseconds timeout);

// After every run: no process of the run's UID, no cgroup corral/<id> in any
// hierarchy, no host mount mentioning the run id, no lock for the UID, no
// scratch dir, and the record says the teardown was clean. CHECKs each.
void check_nothing_left(const CorralRun& run);
void check_nothing_left(const std::string& run_id, uid_t uid);

// Value after "key=" on the line that starts with it ("" if absent).
std::string field(const std::string& text, const std::string& key);
// Both streams, for failure messages.
std::string transcript(const Result& r);

// A content manifest of a directory tree (type, mode, owner, size, mtime,
// ctime, link target, content bytes) for byte-for-byte comparisons.
std::map<std::string, std::string> tree_manifest(const std::string& root);

}  // namespace corral::test::sandbox
