// tests/support/process.hpp — run real programs from tests.
//
// Integration and end-to-end tests drive real binaries (corral, curl, node);
// this is the one place that knows how to spawn them, capture their output and
// bound how long they may take (a bound for hangs, not a timing assertion).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace corral::test {

struct Result {
    int exit_code = -1;   // exit status, or 128+signal if killed by a signal
    bool timed_out = false;
    std::string out;
    std::string err;
};

struct RunOptions {
    std::chrono::milliseconds timeout{60'000};
    std::string stdin_data;                     // written to the child's stdin, then closed
    std::map<std::string, std::string> env;     // added to (or overriding) the inherited environment
    std::string cwd;
    // Background only: the process's stderr goes to this file (else it is dropped).
    std::string stderr_file;
};

// Runs argv[0] (looked up in PATH) to completion; never throws for a
// non-zero exit. Throws std::runtime_error if the program cannot be started.
Result run(const std::vector<std::string>& argv, const RunOptions& options = {});

// A background process killed (SIGKILL, then reaped) when the object dies.
class Background {
public:
    explicit Background(const std::vector<std::string>& argv, const RunOptions& options = {});
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;
    ~Background();
    pid_t pid() const { return pid_; }
    // Reads what the process has written to stdout so far (non-blocking).
    std::string drain_stdout();
    // Waits until stdout contains `needle` or the timeout passes; returns whether it did.
    bool wait_for_stdout(const std::string& needle, std::chrono::milliseconds timeout);
    void kill_now();
    // Sends `sig` to the process (not its group).
    void signal(int sig);
    // Waits up to `timeout` for the process to exit and reaps it: its exit
    // status (128+signal if a signal ended it), or -1 if it is still running.
    int wait_exit(std::chrono::milliseconds timeout);

private:
    pid_t pid_ = -1;
    int out_fd_ = -1;
    std::string seen_;
};

// Runs argv in `cwd` and throws std::runtime_error naming the command and its
// output if it exits non-zero: for fixture steps (openssl, cc) that must work.
void run_checked(const std::vector<std::string>& argv, const std::string& cwd = {});

// n random lowercase hex digits: unique names for markers, secrets, temp dirs.
std::string random_hex(std::size_t n);

// Creates or truncates `path` with `text`, then sets `mode`. Throws
// std::runtime_error naming the path if it cannot be written.
void write_file(const std::string& path, const std::string& text, unsigned mode = 0644);

// The whole file ("" if it cannot be read).
std::string read_file(const std::string& path);
// `text` split at its newlines (none kept; a last line without one kept too).
std::vector<std::string> lines(const std::string& text);

// Absolute path of the corral binary under test: $CORRAL_BIN, set by meson.
std::string corral_bin();
// Absolute path of the source tree root: $CORRAL_SOURCE_ROOT, set by meson.
std::string source_root();
bool running_as_root();

// A loopback TCP connection to 127.0.0.1:`port` whose socket a child process
// made as `uid` (root only: setresuid), held open until release(). For
// tests of who the kernel says owns a connecting socket.
class ConnectionAs {
public:
    ConnectionAs(uid_t uid, unsigned short port);   // throws std::runtime_error if the child cannot start
    ConnectionAs(const ConnectionAs&) = delete;
    ConnectionAs& operator=(const ConnectionAs&) = delete;
    ~ConnectionAs();
    // Lets the child close and exit; its exit status (0: it connected and held).
    int release();

private:
    pid_t pid_ = -1;
    int hold_ = -1;
    int status_ = -1;
};
// True if `program` is found in PATH.
bool have_program(const std::string& program);

}  // namespace corral::test
