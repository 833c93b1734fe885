// oci/runtime/container_control.hpp — a started container's control socket,
// served beside its process: `kill` (deliver_signal) and `exec` (one
// invocation of the box per request, on a thread of its own, its output
// to the caller's own descriptors and to RUN_DIR/execs/N, its status back
// on the connection). The box is a session's (supervisor/invocation.hpp):
// the container's process is its first invocation, each exec another.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "base/fd.hpp"
#include "oci/runtime/control.hpp"
#include "supervisor/sandbox.hpp"

namespace corral::oci {

// The signal `kill` asks for, delivered. SIGKILL: the box's init, which
// takes every process with it. SIGTERM: the process's reaper
// (`main_reaper_pidfd`), which passes it to the process's group. Any other
// signal goes to the process itself, or with `all` to every process of the
// box's cgroup but corral's init. Returns "" or why it could not be sent.
std::string deliver_signal(const supervisor::Sandbox& box, int main_reaper_pidfd, int signal, bool all);

// Every process of the box's cgroup but corral's init (the set `kill --all`
// signals, and `ps` lists), ascending, each once.
std::vector<long> box_processes(const supervisor::Sandbox& box);

class ControlServer {
public:
    ControlServer(int listener, supervisor::Sandbox& box, int main_reaper_pidfd);
    ~ControlServer() { stop(); }
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    // Takes no more requests; when an exec still runs, kills the box's init
    // (the container's process has ended: its execs end with it, as in
    // runc's PID namespace) and waits for every exec's thread. Whether a
    // kill request took the box down with SIGKILL.
    bool stop();

private:
    void serve();
    void handle(Fd conn);
    void run_exec(Fd conn, ControlRequest request, std::vector<Fd> fds, int number);

    int listener_;
    supervisor::Sandbox& box_;
    int main_reaper_pidfd_;
    Fd stop_;
    std::atomic<bool> box_killed_{false};
    std::atomic<bool> abandon_{false};   // a caller's full pipe is given up once stopping
    std::mutex execs_lock_;
    std::vector<std::thread> execs_;
    int exec_count_ = 0;
    std::thread thread_;
};

}  // namespace corral::oci
