// base/sys_error.hpp — errors that name the failed call, its argument and errno.
//
// Library code throws SysError (system calls) or UsageError (bad user input);
// the caller at the top (tools/) prints what() once and picks the exit code.
// Never throw between clone3() and execve(): the child reports {step, errno}
// over a pipe instead (see supervisor/).
#pragma once

#include <cerrno>
#include <stdexcept>
#include <string>
#include <string_view>

namespace corral {

class SysError : public std::runtime_error {
public:
    // what() reads like the call: "mount(/proc, MS_NOSUID): Operation not permitted"
    SysError(std::string_view call, std::string_view detail, int err);
    SysError(std::string_view call, int err) : SysError(call, {}, err) {}
    int error() const noexcept { return errno_; }
    const std::string& call() const noexcept { return call_; }

private:
    std::string call_;
    int errno_;
};

// Bad input from the user: a message that names what was wrong, where, and
// what is accepted. Never carries an errno.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Throws SysError(call, detail, errno) when rc < 0; returns rc otherwise.
inline long check_sys(long rc, std::string_view call, std::string_view detail = {}) {
    if (rc < 0) throw SysError(call, detail, errno);
    return rc;
}

// strerror that is thread-safe and allocation-free for the caller's buffer.
std::string errno_text(int err);

}  // namespace corral
