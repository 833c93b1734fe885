#include "gateway/daemon_claim.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/sys_error.hpp"

namespace corral::gateway {

namespace {

// The pid the holder wrote, for the message ("" if unreadable).
std::string holder_of(int fd) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    std::string pid = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return pid.find_first_not_of("0123456789") == std::string::npos ? pid : std::string();
}

// Opens and locks `lock_path` without waiting. nullopt-like: an invalid Fd
// and the holder's pid in *holder when another process holds it.
Fd lock_without_waiting(const std::string& lock_path, std::string* holder) {
    Fd fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) throw SysError("open", lock_path, errno);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK) throw SysError("flock(LOCK_EX)", lock_path, errno);
        *holder = holder_of(fd.get());
        return Fd();
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    check_sys(::ftruncate(fd.get(), 0), "ftruncate", lock_path);
    check_sys(::pwrite(fd.get(), pid.data(), pid.size(), 0), "pwrite", lock_path);
    return fd;
}

std::string another_daemon(const std::string& holder) {
    return "another corral gateway" + (holder.empty() ? std::string() : " (pid " + holder + ")");
}

}  // namespace

DaemonClaim DaemonClaim::take(const std::string& state_dir, const std::string& listen_unix) {
    DaemonClaim claim;
    std::string holder;
    const std::string state_lock = state_dir + "/gateway.lock";
    claim.state_lock_ = lock_without_waiting(state_lock, &holder);
    if (!claim.state_lock_.valid())
        throw UsageError("[gateway] state_dir " + state_dir + ": " + another_daemon(holder) +
                         " is running with it (" + state_lock +
                         " is locked); one daemon per state dir: stop that one first, or give this one another "
                         "state_dir");
    if (listen_unix.empty()) return claim;
    const std::string socket_lock = listen_unix + ".lock";
    claim.socket_lock_ = lock_without_waiting(socket_lock, &holder);
    if (!claim.socket_lock_.valid())
        throw UsageError("[gateway] listen_unix " + listen_unix + ": " + another_daemon(holder) +
                         " serves this socket (" + socket_lock +
                         " is locked); stop that one first, or give this one another listen_unix");
    return claim;
}

std::optional<SocketFileId> socket_file_id(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return std::nullopt;
    return SocketFileId{st.st_dev, st.st_ino};
}

bool remove_socket_if_ours(const std::string& path, const SocketFileId& bound) {
    const auto now = socket_file_id(path);
    if (!now || now->dev != bound.dev || now->ino != bound.ino) return false;
    return ::unlink(path.c_str()) == 0;
}

}  // namespace corral::gateway
