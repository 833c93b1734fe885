// Each TEST_CASE is one attempt to break out of the sandbox that must fail.
// Every attack script prints START first and DONE (or its outcome) last, and
// the test REQUIREs both: a sandbox that failed to start must never count as
// an attack refused.
#include <doctest/doctest.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pty.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "base/fd.hpp"
#include "tests/supervisor/sandbox/sandbox_support.hpp"

namespace fs = std::filesystem;

namespace corral::test::sandbox {
namespace {

std::string host_hostname() {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return buf;
}

TEST_CASE("writing into the rootfs image never reaches the image directory") {
    const std::string& image = rootfs();
    auto before = tree_manifest(image);
    // data/ and etc/writable are world-writable in the image on purpose: the
    // agent may write them in its own view (overlay upper), never in the image.
    // /bin is root-owned: the agent may not even change its own view. The
    // overlay's lowerdir= paths from mountinfo are tried directly too.
    auto run = corral_sh(R"SH(echo START
echo agent > /data/new-file && echo "view-write data=$(cat /data/new-file)"
echo appended >> /etc/writable && echo "view-write etc=$(tail -n1 /etc/writable)"
echo x > /bin/evil 2>/dev/null && echo "WROTE /bin/evil"
echo x > /bin/busybox 2>/dev/null && echo "WROTE /bin/busybox"
rm -f /bin/sh 2>/dev/null && echo "REMOVED /bin/sh"
chmod 777 /bin 2>/dev/null && echo "CHMOD /bin"
for d in $(grep -o 'lowerdir=[^,]*' /proc/self/mountinfo | cut -d= -f2 | tr ':' ' '); do
  echo "lowerdir seen: $d"
  echo x > "$d/data/escaped" 2>/dev/null && echo "WROTE $d/data/escaped"
  echo x > "$d/tmp/escaped" 2>/dev/null && echo "WROTE $d/tmp/escaped"
done
echo DONE)SH");
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out.find("WROTE") == std::string::npos);
    CHECK(run.result.out.find("REMOVED") == std::string::npos);
    CHECK(run.result.out.find("CHMOD") == std::string::npos);
    CHECK(!fs::exists(image + "/data/new-file"));
    CHECK(read_file(image + "/etc/writable") == "original content\n");
    auto after = tree_manifest(image);
    CHECK(after.size() == before.size());
    for (const auto& [path, desc] : before) {
        auto it = after.find(path);
        if (it == after.end()) {
            FAIL_CHECK("image lost " << path);
            continue;
        }
        if (it->second != desc) FAIL_CHECK("image changed at " << path);
    }
    for (const auto& [path, desc] : after)
        if (!before.count(path)) FAIL_CHECK("image gained " << path);
    check_nothing_left(run);

