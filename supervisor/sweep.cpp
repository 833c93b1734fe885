#include "supervisor/sweep.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral::supervisor {
namespace {

// Calls visit(pid) for every numeric entry of /proc (thread-group leaders).
void for_each_process(const std::function<void(pid_t)>& visit) {
    DIR* dir = ::opendir("/proc");
    if (dir == nullptr) throw SysError("opendir", "/proc", errno);
    while (dirent* entry = ::readdir(dir)) {
        pid_t pid = 0;
        const char* name = entry->d_name;
        auto [end, ec] = std::from_chars(name, name + std::char_traits<char>::length(name), pid);
        if (ec != std::errc() || *end != '\0' || pid <= 0) continue;
        visit(pid);
    }
    ::closedir(dir);
}

// Reads /proc/<pid>/status into buf; false if the process vanished.
bool read_status(pid_t pid, std::array<char, 4096>& buf, std::string_view& text) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(pid));
    Fd fd(::open(path, O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return false;
    std::size_t used = 0;
    while (used < buf.size()) {
        ssize_t n = ::read(fd.get(), buf.data() + used, buf.size() - used);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // ESRCH: exited mid-read
        used += static_cast<std::size_t>(n);
    }
    text = std::string_view(buf.data(), used);
    return used > 0;
}

// True if the "Key:\t a b c d" line of status contains `id` among its fields.
bool status_line_has(std::string_view status, std::string_view key, unsigned long id) {
    std::size_t at = 0;
    while (at < status.size()) {
        std::size_t eol = status.find('\n', at);
        if (eol == std::string_view::npos) eol = status.size();
        std::string_view line = status.substr(at, eol - at);
        at = eol + 1;
        if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') continue;
        std::string_view rest = line.substr(key.size() + 1);
        while (!rest.empty()) {
            std::size_t skip = rest.find_first_not_of(" \t");
            if (skip == std::string_view::npos) break;
            rest.remove_prefix(skip);
            unsigned long value = 0;
            auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
            if (ec != std::errc()) break;
            if (value == id) return true;
            rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
        }
        return false;
    }
    return false;
}

std::vector<pid_t> scan_identity(std::optional<uid_t> uid, std::optional<gid_t> gid) {
    std::vector<pid_t> found;
    std::array<char, 4096> buf;
    for_each_process([&](pid_t pid) {
        std::string_view status;
        if (!read_status(pid, buf, status)) return;
        if ((uid && status_line_has(status, "Uid", *uid)) || (gid && status_line_has(status, "Gid", *gid)))
            found.push_back(pid);
    });
    return found;
}

}  // namespace

std::vector<pid_t> processes_of_uid(uid_t uid) { return scan_identity(uid, std::nullopt); }

std::vector<pid_t> processes_of_identity(uid_t uid, gid_t gid) { return scan_identity(uid, gid); }

std::optional<ino_t> pid_namespace_inode(pid_t pid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/ns/pid", static_cast<int>(pid));
    struct stat st {};
    if (::stat(path, &st) != 0) return std::nullopt;
    return st.st_ino;
}

std::vector<pid_t> processes_in_pid_namespace(ino_t ns_inode) {
    std::vector<pid_t> found;
    for_each_process([&](pid_t pid) {
        auto ino = pid_namespace_inode(pid);
        if (ino && *ino == ns_inode) found.push_back(pid);
    });
    return found;
}

}  // namespace corral::supervisor
