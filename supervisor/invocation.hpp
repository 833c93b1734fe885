// supervisor/invocation.hpp — a sandbox that outlives one command: invocations
// started on request inside a session's sandbox, each with a role.
//
//   SandboxSpec spec; spec.session = true;
//   Sandbox box = launch_sandbox(spec);               // as a run's, plus two role UIDs
//   Invocation inv = spawn_invocation(box, request);  // the init clones it: PID 1 of a
//                                                     // new PID (and mount) namespace
//   SuperviseResult r = supervise(inv, sinks);        // its output, deadline, stop
//   ...
//   TeardownReport t = teardown(box);                 // every role's UID swept
//
// Each invocation runs as its role's UID: the agent's (the workspace's
// owner), the service's or the verifier's, each a leased UID of its own, so
// no role can signal, ptrace or read the private files of another, and none
// has a capability. An invocation sees only its own PID namespace in /proc.
// spawn_invocation may be called from several threads at once.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/fd.hpp"
#include "supervisor/sandbox.hpp"
#include "supervisor/terminal.hpp"

namespace corral::supervisor {

enum class Role { agent, service, verifier };

std::string_view role_name(Role role);
// "agent", "service", "verifier"; nullopt for anything else.
std::optional<Role> parse_role(std::string_view text);

// `corral exec --tty`: the caller's terminal, as fds the session's
// supervisor was given (borrowed: the caller of spawn_invocation keeps them
// open until supervise returns). The invocation's 0/1/2 and controlling
// terminal are a pty of the box's devpts, the role's; the supervisor relays
// it to `in`/`out` with `in` in raw mode meanwhile (terminal.hpp), and every
// byte readable on `window_changes` (a pipe the caller writes a byte to on
// each SIGWINCH) copies the caller's window size to the pty.
struct CallerTerminal {
    int in = -1;
    int out = -1;
    int window_changes = -1;
    std::string term;   // the box's TERM (box_terminal_type), unless the exec's env sets one
};

struct InvocationSpec {
    Role role = Role::agent;
    std::vector<std::string> argv;
    std::vector<std::pair<std::string, std::string>> env;   // over the role's defaults (role_environment)
    std::string cwd;                                         // "": /workspace for the agent, the role's home for the others
    std::string log_dir;                                     // exists, 0700 root's: stdout.log, stderr.log
    std::optional<std::chrono::milliseconds> timeout;
    std::chrono::milliseconds stop_grace{std::chrono::seconds(10)};
    std::uint64_t log_limit_bytes = UINT64_MAX;
    std::optional<CallerTerminal> terminal;                  // --tty
    // A connected stream socket (borrowed: the caller closes its copy after
    // spawn_invocation) that is the command's stdin and stdout: a stdio MCP
    // server's one way to the gateway (run/mcp_servers.hpp). Its stdout is
    // then not the invocation's to read (nor logged); its stderr is.
    // Not with `terminal`. -1: the usual /dev/null stdin and stdout pipe.
    int stdio_socket = -1;
    // `corral exec --stdin`: the command's stdin (borrowed, as stdio_socket),
    // already checked as stdin_handover.hpp checks `corral run --stdin`'s.
    // Not with `terminal` or `stdio_socket`. -1: the box's /dev/null.
    int stdin_fd = -1;
    // An OCI engine's console (oci/runtime/): the command's 0/1/2 and
    // controlling terminal are a pty of the box's devpts, as with
    // `terminal`, but its master is handed to the caller (take_console)
    // instead of relayed: the engine reads and resizes it. Rows and cols (both
    // nonzero) are its window size before the command starts. Not with
    // `terminal`, `stdio_socket` or `stdin_fd`.
    bool console = false;
    std::uint16_t console_rows = 0, console_cols = 0;
    // The invocation is made (its namespaces, its pty) but its command waits
    // for start_command(); an Invocation let go before that ends without
    // starting it (an OCI container between `create` and `start`).
    bool gated = false;
};

// The role's UID and GID in this session's sandbox.
std::pair<uid_t, gid_t> role_uid_gid(const Sandbox& box, Role role);

// The environment an invocation starts with: the session's, as a run's
// command gets it (command_environment: the defaults, the image's Env, the
// proxy and CA variables, the worker's [env], --env), then `extra`, later
// wins; the service and the verifier get HOME=/tmp/corral-roles/<role>
// (kRoleHomesDir: theirs alone, made before any exec) and USER/LOGNAME of
// their role's name (/home/<agent> is the agent's) unless `extra` sets them.
std::vector<std::string> role_environment(const SandboxSpec& spec, Role role,
                                          const std::vector<std::pair<std::string, std::string>>& extra);

class Invocation {
public:
    Invocation(Invocation&&) noexcept = default;
    Invocation& operator=(Invocation&&) noexcept = default;
    // The reaper (PID 1 of the invocation's namespace): signal it, poll it
    // (readable once it has exited, which the kernel makes wait for every
    // process of its namespace).
    int pidfd() const { return pidfd_.get(); }
    const InvocationSpec& spec() const { return spec_; }
    uid_t uid() const { return uid_; }
    // The read end of the command's stderr, handed over (a stdio server's
    // log, read by whoever keeps it instead of supervise).
    Fd take_stderr() { return std::move(stderr_); }
    // spec.console: the pty's master, handed over (once).
    Fd take_console() { return std::move(console_); }
    // spec.gated: lets the command start (once; later calls do nothing).
    // Throws SysError when the gate cannot be written (the reaper is gone).
    void start_command();

private:
    friend struct SessionChannel;
    friend class Supervision;
    Invocation() = default;
    InvocationSpec spec_;
    std::vector<std::string> env_;
    uid_t uid_ = 0;
    Fd pidfd_;
    Fd report_;
    Fd stdout_;
    Fd stderr_;
    std::unique_ptr<TerminalRelay> tty_;   // --tty: the pty's master and the caller's raw mode
    Fd console_;                           // spec.console: the pty's master until taken
    Fd gate_;                              // spec.gated: the start gate's write end until start_command
};

// Asks the session's init for a new invocation. Throws UsageError for a
// request the init cannot take (too large, a NUL in a string, not a
// session, a terminal that is not one) and SysError when the channel, the
// pty or the clone failed. With spec.terminal the caller's terminal is in
// raw mode when this returns; supervise (or the Invocation's destructor)
// puts it back.
Invocation spawn_invocation(Sandbox& box, InvocationSpec spec);

// As supervise(Sandbox&), for one invocation: its output to `sinks` and to
// spec.log_dir's stdout.log/stderr.log, its deadline and stop (SIGTERM to
// the command through the reaper's pidfd, SIGKILL to the reaper after the
// grace), a hang-up of sinks.hangup_fd as a stop. Returns once the command's
// status is known and its pipes reached EOF (at most 1 s later: a background
// job that keeps them open loses them), or once the reaper is gone.
SuperviseResult supervise(Invocation& inv, const Sandbox& box, const OutputSinks& sinks);

}  // namespace corral::supervisor