    // The next run starts from the image again, not from the last run's upper layer.
    auto run2 = corral_sh("echo START; cat /data/new-file 2>/dev/null && echo PERSISTED; tail -n1 /etc/writable; echo DONE");
    INFO(transcript(run2.result));
    require_ran(run2);
    CHECK(run2.result.out.find("PERSISTED") == std::string::npos);
    CHECK(run2.result.out.find("original content") != std::string::npos);
    check_nothing_left(run2);
}

TEST_CASE("a host file outside the rootfs cannot be read by any path") {
    // World-readable markers in places the agent could read if it could
    // reach them: /tmp, /root, next to the rootfs, and behind a symlink the
    // host planted in the workspace.
    const std::string name = "corral-sbt-secret-" + random_hex(8);
    const std::string secret = "SBT-SECRET-" + random_hex(16);
    const std::string tmp_marker = "/tmp/" + name;
    const std::string root_marker = "/root/" + name;
    const std::string beside_rootfs = fs::path(rootfs()).parent_path().string() + "/" + name;
    for (const auto& p : {tmp_marker, root_marker, beside_rootfs}) {
        write_file(p, secret + "\n");
        chmod(p.c_str(), 0644);
    }
    std::string ws = fresh_dir("ws", 01777);
    fs::create_symlink(tmp_marker, ws + "/escape-abs");
    fs::create_symlink("../../../../../../../../tmp/" + name, ws + "/escape-rel");
    struct Cleanup {
        std::vector<std::string> paths;
        ~Cleanup() {
            for (const auto& p : paths) unlink(p.c_str());
        }
    } cleanup{{tmp_marker, root_marker, beside_rootfs}};
    // Only the content must never appear; the file name is in the script.
    std::string script = "echo START\n"
                         "N=" + name + "\nB=" + fs::path(rootfs()).parent_path().string() + "\n" + R"SH(
for p in /tmp/$N /root/$N $B/$N ../../../../tmp/$N /proc/1/root/tmp/$N /proc/self/root/tmp/$N \
         /proc/1/cwd/tmp/$N /workspace/escape-abs /workspace/escape-rel /proc/self/root/$B/$N; do
  cat "$p" 2>/dev/null
done
for pr in /proc/[0-9]*; do
  cat $pr/root/tmp/$N $pr/root/root/$N $pr/root$B/$N $pr/cwd/../tmp/$N 2>/dev/null
  # regular files only: reopening a pipe or tty through /proc would block
  for fd in $pr/fd/*; do [ -f "$fd" ] && head -c 200 "$fd" 2>/dev/null | grep -a SBT-SECRET; done
done
(cd / && cd .. && cd .. && cat tmp/$N 2>/dev/null)
find / \( -path /proc -o -path /dev -o -path /sys \) -prune -o -name "$N" -print 2>/dev/null | sed 's/^/FOUND /'
find / \( -path /proc -o -path /dev -o -path /sys \) -prune -o -type f -size -64k -print 2>/dev/null |
  xargs grep -l "SBT-SECRET-" 2>/dev/null | sed 's/^/FOUND-CONTENT /'
echo "control=$(cat /etc/writable)"
echo DONE)SH";
    CorralArgs args;
    args.flags = {"--workspace", ws};
    auto run = corral_sh(script, args);
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(run.result.out.find(secret) == std::string::npos);
    CHECK(run.result.err.find(secret) == std::string::npos);
    CHECK(run.result.out.find("FOUND") == std::string::npos);
    CHECK(field(run.result.out, "control") == "original content");  // cat does work inside
    CHECK(read_file(tmp_marker) == secret + "\n");  // the marker really was there all along
    check_nothing_left(run);
}

TEST_CASE("a listener on the host's loopback cannot be reached from inside") {
    corral::Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    REQUIRE(listener.valid());
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(listen(listener.get(), 16) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    const std::string port = std::to_string(ntohs(addr.sin_port));

    corral::Fd listener6(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_in6 addr6{};
    addr6.sin6_family = AF_INET6;
    addr6.sin6_addr = in6addr_loopback;
    addr6.sin6_port = addr.sin_port;
    bool have6 = listener6.valid() &&
                 bind(listener6.get(), reinterpret_cast<sockaddr*>(&addr6), sizeof addr6) == 0 &&
                 listen(listener6.get(), 16) == 0;

    // A refused connection (nothing listens on the sandbox's own lo) is the
    // expected outcome; "network unreachable" would mean lo is down instead.
    auto run = corral_sh("echo START; P=" + port + R"SH(
nc -w 3 127.0.0.1 $P </dev/null 2>&1 && echo "CONNECTED nc 127.0.0.1"
nc -w 3 ::1 $P </dev/null 2>&1 && echo "CONNECTED nc ::1"
connect-probe 127.0.0.1 $P
connect-probe ::1 $P
connect-probe 127.0.0.2 $P
echo DONE)SH");
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(run.result.out.find("CONNECTED") == std::string::npos);
    CHECK_MESSAGE(run.result.out.find("connect-probe 127.0.0.1 " + port + ": Connection refused") != std::string::npos,
                  "expected the sandbox's own lo to refuse the connection");
    CHECK(run.result.out.find("connect-probe ::1 " + port + ": Connection refused") != std::string::npos);
    sockaddr_storage peer{};
    socklen_t plen = sizeof peer;
    int accepted = accept(listener.get(), reinterpret_cast<sockaddr*>(&peer), &plen);
    CHECK_MESSAGE(accepted < 0, "the host listener accepted a connection from the sandbox");
    if (accepted >= 0) close(accepted);
    if (have6) {
        accepted = accept(listener6.get(), reinterpret_cast<sockaddr*>(&peer), &plen);
        CHECK_MESSAGE(accepted < 0, "the host ::1 listener accepted a connection from the sandbox");
        if (accepted >= 0) close(accepted);
    }
    check_nothing_left(run);
}

TEST_CASE("a host process cannot be signalled, not even one running as the run's own UID") {
    Background root_sleep({"sleep", "1000"});
    std::string ws = fresh_dir("ws", 01777);
    CorralArgs args;
    args.flags = {"--workspace", ws};
    // The host starts a process with the run's UID once the sandbox says which
    // UID it has; the sandbox then tries to kill it and the root one by host pid.
    CorralProcess run({"/bin/sh", "-c", "echo \"START uid=$(id -u)\"; R=" + std::to_string(root_sleep.pid()) + R"SH(
i=0; while [ ! -s /workspace/pid ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
P=$(cat /workspace/pid)
echo "target=$P"
kill -9 $P 2>&1 && echo "KILLED same-uid $P"
kill -9 $R 2>&1 && echo "KILLED root $R"
kill -9 -1 2>&1; echo "kill-all-rc=$?"
echo ATTEMPTED
i=0; while [ ! -e /workspace/done ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
echo DONE)SH"},
                      args);
    REQUIRE_MESSAGE(run.wait_for_out("START uid=", std::chrono::seconds(30)), run.out() << run.err());
    REQUIRE(run.wait_for_out("\n", std::chrono::seconds(5)));
    std::string uid = field(run.out(), "START uid");
    REQUIRE(!uid.empty());
    std::optional<Background> same_uid_sleep;
    same_uid_sleep.emplace(std::vector<std::string>{"setpriv", "--reuid=" + uid, "--regid=" + uid, "--clear-groups",
                                                    "sleep", "1000"});
    // setpriv execs sleep in place: the pid we hold is the sleeping process.
    for (int i = 0; i < 100 && read_file("/proc/" + std::to_string(same_uid_sleep->pid()) + "/comm") != "sleep\n"; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::string target = std::to_string(same_uid_sleep->pid());
    write_file(ws + "/pid.tmp", target + "\n");
    fs::rename(ws + "/pid.tmp", ws + "/pid");
    bool attempted = run.wait_for_out("ATTEMPTED", std::chrono::seconds(40));
    bool same_alive = process_alive(same_uid_sleep->pid());
    bool root_alive = process_alive(root_sleep.pid());
    // The same-UID process must be gone before the sandbox ends, or corral's
    // teardown sweep would rightly count it as a survivor of the run.
    same_uid_sleep.reset();
    write_file(ws + "/done", "");
    int code = run.wait();
    INFO(run.out() << "--- stderr ---\n" << run.err());
    REQUIRE(attempted);
    CHECK(field(run.out(), "target") == target);
    CHECK(run.out().find("KILLED") == std::string::npos);
    CHECK(same_alive);
    CHECK(root_alive);
    CHECK(run.out().find("DONE") != std::string::npos);
    CHECK(code == 0);
    CorralRun r;
    r.run_dir = run.run_dir();
    r.record = read_record(r.run_dir);
    check_nothing_left(r);
}

TEST_CASE("mount is refused") {
    auto run = corral_sh(R"SH(echo START
mkdir -p /tmp/x
mount -t tmpfs none /tmp/x 2>&1; echo "tmpfs-rc=$?"
mount --bind /bin /tmp/x 2>&1; echo "bind-rc=$?"
mount -o remount,rw / 2>&1; echo "remount-rc=$?"
umount /proc 2>&1; echo "umount-rc=$?"
echo "mounted-on-x=$(grep -c ' /tmp/x ' /proc/self/mountinfo)"
echo DONE)SH");
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(field(run.result.out, "tmpfs-rc") != "0");
    CHECK(field(run.result.out, "bind-rc") != "0");
    CHECK(field(run.result.out, "remount-rc") != "0");
    CHECK(field(run.result.out, "umount-rc") != "0");
    CHECK(field(run.result.out, "mounted-on-x") == "0");
    check_nothing_left(run);
}

TEST_CASE("unshare of a user namespace is refused") {
    auto run = corral_sh(R"SH(echo START
unshare -U /bin/sh -c 'echo INSIDE-USERNS' 2>&1; echo "U-rc=$?"
unshare -r /bin/sh -c 'echo INSIDE-USERNS-AS-ROOT; id -u' 2>&1; echo "r-rc=$?"
unshare -U -m -n -p -f /bin/sh -c 'echo INSIDE-ALL' 2>&1; echo "all-rc=$?"
echo DONE)SH");
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(field(run.result.out, "U-rc") != "0");
    CHECK(field(run.result.out, "r-rc") != "0");
    CHECK(field(run.result.out, "all-rc") != "0");
    CHECK(run.result.out.find("INSIDE") == std::string::npos);
    CHECK(run.result.out.find("unshare") != std::string::npos);  // busybox named the failed call
    check_nothing_left(run);
}

TEST_CASE("a setuid-root binary in the rootfs does not raise privilege") {
    struct stat st {};
    REQUIRE(stat((rootfs() + "/bin/suid-probe").c_str(), &st) == 0);
    REQUIRE(st.st_uid == 0);
    REQUIRE((st.st_mode & 07777) == 04755);
    auto run = corral_sh("echo START; /bin/suid-probe; echo \"probe-rc=$?\"; echo DONE");
    INFO(transcript(run.result));
    require_ran(run);
    REQUIRE(run.record.has_value());
    const std::string uid = std::to_string((*run.record)["uid"].get<long long>());
    CHECK(field(run.result.out, "probe-rc") == "0");
    CHECK(run.result.out.find("suid-probe euid=" + uid + " ruid=" + uid + " setuid0=0 euid_after=" + uid) !=
          std::string::npos);
    check_nothing_left(run);
}

TEST_CASE("mknod of a device is refused (while a fifo in the same place works)") {
    auto run = corral_sh(R"SH(echo START
mkfifo /tmp/sbt-fifo 2>&1; echo "fifo-rc=$?"
mknod /tmp/sbt-null c 1 3 2>&1; echo "char-rc=$?"
mknod /tmp/sbt-disk b 8 0 2>&1; echo "block-rc=$?"
[ -e /tmp/sbt-null ] && echo "EXISTS char"
[ -e /tmp/sbt-disk ] && echo "EXISTS block"
echo DONE)SH");
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(field(run.result.out, "fifo-rc") == "0");
    CHECK(field(run.result.out, "char-rc") != "0");
    CHECK(field(run.result.out, "block-rc") != "0");
    CHECK(run.result.out.find("EXISTS") == std::string::npos);
    check_nothing_left(run);
}

TEST_CASE("a vsock socket (which no network namespace confines) cannot be made; inet and unix still work") {
    auto run = corral_sh("echo START; /bin/kernel-probe; echo DONE");
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(field(run.result.out, "socket-vsock-stream") == "EAFNOSUPPORT");
    CHECK(field(run.result.out, "socket-vsock-seqpacket") == "EAFNOSUPPORT");
    CHECK(field(run.result.out, "socket-packet") == "EAFNOSUPPORT");
    CHECK(field(run.result.out, "socket-inet") == "ok");
    CHECK(field(run.result.out, "socket-unix") == "ok");
    check_nothing_left(run);
}

TEST_CASE("core dumps are off and cannot be turned back on (no core_pattern helper runs as host root)") {
    auto run = corral_sh("echo START; /bin/kernel-probe; sh -c 'ulimit -c unlimited' 2>/dev/null; "
                         "echo \"ulimit-rc=$?\"; echo DONE");
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(field(run.result.out, "core-soft") == "1");
    CHECK(field(run.result.out, "core-hard") == "1");
    CHECK(field(run.result.out, "core-raise") == "EPERM");
    CHECK(field(run.result.out, "ulimit-rc") != "0");
    check_nothing_left(run);
}

TEST_CASE("the box's terminals: no line-discipline change, and a capped pty pool") {
    auto run = corral_sh("echo START; /bin/kernel-probe; echo DONE");
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(field(run.result.out, "tiocsetd") == "EPERM");
    CHECK(field(run.result.out, "ptys") == "128");  // rootfs::kBoxPtyMax, not the host's pool
    CHECK(field(run.result.out, "ptys-then") == "ENOSPC");
    check_nothing_left(run);
}

TEST_CASE("a box cannot hold more than its share of gateway connections (256); the rest are closed at once") {
    auto run = corral_sh("echo START; /bin/conn-hold 300; echo DONE");
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(field(run.result.out, "open") == "256");  // run::kMaxConnectionsPerBox
    CHECK(field(run.result.out, "closed") == "44");
    CHECK(run.result.err.find("the box holds 256 open connections") != std::string::npos);
    check_nothing_left(run);
}

TEST_CASE("writes under /proc/sys are refused") {
    const std::string host_before = host_hostname();
    const std::string core_before = read_file("/proc/sys/kernel/core_pattern");
    // Global knobs are written with their current value (or a harmless one),
    // so even a broken sandbox does not change the host.
    auto run = corral_sh(R"SH(echo START
echo "h-before=$(hostname)"
echo sbt-evil > /proc/sys/kernel/hostname 2>/dev/null; echo "hostname-rc=$?"
cat /proc/sys/kernel/core_pattern > /tmp/cp
cat /tmp/cp > /proc/sys/kernel/core_pattern 2>/dev/null; echo "core-rc=$?"
echo 1 > /proc/sys/vm/drop_caches 2>/dev/null; echo "drop-rc=$?"
cat /proc/sys/kernel/panic > /tmp/pn && echo "panic-readable=yes"
cat /tmp/pn > /proc/sys/kernel/panic 2>/dev/null; echo "panic-rc=$?"
echo "h-after=$(hostname)"
echo DONE)SH");
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(field(run.result.out, "hostname-rc") != "0");
    CHECK(field(run.result.out, "core-rc") != "0");
    CHECK(field(run.result.out, "drop-rc") != "0");
    CHECK(field(run.result.out, "panic-readable") == "yes");  // the knob is there, only writing fails
    CHECK(field(run.result.out, "panic-rc") != "0");
    CHECK(field(run.result.out, "h-after") == field(run.result.out, "h-before"));
    CHECK(field(run.result.out, "h-after") != "sbt-evil");
    CHECK(host_hostname() == host_before);
    CHECK(read_file("/proc/sys/kernel/core_pattern") == core_before);
    check_nothing_left(run);
}

TEST_CASE("legacy AIO, (AF_INET, SOCK_PACKET) and netlink families other than route/sock_diag are denied") {
    auto run = corral_sh("echo START; kernel-probe; echo DONE");
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(field(run.result.out, "aio-setup") == "ENOSYS");
    CHECK(field(run.result.out, "aio-submit") == "ENOSYS");
    CHECK(field(run.result.out, "socket-inet-packet") == "EAFNOSUPPORT");
    CHECK(field(run.result.out, "netlink-uevent") == "EPROTONOSUPPORT");
    CHECK(field(run.result.out, "netlink-audit") == "EPROTONOSUPPORT");
    CHECK(field(run.result.out, "netlink-route") == "ok");      // getaddrinfo, if_nameindex, ip
    CHECK(field(run.result.out, "netlink-sock-diag") == "ok");  // ss
    check_nothing_left(run);
}

// `corral run --stdin ARGS` with `redirect` as its stdin (a shell redirection).
CorralRun corral_with_stdin(const std::string& redirect, const std::string& script) {
    CorralRun r;
    r.run_dir = fresh_path("run");
    CorralArgs args;
    args.flags = {"--stdin"};
    std::vector<std::string> argv = corral_argv(args, r.run_dir, {"/bin/sh", "-c", script});
    std::string cmd = "exec";
    for (const auto& a : argv) cmd += " '" + a + "'";  // no quotes in our paths or scripts
    r.result = run({"/bin/sh", "-c", cmd + " " + redirect});
    r.record = read_record(r.run_dir);
    return r;
}

TEST_CASE("--stdin hands over no directory, no writable file and no O_PATH fd: the host file system stays out of reach") {
    const std::string parent = fresh_dir("stdin-parent", 0777);
    const std::string dir = parent + "/dir";
    fs::create_directories(dir);
    chmod(dir.c_str(), 0777);
    write_file(dir + "/secret", "STDIN-SECRET\n");
    chmod((dir + "/secret").c_str(), 0644);
    const std::string attack = "echo START; cat /proc/self/fd/0/secret; touch /proc/self/fd/0/../from-box; "
                               "ls /proc/self/fd/0/ >/dev/null && echo LISTED; echo DONE";
    auto run = corral_with_stdin("< '" + dir + "'", attack);
    INFO(transcript(run.result));
    CHECK(run.result.exit_code == 125);
    CHECK(run.result.out.find("START") == std::string::npos);  // refused before anything was built
    CHECK(run.result.out.find("STDIN-SECRET") == std::string::npos);
    CHECK(run.result.err.find("--stdin: stdin is a directory") != std::string::npos);
    CHECK(!fs::exists(parent + "/from-box"));

    // A file opened read-write (<>) reaches the box read-only, at the caller's offset.
    const std::string file = parent + "/input";
    write_file(file, "skip\nline-two\n");
    chmod(file.c_str(), 0666);
    auto rw = corral_with_stdin("<> '" + file + "'", "echo START; read -r l; echo \"read=$l\"; "
                                                     "echo overwritten >&0 2>/dev/null && echo WROTE; echo DONE");
    INFO(transcript(rw.result));
    CHECK(rw.result.exit_code == 0);
    CHECK(field(rw.result.out, "read") == "skip");
    CHECK(rw.result.out.find("WROTE") == std::string::npos);
    CHECK(read_file(file) == "skip\nline-two\n");
    check_nothing_left(rw);
    auto offset = corral_with_stdin("< '" + file + "'", "echo START; cat; echo DONE");
    CHECK(offset.result.out.find("skip\nline-two\n") != std::string::npos);

    // A write-only stdin and a block/char device other than /dev/null are refused; /dev/null is the box's own.
    auto wronly = corral_with_stdin("0> '" + parent + "/out'", "echo START; echo DONE");
    CHECK(wronly.result.exit_code == 125);
    CHECK(wronly.result.err.find("open only for writing") != std::string::npos);
    auto zero = corral_with_stdin("< /dev/zero", "echo START; echo DONE");
    CHECK(zero.result.exit_code == 125);
    CHECK(zero.result.err.find("not a terminal") != std::string::npos);
    auto null = corral_with_stdin("< /dev/null", "echo START; cat; echo DONE");
    CHECK(null.result.exit_code == 0);
    CHECK(null.result.out == "START\nDONE\n");
}

TEST_CASE("a host pty as --stdin: no TIOCSCTTY, and its settings, exclusive mode and output flow come back after the run") {
    int master = -1, slave = -1;
    REQUIRE(openpty(&master, &slave, nullptr, nullptr, nullptr) == 0);
    corral::Fd master_fd(master), slave_fd(slave);
    termios before{};
    REQUIRE(tcgetattr(slave, &before) == 0);
    REQUIRE((before.c_lflag & ECHO) != 0);
    const std::string out_path = fresh_path("tty-out"), err_path = fresh_path("tty-err");
    const std::string run_dir = fresh_path("run");
    CorralArgs args;
    args.flags = {"--stdin"};
    std::vector<std::string> argv =
        corral_argv(args, run_dir, {"/bin/sh", "-c", "echo START; kernel-probe tty; echo DONE"});
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // A session of its own without a controlling terminal: the pty is
        // nobody's, which is when TIOCSCTTY would succeed.
        setsid();
        int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(slave, 0);
        dup2(out, 1);
        dup2(err, 2);
        std::vector<char*> cargv;
        for (auto& a : argv) cargv.push_back(a.data());
        cargv.push_back(nullptr);
        execv(cargv[0], cargv.data());
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    const std::string out = read_file(out_path);
    INFO("stdout:\n" << out << "\nstderr:\n" << read_file(err_path));
    REQUIRE(out.find("START") != std::string::npos);
    REQUIRE(out.find("DONE") != std::string::npos);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(field(out, "tiocsctty") == "EPERM");
    CHECK(field(out, "tcsetattr") == "ok");  // the box may use its terminal; the host gets it back
    termios after{};
    REQUIRE(tcgetattr(slave, &after) == 0);
    CHECK(after.c_lflag == before.c_lflag);
    CHECK(after.c_iflag == before.c_iflag);
    CHECK(after.c_oflag == before.c_oflag);
    CHECK(cfgetospeed(&after) == cfgetospeed(&before));
    int excl = 1;
    REQUIRE(ioctl(slave, TIOCGEXCL, &excl) == 0);
    CHECK(excl == 0);
    // Output flows again: a write to the slave arrives at the master.
    int flags = fcntl(slave, F_GETFL);
    fcntl(slave, F_SETFL, flags | O_NONBLOCK);
    CHECK(write(slave, "flow\n", 5) == 5);
    fcntl(slave, F_SETFL, flags);
    CorralRun r;
    r.run_dir = run_dir;
    r.record = read_record(run_dir);
    check_nothing_left(r);
}

}  // namespace
}  // namespace corral::test::sandbox
