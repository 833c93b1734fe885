#include "supervisor/init_channel.hpp"

#include <poll.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/sys_error.hpp"
#include "supervisor/fd_passing.hpp"

namespace corral::supervisor {

namespace {

std::string message_detail(const InitMessage& msg) {
    return std::string(msg.detail, strnlen(msg.detail, sizeof msg.detail));
}

std::string describe_mount_failure(const rootfs::MountPlan& plan, const InitMessage& msg) {
    rootfs::MountFailure f;
    f.op_index = msg.mount_op;
    f.err = msg.err;
    f.call = static_cast<rootfs::FailedCall>(msg.mount_call);
    return rootfs::describe_failure(plan, f);
}

}  // namespace

std::pair<Fd, Fd> make_pipe() {
    int fds[2];
    check_sys(pipe2(fds, O_CLOEXEC), "pipe2");
    return {Fd(fds[0]), Fd(fds[1])};
}

std::pair<Fd, Fd> make_fd_channel() {
    int fds[2];
    check_sys(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), "socketpair", "AF_UNIX, SOCK_SEQPACKET");
    return {Fd(fds[0]), Fd(fds[1])};
}

Fd receive_fd(const Fd& channel, const char* what) {
    char byte = 0;
    int fd = -1, nfds = 0;
    ssize_t n = receive_with_fds(channel.get(), &byte, 1, &fd, 1, nfds);
    if (n < 0) {
        if (nfds == 1) close(fd);
        throw SysError("recvmsg", what, static_cast<int>(-n));
    }
    if (n == 0 || nfds != 1) throw SysError("recvmsg", std::string(what) + ": no descriptor came", EPROTO);
    return Fd(fd);
}

bool read_message(int fd, InitMessage& msg) {
    std::size_t got = 0;
    auto* p = reinterpret_cast<char*>(&msg);
    while (got < sizeof msg) {
        ssize_t n = read(fd, p + got, sizeof msg - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw SysError("read", "init report pipe", errno);
        if (n == 0) {
            if (got == 0) return false;
            throw SysError("read", "init report pipe: truncated message", EPROTO);
        }
        got += static_cast<std::size_t>(n);
    }
    return true;
}

void send_byte(const Fd& fd, const char* what) {
    char byte = 1;
    for (;;) {
        ssize_t n = write(fd.get(), &byte, 1);
        if (n == 1) return;
        if (n < 0 && errno == EINTR) continue;
        throw SysError("write", what, errno);
    }
}

int signal_through_pidfd(int pidfd, int sig) {
    return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

bool pidfd_exited(int pidfd) {
    pollfd p{pidfd, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

SandboxSetupError setup_error(const InitMessage& msg, const rootfs::MountPlan& plan,
                              const rootfs::MountPlan& proc_plan) {
    if (msg.step == SetupStep::exec_command)  // the command itself, not corral's setup
        return SandboxSetupError(msg.step, msg.err,
                                 "cannot execute " + message_detail(msg) + " in the sandbox: " + errno_text(msg.err));
    std::string text = "setup step " + std::string(step_name(msg.step)) + " failed: ";
    if (msg.step == SetupStep::mount_invocation_proc && msg.mount_op < proc_plan.ops.size())
        text += describe_mount_failure(proc_plan, msg);
    else if (msg.step == SetupStep::apply_mount_plan || msg.step == SetupStep::enter_rootfs)
        text += describe_mount_failure(plan, msg);
    else
        text += message_detail(msg) + ": " + errno_text(msg.err);
    return SandboxSetupError(msg.step, msg.err, text);
}

}  // namespace corral::supervisor
