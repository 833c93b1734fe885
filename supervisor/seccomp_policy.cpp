#include "supervisor/seccomp_policy.hpp"

#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral::supervisor {

namespace {

// The socket families the box may use (see the socket rules).
constexpr std::uint64_t kLastAllowedSocketFamily = AF_NETLINK;
bool allowed_socket_family(std::uint64_t family) {
    return family == AF_UNIX || family == AF_INET || family == AF_INET6 || family == AF_NETLINK;
}

// The values lo..hi (within `width`, a mask of low bits) as aligned blocks
// of a power-of-two size, each one (mask, value) test: (arg & mask) == value.
std::vector<std::pair<std::uint64_t, std::uint64_t>> aligned_blocks(std::uint64_t lo, std::uint64_t hi,
                                                                    std::uint64_t width) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    while (lo <= hi) {
        std::uint64_t size = 1;
        while ((lo & (size * 2 - 1)) == 0 && lo + size * 2 - 1 <= hi) size *= 2;
        out.push_back({width & ~(size - 1), lo});
        lo += size;
    }
    return out;
}

// What the box may ask of AF_INET and AF_INET6: exactly what the socket sweep
// before a session's verifier can list and destroy (supervisor/socket_sweep.hpp):
// TCP, UDP, UDP-Lite, and protocol 0, the type's default (TCP for
// SOCK_STREAM, UDP for SOCK_DGRAM). SCTP (SOCK_SEQPACKET's default), MPTCP,
// SMC, L2TP and the rest are not listed by sock_diag's TCP/UDP dumps; SOCK_RAW
// needs CAP_NET_RAW, which the box never has.
constexpr std::uint64_t kAllowedIpProtocols[] = {0, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_UDPLITE};
constexpr std::uint64_t kAllowedIpTypes[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_RAW,
                                             SOCK_PACKET /* its own rule, EAFNOSUPPORT */};

// Deny rules for every value of argument `index` under `width` that is not in
// `allowed` (sorted), for socket(family, ...); above the last allowed value
// with `at_least` when `open_ended` (all 64 bits: garbage only makes it larger).
template <std::size_t N>
void deny_all_but(std::vector<SeccompRule>& r, std::uint64_t family, unsigned index, const std::uint64_t (&allowed)[N],
                  std::uint64_t width, bool open_ended, const std::string& why) {
    std::uint64_t next = 0;
    auto deny_range = [&](std::uint64_t lo, std::uint64_t hi) {
        for (auto [mask, value] : aligned_blocks(lo, hi, width))
            r.push_back({"socket", SeccompAction::deny_eprotonosupport, {{0, 0xffffffffULL, family}, {index, mask, value}}, why});
    };
    for (std::uint64_t a : allowed) {
        if (a > next) deny_range(next, a - 1);
        next = a + 1;
    }
    if (open_ended)
        r.push_back({"socket", SeccompAction::deny_eprotonosupport,
                     {{0, 0xffffffffULL, family}, {index, 0, next, SeccompCompare::at_least}}, why});
    else if (next <= width)
        deny_range(next, width);
}

void deny_ip_protocols_outside_the_sweep(std::vector<SeccompRule>& r) {
    const std::string why =
        "IP sockets only of types stream, datagram (and raw, which needs CAP_NET_RAW) and protocols TCP, UDP and "
        "UDP-Lite: the ones a session's socket sweep lists and destroys before its verifier starts; SCTP, MPTCP "
        "and the rest would outlive the agent unseen";
    for (std::uint64_t family : {AF_INET, AF_INET6}) {
        // The type's low nibble is the type (SOCK_NONBLOCK/SOCK_CLOEXEC sit above).
        deny_all_but(r, family, 1, kAllowedIpTypes, 0xf, false, why);
        deny_all_but(r, family, 2, kAllowedIpProtocols, 0xffffffffULL, true, why);
    }
}

SeccompRule deny(std::string name, std::string reason) {
    return SeccompRule{std::move(name), SeccompAction::deny_eperm, {}, std::move(reason)};
}

