#include "supervisor/invocation_wire.hpp"

#include <cstring>
#include <stdexcept>

namespace corral::supervisor {

std::vector<char> encode_exec_request(const ExecImage& image) {
    if (image.argv.empty()) throw std::invalid_argument("an exec needs a command");
    const std::size_t strings = 1 + image.argv.size() + image.env.size() + image.candidates.size();
    if (strings + 3 > kMaxExecStrings)
        throw std::length_error("more than " + std::to_string(kMaxExecStrings - 4) + " arguments and variables");
    std::vector<char> out(sizeof(ExecRequestHeader));
    auto put = [&](const std::string& s) {
        if (s.find('\0') != std::string::npos) throw std::invalid_argument("a string holds a NUL byte");
        out.insert(out.end(), s.begin(), s.end());
        out.push_back('\0');
        if (out.size() > kMaxExecRequestBytes)
            throw std::length_error("the command line and environment exceed " +
                                    std::to_string(kMaxExecRequestBytes / 1024) + " KiB");
    };
    put(image.cwd);
    for (const auto& s : image.argv) put(s);
    for (const auto& s : image.env) put(s);
    for (const auto& s : image.candidates) put(s);
    ExecRequestHeader h{};
    h.magic = kExecRequestMagic;
    h.uid = image.uid;
    h.gid = image.gid;
    h.argc = static_cast<std::uint32_t>(image.argv.size());
    h.envc = static_cast<std::uint32_t>(image.env.size());
    h.candc = static_cast<std::uint32_t>(image.candidates.size());
    h.task_limit = image.task_limit;
    h.open_file_limit = image.open_file_limit;
    h.strings_bytes = static_cast<std::uint32_t>(out.size() - sizeof h);
    if (image.tty + image.stdin_is_stdout + image.own_stdin > 1)
        throw std::invalid_argument("one stdin only: a terminal, the stdio socket or the caller's");
    h.flags = (image.tty ? kExecTty : 0) | (image.stdin_is_stdout ? kExecStdinIsStdout : 0) |
              (image.own_stdin ? kExecStdin : 0) | (image.gated ? kExecGated : 0);
    h.rows = image.tty ? image.rows : 0;
    h.cols = image.tty ? image.cols : 0;
    std::memcpy(out.data(), &h, sizeof h);
    return out;
}

int decode_exec_request(char* buf, std::size_t len, char** slots, std::size_t slot_count, DecodedExec& out) noexcept {
    ExecRequestHeader h{};
    if (len < sizeof h) return EINVAL;
    std::memcpy(&h, buf, sizeof h);
    if (h.magic != kExecRequestMagic || h.argc == 0) return EINVAL;
    // No role runs as root, whatever the supervisor's bytes say.
    if (h.uid == 0 || h.gid == 0 || h.uid == static_cast<std::uint32_t>(-1) || h.gid == static_cast<std::uint32_t>(-1))
        return EPERM;
    if (len > kMaxExecRequestBytes || h.strings_bytes != len - sizeof h) return EMSGSIZE;
    // cwd + three NULL-terminated arrays.
    const std::uint64_t need = 1ULL + h.argc + 1 + h.envc + 1 + h.candc + 1;
    // At most one of the stdin flags: each is a different stdin; the gate
    // goes with any of them.
    const std::uint32_t stdins = h.flags & ~kExecGated;
    if (h.reserved != 0 || (stdins & ~(kExecTty | kExecStdinIsStdout | kExecStdin)) != 0 ||
        (stdins & (stdins - 1)) != 0 || h.task_limit == 0 || h.open_file_limit == 0) return EINVAL;
    if (need > slot_count) return EMSGSIZE;
    char* p = buf + sizeof h;
    char* const end = buf + len;
    // The strings, each NUL-terminated inside the buffer.
    auto next = [&]() -> char* {
        if (p >= end) return nullptr;
        char* s = p;
        void* nul = std::memchr(p, '\0', static_cast<std::size_t>(end - p));
        if (nul == nullptr) return nullptr;
        p = static_cast<char*>(nul) + 1;
        return s;
    };
    std::size_t slot = 0;
    char* cwd = next();
    if (cwd == nullptr || cwd[0] != '/') return EINVAL;
    auto take = [&](std::uint32_t count) -> char** {
        char** first = slots + slot;
        for (std::uint32_t i = 0; i < count; ++i) {
            char* s = next();
            if (s == nullptr) return nullptr;
            slots[slot++] = s;
        }
        slots[slot++] = nullptr;
        return first;
    };
    char** argv = take(h.argc);
    char** envp = argv ? take(h.envc) : nullptr;
    char** cands = envp ? take(h.candc) : nullptr;
    if (cands == nullptr || p != end) return EINVAL;
    out.uid = h.uid;
    out.gid = h.gid;
    out.task_limit = h.task_limit;
    out.open_file_limit = h.open_file_limit;
    out.cwd = cwd;
    out.argv = argv;
    out.envp = envp;
    out.candidates = cands;
    out.tty = (h.flags & kExecTty) != 0;
    out.stdin_is_stdout = (h.flags & kExecStdinIsStdout) != 0;
    out.own_stdin = (h.flags & kExecStdin) != 0;
    out.gated = (h.flags & kExecGated) != 0;
    out.rows = h.rows;
    out.cols = h.cols;
    return 0;
}

}  // namespace corral::supervisor
