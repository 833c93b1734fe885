// supervisor/exec_as_user.cpp — see exec_as_user.hpp.
#include "supervisor/exec_as_user.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "supervisor/privilege_drop.hpp"

namespace corral::supervisor {

namespace {

int fail(const char* call, int err) {
    std::fprintf(stderr, "corral __exec-as: %s: %s\n", call, std::strerror(err));
    return err == ENOENT ? 127 : 126;
}

// A decimal id above 0 (the point is not to run as root) that fits.
bool parse_id(const char* text, unsigned& out) {
    char* end = nullptr;
    errno = 0;
    const unsigned long v = std::strtoul(text, &end, 10);
    if (errno || end == text || *end || v == 0 || v >= 0xffffffffUL || text[0] == '-') return false;
    out = static_cast<unsigned>(v);
    return true;
}

}  // namespace

int exec_as_user_main(int argc, char** argv) {
    unsigned uid = 0, gid = 0;
    if (argc < 5 || !parse_id(argv[1], uid) || !parse_id(argv[2], gid) || std::string_view(argv[3]) != "--" ||
        argv[4][0] != '/') {
        std::fprintf(stderr, "corral __exec-as: expected UID GID -- /ABSOLUTE/PATH [ARGS...], UID and GID not 0\n");
        return 126;
    }
    if (int e = drop_bounding_set(); e < 0) return fail("prctl(PR_CAPBSET_DROP)", -e);
    if (int e = clear_groups(); e < 0) return fail("setgroups", -e);
    if (int e = set_agent_gid(gid); e < 0) return fail("setresgid", -e);
    if (int e = set_agent_uid(uid); e < 0) return fail("setresuid", -e);
    if (int e = clear_capabilities(); e < 0) return fail("capset", -e);
    if (int e = set_no_new_privs(); e < 0) return fail("prctl(PR_SET_NO_NEW_PRIVS)", -e);
    if (::chdir("/") != 0) return fail("chdir /", errno);
    ::execv(argv[4], argv + 4);
    return fail("execv", errno);
}

}  // namespace corral::supervisor
