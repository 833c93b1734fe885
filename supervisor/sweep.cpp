#include "supervisor/sweep.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral::supervisor {
namespace {

constexpr unsigned long kPfKthread = 0x00200000;  // PF_KTHREAD in /proc/<pid>/stat's flags

// Reads a small /proc file relative to proc_fd ("" if unreadable).
std::string read_small(int proc_fd, const char* path) {
    Fd fd(::openat(proc_fd, path, O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return {};
    try {
        return read_to_end(fd.get(), path);
    } catch (const SysError&) {
        return {};  // the process went away mid-read
    }
}

// kthreadd (PID 2 of the host's PID namespace) and its children, sorted:
// the kernel threads, most of a host's processes (60 of 88 here), which a
// pass may skip. Not only kernel threads, though: user-space helpers the
// kernel starts (core_pattern pipes, request-key) are children of kthreadd
// too, so for_each_process skips a listed PID only if it has no user-space
// image (has_user_image), which also covers a PID reused since the listing.
// PID 2 counts as kthreadd only if the kernel flags it as a kernel thread (a
// process named so in a container's PID namespace is not); without
// /proc/2/task/2/children (CONFIG_PROC_CHILDREN) nothing is skipped.
std::vector<pid_t> kernel_threads(int proc_fd) {
    std::string stat = read_small(proc_fd, "2/stat");
    auto paren = stat.rfind(')');
    if (paren == std::string::npos) return {};
    // After "(comm) ": state ppid pgrp session tty_nr tpgid flags
    std::string_view rest(stat);
    rest.remove_prefix(paren + 1);
    unsigned long flags = 0;
    for (int field = 0; field < 7; ++field) {
        std::size_t start = rest.find_first_not_of(' ');
        if (start == std::string_view::npos) return {};
        rest.remove_prefix(start);
        std::size_t end = rest.find(' ');
        std::string_view word = rest.substr(0, end);
        if (field == 6 && std::from_chars(word.data(), word.data() + word.size(), flags).ec != std::errc()) return {};
        if (end == std::string_view::npos) break;
        rest.remove_prefix(end);
    }
    if ((flags & kPfKthread) == 0) return {};
    std::vector<pid_t> pids{2};
    std::string children = read_small(proc_fd, "2/task/2/children");
    std::string_view list(children);
    while (!list.empty()) {
        std::size_t start = list.find_first_not_of(' ');
        if (start == std::string_view::npos) break;
        list.remove_prefix(start);
        pid_t pid = 0;
        auto [end, ec] = std::from_chars(list.data(), list.data() + list.size(), pid);
        if (ec != std::errc()) break;
        pids.push_back(pid);
        list.remove_prefix(static_cast<std::size_t>(end - list.data()));
    }
    std::sort(pids.begin(), pids.end());
    return pids;
}

// Whether the process runs a user-space image: /proc/<pid>/exe resolves for
// one and fails with ENOENT for a kernel thread (no mm; or a zombie, which
// can do nothing). One readlink instead of a status read. Anything but
// ENOENT counts as a user image (the process gets the full check).
bool has_user_image(int proc_fd, const char* pid_name) {
    char path[300];  // a /proc entry name is at most 255 bytes
    std::snprintf(path, sizeof path, "%s/exe", pid_name);
    char target[1];
    return ::readlinkat(proc_fd, path, target, sizeof target) >= 0 || errno != ENOENT;
}

// Calls visit(proc_fd, pid, name) for every numeric entry of /proc
// (thread-group leaders), with KernelThreads::skip not the kernel threads;
// proc_fd is the held
// /proc directory, so per-process files are opened relative to it (no path
// walk from "/" for each one).
template <typename Visit>
void for_each_process(KernelThreads which, Visit&& visit) {
    Fd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!proc.valid()) throw SysError("open", "/proc", errno);
    const std::vector<pid_t> kthreads =
        which == KernelThreads::skip ? kernel_threads(proc.get()) : std::vector<pid_t>{};
    int listing = ::fcntl(proc.get(), F_DUPFD_CLOEXEC, 0);
    if (listing < 0) throw SysError("fcntl(F_DUPFD_CLOEXEC)", "/proc", errno);
    DIR* dir = ::fdopendir(listing);
    if (dir == nullptr) {
        int err = errno;
        ::close(listing);
        throw SysError("fdopendir", "/proc", err);
    }
    while (dirent* entry = ::readdir(dir)) {
        const char* name = entry->d_name;
        if (name[0] < '1' || name[0] > '9') continue;
        pid_t pid = 0;
        auto [end, ec] = std::from_chars(name, name + std::char_traits<char>::length(name), pid);
        if (ec != std::errc() || *end != '\0' || pid <= 0) continue;
        if (std::binary_search(kthreads.begin(), kthreads.end(), pid) && !has_user_image(proc.get(), name)) continue;
        visit(proc.get(), pid, name);
    }
    ::closedir(dir);
}

// The "Key:\t a b c d\n" line of status, or empty if absent or not yet complete.
std::string_view status_line(std::string_view status, std::string_view key) {
    std::size_t at = 0;
    while (at < status.size()) {
        std::size_t eol = status.find('\n', at);
        if (eol == std::string_view::npos) return {};  // cut off: read more
        std::string_view line = status.substr(at, eol - at);
        at = eol + 1;
        if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':')
            return line.substr(key.size() + 1);
    }
    return {};
}

// True if the fields of a status line ("\t a b c d") contain `id`.
bool fields_have(std::string_view rest, unsigned long id) {
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

// The Uid: (real, effective, saved, fs) and Gid: lines of /proc/<pid>/status,
// read relative to the held /proc fd. Reading stops once both lines are in
// (they are near the top; the kernel formats the whole file either way, but
// no second read() is needed). False if the process vanished.
struct IdLines {
    std::string_view uid, gid;
};
bool read_id_lines(int proc_fd, const char* pid_name, std::array<char, 4096>& buf, IdLines& out) {
    char path[32];
    std::snprintf(path, sizeof path, "%s/status", pid_name);
    Fd fd(::openat(proc_fd, path, O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return false;
    std::size_t used = 0;
    while (used < buf.size()) {
        ssize_t n = ::read(fd.get(), buf.data() + used, std::min<std::size_t>(buf.size() - used, 1024));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // EOF, or ESRCH: exited mid-read
        used += static_cast<std::size_t>(n);
        std::string_view text(buf.data(), used);
        out.uid = status_line(text, "Uid");
        out.gid = status_line(text, "Gid");
        if (!out.uid.empty() && !out.gid.empty()) return true;
    }
    return used > 0;
}

bool identity_matches(const IdLines& ids, std::optional<uid_t> uid, std::optional<gid_t> gid) {
    return (uid && fields_have(ids.uid, *uid)) || (gid && fields_have(ids.gid, *gid));
}

std::optional<ino_t> pid_namespace_at(int proc_fd, const char* pid_name) {
    char path[32];
    std::snprintf(path, sizeof path, "%s/ns/pid", pid_name);
    struct stat st {};
    if (::fstatat(proc_fd, path, &st, 0) != 0) return std::nullopt;
    return st.st_ino;
}

std::vector<pid_t> scan_identity(std::optional<uid_t> uid, std::optional<gid_t> gid, KernelThreads which) {
    std::vector<pid_t> found;
    std::array<char, 4096> buf;
    for_each_process(which, [&](int proc_fd, pid_t pid, const char* name) {
        IdLines ids;
        if (read_id_lines(proc_fd, name, buf, ids) && identity_matches(ids, uid, gid)) found.push_back(pid);
    });
    return found;
}

}  // namespace

namespace {

// pidfd_open(pid), then `still_ours(pid)` about the process the pidfd pins,
// then SIGKILL through the pidfd. If the pinned process exits in between, the
// check may read a newer process's /proc entry, but the signal goes to the
// pinned (dead) one: ESRCH, nobody else hit.
template <typename Check>
bool kill_pinned(pid_t pid, Check&& still_ours) {
    Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd.valid()) return false;  // gone already
    if (!still_ours()) return false;
    return ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0) == 0;
}

}  // namespace

bool kill_if_owned_by(pid_t pid, uid_t uid, gid_t gid) {
    return kill_pinned(pid, [&] {
        Fd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!proc.valid()) return false;
        std::array<char, 4096> buf;
        IdLines ids;
        const std::string name = std::to_string(pid);
        return read_id_lines(proc.get(), name.c_str(), buf, ids) && identity_matches(ids, uid, gid);
    });
}

