#include "supervisor/agent_gone.hpp"

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "base/sys_error.hpp"
#include "supervisor/init_channel.hpp"
#include "supervisor/sandbox.hpp"
#include "supervisor/invocation.hpp"
#include "supervisor/socket_sweep.hpp"
#include "supervisor/sweep.hpp"

namespace corral::supervisor {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Returns how many were alive and got the SIGKILL; throws if one outlives 10 s.
int kill_invocations(const std::vector<Fd>& invocations) {
    int killed = 0;
    for (const auto& fd : invocations)
        if (!pidfd_exited(fd.get()) && signal_through_pidfd(fd.get(), SIGKILL) == 0) ++killed;
    const auto until = Clock::now() + 10s;
    for (const auto& fd : invocations) {
        pollfd p{fd.get(), POLLIN, 0};
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
        if (poll(&p, 1, static_cast<int>(std::max<long long>(0, left))) != 1)
            throw std::runtime_error("an agent invocation was still alive 10 s after SIGKILL");
    }
    return killed;
}

// The /proc pass confirms; the kill is the mechanism. A process killed a
// moment ago may still be listed while the kernel finishes it: up to 0.5 s.
void confirm_no_process_of(uid_t uid, gid_t gid) {
    std::vector<pid_t> left;
    for (int i = 0; i < 50; ++i) {
        left = processes_owned_by(uid, gid, KernelThreads::skip);
        if (left.empty()) return;
        std::this_thread::sleep_for(10ms);
    }
    std::string pids;
    for (pid_t p : left) pids += (pids.empty() ? "" : " ") + std::to_string(p);
    throw std::runtime_error("processes of the agent's uid " + std::to_string(uid) + " survived: " + pids);
}

// Sockets the agent passed over SCM_RIGHTS into a message nobody reads
// outlive its processes; a listener among them would accept the verifier's
// connections. The box's network namespace is the only one the agent can
// have sockets in (seccomp denies it namespaces).
int close_sockets_of(const Sandbox& box, uid_t uid) {
    Fd diag = open_sock_diag_socket_in(box.open_network_namespace().get());
    try {
        return leave_no_socket_of_uid(diag.get(), uid);
    } catch (const SysError&) {
        throw;  // the kernel could not be asked: that is not "sockets left"
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string("the agent is not gone: ") + e.what());
    }
}

}  // namespace

nlohmann::json leave_nothing_of_the_agent(const Sandbox& box, std::vector<Fd> invocations) {
    const int killed = kill_invocations(invocations);
    const auto [uid, gid] = role_uid_gid(box, Role::agent);
    confirm_no_process_of(uid, gid);
    const int sockets_destroyed = close_sockets_of(box, uid);
    return nlohmann::json{{"invocations_killed", killed},
                          {"uid", uid},
                          {"uid_sweep", "no process of uid " + std::to_string(uid)},
                          {"sockets_destroyed", sockets_destroyed}};
}

}  // namespace corral::supervisor
