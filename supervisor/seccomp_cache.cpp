// supervisor/seccomp_cache.cpp — see seccomp_cache.hpp.
#include "supervisor/seccomp_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <string_view>

#include "base/atomic_file.hpp"
#include "base/fd.hpp"
#include "base/log.hpp"
#include "base/sha256.hpp"
#include "base/sys_error.hpp"

namespace corral::supervisor {

namespace {

// The file's first line; a change of layout changes it, and the digest
// line after it covers the program that follows.
constexpr std::string_view kMagic = "corral-seccomp-program 1\n";
constexpr std::size_t kDigestLine = 64 + 1;
// At most this many programs are kept: past it, a new one replaces them all
// (a host runs one corral with one or two policies; old binaries' entries go).
constexpr int kMaxKept = 16;

void add_field(std::string& out, std::string_view name, std::string_view value) {
    out.append(name).append("=").append(std::to_string(value.size())).append(":").append(value).append("\n");
}

std::string executable_identity() {
    struct stat st {};
    if (::stat("/proc/self/exe", &st) != 0) return "unknown " + std::to_string(errno);
    return std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " + std::to_string(st.st_size) + " " +
           std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec);
}

std::string libseccomp_version() {
    const scmp_version* v = seccomp_version();
    if (v == nullptr) return "unknown";
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->micro);
}

std::string kernel_release() {
    struct utsname u {};
    if (::uname(&u) != 0) return "unknown";
    return std::string(u.release) + " " + u.version + " " + u.machine;
}

// Root's, a directory, and nobody else may write it or read it.
bool private_to_root(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && st.st_uid == 0 && (st.st_mode & 077) == 0;
}

Fd open_cache_dir(const std::string& dir, bool create) {
    if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        log::debug("seccomp cache: mkdir " + dir + ": " + std::strerror(errno));
        return Fd();
    }
    Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return Fd();
    if (!private_to_root(fd.get())) {
        log::warn("seccomp cache: " + dir + " is not root's and private (mode 0700); not used");
        return Fd();
    }
    return fd;
}

SeccompProgram read_kept(int dir_fd, const std::string& name) {
    Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid() || !private_to_root(fd.get())) return {};
    try {
        return decode_seccomp_program(
            read_to_end(fd.get(), name, kMagic.size() + kDigestLine + BPF_MAXINSNS * sizeof(sock_filter)));
    } catch (const std::exception&) {
        return {};
    }
}

// Leaves at most kMaxKept entries: when there are more, all but `keep` go.
void trim_kept(int dir_fd, const std::string& keep) {
    Fd walk(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    DIR* d = walk.valid() ? ::fdopendir(walk.get()) : nullptr;
    if (d == nullptr) return;
    (void)walk.release();
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d))
        if (e->d_name[0] != '.' && keep != e->d_name) names.emplace_back(e->d_name);
    ::closedir(d);
    if (static_cast<int>(names.size()) < kMaxKept) return;
    for (const auto& n : names) ::unlinkat(dir_fd, n.c_str(), 0);
}

}  // namespace

std::string seccomp_cache_key(const std::vector<SeccompRule>& rules) {
    std::string text(kMagic);
    add_field(text, "corral", executable_identity());
    add_field(text, "libseccomp", libseccomp_version());
    add_field(text, "kernel", kernel_release());
    for (const auto& r : rules) {
        add_field(text, "syscall", r.syscall);
        add_field(text, "action", std::to_string(static_cast<int>(r.action)));
        add_field(text, "nr", std::to_string(r.x86_64_nr));
        for (const auto& c : r.conditions)
            add_field(text, "arg", std::to_string(c.index) + " " + std::to_string(c.mask) + " " +
                                       std::to_string(c.value) + " " + std::to_string(static_cast<int>(c.compare)));
    }
    return sha256_hex(text);
}

std::string encode_seccomp_program(const SeccompProgram& program) {
    std::string body(reinterpret_cast<const char*>(program.instructions.data()),
                     program.instructions.size() * sizeof(sock_filter));
    return std::string(kMagic) + sha256_hex(body) + "\n" + body;
}

SeccompProgram decode_seccomp_program(const std::string& bytes) {
    const std::size_t head = kMagic.size() + kDigestLine;
    if (bytes.size() <= head || bytes.compare(0, kMagic.size(), kMagic) != 0 || bytes[head - 1] != '\n') return {};
    std::string_view body(bytes.data() + head, bytes.size() - head);
    if (body.size() % sizeof(sock_filter) != 0 || body.size() / sizeof(sock_filter) > BPF_MAXINSNS) return {};
    if (sha256_hex(body) != std::string_view(bytes.data() + kMagic.size(), 64)) return {};
    SeccompProgram program;
    program.instructions.resize(body.size() / sizeof(sock_filter));
    std::memcpy(program.instructions.data(), body.data(), body.size());
    return program;
}

SeccompProgram cached_seccomp_program(const std::vector<SeccompRule>& rules, const std::string& cache_dir) {
    const std::string name = seccomp_cache_key(rules) + ".bpf";
    Fd dir = open_cache_dir(cache_dir, /*create=*/false);
    if (dir.valid()) {
        SeccompProgram kept = read_kept(dir.get(), name);
        if (!kept.instructions.empty()) return kept;
    }
    SeccompProgram program = compile_seccomp(rules);
    if (!dir.valid()) dir = open_cache_dir(cache_dir, /*create=*/true);
    if (!dir.valid()) return program;
    try {
        trim_kept(dir.get(), name);
        write_file_atomically({cache_dir, name, 0600, Durability::visible}, encode_seccomp_program(program));
    } catch (const std::exception& e) {
        log::debug(std::string("seccomp cache: keeping the program: ") + e.what());
    }
    return program;
}

}  // namespace corral::supervisor
