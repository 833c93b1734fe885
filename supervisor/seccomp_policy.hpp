// supervisor/seccomp_policy.hpp — the sandbox's seccomp policy, as data.
//
// The policy is a default-allow list of denials: the dangerous kernel surface
// (namespaces, mounts, modules, bpf, keyrings, ptrace, io_uring, clocks, ...)
// fails with EPERM, and clone3 with ENOSYS so libc falls back to clone, whose
// flags (unlike clone3's struct) seccomp can inspect. Every rule carries the
// reason docs/security.md prints. A syscall from a foreign architecture
// (i386 via int 0x80, x32 via __X32_SYSCALL_BIT) kills the process: otherwise
// it would bypass a list written for x86_64 numbers.
//
// compile_seccomp() runs in the supervisor before clone (libseccomp allocates);
// install_seccomp_program() is a single system call, safe in the child just
// before execve.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <string>
#include <vector>

namespace corral::supervisor {

enum class SeccompAction {
    deny_eperm,          // the call fails with EPERM
    deny_enosys,         // the call fails with ENOSYS ("not implemented": callers fall back)
    deny_eafnosupport,   // the call fails with EAFNOSUPPORT (a socket family the kernel lacks)
    deny_eprotonosupport,  // the call fails with EPROTONOSUPPORT (a protocol of the family the kernel lacks)
};

enum class SeccompCompare {
    masked_eq,   // (arg[index] & mask) == value
    at_least,    // arg[index] >= value, all 64 bits (mask unused)
};

// One argument test. All of a rule's conditions must hold for the rule to apply.
struct SeccompArgCondition {
    unsigned index;
    std::uint64_t mask;
    std::uint64_t value;
    SeccompCompare compare = SeccompCompare::masked_eq;
};

struct SeccompRule {
    std::string syscall;                          // libseccomp name, e.g. "unshare"
    SeccompAction action = SeccompAction::deny_eperm;
    std::vector<SeccompArgCondition> conditions;  // empty: always
    std::string reason;                           // why; shown in docs/security.md
    // x86_64 number used when this libseccomp does not know the name yet
    // (syscalls newer than the library); -1: the name must resolve.
    int x86_64_nr = -1;
};

// The sandbox policy (pure; the same list on every call).
std::vector<SeccompRule> sandbox_seccomp_rules();
// Added to a run's policy when its stdin is a terminal of the host
// (--stdin on a tty): TIOCSCTTY denied. Not in every run's policy, because
// forkpty in the box needs it on the box's own ptys.
std::vector<SeccompRule> inherited_terminal_rules();

// A compiled BPF program, ready to install.
struct SeccompProgram {
    std::vector<sock_filter> instructions;
};

// Builds the BPF program for `rules` on the native architecture; foreign
// architectures and x32 are killed. Throws SysError/UsageError if a rule names
// an unknown syscall or libseccomp refuses it.
SeccompProgram compile_seccomp(const std::vector<SeccompRule>& rules);

// Installs `program` on the calling thread. Requires PR_SET_NO_NEW_PRIVS (or
// CAP_SYS_ADMIN). Allocation-free; returns 0 or -errno.
int install_seccomp_program(const SeccompProgram& program) noexcept;

// The libseccomp pseudo-filter text of `rules` (for docs and tests).
std::string seccomp_policy_text(const std::vector<SeccompRule>& rules);

// ---- a stacked filter: someone else's profile (an OCI bundle's
// linux.seccomp), installed on each command after corral's own. Two filters
// both run and the stricter verdict wins, so a stacked filter can only deny
// more: it never allows what corral's policy denies.
enum class FilterVerdict { allow, log, errno_, trap, trace, kill_thread, kill_process };
struct FilterAction {
    FilterVerdict verdict = FilterVerdict::allow;
    int errno_value = 1;   // errno_ and trace: the errno a call fails with (EPERM unless said)
};
enum class FilterOp { ne, lt, le, eq, ge, gt, masked_eq };
struct FilterArg {
    unsigned index = 0;           // 0-5
    std::uint64_t value = 0;      // masked_eq: the mask
    std::uint64_t value_two = 0;  // masked_eq: what the masked argument must equal
    FilterOp op = FilterOp::eq;
};
struct FilterRule {
    std::vector<std::string> syscalls;   // libseccomp names
    FilterAction action;
    // All must hold (one rule); when two test one argument (runc's rule),
    // each is a rule of its own instead, any of which applies.
    std::vector<FilterArg> args;
};
struct SeccompFilter {
    FilterAction default_action;
    std::vector<FilterRule> rules;
};

// The BPF program of `filter` on the native architecture (another ABI's
// calls are killed by corral's own filter first). A syscall this libseccomp
// does not know is skipped (as runc skips it) and named in `skipped`; a rule
// whose action is the default's is redundant and skipped too. Throws
// SysError when libseccomp refuses the rest.
SeccompProgram compile_filter(const SeccompFilter& filter, std::vector<std::string>* skipped = nullptr);

}  // namespace corral::supervisor
