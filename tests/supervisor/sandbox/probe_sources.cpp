#include "tests/supervisor/sandbox/probe_sources.hpp"

namespace corral::test::sandbox {

// A static program that reports the identity it really runs with: if the
// setuid bit took effect its euid would be 0 and setuid(0) would succeed.
extern const char* const kSuidProbeSource = R"(#include <stdio.h>
#include <unistd.h>
int main(void) {
    unsigned e = (unsigned)geteuid(), r = (unsigned)getuid();
    int s = setuid(0) == 0;
    printf("suid-probe euid=%u ruid=%u setuid0=%d euid_after=%u\n", e, r, s, (unsigned)geteuid());
    return 0;
}
)";

// busybox-static's wget crashes in getaddrinfo; this reports connect()'s own
// errno for a numeric address, which is what the loopback test needs to see.
extern const char* const kConnectProbeSource = R"(#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char** argv) {
    if (argc != 3) return 2;
    struct sockaddr_storage ss; memset(&ss, 0, sizeof ss);
    socklen_t len;
    struct sockaddr_in* v4 = (struct sockaddr_in*)&ss;
    struct sockaddr_in6* v6 = (struct sockaddr_in6*)&ss;
    if (inet_pton(AF_INET, argv[1], &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET; v4->sin_port = htons(atoi(argv[2])); len = sizeof *v4;
    } else if (inet_pton(AF_INET6, argv[1], &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6; v6->sin6_port = htons(atoi(argv[2])); len = sizeof *v6;
    } else return 2;
    int fd = socket(ss.ss_family, SOCK_STREAM, 0);
    if (fd < 0) { printf("connect-probe %s %s: socket: %s\n", argv[1], argv[2], strerror(errno)); return 1; }
    if (connect(fd, (struct sockaddr*)&ss, len) == 0) { printf("CONNECTED %s %s\n", argv[1], argv[2]); return 0; }
    printf("connect-probe %s %s: %s\n", argv[1], argv[2], strerror(errno));
    return 1;
}
)";

// A static program that tries every call that can put a set-user/group-ID
// bit on a file in the current directory and prints "<call>=<errno name or ok>"
// for each (the libc wrappers of some are not in busybox). Run as the agent.
extern const char* const kSetidProbeSource = R"(#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
static void report(const char* what, long rc) {
    printf("%s=%s\n", what, rc >= 0 ? "ok" : strerrorname_np(errno));
    if (rc >= 0 && rc > 2 && strncmp(what, "open", 4) == 0) close((int)rc);
}
int main(void) {
    report("open-creat-suid", open("p-open", O_CREAT | O_WRONLY, 04755));
    report("openat-creat-sgid", openat(AT_FDCWD, "p-openat", O_CREAT | O_WRONLY, 02755));
    report("creat-suid", creat("p-creat", 04755));
    report("mknod-reg-suid", mknod("p-mknod", S_IFREG | 04755, 0));
    report("mknodat-reg-sgid", mknodat(AT_FDCWD, "p-mknodat", S_IFREG | 02755, 0));
    report("open-tmpfile-suid", open(".", O_TMPFILE | O_WRONLY, 04755));
    int fd = open("p-plain", O_CREAT | O_WRONLY, 0755);
    report("open-plain", fd);
    report("chmod-suid", chmod("p-plain", 04755));
    report("chmod-sgid", chmod("p-plain", 02755));
    report("fchmod-suid", fchmod(fd, 04755));
    report("fchmodat-sgid", fchmodat(AT_FDCWD, "p-plain", 02755, 0));
    report("fchmodat2-suid", syscall(452, AT_FDCWD, "p-plain", 04755, 0));
    report("chmod-plain", chmod("p-plain", 0700));
    struct { unsigned long long flags, mode, resolve; } how = {O_CREAT | O_WRONLY, 04755, 0};
    report("openat2", syscall(SYS_openat2, AT_FDCWD, "p-openat2", &how, sizeof how));
    return 0;
}
)";

