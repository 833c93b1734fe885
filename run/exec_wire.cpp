#include "run/exec_wire.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/sys_error.hpp"
#include "supervisor/fd_passing.hpp"

namespace corral::run {

Fd listen_at(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path)
        throw UsageError("session socket " + path + ": longer than " + std::to_string(sizeof addr.sun_path - 1) +
                         " bytes; give a shorter --state-dir or --run-dir");
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) throw SysError("socket", "AF_UNIX", errno);
    // Root's alone twice over: the run dir is 0700 and the socket 0600 (a
    // chmod, not the umask: the process's umask is shared with the gateway's threads).
    check_sys(bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), "bind", path);
    check_sys(::chmod(path.c_str(), 0600), "chmod", path);
    check_sys(listen(fd.get(), 64), "listen", path);
    return fd;
}

std::optional<Fd> connect_unix(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path)
        throw UsageError("socket " + path + ": longer than " + std::to_string(sizeof addr.sun_path - 1) + " bytes");
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) throw SysError("socket", "AF_UNIX", errno);
    if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        if (err == ENOENT || err == ECONNREFUSED) return std::nullopt;
        throw SysError("connect", path, err);
    }
    return fd;
}

long peer_uid(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    return static_cast<long>(cred.uid);
}

void send_answer(int fd, const ExecAnswer& a) {
    const std::string line = exec_answer_line(a);
    std::size_t off = 0;
    while (off < line.size()) {
        ssize_t n = send(fd, line.data() + off, line.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        off += static_cast<std::size_t>(n);
    }
}

std::optional<ExecAnswer> ask_session(const std::string& path, const std::string& line) {
    auto conn = connect_unix(path);
    if (!conn) return std::nullopt;
    const int fds[2] = {1, 2};
    if (int rc = supervisor::send_with_fds(conn->get(), line.data(), line.size(), fds, 2); rc < 0)
        throw SysError("sendmsg", "request to " + path, -rc);
    const timeval limit{60, 0};
    setsockopt(conn->get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    std::string answer;
    char buf[4096];
    while (answer.find('\n') == std::string::npos) {
        const ssize_t n = recv(conn->get(), buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw SysError("recv", "the answer from " + path, errno);
        if (n == 0) throw SysError("recv", "the answer from " + path + " (closed before a whole line)", EPIPE);
        answer.append(buf, static_cast<std::size_t>(n));
    }
    return parse_exec_answer_line(answer.substr(0, answer.find('\n')));
}

ReceivedRequest receive_request(int conn) {
    // A caller that connects and sends no whole line within 10 s is dropped:
    // it must not hold an exec thread (or the session's stop) forever.
    const timeval limit{10, 0};
    setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    ReceivedRequest r;
    std::vector<char> buf(64 * 1024);
    int fds[4] = {-1, -1, -1, -1};
    int nfds = 0;
    ssize_t n = supervisor::receive_with_fds(conn, buf.data(), buf.size(), fds, 4, nfds);
    Fd* slots[4] = {&r.out, &r.err, &r.in, &r.window_changes};
    for (int i = 0; i < nfds; ++i) *slots[i] = Fd(fds[i]);
    if (n < 0) throw SysError("recvmsg", "exec request", static_cast<int>(-n));
    r.line.assign(buf.data(), static_cast<std::size_t>(n));
    while (r.line.find('\n') == std::string::npos) {
        if (n == 0) throw UsageError("exec request: the caller closed before a whole line");
        if (r.line.size() > kMaxExecLineBytes)
            throw UsageError("exec request: more than " + std::to_string(kMaxExecLineBytes / 1024) + " KiB");
        n = recv(conn, buf.data(), buf.size(), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            throw UsageError("exec request: no whole line within 10 s");
        if (n < 0) throw SysError("recv", "exec request", errno);
        r.line.append(buf.data(), static_cast<std::size_t>(n));
    }
    r.line.resize(r.line.find('\n'));
    if (!r.out.valid() || !r.err.valid())
        throw UsageError("exec request: the caller's stdout and stderr did not come with it (SCM_RIGHTS)");
    return r;
}

Fd own_nonblocking_copy(Fd fd) {
    struct stat st {};
    if (fstat(fd.get(), &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) return fd;
    Fd reopened(::open(("/proc/self/fd/" + std::to_string(fd.get())).c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    return reopened.valid() ? std::move(reopened) : std::move(fd);
}

}  // namespace corral::run
