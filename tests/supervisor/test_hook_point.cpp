// Integration test (root) of the library API's hook point, the way the bridge
// (run/bridge) uses it: after launch_sandbox() and before start_command(), a
// helper thread enters the sandbox's network namespace through the init's
// pidfd and creates a listening socket there; the command inside connects to
// 127.0.0.1 in its own namespace and reaches that socket, which the host side
// accepts. Then teardown must be clean.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "base/fd.hpp"
#include "supervisor/sandbox.hpp"
#include "supervisor/stale_cleanup.hpp"

using namespace corral;
using namespace corral::supervisor;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    if (!ok) ++failures;
}

}  // namespace

int main() {
    if (geteuid() != 0) {
        std::puts("SKIP: needs root (creates namespaces and cgroups)");
        return 77;
    }
    if (access("/bin/bash", X_OK) != 0) {
        std::puts("SKIP: /bin/bash (its /dev/tcp is the in-box client) is not installed");
        return 77;
    }
    remove_stale_runs();
    char run_dir[] = "/tmp/corral-hook-XXXXXX";
    if (mkdtemp(run_dir) == nullptr) {
        std::perror("mkdtemp");
        return 1;
    }

    SandboxSpec spec;
    spec.run_id = make_run_id();
    spec.run_dir = run_dir;
    spec.hostname = "hook-test";
    spec.argv = {"/bin/bash", "-c", "echo hello-from-box >/dev/tcp/127.0.0.1/3128 && echo sent"};
    spec.timeout = std::chrono::seconds(20);

    Sandbox box = launch_sandbox(spec);

    // ── hook point: the listener lives in the box's netns, owned by us.
    Fd listener;
    int setup_errno = 0;
    std::thread helper([&] {
        if (setns(box.pidfd(), CLONE_NEWNET) != 0) {
            setup_errno = errno;
            return;
        }
        Fd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(3128);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (!s.valid() || bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            listen(s.get(), 4) != 0) {
            setup_errno = errno;
            return;
        }
        listener = std::move(s);
    });
    helper.join();
    expect(setup_errno == 0 && listener.valid(),
           "listener created in the sandbox's netns via setns(pidfd): " + std::string(std::strerror(setup_errno)));

    // The same port on the host's loopback must be unaffected: it is another namespace.
    start_command(box);

    std::string received;
    pollfd pfd{listener.get(), POLLIN, 0};
    if (listener.valid() && poll(&pfd, 1, 15000) == 1) {
        Fd conn(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        char buf[64] = {};
        ssize_t n = conn.valid() ? read(conn.get(), buf, sizeof buf - 1) : -1;
        if (n > 0) received.assign(buf, static_cast<std::size_t>(n));
    }
    expect(received == "hello-from-box\n", "host side accepted the box's connection and read \"" + received + "\"");

    SuperviseResult result = supervise(box, OutputSinks{-1, -1});
    expect(result.wait_status && WIFEXITED(*result.wait_status) && WEXITSTATUS(*result.wait_status) == 0,
           "the command exited 0");
    TeardownReport report = teardown(box);
    for (const auto& p : report.problems) std::printf("     teardown problem: %s\n", p.c_str());
    expect(report.clean(), "teardown verdict clean");

    std::string cleanup = std::string("rm -rf ") + run_dir;
    if (std::system(cleanup.c_str()) != 0) std::printf("warning: could not remove %s\n", run_dir);
    return failures == 0 ? 0 : 1;
}
