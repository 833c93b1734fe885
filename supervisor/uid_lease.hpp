// supervisor/uid_lease.hpp — one agent UID per run, held by a lock file.
//
// Lock scheme (stale cleanup relies on it):
//   /run/corral/uids/<uid>.lock   dir 0700 root, created if missing.
//   The holder keeps flock(LOCK_EX) on the file for the life of the run. The kernel
//   drops the flock when the holder dies, so a lock file whose flock can be taken
//   belongs to a dead (or finished) run.
//   The file's content is the run id ("<run-id>\n"), written by record_run_id().
//   ORDER for the supervisor: acquire_uid() → record_run_id(run_id) → only then create
//   the run's cgroups and /run/corral/scratch/<run-id>. Stale cleanup lists cgroup and
//   scratch dirs first and then the run ids of live locks, so a dir whose run id is
//   not in a live lock at that moment is certainly stale.
//   The flock belongs to the open file, and fork() shares it: every process the
//   supervisor forks (the sandbox's init and everything below it) must close the
//   lease's fd (close_range before execve or at init start), or a survivor keeps the
//   run "alive" for stale cleanup forever.
//   Release: unlink the path while still holding the flock, then close. An acquirer
//   that opened the old path before the unlink and then got the flock sees (fstat of
//   its fd vs stat of the path) that its inode is no longer the one at the path and
//   retries, so two holders can never both believe they own one UID.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "base/fd.hpp"

namespace corral::supervisor {

struct UidRange {
    uid_t first;
    uid_t last;  // inclusive
};

// "A-B" with A <= B, both decimal, B < 2^31 - 1 and A > 0. UsageError on bad form:
//   invalid --uid-range "x": expected FIRST-LAST, two decimal UIDs with 0 < FIRST <= LAST < 2147483647
UidRange parse_uid_range(std::string_view text);
// 1900000000-1900000999: above systemd-nspawn's 524288..1879048191 container range, below 2^31.
UidRange default_uid_range();

inline constexpr const char* kDefaultUidLockDir = "/run/corral/uids";

class UidLease {
public:
    UidLease(UidLease&& other) noexcept = default;
    UidLease& operator=(UidLease&& other) noexcept;
    UidLease(const UidLease&) = delete;
    UidLease& operator=(const UidLease&) = delete;
    ~UidLease();  // release()

    uid_t uid() const { return uid_; }
    gid_t gid() const { return static_cast<gid_t>(uid_); }  // gid == uid
    const std::string& lock_path() const { return path_; }
    bool held() const { return fd_.valid(); }

    // Writes "<run_id>\n" into the lock file (see the scheme above). Throws SysError.
    void record_run_id(std::string_view run_id);
    // Unlinks the lock file, then drops the flock. Idempotent.
    void release() noexcept;

private:
    friend UidLease acquire_uid(const UidRange&, const std::string&, const std::set<uid_t>&);
    UidLease(uid_t uid, std::string path, Fd fd) : uid_(uid), path_(std::move(path)), fd_(std::move(fd)) {}
    uid_t uid_ = 0;
    std::string path_;
    Fd fd_;
};

// Leases the first free UID of the range. Skips UIDs in `skip`, whose lock is
// held, or that are in /etc/passwd. That no other NSS source knows the UID
// and that no process owns it is verified by launch_sandbox
// (verify_uid_unused) while the lease is held, off the critical path; it adds
// a UID found in use to `skip` and leases again. Creates
// lock_dir (0700) if missing. Throws UsageError
//   "UID range A-B is exhausted: all N UIDs are leased by running sandboxes; widen --uid-range"
// (the message says when some UIDs were skipped because of passwd entries or processes).
UidLease acquire_uid(const UidRange& range, const std::string& lock_dir = kDefaultUidLockDir,
                     const std::set<uid_t>& skip = {});

// Reads the run id recorded in a lock file ("" if none or unreadable).
std::string read_lock_run_id(const std::string& lock_path);

}  // namespace corral::supervisor