struct CtxDeleter {
    void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

// libseccomp returns -errno.
void check_scmp(int rc, std::string_view call, std::string_view detail) {
    if (rc < 0) throw SysError(call, detail, -rc);
}

Ctx build_context(const std::vector<SeccompRule>& rules) {
    Ctx ctx(seccomp_init(SCMP_ACT_ALLOW));
    if (!ctx) throw SysError("seccomp_init", ENOMEM);
    // A syscall made through another ABI (int 0x80 i386 numbers, x32) is not
    // covered by an x86_64 deny list: kill the whole process instead.
    check_scmp(seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), "seccomp_attr_set",
               "ACT_BADARCH=KILL_PROCESS");
    // The command sets no_new_privs itself, explicitly, just before the
    // install (set_no_new_privs, run_command in sandbox_init.cpp).
    check_scmp(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0), "seccomp_attr_set", "CTL_NNP=0");
    // A binary tree over syscall numbers instead of a linear list: every
    // syscall the command makes walks the filter, and the kernel runs it for
    // each syscall number at install time (its allow-cache).
    check_scmp(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2), "seccomp_attr_set", "CTL_OPTIMIZE=2");
    for (const auto& rule : rules) {
        int nr = seccomp_syscall_resolve_name(rule.syscall.c_str());
        if (nr == __NR_SCMP_ERROR && rule.x86_64_nr >= 0 && seccomp_arch_native() == SCMP_ARCH_X86_64)
            nr = rule.x86_64_nr;
        if (nr == __NR_SCMP_ERROR)
            throw UsageError("seccomp rule names unknown syscall \"" + rule.syscall + "\"");
        std::uint32_t action = SCMP_ACT_ERRNO(EPERM);
        if (rule.action == SeccompAction::deny_enosys) action = SCMP_ACT_ERRNO(ENOSYS);
        if (rule.action == SeccompAction::deny_eafnosupport) action = SCMP_ACT_ERRNO(EAFNOSUPPORT);
        if (rule.action == SeccompAction::deny_eprotonosupport) action = SCMP_ACT_ERRNO(EPROTONOSUPPORT);
        std::vector<scmp_arg_cmp> cmps;
        for (const auto& c : rule.conditions)
            cmps.push_back(c.compare == SeccompCompare::at_least ? SCMP_CMP64(c.index, SCMP_CMP_GE, c.value)
                                                                 : SCMP_CMP64(c.index, SCMP_CMP_MASKED_EQ, c.mask, c.value));
        check_scmp(seccomp_rule_add_array(ctx.get(), action, nr, static_cast<unsigned>(cmps.size()),
                                          cmps.empty() ? nullptr : cmps.data()),
                   "seccomp_rule_add", rule.syscall);
    }
    return ctx;
}

std::string read_all(int fd) {
    if (lseek(fd, 0, SEEK_SET) < 0) throw SysError("lseek", "memfd", errno);
    return read_to_end(fd, "memfd");
}

}  // namespace

