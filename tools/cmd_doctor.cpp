// tools/cmd_doctor.cpp — `corral doctor`: probe every kernel feature corral needs.
#include <cstdio>
#include <string_view>

#include "supervisor/doctor.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

int cmd_doctor(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::printf(
                "usage: corral doctor\n\n"
                "Checks, by actually using each one, every kernel feature `corral run` needs:\n"
                "running as root; the pid, mount, network, ipc, uts and cgroup namespaces (unshare in a\n"
                "throwaway child); clone3 with CLONE_PIDFD; pidfd_open and pidfd_send_signal;\n"
                "no_new_privs; a seccomp filter (libseccomp); an overlay mount in a throwaway mount\n"
                "namespace; an rtnetlink socket in a new network namespace; where the memory, pids and\n"
                "cpu cgroup controllers live (v2 or v1); and a real run cgroup with all three limits.\n\n"
                "Prints one line per feature:\n"
                "  ok   <feature>: <what was found>\n"
                "  FAIL <feature>: <what is missing> — <what to do>\n\n"
                "Exit status: 0 if every check is ok, 1 otherwise, 2 on bad usage.\n");
            return 0;
        }
        std::fprintf(stderr, "corral doctor: unknown argument \"%s\"; `corral doctor` takes no arguments except --help\n",
                     argv[i]);
        return 2;
    }
    bool all_ok = true;
    for (const auto& check : supervisor::run_doctor_checks()) {
        std::printf("%s\n", supervisor::format_check(check).c_str());
        std::fflush(stdout);
        all_ok = all_ok && check.ok;
    }
    return all_ok ? 0 : 1;
}

}  // namespace corral::cli
