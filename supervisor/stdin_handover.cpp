#include "supervisor/stdin_handover.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/sys_error.hpp"

namespace corral::supervisor {

namespace {

constexpr const char* kAccepted =
    "--stdin accepts a terminal, a pipe or FIFO, a connected stream socket, a regular file open for reading, or "
    "/dev/null";

[[noreturn]] void refuse(const std::string& what) {
    throw UsageError("--stdin: stdin is " + what + "; " + kAccepted);
}

bool readable(int flags) { return (flags & O_ACCMODE) == O_RDONLY || (flags & O_ACCMODE) == O_RDWR; }

}  // namespace

StdinHandover hand_over_stdin(int fd) {
    StdinHandover h;
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) {
        if (errno == EBADF) refuse("closed");
        throw SysError("fcntl(F_GETFL)", "stdin", errno);
    }
    if (flags & O_PATH) refuse("an O_PATH descriptor (a reference to a path, not input)");
    struct stat st {};
    check_sys(fstat(fd, &st), "fstat", "stdin");
    const bool can_read = readable(flags);
    if (S_ISDIR(st.st_mode)) refuse("a directory (the box would reach the host's files through it)");
    if (S_ISCHR(st.st_mode)) {
        if (major(st.st_rdev) == 1 && minor(st.st_rdev) == 3) return h;  // /dev/null: the box has its own
        if (!isatty(fd)) refuse("a character device that is not a terminal");
        // A master's inode is /dev/ptmx (5:2), which anyone may open: reopened
        // through /proc/self/fd it would make new ptys in the host's pool.
        if (major(st.st_rdev) == 5 && minor(st.st_rdev) == 2) refuse("a pty master (/dev/ptmx)");
        if (!can_read) refuse("a terminal open only for writing");
        h.fd.reset(fcntl(fd, F_DUPFD_CLOEXEC, 3));
        if (!h.fd.valid()) throw SysError("fcntl(F_DUPFD)", "stdin", errno);
        h.terminal = true;
        TerminalState saved;
        saved.fd = fd;
        check_sys(tcgetattr(fd, &saved.settings), "tcgetattr", "stdin");
        int excl = 0;
        if (ioctl(fd, TIOCGEXCL, &excl) == 0) saved.exclusive = excl != 0;
        h.saved = saved;
        return h;
    }
    if (S_ISFIFO(st.st_mode)) {
        // The box may read its input, never write into the caller's FIFO.
        if ((flags & O_ACCMODE) != O_RDONLY) refuse("a pipe or FIFO open for writing");
        h.fd.reset(fcntl(fd, F_DUPFD_CLOEXEC, 3));
        if (!h.fd.valid()) throw SysError("fcntl(F_DUPFD)", "stdin", errno);
        return h;
    }
    if (S_ISSOCK(st.st_mode)) {
        // A datagram socket can sendto() any address of the namespace it was
        // made in (the host's); a stream socket, once connected, only its peer.
        int type = 0, listening = 0;
        socklen_t len = sizeof type;
        check_sys(getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len), "getsockopt(SO_TYPE)", "stdin");
        len = sizeof listening;
        check_sys(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len), "getsockopt(SO_ACCEPTCONN)", "stdin");
        if (type != SOCK_STREAM && type != SOCK_SEQPACKET)
            refuse("a datagram or raw socket (it could send anywhere on the host's network)");
        if (listening) refuse("a listening socket (the box would accept the host's connections)");
        sockaddr_storage peer{};
        len = sizeof peer;
        if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0)
            refuse("an unconnected socket (the box could connect it anywhere on the host's network)");
        h.fd.reset(fcntl(fd, F_DUPFD_CLOEXEC, 3));
        if (!h.fd.valid()) throw SysError("fcntl(F_DUPFD)", "stdin", errno);
        return h;
    }
    if (S_ISREG(st.st_mode)) {
        if (!can_read) refuse("a regular file open only for writing");
        // A new, read-only open file description of the same file: the
        // caller's may be writable (<>file) or carry O_APPEND; the box gets
        // neither. Same offset, so `{ read l; corral run --stdin ...; } <f` works.
        std::string self = "/proc/self/fd/" + std::to_string(fd);
        h.fd.reset(open(self.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
        if (!h.fd.valid()) throw SysError("open", self + " (stdin, read-only)", errno);
        struct stat again {};
        check_sys(fstat(h.fd.get(), &again), "fstat", "reopened stdin");
        if (again.st_dev != st.st_dev || again.st_ino != st.st_ino)
            throw SysError("open", self + ": reopened stdin is another file", EXDEV);
        off_t offset = lseek(fd, 0, SEEK_CUR);
        if (offset > 0 && lseek(h.fd.get(), offset, SEEK_SET) < 0)
            throw SysError("lseek", "reopened stdin", errno);
        return h;
    }
    refuse(S_ISBLK(st.st_mode) ? "a block device" : "an unsupported kind of file");
}

std::string restore_terminal(const TerminalState& state) noexcept {
    std::string problems;
    if (tcsetattr(state.fd, TCSANOW, &state.settings) != 0) problems += "tcsetattr: " + errno_text(errno);
    // Output stopped by the box (tcflow TCOOFF) would stay stopped.
    if (tcflow(state.fd, TCOON) != 0 && problems.empty()) problems += "tcflow(TCOON): " + errno_text(errno);
    if (!state.exclusive) ioctl(state.fd, TIOCNXCL);
    return problems;
}

}  // namespace corral::supervisor
