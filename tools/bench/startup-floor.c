// tools/bench/startup-floor.c — the kernel's floor for a namespace launcher.
//
// What any tool that starts as a fresh process and runs a command in the
// same namespace set as corral (PID, mount, network, IPC, UTS, cgroup) must
// pay at least: its own execve (this program is static and does nothing
// else), clone3 with those namespaces, the command's execve, its exit, and
// the reap. No rootfs, no /proc, no pivot_root, no limits, no checks: not a
// sandbox, a lower bound to read the other figures against.
//
// Usage: startup-floor CMD [ARGS...]   (root)
#define _GNU_SOURCE
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: startup-floor CMD [ARGS...]\n");
        return 2;
    }
    struct clone_args args = {0};
    args.flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
    args.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0) {
        perror("clone3");
        return 1;
    }
    if (pid == 0) {
        execv(argv[1], argv + 1);
        _exit(127);
    }
    int status = 0;
    if (waitpid((pid_t)pid, &status, 0) != pid) return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
