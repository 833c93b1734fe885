// gateway/approval_notifier.cpp — see approval_notifier.hpp.
#include "gateway/approval_notifier.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <atomic>
#include <mutex>
#include <set>

#include "approval/protocol.hpp"
#include "base/fd.hpp"
#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "base/terminal_text.hpp"
#include "supervisor/exec_as_user.hpp"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace corral::gateway {

namespace asio = boost::asio;

namespace {

constexpr std::size_t kKeptOutput = 2048;  // of what a failing hook wrote, for the log

// One running hook: its pidfd, its output pipe, its deadline.
struct Hook {
    Hook(asio::any_io_executor ex, std::string entry_id, int pidfd, int output)
        : id(std::move(entry_id)), exited(ex, pidfd), out(ex, output), deadline(ex) {}
    std::string id;
    asio::posix::stream_descriptor exited;  // the pidfd: readable once the hook has exited
    asio::posix::stream_descriptor out;     // its stdout and stderr
    asio::steady_timer deadline;
    std::array<char, 1024> chunk{};
    std::string output;
    bool killed = false;
};

// What the hook wrote, kept to kKeptOutput.
void keep(Hook& h, const char* data, std::size_t n) {
    if (h.output.size() < kKeptOutput) h.output.append(data, std::min(n, kKeptOutput - h.output.size()));
}

void read_output(const std::shared_ptr<Hook>& h) {
    h->out.async_read_some(asio::buffer(h->chunk), [h](boost::system::error_code ec, std::size_t n) {
        if (ec) return;
        keep(*h, h->chunk.data(), n);
        read_output(h);
    });
}

// The hook's end, logged: its status, and what it wrote if it failed.
void log_end(Hook& h) {
    siginfo_t info{};
    std::string how;
    if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(h.exited.native_handle()), &info, WEXITED) != 0)
        how = "its status could not be read (waitid: " + errno_text(errno) + ")";
    else if (info.si_code == CLD_EXITED && info.si_status == 0)
        how = "";
    else if (info.si_code == CLD_EXITED)
        how = "exited " + std::to_string(info.si_status);
    else
        how = (h.killed ? "killed after " + std::to_string(ApprovalNotifier::kHookTimeout.count()) + " s"
                        : "ended by signal " + std::to_string(info.si_status));
    // Whatever is still in the pipe was written before the exit.
    for (ssize_t n; (n = ::read(h.out.native_handle(), h.chunk.data(), h.chunk.size())) > 0;)
        keep(h, h.chunk.data(), static_cast<std::size_t>(n));
    if (how.empty()) {
        log::debug("gateway: approval_command for " + h.id + " ended (exit 0)");
        return;
    }
    std::string said = h.output;
    while (!said.empty() && (said.back() == '\n' || said.back() == '\r')) said.pop_back();
    log::warn("gateway: approval_command for " + h.id + " failed: " + how + " (the request waits on; the hook only " +
              "tells)" + (said.empty() ? "" : ": " + terminal_text(said)));
}

// posix_spawn of corral's own binary, which becomes `user` and execs
// `command` (supervisor/exec_as_user.hpp); `in` becomes its stdin, `out` its
// stdout and stderr. The pid, or -errno.
pid_t spawn_hook(const std::vector<std::string>& command, const HookUser& user, const approval::Entry& e, int in,
                 int out) {
    std::vector<std::string> args = supervisor::exec_as_user_argv(user.uid, user.gid, command);
    std::vector<std::string> env{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/",
                                 "CORRAL_APPROVAL_ID=" + e.id,
                                 std::string("CORRAL_APPROVAL_KIND=") +
                                     (e.request.kind == approval::Request::Kind::tool ? "tool" : "egress")};
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& v : env) envp.push_back(v.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    ::posix_spawn_file_actions_init(&fa);
    ::posix_spawnattr_init(&attr);
    ::posix_spawn_file_actions_adddup2(&fa, in, 0);
    ::posix_spawn_file_actions_adddup2(&fa, out, 1);
    ::posix_spawn_file_actions_adddup2(&fa, out, 2);
    ::posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    // The gateway's blocked and ignored signals are not the hook's.
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    ::posix_spawnattr_setsigmask(&attr, &none);
    ::posix_spawnattr_setsigdefault(&attr, &all);
    ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, "/proc/self/exe", &fa, &attr, argv.data(), envp.data());
    ::posix_spawn_file_actions_destroy(&fa);
    ::posix_spawnattr_destroy(&attr);
    return rc == 0 ? pid : -rc;
}

}  // namespace

