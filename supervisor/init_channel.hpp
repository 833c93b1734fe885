// supervisor/init_channel.hpp — the supervisor's end of its init's channels.
//
// The init and the invocation report over one pipe in fixed-size
// InitMessages (setup_step.hpp); the supervisor answers on another with
// single bytes ("go", "start"), and signals the init through its pidfd,
// which cannot hit a recycled PID. Used by launch, supervise and teardown
// (sandbox_launch.cpp, sandbox_supervise.cpp, sandbox_teardown.cpp).
#pragma once

#include <string>
#include <utility>

#include "base/fd.hpp"
#include "rootfs/mount_plan.hpp"
#include "supervisor/sandbox.hpp"
#include "supervisor/setup_step.hpp"

namespace corral::supervisor {

// A pipe whose both ends are CLOEXEC; the child dup2s what it hands on.
std::pair<Fd, Fd> make_pipe();

// A connected pair of CLOEXEC Unix sockets for passing one fd (SCM_RIGHTS):
// the init hands the box's pty master to the supervisor over it (--tty).
std::pair<Fd, Fd> make_fd_channel();

// The fd the other end sent (CLOEXEC here); throws SysError naming `what`
// if the peer closed without sending one.
Fd receive_fd(const Fd& channel, const char* what);

// Reads one whole InitMessage; false on EOF before its first byte. Throws
// SysError on a read error or a message cut short.
bool read_message(int fd, InitMessage& msg);

// Writes the one byte that lets the init go on; throws SysError naming `what`.
void send_byte(const Fd& fd, const char* what);

// pidfd_send_signal(2) without siginfo: 0, or -1 with errno.
int signal_through_pidfd(int pidfd, int sig);

// Whether the process behind `pidfd` has exited (the pidfd polls readable), now.
bool pidfd_exited(int pidfd);

// The error a failed step's message means: the mount op that failed (by
// `plan` or, for the invocation's /proc, `proc_plan`), or the failed call and
// errno; "cannot execute PATH in the sandbox" for the command's own execve.
SandboxSetupError setup_error(const InitMessage& msg, const rootfs::MountPlan& plan,
                              const rootfs::MountPlan& proc_plan);

}  // namespace corral::supervisor
