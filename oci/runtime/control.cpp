// oci/runtime/control.cpp — one line each way over a Unix socket, an exec's
// descriptors with its line.
#include "oci/runtime/control.hpp"

#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "run/exec_wire.hpp"
#include "supervisor/fd_passing.hpp"

namespace corral::oci {

namespace {

constexpr int kLineWaitMs = 10'000;
// start waits for the supervisor to let the command go; kill for a signal
// sent: both are quick, a hung supervisor is not.
constexpr int kAnswerWaitMs = 30'000;

// Whether `fd` is readable within `wait_ms` (-1: no bound).
bool readable_within(int fd, int wait_ms) {
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        int rc = poll(&p, 1, wait_ms);
        if (rc < 0 && errno == EINTR) continue;
        return rc > 0;
    }
}

// Up to '\n' within `wait_ms` (-1: no bound), after what `line` already
// holds; nullopt on EOF, a timeout or an overlong line. `one_byte`: reads
// no further than the newline (an answer's line: exec's "exit" may follow
// its "ok" in the same segment).
std::optional<std::string> read_line(int fd, int wait_ms, std::string line = {}, bool one_byte = false) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    for (;;) {
        if (auto nl = line.find('\n'); nl != std::string::npos) return line.substr(0, nl);
        if (line.size() > kMaxControlLine) return std::nullopt;
        int left = -1;
        if (wait_ms >= 0) {
            left = static_cast<int>(
                std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count());
            if (left <= 0) return std::nullopt;
        }
        if (!readable_within(fd, left)) return std::nullopt;
        char buf[4096];
        ssize_t n = ::read(fd, buf, one_byte ? 1 : sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return std::nullopt;
        line.append(buf, static_cast<std::size_t>(n));
    }
}

void send_line(int fd, const std::string& line, const int* fds = nullptr, int nfds = 0) {
    const std::string text = line + "\n";
    if (nfds > 0) {
        // The descriptors with the first bytes; the rest of a long line after.
        const std::size_t first = std::min<std::size_t>(text.size(), 4096);
        if (int rc = supervisor::send_with_fds(fd, text.data(), first, fds, nfds); rc < 0)
            throw SysError("sendmsg", "the container's control socket", -rc);
        if (first < text.size() &&
            ::send(fd, text.data() + first, text.size() - first, MSG_NOSIGNAL) != static_cast<ssize_t>(text.size() - first))
            throw SysError("send", "the container's control socket", errno);
        return;
    }
    if (::send(fd, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size()))
        throw SysError("send", "the container's control socket", errno);
}

Fd connect_to_supervisor(const ContainerDir& container) {
    const Fd dir = container.open_dir();
    std::optional<Fd> fd = run::connect_unix(ContainerDir::control_socket_via(dir.get()));
    if (!fd) throw UsageError("the container's supervisor is gone (nothing listens on " + container.path() + "/control.sock)");
    return std::move(*fd);
}

// The supervisor's answer: nothing for ok, else throws its error.
void expect_ok(int conn, int wait_ms) {
    auto answer = read_line(conn, wait_ms, {}, true);
    if (!answer) throw UsageError("the container's supervisor did not answer within " + std::to_string(wait_ms / 1000) + " s");
    if (*answer == "ok") return;
    if (answer->rfind("error ", 0) == 0) throw UsageError(answer->substr(6));
    throw UsageError("the container's supervisor answered \"" + *answer + "\"");
}

std::optional<ControlRequest> parse_exec(const std::string& text) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("args") || !j["args"].is_array() || j["args"].empty()) return std::nullopt;
    ControlRequest r;
    r.kind = ControlRequest::Kind::exec;
    for (const auto& a : j["args"]) {
        if (!a.is_string()) return std::nullopt;
        r.args.push_back(a.get<std::string>());
    }
    for (const auto& e : j.value("env", nlohmann::json::array())) {
        if (!e.is_string()) return std::nullopt;
        const std::string kv = e.get<std::string>();
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) return std::nullopt;
        r.env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    r.cwd = j.value("cwd", std::string());
    if (!r.cwd.empty() && r.cwd.front() != '/') return std::nullopt;
    if (j.contains("console_socket")) {
        const auto& s = j["console_socket"];
        if (!s.is_string() || s.get<std::string>().empty() || s.get<std::string>().front() != '/') return std::nullopt;
        r.console_socket = s.get<std::string>();
        for (auto [key, field] : {std::pair{"rows", &r.rows}, std::pair{"cols", &r.cols}}) {
            const auto& v = j.value(key, nlohmann::json(0));
            if (!v.is_number_unsigned() || v.get<std::uint64_t>() > UINT16_MAX) return std::nullopt;
            *field = static_cast<std::uint16_t>(v.get<std::uint64_t>());
        }
    }
    return r;
}

}  // namespace

std::optional<ControlRequest> parse_control_line(const std::string& line) {
    if (line == "start") return ControlRequest{};
    if (line == "pids") return ControlRequest{ControlRequest::Kind::pids, 0, false, {}, {}, {}};
    if (line.rfind("exec ", 0) == 0) return parse_exec(line.substr(5));
    int sig = 0, all = 0;
    char tail = 0;
    if (std::sscanf(line.c_str(), "kill %d %d%c", &sig, &all, &tail) == 2 && sig >= 1 && sig <= 64 &&
        (all == 0 || all == 1)) {
        ControlRequest r;
        r.kind = ControlRequest::Kind::kill;
        r.signal = sig;
        r.all = all == 1;
        return r;
    }
    return std::nullopt;
}

