// supervisor/init_steps.hpp — internal to the sandbox's init (PID 1 of the
// box, sandbox_init.cpp; a session's init, init_session.cpp): the steps both
// use. Everything here runs between clone3 and execve: async-signal-safe, no
// allocation, failures reported to the supervisor as {step, errno}
// (docs/architecture.md, "three failure shapes").
#pragma once

#include "rootfs/mount_plan.hpp"
#include "supervisor/sandbox_init.hpp"
#include "supervisor/setup_step.hpp"

namespace corral::supervisor::init_steps {

// The init's setup sequence, then PID 1's reaping (or a session's service).
[[noreturn]] void run_init(const InitContext& ctx) noexcept;

// One report to the supervisor (a struct under PIPE_BUF: one atomic write).
void send(int fd, const InitMessage& msg) noexcept;
// Reports the failed step and exits 125.
[[noreturn]] void fail(const InitContext& ctx, SetupStep step, int err, const char* detail) noexcept;
[[noreturn]] void fail_mount(const InitContext& ctx, SetupStep step, const rootfs::MountFailure& f) noexcept;
// rc is 0 or -errno.
void check_step(const InitContext& ctx, int rc, SetupStep step, const char* call) noexcept;
// Closes every fd except `keep` (sorted ascending, no duplicates): 0 or -errno.
int close_all_except(const int* keep, int count) noexcept;
// A new invocation: no stop target yet, none pending (a stop before the
// command exists waits for it).
void reset_stop_forwarding() noexcept;
// Forks the command and reaps it (and its orphans); reports its status.
[[noreturn]] void start_command_and_reap(const InitContext& ctx, bool outlive_command) noexcept;

// init_session.cpp: a session's init, and the box's pty for --tty (the slave).
[[noreturn]] void serve_session(const InitContext& ctx) noexcept;
int open_box_pty(const InitContext& ctx) noexcept;

}  // namespace corral::supervisor::init_steps