struct ApprovalNotifier::Shared : std::enable_shared_from_this<ApprovalNotifier::Shared> {
    asio::any_io_executor ex;
    std::vector<std::string> command;
    HookUser user;
    std::mutex mutex;
    std::set<std::shared_ptr<Hook>> running;  // for stop()
    std::atomic<bool> stopped = false;

    void start(const approval::Entry& e);
};

void ApprovalNotifier::Shared::start(const approval::Entry& e) {
    int in[2], out[2];
    const std::string what = "gateway: approval_command for " + e.id + ": ";
    if (::pipe2(in, O_CLOEXEC) != 0) return log::warn(what + "pipe2: " + errno_text(errno));
    Fd in_read(in[0]), in_write(in[1]);
    if (::pipe2(out, O_CLOEXEC) != 0) return log::warn(what + "pipe2: " + errno_text(errno));
    Fd out_read(out[0]), out_write(out[1]);
    const pid_t pid = spawn_hook(command, user, e, in_read.get(), out_write.get());
    if (pid < 0) return log::warn(what + "posix_spawn: " + errno_text(-pid));
    Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd.valid()) {
        // Unwatched, it is never reaped: a zombie until the gateway ends. Said so.
        return log::warn(what + "pidfd_open: " + errno_text(errno));
    }
    in_read.reset();
    out_write.reset();
    // The request, as one line; a pipe takes it whole (64 KiB; an entry is a few).
    const std::string line = approval::entry_json(e).dump() + "\n";
    ::fcntl(in_write.get(), F_SETFL, O_NONBLOCK);
    if (::write(in_write.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        log::warn(what + "its stdin did not take the request whole");
    in_write.reset();

    auto h = std::make_shared<Hook>(ex, e.id, pidfd.release(), out_read.release());
    {
        std::lock_guard lock(mutex);
        running.insert(h);
    }
    read_output(h);
    h->deadline.expires_after(kHookTimeout);
    h->deadline.async_wait([h](boost::system::error_code ec) {
        if (ec) return;
        h->killed = true;
        ::syscall(SYS_pidfd_send_signal, h->exited.native_handle(), SIGKILL, nullptr, 0);
    });
    h->exited.async_wait(asio::posix::stream_descriptor::wait_read,
                         [h, self = shared_from_this()](boost::system::error_code ec) {
                             if (ec) return;
                             h->deadline.cancel();
                             log_end(*h);
                             boost::system::error_code ignored;
                             h->out.close(ignored);
                             std::lock_guard lock(self->mutex);
                             self->running.erase(h);
                         });
}

HookUser resolve_hook_user(const std::string& name) {
    passwd pw{};
    passwd* found = nullptr;
    std::vector<char> buf(16384);
    const int rc = ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
    if (rc != 0) throw SysError("getpwnam_r", name, rc);
    if (!found)
        throw UsageError("[gateway] approval_command_user \"" + name + "\": no such user on this host; allowed: an "
                         "existing user other than root (default nobody)");
    if (pw.pw_uid == 0 || pw.pw_gid == 0)
        throw UsageError("[gateway] approval_command_user \"" + name + "\" has uid or gid 0; the hook reads what a "
                         "box asked for and must not run as root");
    return HookUser{pw.pw_uid, pw.pw_gid, name};
}

ApprovalNotifier::ApprovalNotifier(asio::any_io_executor ex, std::vector<std::string> command, HookUser user)
    : shared_(std::make_shared<Shared>()) {
    shared_->ex = std::move(ex);
    shared_->command = std::move(command);
    shared_->user = std::move(user);
}

ApprovalNotifier::~ApprovalNotifier() { stop(); }

void ApprovalNotifier::notify(const approval::Entry& e) {
    std::shared_ptr<Shared> s = shared_;
    asio::post(s->ex, [s, e] {
        if (s->stopped) return;
        s->start(e);
    });
}

void ApprovalNotifier::stop() {
    std::lock_guard lock(shared_->mutex);
    shared_->stopped = true;
    for (const auto& h : shared_->running) ::syscall(SYS_pidfd_send_signal, h->exited.native_handle(), SIGKILL, nullptr, 0);
}

}  // namespace corral::gateway
