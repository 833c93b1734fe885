// supervisor/threads.hpp — the supervisor's own threads.
//
// launch_sandbox clones only from a single-threaded process (a clone of a
// multi-threaded one can inherit a lock held by a thread that does not exist
// in the child); after the clone, work that does not depend on each other
// runs on a helper thread beside the supervisor's.
#pragma once

#include <cstddef>
#include <functional>
#include <thread>

namespace corral::supervisor {

// How many threads this process has (/proc/self/task; 0 if unreadable).
std::size_t count_threads();

// How many threads this process has once the ones just joined are gone: a
// joined thread's task is listed in /proc/self/task for a moment after
// join() returns (its exit is not complete), so the count is read again
// for up to 100 ms while it is above 1.
std::size_t count_threads_after_joins();

// Runs `work` on a new thread beside the caller's; if no thread can be
// started (the host's or corral's cgroup is at its pids limit), runs it
// right here instead: slower, never skipped. Join the result if joinable().
std::thread start_beside(const std::function<void()>& work);

}  // namespace corral::supervisor
