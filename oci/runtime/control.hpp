// oci/runtime/control.hpp — the words between the runtime's commands and a
// container's supervisor, over ROOT/ID/control.sock (root's, 0600, in a
// 0700 directory; the peer must be root too):
//
//   start\n              → ok\n | error TEXT\n
//   kill SIGNO ALL\n     → ok\n | error TEXT\n      (ALL: 0 the process, 1 every process of the box)
//   exec JSON\n          → ok\n, then exit STATUS\n once it ended | error TEXT\n
//   pids\n               → pids PID...\n | error TEXT\n   (every process of the box but its init)
//
// exec's JSON is {"args": [...], "env": ["K=V", ...], "cwd": "/..."}, and
// its first bytes carry the caller's stdin, stdout and stderr (SCM_RIGHTS):
// the exec'd process reads and writes the caller's own descriptors. With a
// terminal it adds "console_socket": "/..." (and "rows", "cols"): the
// process's 0/1/2 are a pty whose master the supervisor sends there
// (send_console) before its "ok".
// One request per connection; a line is at most kMaxControlLine bytes; a
// peer that sends no whole line within 10 s is dropped.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.hpp"
#include "oci/runtime/container_dir.hpp"

namespace corral::oci {

inline constexpr std::size_t kMaxControlLine = 64 * 1024;

struct ControlRequest {
    enum class Kind { start, kill, exec, pids } kind = Kind::start;
    int signal = 0;
    bool all = false;
    // exec
    std::vector<std::string> args;
    std::vector<std::pair<std::string, std::string>> env;
    std::string cwd;
    std::string console_socket;             // "": no terminal
    std::uint16_t rows = 0, cols = 0;       // the console's window size (0: the engine sets it)
};

// A request's line, without its newline; nullopt for anything else.
std::optional<ControlRequest> parse_control_line(const std::string& line);
std::string control_line(const ControlRequest& request);

// The supervisor's end: one request from `conn` (bounded) with the fds that
// came with it (exec: stdin, stdout, stderr), nullopt when the peer is not
// root or sent no request; and the answers.
struct ReceivedControl {
    ControlRequest request;
    std::vector<Fd> fds;
};
std::optional<ReceivedControl> read_control_request(int conn);
void answer_control(int conn, const std::string& error_or_empty);
void answer_exit(int conn, int status);
void answer_pids(int conn, const std::vector<long>& pids);

// The command's end: the request sent to the container's supervisor, its
// answer waited for (bounded); throws UsageError with the supervisor's
// error, or naming why it could not be asked (the container is not running).
void ask_supervisor(const ContainerDir& container, const ControlRequest& request);

// A pty's master to an engine's console socket, as runc sends it: one
// message whose bytes are the slave's name (/dev/pts/N, in the box's
// devpts) and whose one fd is the master. Throws naming the socket.
void send_console(const std::string& socket_path, const Fd& master);

// ps: the container's processes (host pids), as its supervisor lists them.
std::vector<long> ask_supervisor_for_pids(const ContainerDir& container);

// exec: the request sent with `stdio` (three fds); returns the connection
// once the supervisor says the process started. wait_for_exec_exit then
// blocks until it ended: its status (as a run's: the exit code, 128 + a
// signal), or 255 when the supervisor went away without saying.
Fd start_exec(const ContainerDir& container, const ControlRequest& request, const int stdio[3]);
int wait_for_exec_exit(int conn);

}  // namespace corral::oci
