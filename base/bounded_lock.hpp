// base/bounded_lock.hpp — a flock wait that ends.
//
// A lock corral waits on may be held by a process that never lets go (a
// stuck command, or anyone who could open the file): a wait without a bound
// would hang root with it. Every lock wait goes through lock_within.
#pragma once

#include <chrono>
#include <string>

namespace corral {

// The lock corral waits for when another of its commands holds it for a
// start (a session's name, a stale run's cleanup): longer than any start.
inline constexpr std::chrono::seconds kLockWaitBound{60};

enum class LockKind { shared, exclusive };

// flock(fd, kind), waiting at most `bound` for a holder to let go; then throws
// SysError("flock", "PATH: still held by another process after 1m", EWOULDBLOCK)
// naming `path`, the lock file. Other failures throw SysError at once.
void lock_within(int fd, const std::string& path, LockKind kind, std::chrono::milliseconds bound = kLockWaitBound);

}  // namespace corral
