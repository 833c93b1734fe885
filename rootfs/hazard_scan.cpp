// rootfs/hazard_scan.cpp — see hazard_scan.hpp.
#include "rootfs/hazard_scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "base/fd.hpp"
#include "base/log.hpp"
#include "base/sys_error.hpp"

namespace corral::rootfs {
namespace {

// Whether dir_fd/name carries the extended attribute `attr`. Only "no such
// attribute" (or none supported) counts as no: any other error fails the
// scan closed. getxattrat (Linux 6.13) asks relative to the directory; where
// it is missing or filtered (ENOSYS, EPERM) the path goes through /proc/self/fd.
bool has_xattr(int dir_fd, const char* name, const char* attr) {
    static std::atomic<bool> have_getxattrat{true};
    if (have_getxattrat.load(std::memory_order_relaxed)) {
        struct {
            std::uint64_t value;
            std::uint32_t size;
            std::uint32_t flags;
        } args{};  // size 0: only the attribute's length is asked
        long rc = syscall(464 /* getxattrat */, dir_fd, name, AT_SYMLINK_NOFOLLOW, attr, &args, sizeof args);
        if (rc >= 0) return true;
        if (errno == ENODATA || errno == EOPNOTSUPP) return false;
        if (errno != ENOSYS && errno != EPERM) throw SysError("getxattrat", std::string(name) + ", " + attr, errno);
        have_getxattrat.store(false, std::memory_order_relaxed);
    }
    char path[64 + NAME_MAX];
    std::snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dir_fd, name);
    if (lgetxattr(path, attr, nullptr, 0) >= 0) return true;
    if (errno == ENODATA || errno == EOPNOTSUPP) return false;
    throw SysError("lgetxattr", std::string(name) + ", " + attr, errno);
}

bool has_file_capabilities(int dir_fd, const char* name) { return has_xattr(dir_fd, name, "security.capability"); }

bool has_access_acl(int dir_fd, const char* name) { return has_xattr(dir_fd, name, "system.posix_acl_access"); }

std::atomic<unsigned> g_last_threads{1};

}  // namespace

const char* hazard_of(int dir_fd, const char* name, const struct stat& st, AgentWrites who) {
    bool writable = st.st_uid == who.owner || (st.st_gid == who.group && (st.st_mode & S_IWGRP)) ||
                    (st.st_mode & S_IWOTH);
    // A set-ID file whose ACL mask allows writing may name the owner or the
    // group in an entry of its own: counted as writable (rare, so the extra
    // lookup costs nothing on ordinary trees).
    if (!writable && S_ISREG(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID)) && (st.st_mode & S_IWGRP))
        writable = has_access_acl(dir_fd, name);
    if (!writable) return nullptr;
    if (S_ISSOCK(st.st_mode))
        return "is a UNIX socket the agent could connect to: a host process serving it would take the box's requests "
               "outside the sandbox; remove it, or use a workspace without live sockets (not a home directory)";
    if (S_ISFIFO(st.st_mode))
        return "is a FIFO the agent could write into: a host process reading it would take the box's input outside "
               "the sandbox; remove it";
    if (!S_ISREG(st.st_mode)) return nullptr;
    if ((st.st_mode & (S_ISUID | S_ISGID)) || has_file_capabilities(dir_fd, name))
        return "is set-user-ID, set-group-ID or has file capabilities, and the agent could rewrite it (a write through "
               "mmap keeps those bits); remove them (chmod u-s,g-s / setcap -r) or use another workspace";
    return nullptr;
}

namespace {

// Entries seen before helper threads are worth their start (~0.5 ms each on
// the project's machine, against 1.6-4.7 µs per entry scanned).
constexpr std::size_t kEntriesBeforeHelpers = 4096;

// A directory still to scan, opened from its parent's fd (held while a child
// waits), so no path is looked up twice and no path length limit applies.
struct PendingDir {
    std::shared_ptr<const Fd> parent;  // null: the tree's root
    std::string name;                  // within parent
    std::string rel;                   // "/a/b" from the root, for messages
    int depth = 0;
};

unsigned usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    const int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    return static_cast<unsigned>(std::max(1, n));
}

// The scan: a stack of directories shared by the threads. A thread lists a
// directory and goes depth-first into its subdirectories itself, handing them
// to the shared stack instead while it runs short (another thread may be idle).
class HazardScan {
public:
    HazardScan(int tree_fd, AgentWrites who, const std::string& source, const std::string& option)
        : tree_fd_(tree_fd), who_(who), source_(source), option_(option),
          max_threads_(std::min(kMaxHazardScanThreads, usable_cpus())) {}

    // Every helper is joined before this returns or throws.
    void run() {
        const auto start = std::chrono::steady_clock::now();
        shared_.push_back(PendingDir{});
        work(true);
        for (auto& t : helpers_) t.join();
        const unsigned threads = static_cast<unsigned>(helpers_.size() + 1);
        g_last_threads.store(threads);
        if (error_) std::rethrow_exception(error_);
        const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
        log::debug("timing: hazard scan of " + source_ + ": " + std::to_string(entries_.load()) + " entries, " +
                   std::to_string(threads) + (threads == 1 ? " thread, " : " threads, ") + std::to_string(took.count()) +
                   "ms");
    }

private:
    void work(bool caller) {
        PendingDir dir;
        while (take(dir)) {
            try {
                scan(dir, caller);
            } catch (...) {
                fail(std::current_exception());
            }
            std::lock_guard lock(m_);
            if (--busy_ == 0 && shared_.empty()) cv_.notify_all();
        }
    }

