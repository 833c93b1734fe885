// oci/runtime/control.cpp — one line each way over a Unix socket.
#include "oci/runtime/control.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "run/exec_wire.hpp"

namespace corral::oci {

namespace {

constexpr int kLineWaitMs = 10'000;
// start waits for the supervisor to let the command go; kill for a signal
// sent: both are quick, a hung supervisor is not.
constexpr int kAnswerWaitMs = 30'000;

// Up to '\n' within `wait_ms`; nullopt on EOF, a timeout or an overlong line.
std::optional<std::string> read_line(int fd, int wait_ms) {
    std::string line;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (line.size() <= kMaxControlLine) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        if (left.count() <= 0) return std::nullopt;
        pollfd p{fd, POLLIN, 0};
        int rc = poll(&p, 1, static_cast<int>(left.count()));
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0) return std::nullopt;
        char c = 0;
        ssize_t n = ::read(fd, &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return std::nullopt;
        if (c == '\n') return line;
        line.push_back(c);
    }
    return std::nullopt;
}

void send_line(int fd, const std::string& line) {
    const std::string text = line + "\n";
    if (::send(fd, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size()))
        throw SysError("send", "the container's control socket", errno);
}

}  // namespace

std::optional<ControlRequest> parse_control_line(const std::string& line) {
    if (line == "start") return ControlRequest{ControlRequest::Kind::start, 0, false};
    int sig = 0, all = 0;
    char tail = 0;
    if (std::sscanf(line.c_str(), "kill %d %d%c", &sig, &all, &tail) == 2 && sig >= 1 && sig <= 64 &&
        (all == 0 || all == 1))
        return ControlRequest{ControlRequest::Kind::kill, sig, all == 1};
    return std::nullopt;
}

std::string control_line(const ControlRequest& r) {
    if (r.kind == ControlRequest::Kind::start) return "start";
    return "kill " + std::to_string(r.signal) + " " + (r.all ? "1" : "0");
}

std::optional<ControlRequest> read_control_request(int conn) {
    if (run::peer_uid(conn) != 0) return std::nullopt;
    auto line = read_line(conn, kLineWaitMs);
    if (!line) return std::nullopt;
    return parse_control_line(*line);
}

void answer_control(int conn, const std::string& error) {
    try {
        send_line(conn, error.empty() ? "ok" : "error " + error);
    } catch (const SysError&) {
        // The asking command is gone: nothing to tell.
    }
}

void ask_supervisor(const ContainerDir& container, const ControlRequest& request) {
    const Fd dir = container.open_dir();
    const std::string path = ContainerDir::control_socket_via(dir.get());
    std::optional<Fd> fd = run::connect_unix(path);
    if (!fd) throw UsageError("the container's supervisor is gone (nothing listens on " + container.path() + "/control.sock)");
    send_line(fd->get(), control_line(request));
    auto answer = read_line(fd->get(), kAnswerWaitMs);
    if (!answer) throw UsageError("the container's supervisor did not answer within 30 s");
    if (*answer == "ok") return;
    if (answer->rfind("error ", 0) == 0) throw UsageError(answer->substr(6));
    throw UsageError("the container's supervisor answered \"" + *answer + "\"");
}

}  // namespace corral::oci
