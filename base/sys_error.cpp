#include "base/sys_error.hpp"

#include <cstring>

namespace corral {

namespace {
std::string format(std::string_view call, std::string_view detail, int err) {
    std::string s(call);
    if (!detail.empty()) {
        s += '(';
        s += detail;
        s += ')';
    }
    s += ": ";
    s += errno_text(err);
    return s;
}
}  // namespace

SysError::SysError(std::string_view call, std::string_view detail, int err)
    : std::runtime_error(format(call, detail, err)), call_(call), errno_(err) {}

std::string errno_text(int err) {
    char buf[256];
    // GNU strerror_r returns a pointer that may or may not be buf.
    const char* s = ::strerror_r(err, buf, sizeof buf);
    return s;
}

}  // namespace corral