    // The next shared directory; false once the scan failed, or nothing is
    // left and no thread is busy (a busy one may still share more).
    bool take(PendingDir& out) {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return failed_ || !shared_.empty() || busy_ == 0; });
        if (failed_ || shared_.empty()) return false;
        out = std::move(shared_.back());
        shared_.pop_back();
        ++busy_;
        return true;
    }

    void fail(std::exception_ptr e) {
        std::lock_guard lock(m_);
        if (!failed_) error_ = std::move(e);
        failed_ = true;
        stop_.store(true);
        cv_.notify_all();
    }

    // Whether a subdirectory goes to the shared stack rather than down this thread's.
    bool share_next() {
        if (helpers_started_.load(std::memory_order_acquire) == false) return false;
        std::lock_guard lock(m_);
        return shared_.size() < 2 * max_threads_;
    }

    void share(PendingDir dir) {
        std::lock_guard lock(m_);
        shared_.push_back(std::move(dir));
        cv_.notify_one();
    }

    void start_helpers() {
        for (unsigned i = 1; i < max_threads_; ++i) {
            try {
                helpers_.emplace_back([this] { work(false); });
            } catch (const std::system_error&) {
                break;  // fewer threads: the scan goes on, only slower
            }
        }
        helpers_started_.store(true, std::memory_order_release);
    }

    Fd open_dir(const PendingDir& dir, int flags) const;
    void scan(const PendingDir& dir, bool caller);

    const int tree_fd_;
    const AgentWrites who_;
    const std::string& source_;
    const std::string& option_;
    const unsigned max_threads_;
    std::mutex m_;
    std::condition_variable cv_;
    std::vector<PendingDir> shared_;
    unsigned busy_ = 0;
    bool failed_ = false;
    std::exception_ptr error_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> helpers_started_{false};
    std::atomic<std::size_t> entries_{0};
    std::vector<std::thread> helpers_;  // started and joined by the calling thread only
};

// The directory itself, never through a symlink: a name that became one, or
// anything but a directory, since it was listed fails the scan closed.
Fd HazardScan::open_dir(const PendingDir& dir, int flags) const {
    const int at = dir.parent ? dir.parent->get() : tree_fd_;
    const char* name = dir.parent ? dir.name.c_str() : ".";
    return Fd(openat(at, name, flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

void HazardScan::scan(const PendingDir& dir, bool caller) {
    if (stop_.load(std::memory_order_relaxed)) return;
    if (dir.depth > kMaxHazardScanDepth)
        throw UsageError(option_ + " " + source_ + ": it is more than " + std::to_string(kMaxHazardScanDepth) +
                         " directories deep; corral checks everything it hands the agent and refuses trees it cannot "
                         "check completely");
    auto self = std::make_shared<const Fd>(open_dir(dir, O_PATH));
    if (!self->valid()) {
        if (errno == ENOENT) return;  // removed meanwhile: nothing to hand over
        throw SysError("openat", source_ + dir.rel, errno);
    }
    std::vector<std::string> subdirs;
    {
        Fd listing(openat(self->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!listing.valid()) throw SysError("openat", source_ + dir.rel, errno);
        DIR* d = fdopendir(listing.get());
        if (!d) throw SysError("fdopendir", source_ + dir.rel, errno);
        (void)listing.release();  // the DIR owns it now
        struct Closer {
            DIR* d;
            ~Closer() { closedir(d); }
        } closer{d};
        std::size_t seen = 0;
        for (;;) {
            errno = 0;
            dirent* e = readdir(d);
            if (!e) {
                if (errno != 0) throw SysError("readdir", source_ + dir.rel, errno);
                break;
            }
            const char* n = e->d_name;
            if (std::strcmp(n, ".") == 0 || std::strcmp(n, "..") == 0) continue;
            ++seen;
            // A directory is no hazard itself: no lstat for it where the
            // file system names the type (opened O_NOFOLLOW|O_DIRECTORY below).
            if (e->d_type == DT_DIR) {
                subdirs.emplace_back(n);
                continue;
            }
            struct stat st {};
            if (fstatat(self->get(), n, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                if (errno == ENOENT) continue;  // removed meanwhile
                throw SysError("fstatat", source_ + dir.rel + "/" + n, errno);
            }
            if (S_ISDIR(st.st_mode)) subdirs.emplace_back(n);
            else if (const char* hazard = hazard_of(self->get(), n, st, who_))
                throw UsageError(option_ + " " + source_ + ": " + source_ + dir.rel + "/" + n + " " + hazard);
        }
        const std::size_t total = entries_.fetch_add(seen) + seen;
        if (caller && max_threads_ > 1 && total >= kEntriesBeforeHelpers && !helpers_started_.load()) start_helpers();
    }
    for (auto& name : subdirs) {
        PendingDir sub{self, name, dir.rel + "/" + name, dir.depth + 1};
        if (share_next()) share(std::move(sub));
        else scan(sub, caller);
    }
}

}  // namespace

void refuse_hazards(int tree_fd, AgentWrites who, const std::string& source, const std::string& option) {
    HazardScan scan(tree_fd, who, source, option);
    scan.run();
}

unsigned last_hazard_scan_threads() { return g_last_threads.load(); }

}  // namespace corral::rootfs
