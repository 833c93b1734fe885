#include "supervisor/uid_lease.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <charconv>
#include <string>
#include <vector>

#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral::supervisor {
namespace {

// Highest UID we hand out: below 2^31 - 1 so no tool that stores UIDs in a signed
// int, and neither (uid_t)-1 nor (uid_t)-2 (overflow/nobody conventions), is hit.
constexpr unsigned long long kMaxUid = 2147483646ULL;

[[noreturn]] void bad_uid_range(std::string_view text) {
    throw UsageError("invalid --uid-range \"" + std::string(text) +
                     "\": expected FIRST-LAST, two decimal UIDs with 0 < FIRST <= LAST <= 2147483646 "
                     "(e.g. 1900000000-1900000999)");
}

bool parse_decimal(std::string_view digits, unsigned long long& out) {
    if (digits.empty() || digits.size() > 12) return false;
    for (char c : digits)
        if (c < '0' || c > '9') return false;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return ec == std::errc() && end == digits.data() + digits.size();
}

// Creates dir (and a missing parent) root-only; refuses a path that is not a directory.
void ensure_lock_dir(const std::string& dir) {
    auto slash = dir.find_last_of('/');
    if (slash != std::string::npos && slash > 0) {
        std::string parent = dir.substr(0, slash);
        if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) throw SysError("mkdir", parent, errno);
    }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw SysError("mkdir", dir, errno);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) throw SysError("stat", dir, errno);
    if (!S_ISDIR(st.st_mode)) throw SysError("mkdir", dir + " (exists and is not a directory)", ENOTDIR);
}

// Local users (/etc/passwd) are read directly, without NSS: a first
// getpwuid() loads the NSS modules (~0.4 ms here, on every run's critical
// path). Users only other NSS sources know (LDAP, systemd's dynamic users)
// are checked with getpwuid by launch_sandbox while the init builds the
// rootfs (verify_uid_unused), which then leases again without that UID.
bool in_passwd_file(uid_t uid) {
    std::FILE* f = std::fopen("/etc/passwd", "re");
    if (f == nullptr) return false;  // no local users at all (an image-less host is not our case)
    struct passwd pw {};
    struct passwd* result = nullptr;
    std::vector<char> buf(4096);
    bool found = false;
    for (;;) {
        int rc = ::fgetpwent_r(f, &pw, buf.data(), buf.size(), &result);
        if (rc == ERANGE && buf.size() < (1u << 20)) {
            buf.resize(buf.size() * 2);  // a long line: glibc re-reads it with the bigger buffer
            continue;
        }
        if (rc != 0 || result == nullptr) break;  // end of file (ENOENT) or an unreadable rest
        if (pw.pw_uid == uid) {
            found = true;
            break;
        }
    }
    std::fclose(f);
    return found;
}

enum class LockOutcome { acquired, held_by_other };

// Opens and flocks path; on success fd holds the lock on the inode currently at path.
LockOutcome lock_uid_file(const std::string& path, Fd& fd) {
    // A concurrent holder may unlink the path between our open and our flock; then our
    // flock is on an orphaned inode and another acquirer may create a fresh file. Retry
    // until the locked inode is the one at the path.
    for (int attempt = 0; attempt < 100; ++attempt) {
        Fd candidate(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (!candidate.valid()) throw SysError("open", path, errno);
        if (::flock(candidate.get(), LOCK_EX | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK) return LockOutcome::held_by_other;
            throw SysError("flock", path, errno);
        }
        if (is_same_file(candidate.get(), path)) {
            fd = std::move(candidate);
            return LockOutcome::acquired;
        }
    }
    // Persistent churn on one path: treat as taken rather than spin.
    return LockOutcome::held_by_other;
}

}  // namespace

