// base/fd.hpp — the one owning file-descriptor type.
//
// Every fd in corral is owned by exactly one Fd. Raw ints appear only at the
// system-call boundary (get()) or when ownership is handed to the kernel or to
// another owner (release()). There is deliberately no implicit conversion to
// int or bool: "is this fd valid" must be asked with valid().
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace corral {

class Fd {
public:
    Fd() noexcept = default;
    explicit Fd(int fd) noexcept : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    Fd(Fd&& other) noexcept : fd_(other.release()) {}
    Fd& operator=(Fd&& other) noexcept {
        if (this != &other) reset(other.release());
        return *this;
    }
    ~Fd() { reset(); }

    int get() const noexcept { return fd_; }
    bool valid() const noexcept { return fd_ >= 0; }
    // Gives up ownership without closing; the caller now owns the number.
    [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
    // Closes the owned fd (if any) and takes ownership of `fd`.
    void reset(int fd = -1) noexcept;

private:
    int fd_ = -1;
};

// Everything `fd` yields from its current offset to EOF (retrying EINTR).
// Throws SysError("read", what, errno) on a read error.
std::string read_to_end(int fd, const std::string& what);

// The same, refusing more than `max_bytes`: throws UsageError
// "WHAT: larger than N bytes" before it holds more than max_bytes + 1 of them.
std::string read_to_end(int fd, const std::string& what, std::size_t max_bytes);

// The one whole-file reader for files corral reads as a unit (a config, a
// record, a CA bundle, a cgroup or /proc file): the file at `path` (relative
// to `dir_fd`), or nullopt if it does not exist. Opened non-blocking, so a
// FIFO or device put where a file belongs never hangs the reader, and read to
// at most max_bytes; anything but a regular file is refused. Symlinks are followed unless no_follow (the last
// component only; base/regular_file.hpp walks whole paths for files that
// others could have prepared). Throws SysError naming the call and the path,
// UsageError when it is not a regular file or is larger than max_bytes.
struct WholeFileRead {
    std::string path;
    std::size_t max_bytes;
    int dir_fd = -100;        // AT_FDCWD
    bool no_follow = false;
};
std::optional<std::string> read_whole_file(const WholeFileRead& request);

// Writes all `len` bytes of `data` to `fd` (retrying EINTR and short writes).
// Throws SysError("write", what, errno) on a write error.
void write_all(int fd, const char* data, std::size_t len, const std::string& what);

// A background process's own lines from now on: stdout and stderr (after
// a flush) to `path`, appended, made 0600 if new and never through a
// symlink; to /dev/null when it cannot be opened (a caller waiting for EOF
// on the pipe they were must still get it).
void redirect_output_to_file(const std::string& path);

// Whether `path` (followed) names the file `fd` has open: same device and
// inode. False when either cannot be looked at.
bool is_same_file(int fd, const std::string& path);

}  // namespace corral
