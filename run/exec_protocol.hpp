// run/exec_protocol.hpp — what `corral exec` and a session's supervisor say
// on the session's socket (pure: both ends and the tests use these).
//
// The caller sends one line of JSON, in the same sendmsg as its stdout and
// stderr (SCM_RIGHTS: the supervisor writes the command's output straight
// to them; with "tty" also its stdin, a terminal, and the read end of a pipe
// it writes a byte to on each SIGWINCH); the supervisor answers with one line of JSON when the command
// has ended, and closes. docs/sessions.md "Protocol".
//
//   > {"argv":["make","test"],"prompt":null,"role":"agent","env":[["K","V"]],"cwd":null,"timeout_ms":null,"grace_ms":null,"tty":null,"stdin":false}
//   < {"exec":3,"status":0,"outcome":"exited","messages":[]}
#pragma once

#include "supervisor/outcome.hpp"
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "supervisor/invocation.hpp"

namespace corral::run {

inline constexpr std::size_t kMaxExecLineBytes = 1u << 20;

struct ExecRequest {
    supervisor::Role role = supervisor::Role::agent;
    std::vector<std::string> argv;                        // empty with a prompt
    // `corral exec --prompt`: the worker's agent CLI on this task (the
    // session builds its command line, as `corral run --prompt` does).
    std::optional<std::string> prompt;
    std::vector<std::pair<std::string, std::string>> env;
    std::optional<std::string> cwd;                       // absolute; unset: the role's default
    std::optional<std::chrono::milliseconds> timeout;
    std::optional<std::chrono::milliseconds> grace;
    // `corral exec --tty`: the command on a pty of the box's, relayed to the
    // caller's terminal; the caller's TERM (the supervisor keeps it only if
    // box_terminal_type does). Not with a prompt.
    bool tty = false;
    std::string term;
    // `corral exec --stdin`: the caller's stdin comes with the request (its
    // third fd) and is the command's. Not with tty.
    bool stdin = false;
};

// One line, '\n'-terminated.
std::string exec_request_line(const ExecRequest& request);
// Throws UsageError naming the field and what is allowed.
ExecRequest parse_exec_request_line(std::string_view line);

struct ExecAnswer {
    std::optional<int> exec;                // the exec's number in the session (execs/N); none if refused
    int status = 125;                       // corral exec's exit status
    supervisor::Outcome outcome = supervisor::Outcome::setup_failed;  // as run.json's, or refused
    std::vector<std::string> messages;      // lines for the caller's stderr
};

// The other request a session serves (docs/workspace.md "While it runs"):
// `corral apply --while-running` tells the session's supervisor, which owns
// review.json and the journal until the end, what it applied, to be
// recorded there. The same socket, fds and answer as an exec.
//   > {"workspace_applied":{"payload":{...},"applied":["a.txt"],"stamps":{"a.txt":[1765000000,5]},"digest":"sha256:..."}}
//   < {"exec":null,"status":0,"outcome":"exited","messages":[]}
std::string workspace_applied_line(const nlohmann::json& applied);
// The request's object when `line` is one (an exec request is not);
// throws UsageError for one whose members are missing or mistyped.
std::optional<nlohmann::json> parse_workspace_applied_line(std::string_view line);

std::string exec_answer_line(const ExecAnswer& answer);
// Throws UsageError for a line that is not an answer.
ExecAnswer parse_exec_answer_line(std::string_view line);

}  // namespace corral::run
