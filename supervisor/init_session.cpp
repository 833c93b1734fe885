// supervisor/init_session.cpp — a session's init (the box of `corral session
// start`): one invocation per `corral exec`, each made ahead of its request,
// and the box's pty. Part of the init: see sandbox_init.cpp and init_steps.hpp.
#include "supervisor/init_steps.hpp"


#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "supervisor/loopback.hpp"
#include "supervisor/fd_passing.hpp"
#include "supervisor/privilege_drop.hpp"
#include "supervisor/invocation_wire.hpp"
#include "supervisor/setup_step.hpp"

namespace corral::supervisor {
namespace init_steps {

// ---- a session's invocation: as run_invocation, in a mount namespace of
// its own (CLONE_NEWNS) so that its /proc is of its own PID namespace (an
// exec sees its own processes, never another role's), outliving its command
// while background jobs run. It is made *before* its request (a warm
// invocation, see serve_session): it mounts its /proc, then waits on its own
// channel for the request the init passes on, and starts the command at once.
// `fds` has room for kExecMaxFds.
static_assert(kExecMaxFds <= kMaxPassedFds, "an exec request's fds must fit one message");
ssize_t receive_exec_request(int sock, char* buf, std::size_t size, int* fds, int& nfds) noexcept {
    return receive_with_fds(sock, buf, size, fds, kExecMaxFds, nfds);
}

// The request's identity, command and pipes (and with kExecTty, once the
// init attached it, the pty's slave, the last fd) into the invocation's
// context; 0 or the errno that refuses it. The supervisor's request never
// carries a slave. `gate`: the start gate's read end with kExecGated, else -1.
struct PtyWanted {
    bool tty = false;
    std::uint16_t rows = 0, cols = 0;
};

int context_for_request(InitContext& inv, char* request, std::size_t len, const int* fds, int nfds,
                        bool slave_attached, PtyWanted* wanted = nullptr, int* gate = nullptr) noexcept {
    static char* slots[kMaxExecStrings];
    DecodedExec exec{};
    if (int err = decode_exec_request(request, len, slots, kMaxExecStrings, exec); err != 0) return err;
    // The request's own fds, and a terminal request's slave once the init attached it.
    const int slave = slave_attached && exec.tty ? 1 : 0;
    if (nfds != kExecRequestFds + slave + (exec.own_stdin ? 1 : 0) + (exec.gated ? 1 : 0)) return EPROTO;
    inv.uid = exec.uid;
    inv.gid = exec.gid;
    inv.task_limit = exec.task_limit;
    inv.open_file_limit = exec.open_file_limit;
    inv.cwd = exec.cwd;
    inv.argv = exec.argv;
    inv.envp = exec.envp;
    inv.exec_candidates = exec.candidates;
    inv.report_fd = fds[0];
    inv.stdout_fd = fds[1];
    inv.stderr_fd = fds[2];
    inv.tty_slave_fd = slave ? fds[nfds - 1] : -1;
    // A stdio server's one socket: its stdin as well as its stdout; or the
    // caller's stdin (corral exec --stdin), the fourth fd.
    inv.stdin_fd = exec.stdin_is_stdout ? fds[1] : exec.own_stdin ? fds[3] : -1;
    if (wanted != nullptr) *wanted = PtyWanted{exec.tty, exec.rows, exec.cols};
    if (gate != nullptr) *gate = exec.gated ? fds[kExecRequestFds + (exec.own_stdin ? 1 : 0)] : -1;
    return 0;
}

[[noreturn]] void run_session_invocation(const InitContext& session, int channel) noexcept {
    signal(SIGCHLD, SIG_DFL);  // the init ignores it (its invocations are reaped by the kernel); this reaper waits
    prctl(PR_SET_NAME, "corral-init", 0, 0, 0);
    reset_stop_forwarding();
    InitContext inv = session;
    inv.report_fd = -1;  // none yet: a failed /proc is reported once the request brings its pipe
    inv.stdin_fd = -1;
    inv.control_fd = -1;
    inv.tty_channel_fd = -1;
    inv.tty_slave_fd = -1;
    inv.session_fd = -1;
    const auto proc_failed = rootfs::apply_mount_plan(*inv.proc_plan);
    static char request[kMaxExecRequestBytes];
    int fds[kExecMaxFds] = {-1, -1, -1, -1, -1};
    int nfds = 0;
    ssize_t n;
    while ((n = receive_exec_request(channel, request, sizeof request, fds, nfds)) < 0 && n == -EINTR) {
    }
    close(channel);
    // The init checked the request before passing it on; checked again here,
    // where it is used.
    int gate = -1;
    if (n <= 0 || context_for_request(inv, request, static_cast<std::size_t>(n), fds, nfds, true, nullptr, &gate) != 0)
        _exit(125);
    if (proc_failed) fail_mount(inv, SetupStep::mount_invocation_proc, *proc_failed);
    if (gate >= 0) {
        // kExecGated: a byte starts the command; EOF (the supervisor let the
        // invocation go unstarted) ends it here, nothing of it having run.
        char go = 0;
        ssize_t got;
        while ((got = read(gate, &go, 1)) < 0 && errno == EINTR) {
        }
        if (got != 1) _exit(0);
        close(gate);
    }
    start_command_and_reap(inv, true);
}

// One fd with a one-byte message (the pty master): 0 or -errno.
int send_fd(int sock, int fd) noexcept {
    const char byte = 0;
    return send_with_fds(sock, &byte, 1, &fd, 1);
}

// A pty of the box's own devpts (after pivot_root /dev/ptmx is pts/ptmx of
// the instance the mount plan made), so the box never holds a terminal of
// the host. The slave is `uid`'s (0600), opened through the master itself,
// not by a path under /dev/pts; a nonzero rows/cols is its window size
// before any program reads it. 0, or the errno with the failed call in
// `failed` (nothing is left open).
struct PtyPair {
    int master = -1;
    int slave = -1;
};

int open_pty_pair(uid_t uid, gid_t gid, std::uint16_t rows, std::uint16_t cols, PtyPair& out,
                  const char*& failed) noexcept {
    PtyPair p;
    auto give_up = [&](const char* call) {
        const int err = errno;
        failed = call;
        if (p.slave >= 0) close(p.slave);
        if (p.master >= 0) close(p.master);
        return err;
    };
    p.master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (p.master < 0) return give_up("open(/dev/ptmx)");
    int unlock = 0;
    if (ioctl(p.master, TIOCSPTLCK, &unlock) != 0) return give_up("ioctl(TIOCSPTLCK)");
    p.slave = ioctl(p.master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (p.slave < 0) return give_up("ioctl(TIOCGPTPEER)");
    if (fchown(p.slave, uid, gid) != 0) return give_up("fchown(pty slave)");
    if (fchmod(p.slave, 0600) != 0) return give_up("fchmod(pty slave)");
    if (rows != 0 && cols != 0) {
        winsize ws{};
        ws.ws_row = rows;
        ws.ws_col = cols;
        if (ioctl(p.master, TIOCSWINSZ, &ws) != 0) return give_up("ioctl(TIOCSWINSZ)");
    }
    out = p;
    return 0;
}

// --tty: the run's pty. The slave stays with the init until the invocation
// has it; the master goes to the supervisor (which sets the window size
// before "start"). Returns the slave.
int open_box_pty(const InitContext& ctx) noexcept {
    PtyPair pty;
    const char* failed = "";
    if (int err = open_pty_pair(ctx.uid, ctx.gid, 0, 0, pty, failed); err != 0)
        fail(ctx, SetupStep::open_box_pty, err, failed);
    if (int rc = send_fd(ctx.tty_channel_fd, pty.master); rc < 0)
        fail(ctx, SetupStep::open_box_pty, -rc, "sendmsg(SCM_RIGHTS, pty master)");
    close(pty.master);
    close(ctx.tty_channel_fd);
    return pty.slave;
}

// The answer to one request: {err}, with the invocation's pidfd (and a
// terminal request's pty master) when err is 0.
void answer_exec_request(int sock, int err, int pidfd, int pty_master) noexcept {
    ExecReply reply{err};
    const int fds[2] = {pidfd, pty_master};
    send_with_fds(sock, &reply, sizeof reply, fds, pidfd < 0 ? 0 : pty_master < 0 ? 1 : 2);
}

// An invocation made ahead of its request: its pidfd and the init's end of
// the channel its request will come on. {-1, -1} if it could not be made.
struct WarmInvocation {
    int pidfd = -1;
    int channel = -1;
};

WarmInvocation make_warm_invocation(const InitContext& ctx) noexcept {
    WarmInvocation w;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return w;
    const int bytes = static_cast<int>(kMaxExecRequestBytes + 64 * 1024);
    setsockopt(pair[0], SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes);
    clone_args args{};
    args.flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_PIDFD;
    args.pidfd = reinterpret_cast<std::uint64_t>(&w.pidfd);
    args.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) {
        // Nothing of the init's but its channel: not the session's channel,
        // the report pipe, nor a request's pipes the init still holds.
        const int keep[] = {0, 1, 2, pair[1]};
        if (close_all_except(keep, 4) != 0) _exit(125);
        run_session_invocation(ctx, pair[1]);
    }
    close(pair[1]);
    if (pid < 0) {
        close(pair[0]);
        return WarmInvocation{};
    }
    w.channel = pair[0];
    return w;
}

void discard(WarmInvocation& w) noexcept {
    if (w.pidfd >= 0) {
        syscall(SYS_pidfd_send_signal, w.pidfd, SIGKILL, nullptr, 0);
        close(w.pidfd);
    }
    if (w.channel >= 0) close(w.channel);
    w = WarmInvocation{};
}

// ---- a session's init: after "ready", one invocation per request of its
// supervisor, each PID 1 of a new nested PID namespace (and mount namespace,
// for its own /proc), with the request's identity, command, environment and
// pipes. One invocation is always made ahead (warm: its namespaces and /proc
// exist), so a request costs only passing it on; the next one is made after
// the answer. The supervisor holds each invocation's pidfd (sent back here)
// to stop it, kill it and see it end; the init needs no waitpid for them:
// SIGCHLD ignored lets the kernel reap them. The init itself starts nothing
// else and exits when its supervisor closes the channel (or dies: the
// parent-death signal).
// kRoleHomesDir/service and /verifier: made before any exec exists, so no
// process of the agent's can have put anything there first.
void make_role_homes(const InitContext& ctx) noexcept {
    static const char* const kNames[2] = {"service", "verifier"};
    char path[128];
    if (mkdir(kRoleHomesDir, 0755) != 0) fail(ctx, SetupStep::make_role_homes, errno, kRoleHomesDir);
    if (chmod(kRoleHomesDir, 0755) != 0) fail(ctx, SetupStep::make_role_homes, errno, kRoleHomesDir);  // past the umask
    for (int i = 0; i < 2; ++i) {
        std::snprintf(path, sizeof path, "%s/%s", kRoleHomesDir, kNames[i]);
        if (mkdir(path, 0700) != 0) fail(ctx, SetupStep::make_role_homes, errno, path);
        if (chown(path, ctx.role_uids[i], ctx.role_uids[i]) != 0) fail(ctx, SetupStep::make_role_homes, errno, path);
    }
}

[[noreturn]] void serve_session(const InitContext& ctx) noexcept {
    signal(SIGCHLD, SIG_IGN);
    make_role_homes(ctx);
    WarmInvocation warm = make_warm_invocation(ctx);
    InitMessage ready{};
    ready.kind = InitMessageKind::ready;
    send(ctx.report_fd, ready);
    static char request[kMaxExecRequestBytes];
    for (;;) {
        int fds[kExecMaxFds] = {-1, -1, -1, -1, -1};
        int nfds = 0;
        ssize_t n = receive_exec_request(ctx.session_fd, request, sizeof request, fds, nfds);
        if (n == 0) _exit(0);
        int err = n < 0 ? static_cast<int>(-n) : 0;
        InitContext probe = ctx;
        PtyWanted wanted;
        if (err == 0) {
            // Checked here, so a refusal is answered, not just an exit of the invocation.
            err = context_for_request(probe, request, static_cast<std::size_t>(n), fds, nfds, false, &wanted);
        }
        // A terminal request: the pty is the init's to open (the box's
        // devpts, the role's slave), passed on with the request.
        PtyPair pty;
        if (err == 0 && wanted.tty) {
            const char* failed = "";
            err = open_pty_pair(probe.uid, probe.gid, wanted.rows, wanted.cols, pty, failed);
            if (err == 0) fds[nfds++] = pty.slave;
        }
        int pidfd = -1;
        for (int attempt = 0; err == 0 && pidfd < 0 && attempt < 2; ++attempt) {
            if (warm.pidfd < 0) warm = make_warm_invocation(ctx);
            if (warm.pidfd < 0) {
                err = errno != 0 ? errno : EAGAIN;
                break;
            }
            // A warm invocation that cannot take the request (it died) is
            // replaced by a fresh one, tried once.
            if (send_with_fds(warm.channel, request, static_cast<std::size_t>(n), fds, nfds) == 0) {
                pidfd = warm.pidfd;
                warm.pidfd = -1;
                close(warm.channel);
                warm.channel = -1;
            } else {
                discard(warm);
                if (attempt == 1) err = EPIPE;
            }
        }
        for (int i = 0; i < nfds; ++i) close(fds[i]);  // the slave too: the invocation has its own copy
        answer_exec_request(ctx.session_fd, err, pidfd, pidfd >= 0 ? pty.master : -1);
        if (pidfd >= 0) close(pidfd);
        if (pty.master >= 0) close(pty.master);
        // The next invocations are cloned from this memory: no exec's
        // argv or environment stays in it.
        if (n > 0) std::memset(request, 0, static_cast<std::size_t>(n));
        if (warm.pidfd < 0) warm = make_warm_invocation(ctx);
    }
}

}  // namespace init_steps

}  // namespace corral::supervisor