// A data table: one row per rule with the reason it exists, in the order a
// reviewer reads them (so the one function longer than 80 lines on purpose,
// docs/architecture.md "Lengths").
std::vector<SeccompRule> sandbox_seccomp_rules() {
    std::vector<SeccompRule> r;
    // --- namespaces: a new namespace is a new view to attack from (user ns
    // unlock otherwise root-only kernel code; mount/net ns give a fresh surface).
    r.push_back(deny("unshare", "creates namespaces; a user namespace grants capabilities over new kernel surface"));
    r.push_back(deny("setns", "joins other namespaces (through any fd the sandbox could obtain)"));
    r.push_back({"clone3", SeccompAction::deny_enosys, {},
                 "its flags live in a struct seccomp cannot read; ENOSYS makes libc fall back to clone, "
                 "whose flags are checked"});
    const std::pair<std::uint64_t, const char*> clone_ns_flags[] = {
        {CLONE_NEWNS, "CLONE_NEWNS"},   {CLONE_NEWUTS, "CLONE_NEWUTS"}, {CLONE_NEWIPC, "CLONE_NEWIPC"},
        {CLONE_NEWUSER, "CLONE_NEWUSER"}, {CLONE_NEWPID, "CLONE_NEWPID"}, {CLONE_NEWNET, "CLONE_NEWNET"},
        {CLONE_NEWCGROUP, "CLONE_NEWCGROUP"},
    };
    for (auto [flag, name] : clone_ns_flags)
        r.push_back({"clone", SeccompAction::deny_eperm, {{0, flag, flag}},
                     std::string("clone with ") + name + " creates a namespace (same reason as unshare)"});
    // --- the mount API: the sandbox's file system view is fixed by corral.
    for (const char* name : {"mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
                             "fsconfig", "fsmount", "fspick", "mount_setattr"})
        r.push_back(deny(name, "changes the mount table; the sandbox's file system view is fixed by corral"));
    // Linux 6.15; newer than libseccomp 2.5.4, hence the number.
    r.push_back({"open_tree_attr", SeccompAction::deny_eperm, {},
                 "clones a mount tree with new attributes (mount API, Linux 6.15)", 467});
    // --- kernel code and kernel-wide state.
    for (const char* name : {"init_module", "finit_module", "delete_module"})
        r.push_back(deny(name, "loads or unloads kernel modules"));
    for (const char* name : {"kexec_load", "kexec_file_load"})
        r.push_back(deny(name, "replaces the running kernel"));
    r.push_back(deny("bpf", "loads programs into the kernel; large, frequently exploited surface"));
    r.push_back(deny("perf_event_open", "kernel/hardware profiling; side channels and a history of exploits"));
    for (const char* name : {"add_key", "request_key", "keyctl"})
        r.push_back(deny(name, "kernel keyrings are not namespaced: keys could leak between sandboxes and host"));
    r.push_back(deny("userfaultfd", "lets a process stall kernel accesses at will; a standard exploit primitive"));
    r.push_back(deny("open_by_handle_at", "opens files by handle, bypassing the mount view (the shocker escape)"));
    r.push_back(deny("name_to_handle_at", "produces the file handles open_by_handle_at consumes; host inode probing"));
    for (const char* name : {"io_uring_setup", "io_uring_enter", "io_uring_register"})
        r.push_back(deny(name, "io_uring performs syscalls seccomp never sees, and is a large exploit surface"));
    // Legacy AIO contexts come from one host-wide pool (fs.aio-max-nr) that no
    // namespace or cgroup divides: a box could take all of it, and then
    // io_setup fails on the host, even for root. ENOSYS is what a kernel
    // without CONFIG_AIO answers, so libaio users fall back to threads (glibc's
    // POSIX aio and libuv never use these calls).
    for (const char* name : {"io_setup", "io_submit", "io_getevents", "io_pgetevents", "io_cancel", "io_destroy"})
        r.push_back({name, SeccompAction::deny_enosys, {},
                     "legacy AIO contexts come from the host-wide fs.aio-max-nr pool, which no namespace or cgroup "
                     "divides: a box could take all of it (io_setup then fails on the host, even for root); ENOSYS, "
                     "as on a kernel without AIO, makes libaio users fall back"});
    r.push_back(deny("ptrace", "debugging other processes; nothing outside the invocation may be reached"));
    for (const char* name : {"process_vm_readv", "process_vm_writev"})
        r.push_back(deny(name, "reads/writes another process's memory (ptrace in disguise)"));
    r.push_back(deny("pidfd_getfd", "steals a file descriptor out of another process (ptrace in disguise)"));
    for (const char* name : {"swapon", "swapoff"}) r.push_back(deny(name, "changes host swap devices"));
    r.push_back(deny("reboot", "reboots or halts (or, in a PID namespace, kills the namespace's init)"));
    r.push_back(deny("acct", "switches process accounting for the whole host"));
    for (const char* name : {"settimeofday", "clock_settime", "clock_adjtime", "adjtimex"})
        r.push_back(deny(name, "sets the host's clock; the time is not namespaced"));
    r.push_back(deny("syslog", "reads/clears the kernel log, which leaks host addresses and activity"));
    // --- set-user/group-ID bits: files the box creates in the workspace belong,
    // on the host, to the workspace's owner (an idmapped bind, docs/rootfs.md);
    // a setuid bit on one would be a set-ID program of that owner outside the
    // box, where nosuid does not hold. Each mode-taking call is denied when its
    // mode carries S_ISUID or S_ISGID (open/openat only when O_CREAT or
    // O_TMPFILE makes the mode meaningful).
    const std::pair<std::uint64_t, const char*> set_id_bits[] = {{S_ISUID, "S_ISUID"}, {S_ISGID, "S_ISGID"}};
    for (auto [bit, bit_name] : set_id_bits) {
        const std::string why = std::string("mode with ") + bit_name +
                                ": a set-ID file in the workspace would be a set-ID program of the workspace's "
                                "owner on the host";
        for (auto [name, mode_arg] : {std::pair{"chmod", 1u}, {"fchmod", 1u}, {"fchmodat", 2u}, {"creat", 1u},
                                      {"mknod", 1u}, {"mknodat", 2u}})
            r.push_back({name, SeccompAction::deny_eperm, {{mode_arg, bit, bit}}, why});
        // Linux 6.6; newer than libseccomp 2.5.4, hence the number.
        r.push_back({"fchmodat2", SeccompAction::deny_eperm, {{2, bit, bit}}, why, 452});
        for (auto [name, flags_arg] : {std::pair{"open", 1u}, {"openat", 2u}})
            for (std::uint64_t creating : {std::uint64_t{O_CREAT}, std::uint64_t{__O_TMPFILE}})
                r.push_back({name, SeccompAction::deny_eperm, {{flags_arg, creating, creating}, {flags_arg + 1, bit, bit}},
                             why + (creating == O_CREAT ? " (with O_CREAT)" : " (with O_TMPFILE)")});
    }
    r.push_back({"openat2", SeccompAction::deny_enosys, {},
                 "its flags and mode live in a struct seccomp cannot read (see the set-ID rules); ENOSYS makes "
                 "callers fall back to openat, whose mode is checked"});
    // ioctl's request is an unsigned int: compare only the low 32 bits so
    // garbage in the upper half of the register cannot dodge the rule.
    r.push_back({"ioctl", SeccompAction::deny_eperm, {{1, 0xffffffffULL, TIOCSTI}},
                 "TIOCSTI pushes input into a terminal, i.e. types commands into the user's shell (CVE-2017-5226)"});
    r.push_back({"ioctl", SeccompAction::deny_eperm, {{1, 0xffffffffULL, TIOCLINUX}},
                 "TIOCLINUX can paste the console selection as input, like TIOCSTI"});
    r.push_back({"ioctl", SeccompAction::deny_eperm, {{1, 0xffffffffULL, TIOCSETD}},
                 "TIOCSETD changes a terminal's line discipline; on a host terminal handed in with --stdin it "
                 "outlives the run (N_NULL leaves the operator's terminal dead)"});
    r.push_back(deny("fanotify_init", "fanotify watches file activity across whole mounts, including the host's "
                                      "read-only binds: a view of what the host does"));
    // --- socket families: only those the box's network namespace confines.
    // AF_VSOCK ignores network namespaces (it reaches the hypervisor, local VMs
    // and vsock services of the host, past the gateway); the rest are either
    // root-only or hardware and protocol surface no agent needs.
    for (const char* name : {"socket", "socketpair"}) {
        const std::string why = "only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK: the network namespace confines "
                                "these; AF_VSOCK and others would reach past it (and the gateway)";
        for (std::uint64_t family = AF_UNSPEC; family < kLastAllowedSocketFamily; ++family)
            if (!allowed_socket_family(family))
                r.push_back({name, SeccompAction::deny_eafnosupport, {{0, 0xffffffffULL, family}}, why});
        // (AF_INET, SOCK_PACKET) is the obsolete spelling of a packet socket:
        // the kernel hands it to af_packet, past the family rule. Only the
        // missing CAP_NET_RAW stops it today; the filter says no on its own.
        // The type's low byte is the type (SOCK_NONBLOCK/SOCK_CLOEXEC sit above).
        if (std::string_view(name) == "socket")
            r.push_back({name, SeccompAction::deny_eafnosupport, {{0, 0xffffffffULL, AF_INET}, {1, 0xfULL, SOCK_PACKET}},
                         "(AF_INET, SOCK_PACKET) is a packet socket under another name: the kernel gives it to "
                         "af_packet, which reaches past the network namespace's IP stack"});
        if (std::string_view(name) == "socket") deny_ip_protocols_outside_the_sweep(r);
        // Every family above AF_NETLINK, now and in future kernels. All 64 bits
        // compared: garbage in the upper half can only make the value larger.
        r.push_back({name, SeccompAction::deny_eafnosupport,
                     {{0, 0, kLastAllowedSocketFamily + 1, SeccompCompare::at_least}}, why});
    }
    // --- netlink: rtnetlink is what the box legitimately speaks (glibc's
    // getaddrinfo and if_nameindex, `ip`), sock_diag is `ss`; both answer
    // about the box's own network namespace. The rest carry host state no
    // namespace divides, above all NETLINK_KOBJECT_UEVENT: the host's device
    // events (disks, USB, network cards coming and going) are broadcast to
    // every network namespace. Garbage above the int protocol can only make
    // the call fail (the last rule compares all 64 bits).
    const std::string netlink_why =
        "only NETLINK_ROUTE and NETLINK_SOCK_DIAG (the box's own links, addresses and sockets); the other "
        "netlink families carry host state, NETLINK_KOBJECT_UEVENT the host's device events";
    for (std::uint64_t protocol = NETLINK_ROUTE + 1; protocol < NETLINK_SOCK_DIAG; ++protocol)
        r.push_back({"socket", SeccompAction::deny_eprotonosupport, {{0, 0xffffffffULL, AF_NETLINK}, {2, 0xffffffffULL, protocol}},
                     netlink_why});
    r.push_back({"socket", SeccompAction::deny_eprotonosupport,
                 {{0, 0xffffffffULL, AF_NETLINK}, {2, 0, NETLINK_SOCK_DIAG + 1, SeccompCompare::at_least}}, netlink_why});
    return r;
}

