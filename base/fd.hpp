// base/fd.hpp — the one owning file-descriptor type.
//
// Every fd in corral is owned by exactly one Fd. Raw ints appear only at the
// system-call boundary (get()) or when ownership is handed to the kernel or to
// another owner (release()). There is deliberately no implicit conversion to
// int or bool: "is this fd valid" must be asked with valid().
#pragma once

#include <cstddef>
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

// Writes all `len` bytes of `data` to `fd` (retrying EINTR and short writes).
// Throws SysError("write", what, errno) on a write error.
void write_all(int fd, const char* data, std::size_t len, const std::string& what);

}  // namespace corral