// A static program that tries, as the agent, the kernel doors the box's
// network namespace, rlimits and devpts must keep shut, printing
// "<what>=<errno name or ok or a count>" per line. Other modes:
//   kernel-probe sockets tcp|udp N   fill N loopback TCP connections / UDP
//       sockets nobody reads, then print <proto>-grew-kib= (the host-wide
//       /proc/net/sockstat "mem" before and after, in KiB)
//   kernel-probe tty                 on fd 0: setsid + TIOCSCTTY, then echo/canonical
//       mode off, speed 50, exclusive mode and output stopped (the state the
//       caller's terminal must get back)
//   kernel-probe hold-unix NAME      a Unix listener on @NAME that never accepts,
//       left running detached (listening before this returns)
//   kernel-probe park NAME PORT [UNIX]  a TCP listener on 127.0.0.1:PORT (and an
//       abstract Unix listener @UNIX) passed over SCM_RIGHTS to @NAME; exits
extern const char* const kKernelProbeSource = R"(#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <stddef.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
static const char* outcome(long rc) { return rc >= 0 ? "ok" : strerrorname_np(errno); }
static long sockstat_kib(const char* proto) {
    FILE* f = fopen("/proc/net/sockstat", "r");
    char line[256];
    long mem = -1;
    while (f && fgets(line, sizeof line, f)) {
        char* m = strstr(line, " mem ");
        if (strncmp(line, proto, strlen(proto)) == 0 && m) mem = atol(m + 5) * (sysconf(_SC_PAGESIZE) / 1024);
    }
    if (f) fclose(f);
    return mem;
}
static char chunk[65000];
static int fill_sockets(const char* proto, int n) {
    const char* key = strcmp(proto, "tcp") == 0 ? "TCP:" : "UDP:";
    long before = sockstat_kib(key);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    int l = -1;
    if (key[0] == 'T') {
        l = socket(AF_INET, SOCK_STREAM, 0);
        if (l < 0 || bind(l, (struct sockaddr*)&a, sizeof a) || listen(l, 4096) || getsockname(l, (struct sockaddr*)&a, &al)) {
            perror("listener");
            return 1;
        }
    }
    for (int i = 0; i < n; ++i) {
        if (key[0] == 'T') {
            int c = socket(AF_INET, SOCK_STREAM, 0);
            if (c < 0 || connect(c, (struct sockaddr*)&a, sizeof a) != 0) { printf("stopped-at=%d %s\n", i, strerrorname_np(errno)); break; }
            int s = accept(l, 0, 0);
            if (s < 0) { printf("stopped-at=%d %s\n", i, strerrorname_np(errno)); break; }
            while (send(c, chunk, sizeof chunk, MSG_DONTWAIT) > 0) {}
        } else {
            int r = socket(AF_INET, SOCK_DGRAM, 0), s = socket(AF_INET, SOCK_DGRAM, 0);
            if (r < 0 || s < 0) { printf("stopped-at=%d %s\n", i, strerrorname_np(errno)); break; }
            int big = 1 << 30;
            setsockopt(r, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
            struct sockaddr_in b = a;
            socklen_t bl = sizeof b;
            if (bind(r, (struct sockaddr*)&b, sizeof b) || getsockname(r, (struct sockaddr*)&b, &bl) ||
                connect(s, (struct sockaddr*)&b, sizeof b)) { perror("udp"); return 1; }
            for (int k = 0; k < 160; ++k) send(s, chunk, sizeof chunk, MSG_DONTWAIT);
        }
    }
    printf("%s-grew-kib=%ld\n", proto, sockstat_kib(key) - before);
    return 0;
}
static int tty_probe(void) {
    setsid();  // a session leader without a controlling terminal may take one
    printf("tiocsctty=%s\n", outcome(ioctl(0, TIOCSCTTY, 0)));
    struct termios t;
    if (tcgetattr(0, &t) != 0) { printf("tcgetattr=%s\n", strerrorname_np(errno)); return 1; }
    t.c_lflag &= ~(ECHO | ICANON);
    cfsetispeed(&t, B50);
    cfsetospeed(&t, B50);
    printf("tcsetattr=%s\n", outcome(tcsetattr(0, TCSANOW, &t)));
    printf("tiocexcl=%s\n", outcome(ioctl(0, TIOCEXCL)));
    printf("tcooff=%s\n", outcome(tcflow(0, TCOOFF)));
    return 0;
}
static socklen_t abstract(struct sockaddr_un* a, const char* name) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    strncpy(a->sun_path + 1, name, sizeof a->sun_path - 2);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
}
static int unix_listener(const char* name) {
    struct sockaddr_un a;
    socklen_t len = abstract(&a, name);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0 || bind(s, (struct sockaddr*)&a, len) || listen(s, 8)) { perror("unix listener"); exit(1); }
    return s;
}
static int hold_unix(const char* name) {
    unix_listener(name);
    if (fork() != 0) return 0;
    setsid();
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0); dup2(null, 1); dup2(null, 2);
    for (;;) pause();
}
static int park(const char* service, int port, const char* unix_name) {
    int fds[2], n = 0;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr*)&a, sizeof a) || listen(l, 8)) { perror("tcp listener"); return 1; }
    fds[n++] = l;
    if (unix_name) fds[n++] = unix_listener(unix_name);
    struct sockaddr_un sa;
    socklen_t len = abstract(&sa, service);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (struct sockaddr*)&sa, len)) { perror("connect to the holder"); return 1; }
    char byte = 'x', control[CMSG_SPACE(sizeof fds)];
    memset(control, 0, sizeof control);
    struct iovec iov = {&byte, 1};
    struct msghdr m = {0};
    m.msg_iov = &iov; m.msg_iovlen = 1; m.msg_control = control; m.msg_controllen = CMSG_SPACE(n * sizeof(int));
    struct cmsghdr* h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET; h->cmsg_type = SCM_RIGHTS; h->cmsg_len = CMSG_LEN(n * sizeof(int));
    memcpy(CMSG_DATA(h), fds, n * sizeof(int));
    if (sendmsg(c, &m, 0) != 1) { perror("sendmsg"); return 1; }
    printf("parked=%d\n", n);
    return 0;
}
int main(int argc, char** argv) {
    if (argc == 4 && strcmp(argv[1], "sockets") == 0) return fill_sockets(argv[2], atoi(argv[3]));
    if (argc == 3 && strcmp(argv[1], "hold-unix") == 0) return hold_unix(argv[2]);
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "park") == 0) return park(argv[2], atoi(argv[3]), argc == 5 ? argv[4] : NULL);
    if (argc == 2 && strcmp(argv[1], "tty") == 0) return tty_probe();
    printf("socket-vsock-stream=%s\n", outcome(socket(AF_VSOCK, SOCK_STREAM, 0)));
    printf("socket-vsock-seqpacket=%s\n", outcome(socket(AF_VSOCK, SOCK_SEQPACKET, 0)));
    printf("socket-packet=%s\n", outcome(socket(AF_PACKET, SOCK_DGRAM, 0)));
    printf("socket-inet-packet=%s\n", outcome(socket(AF_INET, SOCK_PACKET, 0)));
    printf("socket-inet=%s\n", outcome(socket(AF_INET, SOCK_STREAM, 0)));
    printf("socket-unix=%s\n", outcome(socket(AF_UNIX, SOCK_STREAM, 0)));
    printf("netlink-route=%s\n", outcome(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)));
    printf("netlink-sock-diag=%s\n", outcome(socket(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG)));
    printf("netlink-uevent=%s\n", outcome(socket(AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT)));
    printf("netlink-audit=%s\n", outcome(socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT)));
    unsigned long aio = 0;
    printf("aio-setup=%s\n", outcome(syscall(SYS_io_setup, 1, &aio)));
    printf("aio-submit=%s\n", outcome(syscall(SYS_io_submit, aio, 0, NULL)));
    struct rlimit core;
    getrlimit(RLIMIT_CORE, &core);
    printf("core-soft=%llu\ncore-hard=%llu\n", (unsigned long long)core.rlim_cur, (unsigned long long)core.rlim_max);
    struct rlimit raise = {RLIM_INFINITY, RLIM_INFINITY};
    printf("core-raise=%s\n", outcome(setrlimit(RLIMIT_CORE, &raise)));
    struct rlimit files, nproc;
    getrlimit(RLIMIT_NOFILE, &files);
    getrlimit(RLIMIT_NPROC, &nproc);
    printf("nofile-soft=%llu\nnofile-hard=%llu\n", (unsigned long long)files.rlim_cur, (unsigned long long)files.rlim_max);
    printf("nproc-soft=%llu\nnproc-hard=%llu\n", (unsigned long long)nproc.rlim_cur, (unsigned long long)nproc.rlim_max);
    struct rlimit more_files = {files.rlim_max + 1, files.rlim_max + 1};
    printf("nofile-raise=%s\n", outcome(setrlimit(RLIMIT_NOFILE, &more_files)));
    int adj = open("/proc/self/oom_score_adj", O_RDWR);
    char text[16] = {0};
    if (adj >= 0 && read(adj, text, sizeof text - 1) > 0) printf("oom-score-adj=%d\n", atoi(text));
    printf("oom-lower=%s\n", adj < 0 ? "no-file" : outcome(write(adj, "-1", 2)));
    int first = posix_openpt(O_RDWR | O_NOCTTY);
    int n_null = 27;
    printf("tiocsetd=%s\n", first < 0 ? "no-pty" : outcome(ioctl(first, TIOCSETD, &n_null)));
    int ptys = first >= 0 ? 1 : 0;
    while (ptys < 4096 && posix_openpt(O_RDWR | O_NOCTTY) >= 0) ++ptys;
    printf("ptys=%d\nptys-then=%s\n", ptys, strerrorname_np(errno));
    return 0;
}
)";

// Opens N connections to the bridge (127.0.0.1:3128) and holds them, then
// reports how many the other side closed at once: "open=X closed=Y".
extern const char* const kConnHoldSource = R"(#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 0, fds[4096], made = 0, open_ = 0, closed = 0;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET; a.sin_port = htons(3128); a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < n && i < 4096; ++i) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr*)&a, sizeof a) != 0) { perror("connect"); return 1; }
        fds[made++] = fd;
    }
    sleep(1);
    for (int i = 0; i < made; ++i) {
        char c;
        ssize_t r = recv(fds[i], &c, 1, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) ++open_; else ++closed;
    }
    printf("open=%d\nclosed=%d\n", open_, closed);
    return 0;
}
)";

}  // namespace corral::test::sandbox