bool kill_if_in_cgroup(pid_t pid, const std::string& cgroup_path) {
    return kill_pinned(pid, [&] {
        Fd fd(::open(("/proc/" + std::to_string(pid) + "/cgroup").c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd.valid()) return false;
        std::string text;
        try {
            text = read_to_end(fd.get(), "/proc/<pid>/cgroup");
        } catch (const std::exception&) {
            return false;
        }
        // Lines are "ID:CONTROLLERS:PATH"; ours is the path or below it.
        for (std::size_t start = 0; start < text.size();) {
            std::size_t end = text.find('\n', start);
            if (end == std::string::npos) end = text.size();
            std::string_view line(text.data() + start, end - start);
            std::size_t colon = line.find(':', line.find(':') + 1);
            if (colon != std::string_view::npos) {
                std::string_view path = line.substr(colon + 1);
                if (path == cgroup_path || (path.starts_with(cgroup_path) && path[cgroup_path.size()] == '/'))
                    return true;
            }
            start = end + 1;
        }
        return false;
    });
}

std::vector<pid_t> processes_of_uid(uid_t uid) { return scan_identity(uid, std::nullopt, KernelThreads::include); }

std::vector<pid_t> processes_owned_by(uid_t uid, gid_t gid, KernelThreads which) {
    return scan_identity(uid, gid, which);
}

std::optional<ino_t> pid_namespace_inode(pid_t pid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/ns/pid", static_cast<int>(pid));
    struct stat st {};
    if (::stat(path, &st) != 0) return std::nullopt;
    return st.st_ino;
}

std::vector<pid_t> processes_in_pid_namespace(ino_t ns_inode) {
    std::vector<pid_t> found;
    for_each_process(KernelThreads::include, [&](int proc_fd, pid_t pid, const char* name) {
        auto ino = pid_namespace_at(proc_fd, name);
        if (ino && *ino == ns_inode) found.push_back(pid);
    });
    return found;
}

HostScan scan_host(ino_t ns_inode, uid_t uid, gid_t gid) {
    HostScan scan;
    std::array<char, 4096> buf;
    for_each_process(KernelThreads::skip, [&](int proc_fd, pid_t pid, const char* name) {
        auto ino = pid_namespace_at(proc_fd, name);
        if (ino && *ino == ns_inode) scan.in_pid_namespace.push_back(pid);
        IdLines ids;
        if (read_id_lines(proc_fd, name, buf, ids) && identity_matches(ids, uid, gid)) scan.owned_by.push_back(pid);
    });
    return scan;
}

}  // namespace corral::supervisor