std::vector<SeccompRule> inherited_terminal_rules() {
    // TIOCSCTTY makes a terminal the caller's controlling terminal: a box
    // holding the host's terminal (--stdin on a tty that is no session's
    // controlling terminal) would own its session, get its job control and
    // hang-ups, and outlive nothing but still steer it. Only runs that hand a
    // terminal in get this rule: forkpty/login_tty in the box need TIOCSCTTY
    // on the box's own ptys, and seccomp cannot tell one terminal from another.
    return {{"ioctl", SeccompAction::deny_eperm, {{1, 0xffffffffULL, TIOCSCTTY}},
             "TIOCSCTTY (only when --stdin hands the box a terminal) would make the host's terminal the box's "
             "controlling terminal: the box would own its session"}};
}

namespace {

SeccompProgram program_of(const Ctx& ctx) {
    Fd mem(memfd_create("corral-seccomp", MFD_CLOEXEC));
    if (!mem.valid()) throw SysError("memfd_create", "corral-seccomp", errno);
    check_scmp(seccomp_export_bpf(ctx.get(), mem.get()), "seccomp_export_bpf", {});
    std::string bytes = read_all(mem.get());
    if (bytes.empty() || bytes.size() % sizeof(sock_filter) != 0)
        throw SysError("seccomp_export_bpf", "unexpected program size", EINVAL);
    SeccompProgram program;
    program.instructions.resize(bytes.size() / sizeof(sock_filter));
    std::memcpy(program.instructions.data(), bytes.data(), bytes.size());
    return program;
}

std::uint32_t scmp_action(const FilterAction& a) {
    switch (a.verdict) {
        case FilterVerdict::allow: return SCMP_ACT_ALLOW;
        case FilterVerdict::log: return SCMP_ACT_LOG;
        case FilterVerdict::errno_: return SCMP_ACT_ERRNO(static_cast<std::uint16_t>(a.errno_value));
        case FilterVerdict::trap: return SCMP_ACT_TRAP;
        case FilterVerdict::trace: return SCMP_ACT_TRACE(static_cast<std::uint16_t>(a.errno_value));
        case FilterVerdict::kill_thread: return SCMP_ACT_KILL_THREAD;
        case FilterVerdict::kill_process: return SCMP_ACT_KILL_PROCESS;
    }
    return SCMP_ACT_KILL_PROCESS;
}

scmp_arg_cmp scmp_condition(const FilterArg& a) {
    static constexpr scmp_compare kOps[] = {SCMP_CMP_NE, SCMP_CMP_LT, SCMP_CMP_LE, SCMP_CMP_EQ,
                                            SCMP_CMP_GE, SCMP_CMP_GT, SCMP_CMP_MASKED_EQ};
    return SCMP_CMP64(a.index, kOps[static_cast<int>(a.op)], a.value, a.value_two);
}

// One rule's conditions as libseccomp takes them: one set that must all
// hold, or (two on one argument) one set per condition.
std::vector<std::vector<scmp_arg_cmp>> condition_sets(const FilterRule& rule) {
    std::vector<scmp_arg_cmp> all;
    bool repeated = false;
    for (std::size_t i = 0; i < rule.args.size(); ++i) {
        for (std::size_t k = 0; k < i; ++k) repeated = repeated || rule.args[k].index == rule.args[i].index;
        all.push_back(scmp_condition(rule.args[i]));
    }
    if (!repeated) return {all};
    std::vector<std::vector<scmp_arg_cmp>> each;
    for (const auto& c : all) each.push_back({c});
    return each;
}

}  // namespace

