#include "supervisor/privilege_drop.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace corral::supervisor {

int disable_core_dumps() noexcept {
    const rlimit one_byte{1, 1};
    return setrlimit(RLIMIT_CORE, &one_byte) == 0 ? 0 : -errno;
}

int cap_task_count(std::uint64_t tasks) noexcept {
    const rlimit limit{tasks, tasks};
    return setrlimit(RLIMIT_NPROC, &limit) == 0 ? 0 : -errno;
}

int cap_open_files(std::uint64_t files) noexcept {
    const rlimit limit{files, files};
    return setrlimit(RLIMIT_NOFILE, &limit) == 0 ? 0 : -errno;
}

int set_oom_score_adj(int adj) noexcept {
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    char text[16];
    int len = std::snprintf(text, sizeof text, "%d", adj);
    int rc = write(fd, text, static_cast<std::size_t>(len)) == len ? 0 : -errno;
    close(fd);
    return rc;
}

int oom_score_adj_of_self() noexcept {
    int fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char text[16] = {};
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    return n > 0 ? std::atoi(text) : 0;
}

int drop_bounding_set() noexcept {
    // cap_max_bits() is what the running kernel supports, which may exceed
    // what these headers know.
    for (cap_value_t cap = 0; cap < cap_max_bits(); ++cap)
        if (cap_drop_bound(cap) != 0) return -errno;
    return 0;
}

int clear_groups() noexcept { return setgroups(0, nullptr) == 0 ? 0 : -errno; }

int set_agent_gid(gid_t gid) noexcept { return setresgid(gid, gid, gid) == 0 ? 0 : -errno; }

int set_agent_uid(uid_t uid) noexcept { return setresuid(uid, uid, uid) == 0 ? 0 : -errno; }

int clear_capabilities() noexcept {
    // setresuid to a non-zero uid already cleared P/E/ambient (no KEEP_CAPS);
    // clearing explicitly makes the guarantee independent of securebits.
    cap_t empty = cap_init();
    if (empty == nullptr) return -errno;
    int rc = cap_set_proc(empty) == 0 ? 0 : -errno;
    cap_free(empty);
    if (rc != 0) return rc;
    // One prctl; libcap's cap_reset_ambient() first probes every capability
    // with PR_CAP_AMBIENT_IS_SET (41 calls on the command's critical path).
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return -errno;
    return 0;
}

int set_no_new_privs() noexcept { return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? 0 : -errno; }

}  // namespace corral::supervisor