UidRange parse_uid_range(std::string_view text) {
    auto dash = text.find('-');
    if (dash == std::string_view::npos) bad_uid_range(text);
    unsigned long long first = 0, last = 0;
    if (!parse_decimal(text.substr(0, dash), first) || !parse_decimal(text.substr(dash + 1), last)) bad_uid_range(text);
    if (first == 0 || first > last || last > kMaxUid) bad_uid_range(text);
    return UidRange{static_cast<uid_t>(first), static_cast<uid_t>(last)};
}

UidRange default_uid_range() { return UidRange{1900000000u, 1900000999u}; }

UidLease& UidLease::operator=(UidLease&& other) noexcept {
    if (this != &other) {
        release();
        uid_ = other.uid_;
        path_ = std::move(other.path_);
        fd_ = std::move(other.fd_);
    }
    return *this;
}

UidLease::~UidLease() { release(); }

void UidLease::release() noexcept {
    if (!fd_.valid()) return;
    // Unlink while still holding the flock, and only if the path is still our inode
    // (nobody else unlinks a held lock, but a hand-edited /run must not make us remove
    // another run's lock).
    if (is_same_file(fd_.get(), path_)) ::unlink(path_.c_str());
    fd_.reset();  // close drops the flock
}

void UidLease::record_run_id(std::string_view run_id) {
    if (!fd_.valid()) throw SysError("record_run_id", path_ + " (lease already released)", EBADF);
    std::string line = std::string(run_id) + "\n";
    if (::ftruncate(fd_.get(), 0) != 0) throw SysError("ftruncate", path_, errno);
    ssize_t n = ::pwrite(fd_.get(), line.data(), line.size(), 0);
    if (n < 0) throw SysError("pwrite", path_, errno);
    if (static_cast<std::size_t>(n) != line.size()) throw SysError("pwrite", path_ + " (short write)", EIO);
}

UidLease acquire_uid(const UidRange& range, const std::string& lock_dir, const std::set<uid_t>& skip) {
    if (range.first == 0 || range.first > range.last)
        throw UsageError("invalid UID range " + std::to_string(range.first) + "-" + std::to_string(range.last) +
                         ": expected 0 < FIRST <= LAST");
    ensure_lock_dir(lock_dir);
    unsigned long long leased = 0, in_passwd = 0, skipped = 0;
    for (unsigned long long u = range.first; u <= range.last; ++u) {
        uid_t uid = static_cast<uid_t>(u);
        if (skip.count(uid)) {
            ++skipped;
            continue;
        }
        if (in_passwd_file(uid)) {
            ++in_passwd;
            continue;
        }
        std::string path = lock_dir + "/" + std::to_string(uid) + ".lock";
        Fd fd;
        if (lock_uid_file(path, fd) == LockOutcome::held_by_other) {
            ++leased;
            continue;
        }
        // Whether a foreign process owns the UID is checked by launch_sandbox
        // while the lock is held (verify_uid_unused), off the critical path.
        return UidLease(uid, std::move(path), std::move(fd));
    }
    unsigned long long total = static_cast<unsigned long long>(range.last) - range.first + 1;
    std::string name = std::to_string(range.first) + "-" + std::to_string(range.last);
    if (in_passwd == 0 && skipped == 0)
        throw UsageError("UID range " + name + " is exhausted: all " + std::to_string(total) +
                         " UIDs are leased by running sandboxes; widen --uid-range");
    throw UsageError("UID range " + name + " is exhausted: of " + std::to_string(total) + " UIDs, " +
                     std::to_string(leased) + " are leased by running sandboxes, " + std::to_string(in_passwd) +
                     " are users in /etc/passwd and " + std::to_string(skipped) +
                     " own processes outside corral; widen --uid-range");
}

std::string read_lock_run_id(const std::string& lock_path) {
    Fd fd(::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) return {};
    char buf[256];
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n <= 0) return {};
    std::string id(buf, static_cast<std::size_t>(n));
    auto eol = id.find('\n');
    if (eol == std::string::npos) return {};  // partially written: not a complete id
    id.resize(eol);
    return id;
}

}  // namespace corral::supervisor
