#include "supervisor/host_budget.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/sys_error.hpp"

namespace corral::supervisor {

namespace {

// The numbers of a small /proc/sys file (one or more, whitespace-separated).
std::vector<std::uint64_t> read_numbers(const char* path) {
    std::vector<std::uint64_t> out;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return out;
    buf[n] = '\0';
    for (char* p = buf; *p != '\0';) {
        char* end = nullptr;
        unsigned long long v = std::strtoull(p, &end, 10);
        if (end == p) break;
        out.push_back(v);
        p = end;
    }
    return out;
}

std::uint64_t first_number(const char* path) {
    auto v = read_numbers(path);
    return v.empty() ? 0 : v.front();
}

constexpr std::uint64_t kTaskCeiling = 4096;
constexpr std::uint64_t kTaskFloor = 64;
constexpr std::uint64_t kOpenFilesCeiling = 1024;
constexpr std::uint64_t kOpenFilesFloor = 64;

}  // namespace

HostBudget read_host_budget() {
    HostBudget h;
    h.pid_max = first_number("/proc/sys/kernel/pid_max");
    h.threads_max = first_number("/proc/sys/kernel/threads-max");
    h.file_max = first_number("/proc/sys/fs/file-max");
    auto tcp = read_numbers("/proc/sys/net/ipv4/tcp_mem");
    auto udp = read_numbers("/proc/sys/net/ipv4/udp_mem");
    std::uint64_t pages = 0;
    if (tcp.size() == 3) pages = tcp[1];
    if (udp.size() == 3) pages = pages == 0 ? udp[1] : std::min(pages, udp[1]);
    long page = sysconf(_SC_PAGESIZE);
    h.socket_pressure_bytes = pages * static_cast<std::uint64_t>(page > 0 ? page : 4096);
    return h;
}

std::uint64_t default_task_limit(const HostBudget& host) {
    std::uint64_t limit = kTaskCeiling;
    if (host.pid_max > 0) limit = std::min(limit, host.pid_max / 32);
    if (host.threads_max > 0) limit = std::min(limit, host.threads_max / 32);
    return std::max(limit, kTaskFloor);
}

std::uint64_t default_open_files(const HostBudget& host, std::uint64_t tasks) {
    std::uint64_t limit = kOpenFilesCeiling;
    if (host.file_max > 0 && tasks > 0) limit = std::min(limit, host.file_max / 4 / tasks);
    return std::max(limit, kOpenFilesFloor);
}

void check_open_file_budget(const HostBudget& host, std::uint64_t tasks, std::uint64_t open_files) {
    if (host.file_max == 0) return;
    // tasks × files, and the in-flight fds (one more RLIMIT_NOFILE's worth).
    const unsigned __int128 worst = static_cast<unsigned __int128>(tasks) * open_files + open_files;
    if (worst >= host.file_max)
        throw UsageError("--nofile " + std::to_string(open_files) + " with " + std::to_string(tasks) +
                         " tasks (--pids or its default) lets the box hold " +
                         (worst > UINT64_MAX ? std::string("more") : std::to_string(static_cast<std::uint64_t>(worst))) +
                         " open files, the host's whole file table (fs.file-max " + std::to_string(host.file_max) +
                         "); lower --nofile or --pids");
}

std::uint64_t default_socket_memory(const HostBudget& host) {
    if (host.socket_pressure_bytes == 0) return 256ull << 20;
    return std::max<std::uint64_t>(host.socket_pressure_bytes / 8, 16ull << 20);
}

}  // namespace corral::supervisor