SeccompProgram compile_seccomp(const std::vector<SeccompRule>& rules) { return program_of(build_context(rules)); }

SeccompProgram compile_filter(const SeccompFilter& filter, std::vector<std::string>* skipped) {
    const std::uint32_t default_action = scmp_action(filter.default_action);
    Ctx ctx(seccomp_init(default_action));
    if (!ctx) throw SysError("seccomp_init", ENOMEM);
    check_scmp(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0), "seccomp_attr_set", "CTL_NNP=0");
    check_scmp(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2), "seccomp_attr_set", "CTL_OPTIMIZE=2");
    for (const auto& rule : filter.rules) {
        const std::uint32_t action = scmp_action(rule.action);
        for (const auto& name : rule.syscalls) {
            const int nr = seccomp_syscall_resolve_name(name.c_str());
            if (nr == __NR_SCMP_ERROR || action == default_action) {
                if (skipped != nullptr && nr == __NR_SCMP_ERROR) skipped->push_back(name);
                continue;
            }
            for (const auto& set : condition_sets(rule))
                check_scmp(seccomp_rule_add_array(ctx.get(), action, nr, static_cast<unsigned>(set.size()),
                                                  set.empty() ? nullptr : set.data()),
                           "seccomp_rule_add", name);
        }
    }
    return program_of(ctx);
}

int install_seccomp_program(const SeccompProgram& program) noexcept {
    sock_fprog prog{};
    prog.len = static_cast<unsigned short>(program.instructions.size());
    prog.filter = const_cast<sock_filter*>(program.instructions.data());
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return -errno;
    return 0;
}

std::string seccomp_policy_text(const std::vector<SeccompRule>& rules) {
    Ctx ctx = build_context(rules);
    Fd mem(memfd_create("corral-seccomp-pfc", MFD_CLOEXEC));
    if (!mem.valid()) throw SysError("memfd_create", "corral-seccomp-pfc", errno);
    check_scmp(seccomp_export_pfc(ctx.get(), mem.get()), "seccomp_export_pfc", {});
    return read_all(mem.get());
}

}  // namespace corral::supervisor
