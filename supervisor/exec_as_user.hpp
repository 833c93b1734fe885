// supervisor/exec_as_user.hpp — a host program run as an unprivileged user:
// `corral __exec-as UID GID -- /ABS/PATH ARGS...` (the approval notifier hook,
// docs/approvals.md "The notifier").
//
// Why a fresh corral process rather than a privilege drop between fork and
// execve: whoever starts the hook (a run's gateway, the daemon) is
// multi-threaded, and DESIGN forbids cloning from it except by posix_spawn,
// whose child does nothing but execve. glibc's setresuid/setgroups in a
// child of a multi-threaded process would try to signal threads that do not
// exist there. The re-executed corral is single-threaded: it drops
// everything in privilege_drop.hpp's order and execs the program.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace corral::supervisor {

inline constexpr const char* kExecAsUserCommand = "__exec-as";

// The argv for posix_spawn of corral's own binary that runs `command` (an
// absolute path first) as uid/gid.
inline std::vector<std::string> exec_as_user_argv(uid_t uid, gid_t gid, const std::vector<std::string>& command) {
    std::vector<std::string> argv{"corral", kExecAsUserCommand, std::to_string(uid), std::to_string(gid), "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
}

// `corral __exec-as` itself (argv[0] is "__exec-as"): the bounding set,
// supplementary groups, gid, uid, every capability, then no_new_privs, the
// working directory "/", and execv. Returns only on failure: 126 after a
// line on stderr naming the failed call and its errno (127 when the program
// could not be found). Refuses uid or gid 0.
int exec_as_user_main(int argc, char** argv);

}  // namespace corral::supervisor
