#include "supervisor/hostname.hpp"

#include "base/sys_error.hpp"

namespace corral::supervisor {

void check_hostname(const std::string& name) {
    bool ok = !name.empty() && name.size() <= 64 && name.front() != '-' && name.front() != '.' &&
              name.back() != '-' && name.back() != '.';
    for (char ch : name) {
        bool allowed = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                       ch == '-' || ch == '.';
        if (!allowed) ok = false;
    }
    if (!ok)
        throw UsageError("--hostname: invalid hostname \"" + name +
                         "\": expected 1 to 64 characters of letters, digits, '-' and '.', "
                         "not starting or ending with '-' or '.'");
}

}  // namespace corral::supervisor
