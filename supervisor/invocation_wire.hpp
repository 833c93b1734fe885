// supervisor/invocation_wire.hpp — the one message a session's supervisor sends
// its init to start an invocation, and the init's answer.
//
// The init of a session (sandbox_init.cpp, serve_session) reads requests in a
// loop over a SOCK_SEQPACKET pair made before the clone: one datagram is one
// request, with three fds (SCM_RIGHTS: the invocation's report, stdout and
// stderr pipes' write ends). A terminal request (kExecTty) gets a pty of the
// box's devpts instead of stdin/stdout/stderr pipes for its command: the
// init opens it, passes the slave on as a fourth fd to the invocation, and
// answers with the pidfd and the master. The init allocates nothing: it decodes into a
// static buffer and a static pointer array (decode_exec_request never
// allocates and is the init's only parser of supervisor bytes). The answer is
// an ExecReply, with the new invocation's pidfd attached when err is 0.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace corral::supervisor {

inline constexpr std::uint32_t kExecRequestMagic = 0x58524f43;   // "CORX"
// One request's bytes at most: the argv, environment and execve candidates of
// an exec. Bigger input belongs in a file in the workspace.
inline constexpr std::size_t kMaxExecRequestBytes = 1u << 20;
// Strings (argv + env + candidates + cwd) in one request at most.
inline constexpr std::size_t kMaxExecStrings = 8192;
inline constexpr int kExecRequestFds = 3;   // report, stdout, stderr (write ends)
// The most a request carries between the init and the invocation: the
// three, the caller's stdin (kExecStdin) or the pty's slave the init attaches
// (kExecTty), and the start gate (kExecGated).
inline constexpr int kExecMaxFds = 5;
inline constexpr std::uint32_t kExecTty = 1u << 0;   // ExecRequestHeader.flags: the command's 0/1/2 are a pty
// ExecRequestHeader.flags: the command's stdout fd is a connected stream
// socket that is its stdin too (a stdio MCP server: one socket to the
// gateway, run/mcp_servers.hpp). Not with kExecTty.
inline constexpr std::uint32_t kExecStdinIsStdout = 1u << 1;
// ExecRequestHeader.flags: a fourth fd after report, stdout and stderr is the
// command's stdin (`corral exec --stdin`: the caller's, checked as `corral run
// --stdin` checks its own). Not with kExecTty or kExecStdinIsStdout.
inline constexpr std::uint32_t kExecStdin = 1u << 2;
// ExecRequestHeader.flags, with any one of the above: the next fd (after
// the stdin's) is a pipe's read end, the start gate. The invocation is made
// and its pty opened at once, but the command starts only once a byte comes
// on the gate; at EOF the invocation ends without starting it (an OCI
// container's process between `create` and `start`, oci/runtime/).
inline constexpr std::uint32_t kExecGated = 1u << 3;
// Where a session's service and verifier live: HOME and the default cwd,
// made by the init before any exec, root's parent (0755) and each role's own
// child (0700), so the agent (who can write /tmp itself) can plant nothing there.
inline constexpr const char* kRoleHomesDir = "/tmp/corral-roles";

struct ExecRequestHeader {
    std::uint32_t magic;
    std::uint32_t uid;
    std::uint32_t gid;
    std::uint32_t argc;
    std::uint32_t envc;
    std::uint32_t candc;
    std::uint64_t task_limit;
    std::uint64_t open_file_limit;
    std::uint32_t strings_bytes;   // what follows: cwd, argv..., env..., candidates..., each NUL-terminated
    std::uint32_t flags;           // kExecTty, kExecStdinIsStdout, kExecStdin or 0; any other bit (or two) refuses the request
    std::uint16_t rows;            // kExecTty: the pty's window size before the command starts
    std::uint16_t cols;
    std::uint32_t reserved;        // 0
};

struct ExecReply {
    // 0: started (a pidfd is attached, and with kExecTty the pty's master
    // after it); else the errno of what failed.
    std::int32_t err;
};

// What the supervisor sends (encode_exec_request).
struct ExecImage {
    uid_t uid = 0;
    gid_t gid = 0;
    std::uint64_t task_limit = 0;
    std::uint64_t open_file_limit = 0;
    std::string cwd;
    std::vector<std::string> argv;
    std::vector<std::string> env;          // "K=V"
    std::vector<std::string> candidates;   // execve paths for argv[0], in order
    bool tty = false;                      // kExecTty
    std::uint16_t rows = 0, cols = 0;
    bool stdin_is_stdout = false;          // kExecStdinIsStdout
    bool own_stdin = false;                // kExecStdin
    bool gated = false;                    // kExecGated
};

// The request's bytes. Throws std::length_error past kMaxExecRequestBytes or
// kMaxExecStrings (the caller says what was too big), std::invalid_argument
// for an empty argv or a string holding a NUL.
std::vector<char> encode_exec_request(const ExecImage& image);

// A request as the init sees it: pointers into the caller's buffer, each of
// the three arrays NULL-terminated inside `slots`.
struct DecodedExec {
    uid_t uid = 0;
    gid_t gid = 0;
    std::uint64_t task_limit = 0;
    std::uint64_t open_file_limit = 0;
    const char* cwd = nullptr;
    char* const* argv = nullptr;
    char* const* envp = nullptr;
    char* const* candidates = nullptr;
    bool tty = false;
    std::uint16_t rows = 0, cols = 0;
    bool stdin_is_stdout = false;
    bool own_stdin = false;
    bool gated = false;
};

// Parses `buf` (len bytes, modified in place: nothing), filling `slots`
// (slot_count entries) with the string pointers. 0, or EINVAL / EMSGSIZE for
// a malformed or oversized request (an unknown flag, a nonzero reserved
// field), EPERM for UID or GID 0 or -1 (setresuid(-1)
// would keep root). Never allocates (the init calls it).
int decode_exec_request(char* buf, std::size_t len, char** slots, std::size_t slot_count, DecodedExec& out) noexcept;

}  // namespace corral::supervisor