std::string control_line(const ControlRequest& r) {
    switch (r.kind) {
        case ControlRequest::Kind::start: return "start";
        case ControlRequest::Kind::pids: return "pids";
        case ControlRequest::Kind::kill: return "kill " + std::to_string(r.signal) + " " + (r.all ? "1" : "0");
        case ControlRequest::Kind::exec: {
            nlohmann::json env = nlohmann::json::array();
            for (const auto& [k, v] : r.env) env.push_back(k + "=" + v);
            nlohmann::json j{{"args", r.args}, {"env", env}, {"cwd", r.cwd}};
            if (!r.console_socket.empty()) {
                j["console_socket"] = r.console_socket;
                j["rows"] = r.rows;
                j["cols"] = r.cols;
            }
            return "exec " + j.dump(-1, ' ', true);  // invalid UTF-8 throws: never altered on the way
        }
    }
    return "";
}

std::optional<ReceivedControl> read_control_request(int conn) {
    if (run::peer_uid(conn) != 0) return std::nullopt;
    if (!readable_within(conn, kLineWaitMs)) return std::nullopt;
    // The first bytes with their descriptors (exec's stdio): read() would drop them.
    char buf[4096];
    int fds[supervisor::kMaxPassedFds];
    int nfds = 0;
    ssize_t n = supervisor::receive_with_fds(conn, buf, sizeof buf, fds, supervisor::kMaxPassedFds, nfds);
    ReceivedControl got;
    for (int i = 0; i < nfds; ++i) got.fds.emplace_back(fds[i]);
    if (n <= 0) return std::nullopt;
    auto line = read_line(conn, kLineWaitMs, std::string(buf, static_cast<std::size_t>(n)));
    if (!line) return std::nullopt;
    auto request = parse_control_line(*line);
    if (!request) return std::nullopt;
    got.request = std::move(*request);
    return got;
}

void answer_control(int conn, const std::string& error) {
    try {
        send_line(conn, error.empty() ? "ok" : "error " + error);
    } catch (const SysError&) {
        // The asking command is gone: nothing to tell.
    }
}

void answer_exit(int conn, int status) {
    try {
        send_line(conn, "exit " + std::to_string(status));
    } catch (const SysError&) {
    }
}

void send_console(const std::string& socket_path, const Fd& master) {
    std::optional<Fd> conn = run::connect_unix(socket_path);
    if (!conn) throw UsageError("--console-socket " + socket_path + ": nobody listens there");
    unsigned number = 0;
    if (ioctl(master.get(), TIOCGPTN, &number) != 0) throw SysError("ioctl(TIOCGPTN)", "the console's pty", errno);
    const std::string name = "/dev/pts/" + std::to_string(number);
    const int fd = master.get();
    if (int rc = supervisor::send_with_fds(conn->get(), name.data(), name.size(), &fd, 1); rc < 0)
        throw SysError("sendmsg", "--console-socket " + socket_path, -rc);
}

void answer_pids(int conn, const std::vector<long>& pids) {
    std::string line = "pids";
    for (long pid : pids) line += " " + std::to_string(pid);
    try {
        send_line(conn, line);
    } catch (const SysError&) {
    }
}

std::vector<long> ask_supervisor_for_pids(const ContainerDir& container) {
    Fd fd = connect_to_supervisor(container);
    send_line(fd.get(), "pids");
    auto answer = read_line(fd.get(), kAnswerWaitMs, {}, true);
    if (!answer) throw UsageError("the container's supervisor did not answer within " + std::to_string(kAnswerWaitMs / 1000) + " s");
    if (answer->rfind("error ", 0) == 0) throw UsageError(answer->substr(6));
    if (answer->rfind("pids", 0) != 0) throw UsageError("the container's supervisor answered \"" + *answer + "\"");
    std::vector<long> pids;
    const char* at = answer->data() + 4;
    const char* const end = answer->data() + answer->size();
    while (at != end) {
        long pid = 0;
        auto [next, ec] = std::from_chars(at + 1, end, pid);
        if (*at != ' ' || ec != std::errc() || pid <= 0)
            throw UsageError("the container's supervisor answered \"" + *answer + "\"");
        pids.push_back(pid);
        at = next;
    }
    return pids;
}

void ask_supervisor(const ContainerDir& container, const ControlRequest& request) {
    Fd fd = connect_to_supervisor(container);
    send_line(fd.get(), control_line(request));
    expect_ok(fd.get(), kAnswerWaitMs);
}

Fd start_exec(const ContainerDir& container, const ControlRequest& request, const int stdio[3]) {
    Fd fd = connect_to_supervisor(container);
    send_line(fd.get(), control_line(request), stdio, 3);
    expect_ok(fd.get(), kAnswerWaitMs);
    return fd;
}

int wait_for_exec_exit(int conn) {
    auto line = read_line(conn, -1, {}, true);
    int status = 0;
    char tail = 0;
    if (line && std::sscanf(line->c_str(), "exit %d%c", &status, &tail) == 1 && status >= 0 && status <= 255) return status;
    return 255;
}

}  // namespace corral::oci
