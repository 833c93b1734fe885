#include "tests/supervisor/sandbox/sandbox_support.hpp"

#include <doctest/doctest.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace fs = std::filesystem;

namespace corral::test::sandbox {

namespace {

std::string g_uid_range;
std::string g_base;      // per-executable temp dir, removed at exit
std::string g_rootfs;    // assembled lazily
int g_counter = 0;

const std::string& base_dir() {
    if (g_base.empty()) {
        char tmpl[] = "/tmp/corral-sbt-XXXXXX";
        if (!mkdtemp(tmpl)) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
        // 0755: files the tests place here "outside the rootfs" must be readable
        // by the agent UID if it could only reach them, or the read test proves nothing.
        chmod(tmpl, 0755);
        g_base = tmpl;
    }
    return g_base;
}

void must(bool ok, const std::string& what) {
    if (!ok) throw std::runtime_error(what + ": " + std::strerror(errno));
}

void run_or_throw(const std::vector<std::string>& argv) {
    Result r = run(argv);
    if (r.exit_code != 0) {
        std::string cmd;
        for (const auto& a : argv) cmd += a + " ";
        throw std::runtime_error("fixture command failed: " + cmd + "\n" + r.out + r.err);
    }
}

// A static program that reports the identity it really runs with: if the
// setuid bit took effect its euid would be 0 and setuid(0) would succeed.
constexpr const char* kSuidProbeSource = R"(#include <stdio.h>
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
constexpr const char* kConnectProbeSource = R"(#include <arpa/inet.h>
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
constexpr const char* kSetidProbeSource = R"(#define _GNU_SOURCE
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
constexpr const char* kKernelProbeSource = R"(#define _GNU_SOURCE
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
constexpr const char* kConnHoldSource = R"(#include <arpa/inet.h>
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

// Compiles one of the probe sources above into <root>/bin/<name>, static
// (the rootfs has no libc of its own). Returns the binary's path.
std::string build_probe(const std::string& root, const std::string& name, const char* source) {
    std::string src = base_dir() + "/" + name + ".c";
    write_file(src, source);
    std::string bin = root + "/bin/" + name;
    run_or_throw({"cc", "-static", "-O1", "-o", bin, src});
    return bin;
}

void build_suid_probe(const std::string& root) {
    std::string bin = build_probe(root, "suid-probe", kSuidProbeSource);
    must(chown(bin.c_str(), 0, 0) == 0, "chown " + bin);
    must(chmod(bin.c_str(), 04755) == 0, "chmod 4755 " + bin);
}

void assemble_rootfs(const std::string& root) {
    for (const char* d : {"bin", "sbin", "etc", "proc", "dev", "workspace", "root", "home", "var", "run", "usr",
                          "usr/bin"})
        fs::create_directories(root + "/" + d);
    chmod(root.c_str(), 0755);
    chmod((root + "/root").c_str(), 0700);
    fs::create_directories(root + "/tmp");
    chmod((root + "/tmp").c_str(), 01777);
    fs::create_directories(root + "/data");
    chmod((root + "/data").c_str(), 0777);  // world-writable on purpose: writes must still not reach the image

    fs::copy_file("/bin/busybox", root + "/bin/busybox");
    chmod((root + "/bin/busybox").c_str(), 0755);
    Result list = run({"/bin/busybox", "--list"});
    if (list.exit_code != 0) throw std::runtime_error("busybox --list failed: " + list.err);
    for (const auto& applet : lines(list.out)) {
        if (applet.empty() || applet == "busybox") continue;
        must(symlink("busybox", (root + "/bin/" + applet).c_str()) == 0, "symlink bin/" + applet);
    }
    write_file(root + "/etc/passwd",
               "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n");
    write_file(root + "/etc/group", "root:x:0:\nnogroup:x:65534:\n");
    write_file(root + "/etc/writable", "original content\n");
    chmod((root + "/etc/writable").c_str(), 0666);
    build_suid_probe(root);
    build_probe(root, "connect-probe", kConnectProbeSource);
    build_probe(root, "setid-probe", kSetidProbeSource);
    build_probe(root, "kernel-probe", kKernelProbeSource);
    build_probe(root, "conn-hold", kConnHoldSource);
}

bool is_number(const char* s) {
    if (!*s) return false;
    for (; *s; ++s)
        if (*s < '0' || *s > '9') return false;
    return true;
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
    return s;
}

}  // namespace

int run_suite(int argc, char** argv, const char* range) {
    g_uid_range = range;
    if (!running_as_root()) {
        std::cerr << "SKIP: sandbox integration tests need root (corral run creates namespaces and cgroups)\n";
        return 77;
    }
    if (access("/bin/busybox", X_OK) != 0) {
        std::cerr << "SKIP: /bin/busybox (busybox-static) is missing: apt-get install busybox-static\n";
        return 77;
    }
    if (!have_program("cc")) {
        std::cerr << "SKIP: no C compiler (cc) to build the setuid probe\n";
        return 77;
    }
    if (access(corral_bin().c_str(), X_OK) != 0) {
        // Not a skip: meson builds corral before these tests, so this is a broken build.
        std::cerr << "FAIL: the corral binary " << corral_bin() << " is missing or not executable\n";
        return 1;
    }
    int rc = 0;
    {
        doctest::Context context(argc, argv);
        rc = context.run();
    }
    if (!g_base.empty()) {
        std::error_code ec;
        fs::remove_all(g_base, ec);
        if (ec) std::cerr << "warning: could not remove " << g_base << ": " << ec.message() << "\n";
    }
    return rc;
}

const std::string& uid_range() { return g_uid_range; }

const std::string& rootfs() {
    if (g_rootfs.empty()) {
        std::string root = base_dir() + "/rootfs";
        assemble_rootfs(root);
        g_rootfs = root;
    }
    return g_rootfs;
}

std::string fresh_path(const std::string& stem) {
    return base_dir() + "/" + stem + "-" + std::to_string(++g_counter);
}

std::string fresh_dir(const std::string& stem, mode_t mode) {
    std::string p = fresh_path(stem);
    fs::create_directories(p);
    chmod(p.c_str(), mode);
    return p;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_file(const std::string& path, const std::string& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + path);
    out << content;
}

std::vector<std::string> corral_argv(const CorralArgs& args, const std::string& run_dir,
                                     const std::vector<std::string>& command) {
    std::vector<std::string> argv{corral_bin(), "run", "--rootfs", args.rootfs.empty() ? rootfs() : args.rootfs};
    if (!run_dir.empty()) {
        argv.push_back("--run-dir");
        argv.push_back(run_dir);
    }
    if (args.own_uid_range) {
        argv.push_back("--uid-range");
        argv.push_back(uid_range());
    }
    argv.insert(argv.end(), args.flags.begin(), args.flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
}

std::optional<nlohmann::json> read_record(const std::string& run_dir) {
    if (run_dir.empty()) return std::nullopt;
    std::string text = read_file(run_dir + "/run.json");
    if (text.empty()) return std::nullopt;
    try {
        return nlohmann::json::parse(text);
    } catch (const std::exception& e) {
        FAIL_CHECK("run.json in " << run_dir << " is not valid JSON: " << e.what() << "\n" << text);
        return std::nullopt;
    }
}

CorralRun corral_run(const std::vector<std::string>& command, const CorralArgs& args) {
    CorralRun r;
    if (args.own_run_dir) r.run_dir = fresh_path("run");
    RunOptions opts = args.process;
    if (opts.timeout == RunOptions{}.timeout) opts.timeout = std::chrono::seconds(120);
    r.result = run(corral_argv(args, r.run_dir, command), opts);
    r.record = read_record(r.run_dir);
    // SBT_VERBOSE=1 shows what every run printed, for reading passing tests too.
    if (std::getenv("SBT_VERBOSE")) std::cerr << "[corral run] " << transcript(r.result) << "\n";
    return r;
}

CorralRun corral_sh(const std::string& script, const CorralArgs& args) {
    return corral_run({"/bin/sh", "-c", script}, args);
}

// --- CorralProcess ---

CorralProcess::CorralProcess(const std::vector<std::string>& command, const CorralArgs& args) {
    if (args.own_run_dir) run_dir_ = fresh_path("run");
    out_path_ = fresh_path("bg-stdout");
    err_path_ = fresh_path("bg-stderr");
    std::vector<std::string> argv = corral_argv(args, run_dir_, command);
    std::vector<std::string> env_store;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        if (!args.process.env.count(kv.substr(0, kv.find('=')))) env_store.push_back(kv);
    }
    for (const auto& [k, v] : args.process.env) env_store.push_back(k + "=" + v);
    std::vector<char*> cargv, cenv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    for (auto& e : env_store) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    must(in >= 0 && out >= 0 && err >= 0, "open background corral stdio");
    pid_ = fork();
    must(pid_ >= 0, "fork");
    if (pid_ == 0) {
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        execve(cargv[0], cargv.data(), cenv.data());
        _exit(127);
    }
    close(in);
    close(out);
    close(err);
}

CorralProcess::~CorralProcess() {
    if (pid_ > 0 && !reaped_) {
        kill(pid_, SIGKILL);
        int status;
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
}

std::string CorralProcess::out() const { return read_file(out_path_); }
std::string CorralProcess::err() const { return read_file(err_path_); }

namespace {
// Polls a growing capture file until it contains `needle` or the bound passes.
bool wait_for_text(const std::string& path, const std::string& needle, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
        if (read_file(path).find(needle) != std::string::npos) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    return read_file(path).find(needle) != std::string::npos;
}
}  // namespace

bool CorralProcess::wait_for_out(const std::string& needle, std::chrono::milliseconds timeout) const {
    return wait_for_text(out_path_, needle, timeout);
}

bool CorralProcess::wait_for_err(const std::string& needle, std::chrono::milliseconds timeout) const {
    return wait_for_text(err_path_, needle, timeout);
}

int CorralProcess::wait(std::chrono::milliseconds timeout) {
    if (reaped_) return -1;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int status = 0;
        pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            reaped_ = true;
            if (WIFEXITED(status)) return WEXITSTATUS(status);
            if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
            return -1;
        }
        if (std::chrono::steady_clock::now() >= deadline) return -1;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

void CorralProcess::kill_supervisor_only() {
    if (pid_ > 0 && !reaped_) kill(pid_, SIGKILL);
}

void CorralProcess::signal(int sig) {
    if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

// --- host observations ---

std::vector<pid_t> processes_of_uid(uid_t uid) {
    std::vector<pid_t> found;
    DIR* d = opendir("/proc");
    if (!d) return found;
    while (dirent* e = readdir(d)) {
        if (!is_number(e->d_name)) continue;
        std::string status = read_file(std::string("/proc/") + e->d_name + "/status");
        for (const auto& line : lines(status)) {
            if (line.rfind("Uid:", 0) != 0) continue;
            std::istringstream in(line.substr(4));
            unsigned long v;
            while (in >> v)
                if (v == uid) {
                    found.push_back(static_cast<pid_t>(std::atol(e->d_name)));
                    break;
                }
            break;
        }
    }
    closedir(d);
    return found;
}

std::string describe_processes(const std::vector<pid_t>& pids) {
    std::string s;
    for (pid_t p : pids) {
        std::string base = "/proc/" + std::to_string(p);
        std::string cmd = read_file(base + "/cmdline");
        for (auto& c : cmd)
            if (c == '\0') c = ' ';
        s += std::to_string(p) + " (" + trim(read_file(base + "/comm")) + ") " + cmd + "\n";
    }
    return s;
}

bool process_alive(pid_t pid) {
    std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    if (stat.empty()) return false;
    auto close_paren = stat.rfind(')');
    if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) return false;
    char state = stat[close_paren + 2];
    return state != 'Z' && state != 'X';
}

std::vector<std::string> cgroup_mount_points() {
    std::vector<std::string> points;
    for (const auto& line : lines(read_file("/proc/self/mountinfo"))) {
        auto sep = line.find(" - ");
        if (sep == std::string::npos) continue;
        std::istringstream after(line.substr(sep + 3));
        std::string fstype;
        after >> fstype;
        if (fstype != "cgroup" && fstype != "cgroup2") continue;
        std::istringstream before(line.substr(0, sep));
        std::string id, parent, devno, root, mount_point;
        before >> id >> parent >> devno >> root >> mount_point;
        points.push_back(mount_point);
    }
    return points;
}

std::vector<std::string> cgroup_dirs_of_run(const std::string& run_id) {
    std::vector<std::string> dirs;
    for (const auto& mp : cgroup_mount_points()) {
        std::string p = mp + "/corral/" + run_id;
        if (access(p.c_str(), F_OK) == 0) dirs.push_back(p);
    }
    return dirs;
}

std::vector<std::string> mount_lines_mentioning(const std::string& needle) {
    std::vector<std::string> found;
    for (const auto& line : lines(read_file("/proc/self/mountinfo")))
        if (line.find(needle) != std::string::npos) found.push_back(line);
    return found;
}

std::string lock_path(uid_t uid) { return "/run/corral/uids/" + std::to_string(uid) + ".lock"; }
std::string scratch_path(const std::string& run_id) { return "/run/corral/scratch/" + run_id; }

std::vector<pid_t> wait_until_no_process_of_uid(uid_t uid, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        auto left = processes_of_uid(uid);
        if (left.empty() || std::chrono::steady_clock::now() >= deadline) return left;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

void check_nothing_left(const std::string& run_id, uid_t uid) {
    // Another run (another test executable sharing the default range) may
    // lease the same UID right after ours ended: its lock file names its run
    // id, and its processes sit in its own corral/<id> cgroup. Those are not ours.
    std::string lease_owner = trim(read_file(lock_path(uid)));
    const bool other_run_holds_uid = !lease_owner.empty() && lease_owner != run_id;
    std::vector<pid_t> procs;
    for (pid_t p : processes_of_uid(uid)) {
        if (other_run_holds_uid &&
            read_file("/proc/" + std::to_string(p) + "/cgroup").find("/corral/" + lease_owner) != std::string::npos)
            continue;
        procs.push_back(p);
    }
    CHECK_MESSAGE(procs.empty(), "processes of run UID " << uid << " survived:\n" << describe_processes(procs));
    if (!run_id.empty()) {
        auto cg = cgroup_dirs_of_run(run_id);
        std::string cgs;
        for (const auto& c : cg) cgs += c + "\n";
        CHECK_MESSAGE(cg.empty(), "cgroup dirs of run " << run_id << " left:\n" << cgs);
        auto mounts = mount_lines_mentioning(run_id);
        std::string ms;
        for (const auto& m : mounts) ms += m + "\n";
        CHECK_MESSAGE(mounts.empty(), "host mounts mentioning run " << run_id << " left:\n" << ms);
        CHECK_MESSAGE(access(scratch_path(run_id).c_str(), F_OK) != 0,
                      "scratch dir left: " << scratch_path(run_id));
    }
    if (!other_run_holds_uid)
        CHECK_MESSAGE(access(lock_path(uid).c_str(), F_OK) != 0, "lock file left: " << lock_path(uid));
}

void check_nothing_left(const CorralRun& run) {
    REQUIRE_MESSAGE(run.record.has_value(),
                    "no run.json in " << run.run_dir << " to learn the run's id and UID from\n" << transcript(run.result));
    const auto& rec = *run.record;
    REQUIRE_MESSAGE((rec.contains("id") && rec["id"].is_string() && rec.contains("uid") && rec["uid"].is_number()),
                    "run.json lacks id/uid: " << rec.dump());
    if (rec.contains("teardown") && rec["teardown"].is_object()) {
        CHECK_MESSAGE(rec["teardown"].value("verdict", "") == "clean",
                      "teardown verdict is not clean: " << rec["teardown"].dump());
    } else {
        FAIL_CHECK("run.json has no teardown object: " << rec.dump());
    }
    check_nothing_left(rec["id"].get<std::string>(), rec["uid"].get<uid_t>());
}

std::string field(const std::string& text, const std::string& key) {
    for (const auto& line : lines(text))
        if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
    return {};
}

std::string transcript(const Result& r) {
    return "exit=" + std::to_string(r.exit_code) + (r.timed_out ? " (timed out)" : "") + "\n--- stdout ---\n" + r.out +
           "--- stderr ---\n" + r.err;
}

std::map<std::string, std::string> tree_manifest(const std::string& root) {
    std::map<std::string, std::string> m;
    auto describe = [&](const fs::path& p) {
        struct stat st {};
        if (lstat(p.c_str(), &st) != 0) return std::string("lstat failed: ") + std::strerror(errno);
        std::ostringstream d;
        d << "mode=" << std::oct << st.st_mode << std::dec << " uid=" << st.st_uid << " gid=" << st.st_gid
          << " size=" << st.st_size << " mtime=" << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec
          << " ctime=" << st.st_ctim.tv_sec << "." << st.st_ctim.tv_nsec;
        if (S_ISLNK(st.st_mode)) d << " link=" << fs::read_symlink(p).string();
        if (S_ISREG(st.st_mode)) d << " content=" << read_file(p.string());
        return d.str();
    };
    m["."] = describe(root);
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::none);
         it != fs::recursive_directory_iterator(); ++it)
        m[fs::relative(it->path(), root).string()] = describe(it->path());
    return m;
}

}  // namespace corral::test::sandbox
