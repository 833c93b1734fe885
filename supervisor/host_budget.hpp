// supervisor/host_budget.hpp — the host-wide tables a box draws from, and the
// default limits that keep one box to a fraction of each.
//
// PIDs (kernel.pid_max), tasks (kernel.threads-max), open files (fs.file-max)
// and socket buffer pages (net.ipv4.tcp_mem / udp_mem) are single pools for
// the whole host: no namespace divides them. A box that empties one breaks
// every other process on the host (fork fails with EAGAIN, open with ENFILE,
// sockets stall). The defaults below are read from the running kernel at each
// run, so a host with a small pid_max gets a small default, and are what
// `corral run --help` describes.
#pragma once

#include <cstdint>

namespace corral::supervisor {

struct HostBudget {
    std::uint64_t pid_max = 0;          // /proc/sys/kernel/pid_max
    std::uint64_t threads_max = 0;      // /proc/sys/kernel/threads-max
    std::uint64_t file_max = 0;         // /proc/sys/fs/file-max
    std::uint64_t socket_pressure_bytes = 0;  // min(tcp_mem[1], udp_mem[1]) pages, in bytes
};
// Reads the figures above; a figure that cannot be read is 0 (the defaults
// then fall back to their fixed ceilings).
HostBudget read_host_budget();

// Without --pids: min(4096, pid_max / 32, threads-max / 32), at least 64. A
// box takes at most 1/32 of the host's PIDs: 32 boxes flooding at once still
// leave the host's own processes their PIDs.
std::uint64_t default_task_limit(const HostBudget& host);

// Without --nofile: min(1024, file-max / 4 / tasks), at least 64. RLIMIT_NOFILE
// is per process and the UID's tasks are bounded by `tasks`, so the box's
// open files (fds of all its processes, plus in-flight SCM_RIGHTS fds, which
// the kernel bounds by the same limit) stay below a quarter of the host's
// file table.
std::uint64_t default_open_files(const HostBudget& host, std::uint64_t tasks);

// Throws UsageError when tasks × open files could fill the host's file table
// (fs.file-max), naming the options to lower.
void check_open_file_budget(const HostBudget& host, std::uint64_t tasks, std::uint64_t open_files);

// The box's socket buffers without --memory (cgroup v1 memory.kmem.tcp, which
// on this kernel also carries UDP): 1/8 of the host's socket pressure
// threshold (tcp_mem[1] / udp_mem[1], where the kernel starts squeezing every
// socket on the host), at least 16 MiB; 256 MiB when unknown.
std::uint64_t default_socket_memory(const HostBudget& host);

}  // namespace corral::supervisor
