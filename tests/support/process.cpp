#include "tests/support/process.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace corral::test {

namespace {

struct Child {
    pid_t pid;
    int in_fd, out_fd, err_fd;
};

Child spawn(const std::vector<std::string>& argv, const RunOptions& options) {
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
        throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    std::vector<std::string> env_store;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        auto key = kv.substr(0, kv.find('='));
        if (!options.env.count(key)) env_store.push_back(kv);
    }
    for (const auto& [k, v] : options.env) env_store.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (auto& s : env_store) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto& s : argv_copy) args.push_back(s.data());
    args.push_back(nullptr);

    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        if (!options.stderr_file.empty()) {
            int f = open(options.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            if (f < 0 || dup2(f, 2) < 0) _exit(126);
        }
        if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(126);
        execvpe(args[0], args.data(), envp.data());
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    return {pid, in[1], out[0], err[0]};
}

int decode_status(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

}  // namespace

Result run(const std::vector<std::string>& argv, const RunOptions& options) {
    Child c = spawn(argv, options);
    Result r;
    // Feed stdin in full first: test inputs are small.
    std::size_t off = 0;
    signal(SIGPIPE, SIG_IGN);
    while (off < options.stdin_data.size()) {
        ssize_t n = write(c.in_fd, options.stdin_data.data() + off, options.stdin_data.size() - off);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
    }
    close(c.in_fd);
    auto deadline = std::chrono::steady_clock::now() + options.timeout;
    pollfd fds[2] = {{c.out_fd, POLLIN, 0}, {c.err_fd, POLLIN, 0}};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            r.timed_out = true;
            kill(-c.pid, SIGKILL);
            kill(c.pid, SIGKILL);
            break;
        }
        int pr = poll(fds, 2, static_cast<int>(left.count()));
        if (pr < 0 && errno == EINTR) continue;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            } else {
                (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
            }
        }
    }
    for (auto& f : fds)
        if (f.fd >= 0) close(f.fd);
    int status = 0;
    while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.exit_code = decode_status(status);
    return r;
}

Background::Background(const std::vector<std::string>& argv, const RunOptions& options) {
    Child c = spawn(argv, options);
    close(c.in_fd);
    close(c.err_fd);  // stderr of background helpers is dropped; tests read stdout
    pid_ = c.pid;
    out_fd_ = c.out_fd;
    fcntl(out_fd_, F_SETFL, fcntl(out_fd_, F_GETFL) | O_NONBLOCK);
}

Background::~Background() {
    kill_now();
    if (out_fd_ >= 0) close(out_fd_);
}

void Background::kill_now() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

void Background::signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
}

int Background::wait_exit(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return -1;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int status = 0;
        pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            pid_ = -1;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        if (std::chrono::steady_clock::now() >= deadline) return -1;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

std::string Background::drain_stdout() {
    char buf[65536];
    for (;;) {
        ssize_t n = read(out_fd_, buf, sizeof buf);
        if (n <= 0) break;
        seen_.append(buf, static_cast<std::size_t>(n));
    }
    return seen_;
}

bool Background::wait_for_stdout(const std::string& needle, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (drain_stdout().find(needle) != std::string::npos) return true;
        pollfd p{out_fd_, POLLIN, 0};
        poll(&p, 1, 50);
    }
    return drain_stdout().find(needle) != std::string::npos;
}

void run_checked(const std::vector<std::string>& argv, const std::string& cwd) {
    RunOptions options;
    options.cwd = cwd;
    Result r = run(argv, options);
    if (r.exit_code != 0) {
        std::string cmd;
        for (const auto& a : argv) cmd += a + " ";
        throw std::runtime_error("fixture step failed (exit " + std::to_string(r.exit_code) + "): " + cmd + "\n" +
                                 r.err + r.out);
    }
}

std::string random_hex(std::size_t n) {
    static std::mt19937_64 rng{std::random_device{}()};
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += kDigits[rng() % 16];
    return s;
}

std::string corral_bin() {
    const char* p = std::getenv("CORRAL_BIN");
    if (!p) throw std::runtime_error("CORRAL_BIN is not set; run the tests through `meson test`");
    return p;
}

std::string source_root() {
    const char* p = std::getenv("CORRAL_SOURCE_ROOT");
    if (!p) throw std::runtime_error("CORRAL_SOURCE_ROOT is not set; run the tests through `meson test`");
    return p;
}

bool running_as_root() { return geteuid() == 0; }

ConnectionAs::ConnectionAs(uid_t uid, unsigned short port) {
    int hold[2];
    if (::pipe2(hold, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid_ == 0) {
        // Only system calls between fork and _exit.
        ::close(hold[1]);
        if (::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0) ::_exit(2);
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) ::_exit(3);
        char b;
        (void)::read(hold[0], &b, 1);  // the connection lives until the parent lets go
        ::_exit(0);
    }
    ::close(hold[0]);
    hold_ = hold[1];
}

int ConnectionAs::release() {
    if (hold_ >= 0) ::close(hold_);
    hold_ = -1;
    if (pid_ > 0) {
        while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
        }
        pid_ = -1;
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128;
}

ConnectionAs::~ConnectionAs() { release(); }

bool have_program(const std::string& program) {
    return run({"sh", "-c", "command -v " + program + " >/dev/null 2>&1"}).exit_code == 0;
}

void write_file(const std::string& path, const std::string& text, unsigned mode) {
    {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        if (!f) throw std::runtime_error("cannot write " + path);
        f << text;
    }
    ::chmod(path.c_str(), static_cast<mode_t>(mode));
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return {};
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) out.push_back(line);
    return out;
}

}  // namespace corral::test
