// run/box_slots.cpp — see box_slots.hpp.
#include "run/box_slots.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <thread>

#include "base/bounded_lock.hpp"
#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "config/capacity_config.hpp"

namespace corral::run {

namespace {

using Clock = std::chrono::steady_clock;

// STATE/slots, made if missing; root's and private like the state dir.
Fd open_slots_dir(const std::string& state_dir) {
    const std::string path = state_dir + "/slots";
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) throw SysError("mkdir", path, errno);
    Fd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir.valid()) throw SysError("open", path, errno);
    struct stat st {};
    if (::fstat(dir.get(), &st) != 0) throw SysError("fstat", path, errno);
    if (st.st_uid != 0 || (st.st_mode & 077) != 0)
        throw UsageError(path + ": must be root's and private (mode 0700), like the state dir it is in");
    return dir;
}

// The slot numbers that have a file: "N.lock", N decimal.
std::vector<unsigned> slot_files(int dir_fd, const std::string& path) {
    Fd copy(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!copy.valid()) throw SysError("openat", path, errno);
    DIR* d = ::fdopendir(copy.get());
    if (!d) throw SysError("fdopendir", path, errno);
    (void)copy.release();
    std::vector<unsigned> out;
    while (dirent* e = ::readdir(d)) {
        std::string_view n(e->d_name);
        if (!n.ends_with(".lock") || n.size() == 5) continue;
        n.remove_suffix(5);
        if (n.find_first_not_of("0123456789") != std::string_view::npos || n.size() > 7) continue;
        out.push_back(static_cast<unsigned>(std::stoul(std::string(n))));
    }
    ::closedir(d);
    return out;
}

Fd open_slot(int dir_fd, unsigned index, const std::string& path) {
    const std::string name = std::to_string(index) + ".lock";
    Fd fd(::openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) throw SysError("openat", path + "/" + name, errno);
    return fd;
}

std::string holder_line(int fd) {
    char buf[256];
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    std::string line(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
    if (auto nl = line.find('\n'); nl != std::string::npos) line.resize(nl);
    return line.empty() ? "(a box starting)" : line;
}

// With the slots' lock held: the live holders, and the lowest free slot
// (locked, ready to write) when there is one.
struct Census {
    std::vector<SlotHolder> live;
    std::optional<BoxSlot> free;
};

Census count_slots(int dir_fd, const std::string& path) {
    Census c;
    for (unsigned index : slot_files(dir_fd, path)) {
        Fd fd = open_slot(dir_fd, index, path);
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK) throw SysError("flock", path + "/" + std::to_string(index) + ".lock", errno);
            c.live.push_back({index, holder_line(fd.get())});
            continue;
        }
        if (!c.free || index < c.free->index()) c.free.emplace(std::move(fd), index);
    }
    return c;
}

// The smallest slot number with no file yet.
unsigned next_new_index(const Census& c) {
    std::vector<bool> used;
    auto mark = [&](unsigned i) {
        if (i >= used.size()) used.resize(i + 1);
        used[i] = true;
    };
    for (const auto& h : c.live) mark(h.index);
    if (c.free) mark(c.free->index());
    unsigned i = 0;
    while (i < used.size() && used[i]) ++i;
    return i;
}

std::string holders_text(const std::vector<SlotHolder>& live) {
    std::string out;
    for (std::size_t i = 0; i < live.size() && i < 5; ++i) out += (i ? ", " : "") + live[i].line;
    if (live.size() > 5) out += ", and " + std::to_string(live.size() - 5) + " more";
    return out;
}

Fd lock_slots(int dir_fd, const std::string& path) {
    Fd lock(::openat(dir_fd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!lock.valid()) throw SysError("openat", path + "/.lock", errno);
    lock_within(lock.get(), path + "/.lock", LockKind::exclusive);
    return lock;
}

}  // namespace

std::vector<SlotHolder> live_slot_holders(const std::string& state_dir) {
    const std::string path = state_dir + "/slots";
    Fd dir = open_slots_dir(state_dir);
    Fd lock = lock_slots(dir.get(), path);
    return count_slots(dir.get(), path).live;
}

BoxSlot take_box_slot(const SlotRequest& request) {
    const std::string path = request.state_dir + "/slots";
    Fd dir = open_slots_dir(request.state_dir);
    const auto until = Clock::now() + request.wait;
    bool told = false;
    for (;;) {
        Census c;
        {
            Fd lock = lock_slots(dir.get(), path);
            c = count_slots(dir.get(), path);
            if (c.live.size() < request.max_boxes) {
                const unsigned fresh = next_new_index(c);
                BoxSlot slot = c.free ? std::move(*c.free) : BoxSlot(open_slot(dir.get(), fresh, path), fresh);
                if (!c.free && ::flock(slot.fd(), LOCK_EX | LOCK_NB) != 0)
                    throw SysError("flock", path + "/" + std::to_string(slot.index()) + ".lock", errno);
                const std::string line = request.holder + "\n";
                if (::ftruncate(slot.fd(), 0) != 0 || ::pwrite(slot.fd(), line.data(), line.size(), 0) != static_cast<ssize_t>(line.size()))
                    throw SysError("write", path + "/" + std::to_string(slot.index()) + ".lock", errno);
                return slot;
            }
        }
        if (Clock::now() >= until) {
            const std::string file = request.state_dir + "/" + config::kCapacityFileName;
            std::string waited = request.wait.count() > 0 ? "; waited " + format_duration(request.wait) + " for one to end"
                                                          : "; --wait DURATION waits for one to end";
            throw UsageError("capacity: all " + std::to_string(request.max_boxes) + " boxes of " + request.state_dir +
                             " are in use (max_boxes in " + file + "; held by " + holders_text(c.live) + ")" + waited);
        }
        if (!told && request.waiting) {
            request.waiting("all " + std::to_string(request.max_boxes) + " boxes of " + request.state_dir +
                            " are in use; waiting up to " + format_duration(request.wait) + " for one to end (--wait)");
            told = true;
        }
        // A slot frees when its holder ends; asked again every 50 ms (an
        // inotify watch would not see a crashed holder's flock go).
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

}  // namespace corral::run
