// run/options.cpp — the option table of `corral run` (a data table: each
// option's name, placeholder, help and how it is stored), its --help, and
// the answers to unknown options; the parsers that read it are in
// request_parse.cpp.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

#include "base/option_table.hpp"
#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "config/org_config.hpp"
#include "names/box_environment.hpp"
#include "names/gateway_address.hpp"
#include "names/host.hpp"
#include "names/rootfs_source.hpp"
#include "rootfs/mount_plan.hpp"
#include "run/request.hpp"
#include "supervisor/hostname.hpp"

namespace corral::run {

namespace {

constexpr const char* kHelpHead = R"(usage: corral run [OPTIONS] -- CMD [ARGS...]

Runs CMD in a fresh sandbox: new PID, mount, network, IPC, UTS and cgroup
namespaces; a read-only root file system; only a loopback network; its own
UID/GID with no capabilities, no_new_privs and a seccomp filter. Must run as
root. When CMD exits, everything it started is killed and corral verifies that
nothing of the run is left on the host (see docs/architecture.md).

options:
)";

constexpr const char* kHelpExitStatus = R"(
exit status (run.json "outcome" and "status_from" say which it was):
  CMD's exit status, or 128+N if CMD was killed by signal N (or if corral
       itself got SIGINT/SIGTERM/SIGHUP N, or `corral stop`: the sandbox is
       stopped, then still torn down and verified)
  124  the --timeout deadline was reached; the sandbox was stopped
  125  the sandbox could not be set up (the message names the step), bad
       usage, or not running as root
  126  teardown failed: something of the run survived (the message says what;
       run.json has verdict "failed")
  127  CMD was not found in the sandbox's root file system
  2    malformed command line (unknown option, bad size, duration or K=V)

environment:
  CORRAL_STATE_DIR   default for --state-dir
  CORRAL_LOG=debug   print the duration of every setup and teardown phase

network and agents (docs/architecture.md "The bridge"):
  Every run's only way out is a proxy on 127.0.0.1:3128 and [::1]:3128 inside
  the box (HTTP(S)_PROXY and friends are set), served by corral's gateway with
  the run's identity WORKER/RUN-ID. When a grant injects credentials (or with
  --gateway) the box trusts corral's CA; otherwise its own trust store is kept.
  Without --config there are no grants: every request is refused with 403 and logged.
)";

constexpr const char* kHelpTail = R"(  An agent run streams the CLI's JSON lines to <run-dir>/stdout.jsonl and to
  stdout; the embedded gateway's ledger is <run-dir>/ledger.jsonl.
)";

std::uint64_t parse_count(std::string_view name, const std::string& text) {
    std::uint64_t value = 0;
    bool ok = !text.empty() && text.size() <= 18;
    for (char ch : text) {
        if (ch < '0' || ch > '9') { ok = false; break; }
        value = value * 10 + static_cast<std::uint64_t>(ch - '0');
    }
    if (!ok || value == 0)
        throw UsageError(std::string(name) + ": invalid count \"" + text + "\": expected a whole number >= 1, e.g. 256");
    return value;
}

double parse_cpus(const std::string& text) {
    const char* form = ": expected a number of CPUs from 0.01 to 1024, such as 0.5, 1 or 2.5";
    if (text.empty() || text.find_first_not_of("0123456789.") != std::string::npos)
        throw UsageError("--cpus: invalid CPU count \"" + text + "\"" + form);
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    // Below 1/100 CPU the quota (period 100ms) drops under the kernel's 1ms minimum.
    if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0.01 || v > 1024)
        throw UsageError("--cpus: invalid CPU count \"" + text + "\"" + form);
    return v;
}

std::string require_path(std::string_view name, const std::string& text) {
    if (text.empty()) throw UsageError(std::string(name) + ": empty path; expected a directory");
    return text;
}

// --rootfs host|DIR|image:NAME, a relative DIR taken from the caller's
// directory (if that is gone, DIR stays relative and the run refuses it).
names::RootfsSource rootfs_option(const std::string& text) {
    require_path("--rootfs", text);
    std::error_code ec;
    const std::string cwd = std::filesystem::current_path(ec).string();
    names::RootfsParse parsed = names::parse_rootfs_source(text, cwd);
    // require_path refused "" above: a problem left is the image's name.
    if (std::holds_alternative<names::RootfsProblem>(parsed))
        throw UsageError("image " + text.substr(6) +
                         ": not a valid image name (A-Z a-z 0-9 . _ -, starting with a letter or digit)");
    return std::get<names::RootfsSource>(std::move(parsed));
}

std::string nonempty(std::string_view name, const std::string& text) {
    if (text.empty()) throw UsageError(std::string(name) + ": empty value");
    return text;
}

template <typename F>
auto prefixed(std::string_view name, F&& parse) {
    try {
        return parse();
    } catch (const UsageError& e) {
        throw UsageError(std::string(name) + ": " + e.what());
    }
}

// SRC:DST, split at the first ':' (SRC may not hold one; DST may). Docker's
// trailing ":ro" is answered with --ro-bind rather than read as a path.
BindRequest parse_bind(std::string_view option, const std::string& text, bool read_only) {
    const std::string opt(option);
    const auto colon = text.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
        throw UsageError(opt + ": got \"" + text + "\", expected SRC:DST (a host directory and an absolute path in the box, "
                         "e.g. /home/me/data:/data)");
    BindRequest b;
    b.source = text.substr(0, colon);
    std::string target = text.substr(colon + 1);
    for (std::string_view mode : {":ro", ":rw", ":z", ":Z"})
        if (target.ends_with(mode))
            throw UsageError(opt + ": got \"" + text + "\": corral takes no mount options after DST; use --ro-bind SRC:DST "
                             "for a read-only bind, --bind SRC:DST for a writable one");
    b.target = rootfs::check_bind_target(option, target);
    b.read_only = read_only;
    return b;
}

// HOST[:PORT], HOST as a config grant's `host` (a name, "*." + a name of two
// labels or more, an IP address; IPv6 in brackets), PORT 1..65535, default 443.
AllowRequest parse_allow(const std::string& text) {
    const std::string form = ": expected HOST[:PORT]: a DNS name, \"*.\" followed by a name of at least two labels, or an "
                             "IP address (IPv6 in brackets: [::1]:8443); PORT 1..65535, default 443";
    std::string host = text, port;
    if (text.starts_with('[')) {
        const auto close = text.find(']');
        if (close == std::string::npos) throw UsageError("--allow: invalid host \"" + text + "\"" + form);
        host = text.substr(0, close + 1);
        if (close + 1 < text.size()) {
            if (text[close + 1] != ':') throw UsageError("--allow: invalid host \"" + text + "\"" + form);
            port = text.substr(close + 2);
            if (port.empty()) throw UsageError("--allow: empty port in \"" + text + "\"" + form);
        }
    } else if (auto colon = text.find(':'); colon != std::string::npos) {
        if (text.find(':', colon + 1) != std::string::npos)
            throw UsageError("--allow: invalid host \"" + text + "\": an IPv6 address goes in brackets" + form);
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (port.empty()) throw UsageError("--allow: empty port in \"" + text + "\"" + form);
    }
    AllowRequest a;
    a.text = text;
    auto pattern = names::parse_host_pattern(host);
    if (!pattern) throw UsageError("--allow: invalid host \"" + host + "\"" + form);
    a.host = std::move(*pattern);
    if (!port.empty()) {
        bool ok = port.size() <= 5 && port.front() != '0' && port.find_first_not_of("0123456789") == std::string::npos;
        const unsigned long n = ok ? std::stoul(port) : 0;
        if (!ok || n < 1 || n > 65535) throw UsageError("--allow: invalid port \"" + port + "\"" + form);
        a.port = static_cast<std::uint16_t>(n);
    }
    return a;
}

// A tmpfs size of the box (--scratch-size, --tmp-size), in config::kMinBoxTmpfsBytes..kMaxBoxTmpfsBytes.
std::uint64_t parse_tmpfs_size(std::string_view option, const std::string& text) {
    const std::uint64_t v = prefixed(option, [&] { return parse_size(text); });
    if (v < config::kMinBoxTmpfsBytes || v > config::kMaxBoxTmpfsBytes)
        throw UsageError(std::string(option) + ": invalid size \"" + text + "\": expected 1M to 64G, e.g. 512M");
    return v;
}

using G = OptionGroup;

const RunOption kOptions[] = {
    {"--rootfs", "host|DIR|image:NAME", G::sandbox,
     "the sandbox's root file system. \"host\" (default): the\n"
     "host's /usr, /bin, /sbin, /lib* and a minimal /etc,\n"
     "read-only. DIR: an image directory used as the read-only\n"
     "lower layer of an overlay whose writable upper layer is\n"
     "scratch space, so nothing CMD writes ever reaches DIR.\n"
     "image:NAME: an image of `corral image import`, its layers\n"
     "the overlay's lower layers; its Env is the base\n"
     "environment, its WorkingDir the start directory (unless\n"
     "--workspace), its Entrypoint+Cmd the command if none is\n"
     "given. Both image forms get corral's /etc/hosts,\n"
     "/etc/hostname and /etc/resolv.conf (docs/images.md).",
     [](RunRequest& r, const std::string& v) { r.rootfs = rootfs_option(v); }},
    {"--workspace", "DIR", G::sandbox,
     "bind DIR read-write at /workspace and start CMD there.\n"
     "CMD acts as DIR's owner (an ID-mapped bind): what it\n"
     "writes belongs to that owner on the host. Set-ID bits\n"
     "cannot be set. A root-owned DIR, or one on a file\n"
     "system that cannot be ID-mapped, is bound as is, with\n"
     "a warning (chown DIR to a user to map it). Refused: /,\n"
     "a path through a symlink, a DIR overlapping corral's\n"
     "state or run dir, /proc, /sys or /dev, a DIR holding a\n"
     "set-ID file, a socket or FIFO.\n"
     "Without it CMD starts in /workspace, an empty directory\n"
     "on the scratch overlay that vanishes with the run.",
     [](RunRequest& r, const std::string& v) { r.workspace = require_path("--workspace", v); }},
    {"--review", "", G::sandbox,
     "with --workspace: the box sees DIR through an overlay\n"
     "whose upper layer (capped at --scratch-size; a full one\n"
     "is ENOSPC in the box) is copied to the run dir at the end;\n"
     "DIR itself is never written during the run. Then\n"
     "`corral diff RUN`, `corral apply RUN` or `corral discard\n"
     "RUN` (docs/workspace.md); `corral diff` also while it\n"
     "runs (a session's changes so far). Refused: a DIR with\n"
     "a mount inside it.",
     [](RunRequest& r, const std::string&) { r.review = true; }},
    {"--run-dir", "DIR", G::sandbox,
     "where stdout.log, stderr.log and run.json go (created\n"
     "0700, root only: CMD cannot read it).\n"
     "Default: <state-dir>/runs/<run-id>.",
     [](RunRequest& r, const std::string& v) { r.run_dir = require_path("--run-dir", v); }},
    {"--state-dir", "DIR", G::sandbox,
     "corral's state directory. Default /var/lib/corral, or\n"
     "$CORRAL_STATE_DIR if set.",
     [](RunRequest& r, const std::string& v) { r.state_dir = require_path("--state-dir", v); }},
    {"--memory", "SIZE", G::sandbox,
     "memory limit of the whole sandbox, e.g. 512M, 2GiB\n"
     "(units B, K/KiB, M/MiB, G/GiB, T/TiB; powers of 1024).",
     [](RunRequest& r, const std::string& v) {
         r.memory_bytes = prefixed("--memory", [&] { return parse_size(v); });
         if (*r.memory_bytes < 1024 * 1024)
             throw UsageError("--memory: invalid size \"" + v +
                              "\": expected at least 1M (a sandbox needs some memory to start)");
     }},
    {"--pids", "N", G::sandbox,
     "maximum number of processes and threads in the sandbox.\n"
     "Without it CMD's UID may still hold at most\n"
     "min(4096, pid_max/32, threads-max/32) of them, at\n"
     "least 64 (RLIMIT_NPROC; the UID is the run's alone):\n"
     "a box takes at most 1/32 of the host's PIDs.",
     [](RunRequest& r, const std::string& v) { r.pids = parse_count("--pids", v); }},
    {"--nofile", "N", G::sandbox,
     "open files per process (RLIMIT_NOFILE, soft = hard:\n"
     "CMD cannot raise it). Default min(1024,\n"
     "file-max/4/tasks), at least 64, so that all of the\n"
     "box's tasks together stay below a quarter of the\n"
     "host's file table (fs.file-max); a --nofile whose\n"
     "tasks x files could fill that table is refused.",
     [](RunRequest& r, const std::string& v) { r.open_files = parse_count("--nofile", v); }},
    {"--cpus", "FLOAT", G::sandbox,
     "CPU bandwidth in CPUs, e.g. 0.5 or 2.\n"
     "Limits are enforced through a cgroup made for the run\n"
     "(v2, or v1 where a controller lives only on v1); a limit\n"
     "that cannot be enforced is an error, never ignored.",
     [](RunRequest& r, const std::string& v) { r.cpus = parse_cpus(v); }},
    {"--timeout", "DURATION", G::sandbox,
     "stop the sandbox after DURATION (250ms, 30s, 5m, 1h30m,\n"
     "or plain seconds): SIGTERM, then SIGKILL after --grace;\n"
     "corral says so and exits 124.",
     [](RunRequest& r, const std::string& v) {
         r.timeout = prefixed("--timeout", [&] { return parse_duration(v); });
         if (r.timeout->count() == 0)
             throw UsageError("--timeout: invalid duration \"" + v + "\": expected a duration above zero, e.g. 30s");
     }},
    {"--wait", "DURATION", G::sandbox,
     "when the state dir already runs its max_boxes (its\n"
     "capacity.toml), wait up to DURATION for a box to end\n"
     "instead of being refused at once (exit 125 either way\n"
     "when none ends in time).",
     [](RunRequest& r, const std::string& v) { r.capacity_wait = prefixed("--wait", [&] { return parse_duration(v); }); }},
    {"--grace", "DURATION", G::sandbox,
     "how long a stopped command has between SIGTERM and\n"
     "SIGKILL (default 10s; 0: SIGKILL at once). A stop is\n"
     "--timeout, `corral stop`, or SIGINT/SIGTERM/SIGHUP to\n"
     "corral; SIGTERM goes to CMD's process group, SIGKILL to\n"
     "the whole sandbox. A second signal kills at once.",
     [](RunRequest& r, const std::string& v) { r.grace = prefixed("--grace", [&] { return parse_duration(v); }); }},
    {"--quiet", "", G::sandbox,
     "no start line (run id and run dir) and no summary line\n"
     "on stderr; problems are still reported.",
     [](RunRequest& r, const std::string&) { r.quiet = true; }},
    {"--bind", "SRC:DST", G::sandbox,
     "bind the host directory (or regular file) SRC read-write\n"
     "at DST in the box (repeatable). ID-mapped as --workspace\n"
     "is (SRC's owner shows as the agent), with the same\n"
     "refusals for SRC.\n"
     "DST: absolute (normalised), not /, not /tmp, and not at,\n"
     "below or above /proc, /sys, /dev, /etc, /workspace, /root\n"
     "or /home/agent; no two DSTs equal or nested. SRC may\n"
     "not contain ':'.",
     [](RunRequest& r, const std::string& v) { r.binds.push_back(parse_bind("--bind", v, false)); }, true},
    {"--ro-bind", "SRC:DST", G::sandbox,
     "the same, read-only (repeatable). E.g. a git worktree's\n"
     "main repository: --ro-bind /repo/.git:/repo/.git.",
     [](RunRequest& r, const std::string& v) { r.binds.push_back(parse_bind("--ro-bind", v, true)); }, true},
    {"--scratch-size", "SIZE", G::sandbox,
     "cap of the box's scratch tmpfs (default 256M): an\n"
     "image's writable layer, the agent's home, /workspace\n"
     "without --workspace. 1M to 64G; memory of the host's\n"
     "until the run ends.",
     [](RunRequest& r, const std::string& v) { r.scratch_bytes = parse_tmpfs_size("--scratch-size", v); }},
    {"--tmp-size", "SIZE", G::sandbox,
     "cap of the box's /tmp tmpfs (default 256M). 1M to 64G.",
     [](RunRequest& r, const std::string& v) { r.tmp_bytes = parse_tmpfs_size("--tmp-size", v); }},
    {"--env", "K=V", G::sandbox,
     "add K=V to CMD's environment (repeatable; later wins).\n"
     "CMD otherwise sees only PATH, HOME=/home/agent,\n"
     "LANG=C.UTF-8, TERM=dumb, USER/LOGNAME=agent.",
     [](RunRequest& r, const std::string& v) { r.env.push_back(prefixed("--env", [&] { return parse_env_pair(v); })); }, true},
    {"--hostname", "NAME", G::sandbox, "the sandbox's hostname. Default \"corral-<run id suffix>\".",
     [](RunRequest& r, const std::string& v) {
         supervisor::check_hostname(v);
         r.hostname = v;
     }},
    {"--stdin", "", G::sandbox,
     "pass corral's stdin to CMD (default: /dev/null): a\n"
     "terminal, a pipe, a connected stream socket, or a\n"
     "regular file (reopened read-only); anything else (a\n"
     "directory, a write-only fd, a device) is refused.",
     [](RunRequest& r, const std::string&) { r.pass_stdin = true; }},
    {"--tty", "", G::sandbox,
     "run CMD on a terminal of the box's own (a pty of its\n"
     "devpts) joined to corral's terminal, which is raw\n"
     "meanwhile and restored after: job control, full-screen\n"
     "programs, Ctrl-C/Ctrl-Z go to CMD, window size follows.\n"
     "corral's stdin and stdout must be a terminal. TERM is\n"
     "corral's own. Output is logged to stdout.log as well.\n"
     "An interactive agent: --tty --config ORG --worker W --\n"
     "claude (not with --prompt, which is non-interactive).",
     [](RunRequest& r, const std::string&) { r.tty = true; }},
    {"--log-limit", "SIZE", G::sandbox,
     "keep at most SIZE of CMD's stdout and of its stderr in\n"
     "the run dir's logs (default 256M): the box cannot fill\n"
     "the host's disk. Beyond it output still streams to\n"
     "corral's stdout/stderr; run.json's \"output\" says how\n"
     "much was produced and how much logged.",
     [](RunRequest& r, const std::string& v) {
         r.log_limit_bytes = prefixed("--log-limit", [&] { return parse_size(v); });
         if (r.log_limit_bytes == 0)
             throw UsageError("--log-limit: invalid size \"" + v + "\": expected at least 1 byte, e.g. 64M");
     }},
    {"--sync-record", "", G::sandbox,
     "fsync run.json and its directory, so the record survives\n"
     "a power loss (costs ~10 ms; by default run.json is\n"
     "replaced atomically but not synced).",
     [](RunRequest& r, const std::string&) { r.sync_record = true; }},
    {"--uid-range", "FIRST-LAST", G::sandbox,
     "the UIDs runs may lease; each run gets one UID (and the\n"
     "GID of the same number) no other run holds.\n"
     "Default 1900000000-1900000999.",
     [](RunRequest& r, const std::string& v) {
         r.uid_range = prefixed("--uid-range", [&] { return supervisor::parse_uid_range(v); });
     }},
    {"--help", "", G::sandbox, "show this text.", [](RunRequest& r, const std::string&) { r.help = true; }},
    {"--config", "DIR", G::network, "organisation directory (org.toml, workers/NAME/worker.toml)",
     [](RunRequest& r, const std::string& v) { r.config_dir = nonempty("--config", v); }},
    {"--worker", "NAME", G::network, "the worker whose grants, credentials, limits and agent apply",
     [](RunRequest& r, const std::string& v) { r.worker = nonempty("--worker", v); }},
    {"--prompt", "TEXT", G::network, "run the worker's agent CLI on TEXT (instead of CMD)",
     [](RunRequest& r, const std::string& v) {
         if (v.empty()) throw UsageError("--prompt: empty; the agent needs a task");
         r.prompt = v;
     }},
    {"--prompt-file", "F", G::network,
     "the same, prompt read from F (a regular file of at\n"
     "most 4 MiB, named without any symbolic link on the\n"
     "way: root reads it, and F may lie where an agent wrote;\n"
     "no NUL bytes; the CLI takes the prompt as one command-\n"
     "line argument, which Linux caps at 131071 bytes: for\n"
     "codex the system prompt and the prompt together)",
     [](RunRequest& r, const std::string& v) { r.prompt_file = nonempty("--prompt-file", v); }},
    {"--system-prompt-file", "F", G::network, "system prompt for the agent (same rules as F)",
     [](RunRequest& r, const std::string& v) { r.system_prompt_file = nonempty("--system-prompt-file", v); }},
    {"--allow", "HOST[:PORT]", G::network,
     "a tunnel grant for this run only (repeatable): the box\n"
     "may open TLS to HOST:PORT (default 443) through the\n"
     "gateway, which sees no plaintext. HOST as a grant's\n"
     "host in org.toml (a name, *.name.tld, an IP address;\n"
     "IPv6 as [::1]:8443); an IP address given here may be a\n"
     "private one (naming it is the consent allow_private\n"
     "gives). Recorded in run.json's \"grants\".",
     [](RunRequest& r, const std::string& v) { r.allow.push_back(parse_allow(v)); }, true},
    {"--ask", "", G::network,
     "a host no grant names asks a person instead of being\n"
     "refused: the box's request waits (up to 5 min) for\n"
     "`corral approve ID` or `corral deny ID` (with --tty,\n"
     "a y/n on this terminal); approved, it is a tunnel\n"
     "(no credential; a name must resolve to public\n"
     "addresses) for that one connection, or for the run\n"
     "with --always. Not with --gateway (docs/approvals.md)",
     [](RunRequest& r, const std::string&) { r.ask = true; }},
    {"--capture", "", G::network,
     "programs that ignore the proxy variables reach the\n"
     "granted hosts too: the box's DNS answers a granted name\n"
     "with a synthetic address whose connections corral\n"
     "hands to the gateway as that name's (same grant checks,\n"
     "same injection); other names get NXDOMAIN at once. On by\n"
     "default for a run with grants and with --gateway (the\n"
     "daemon is asked which names are granted); worker.toml's\n"
     "or org.toml's capture = false turns it off\n"
     "(docs/capture.md)",
     [](RunRequest& r, const std::string&) { r.capture = true; }},
    {"--capture-only", "", G::network,
     "--capture, and the box gets no proxy variables: every\n"
     "program reaches its granted hosts through capture alone\n"
     "(the CA variables stay; docs/capture.md)",
     [](RunRequest& r, const std::string&) {
         r.capture = true;
         r.capture_only = true;
     }},
    {"--no-capture", "", G::network,
     "no transparent capture: only programs that use the\n"
     "proxy variables reach the network (the default for a\n"
     "run without grants)",
     [](RunRequest& r, const std::string&) { r.capture = false; }},
    {"--gateway", "unix:PATH", G::network,
     "hand connections to a running `corral gateway` daemon\n"
     "(identity announced per connection) instead of the\n"
     "gateway embedded in this process",
     [](RunRequest& r, const std::string& v) {
         r.gateway = names::gateway_socket_path("--gateway", v);
     }},
};


// Docker's flags, answered with what corral has instead: a usage error, never
// a silent translation (the semantics differ: corral's -v would not be Docker's).
struct Habit {
    std::string_view flag;
    std::string_view answer;
};
constexpr Habit kDockerHabits[] = {
    {"-e", "corral run has no -e; use --env K=V"},
    {"-v", "corral run has no -v; use --bind SRC:DST (or --ro-bind SRC:DST; --workspace DIR for the project)"},
    {"--volume", "corral run has no --volume; use --bind SRC:DST or --ro-bind SRC:DST"},
    {"--mount", "corral run has no --mount; use --bind SRC:DST or --ro-bind SRC:DST"},
    {"-it", "corral run has no -it; use --tty for a terminal (or --stdin to pass stdin without one)"},
    {"-ti", "corral run has no -ti; use --tty for a terminal (or --stdin to pass stdin without one)"},
    {"-i", "corral run has no -i; use --stdin to pass stdin (--tty for a terminal)"},
    {"--interactive", "corral run has no --interactive; use --stdin to pass stdin (--tty for a terminal)"},
    {"-t", "corral run has no -t; use --tty for a terminal"},
    {"-w", "corral run has no -w: CMD starts in /workspace; --workspace DIR binds DIR there"},
    {"--workdir", "corral run has no --workdir: CMD starts in /workspace; --workspace DIR binds DIR there"},
    {"-m", "corral run has no -m; use --memory SIZE"},
    {"--tmpfs", "corral run has no --tmpfs; /tmp is always a tmpfs: --tmp-size SIZE sets its cap"},
    {"--rm", "corral run has no --rm: every sandbox is removed when CMD exits (the run dir keeps the logs)"},
    {"-p", "corral run has no -p: nothing can connect into a box"},
    {"--publish", "corral run has no --publish: nothing can connect into a box"},
    {"--network", "corral run has no --network: the only way out is the gateway; --allow HOST[:PORT] grants a host"},
    {"--net", "corral run has no --net: the only way out is the gateway; --allow HOST[:PORT] grants a host"},
    {"-u", "corral run has no -u: CMD runs as the agent, a UID leased for the run"},
    {"--user", "corral run has no --user: CMD runs as the agent, a UID leased for the run"},
    {"--name", "corral run has no --name: each run gets a run id (--hostname NAME names the box)"},
    {"-d", "corral run has no -d: a run stays attached until CMD ends; a box that outlives one command is a session: "
           "`corral session start --name N`, then `corral exec N -- CMD` (docs/sessions.md)"},
    {"--detach", "corral run has no --detach: a run stays attached until CMD ends; a box that outlives one command is "
                 "a session: `corral session start --name N`, then `corral exec N -- CMD` (docs/sessions.md)"},
    {"--read-only", "corral run has no --read-only: only /workspace and --bind targets outlive the box (with the "
                    "default --rootfs host its root is read-only; an image's root is an overlay thrown away at the "
                    "end); --ro-bind SRC:DST binds read-only"},
    // Never, and the answer says why: a capability in a box that shares the
    // host's kernel is a way out of it (docs/security.md).
    {"--privileged", "corral run has no --privileged, and never will: CMD runs with no capability in any set, "
                     "no_new_privs and seccomp, because a box that shares the host's kernel and holds a capability "
                     "can reach past its walls (docs/security.md); do what needs privilege outside the box"},
    {"--cap-add", "corral run has no --cap-add, and never will: CMD runs with no capability in any set, because a "
                  "box that shares the host's kernel and holds a capability can reach past its walls "
                  "(docs/security.md); do what needs privilege outside the box"},
    {"--cap-drop", "corral run has no --cap-drop: CMD already has no capability at all"},
    {"--entrypoint", "corral run has no --entrypoint: the command is what follows -- (`corral run -- PROGRAM ARGS`), "
                     "and it replaces an image's Entrypoint and Cmd"},
    {"--init", "corral run has no --init: corral's own init is always PID 1 of the box and reaps every orphan"},
    {"--ulimit", "corral run has no --ulimit; use --nofile N for open files (nofile), --pids N for tasks (nproc), "
                 "--memory SIZE for memory"},
    {"--env-file", "corral run has no --env-file; use --env K=V for each variable, or a worker's [env] table in "
                   "worker.toml (--config DIR --worker W)"},
};

}  // namespace

std::string unknown_option_message(std::string_view arg) {
    // "-e=X" and "--volume=X" are the same habit as "-e X".
    std::string_view flag = arg.substr(0, arg.find('='));
    if (auto habit = docker_habit(flag); !habit.empty()) return habit;
    return unknown_option_text(run_option_specs(), arg);
}

std::string docker_habit(std::string_view flag) {
    for (const auto& h : kDockerHabits)
        if (flag == h.flag) return std::string(h.answer);
    return {};
}

std::span<const OptionSpec> run_option_specs() {
    static const std::vector<OptionSpec> specs = [] {
        std::vector<OptionSpec> out;
        for (const auto& o : kOptions) out.push_back({o.name, o.placeholder, o.help, {}, o.repeatable});
        return out;
    }();
    return specs;
}

std::span<const RunOption> run_option_table() { return kOptions; }

const OptionSpec& session_name_option() {
    static const OptionSpec spec{"--name", "NAME",
                                 "the session's name, usable instead of its id while it runs:\n"
                                 "[a-z0-9][a-z0-9-]{0,39}"};
    return spec;
}

const RunOption* find_option(std::string_view name) {
    // -h is --help's short form (not listed in --help).
    if (name == "-h") name = "--help";
    for (const auto& o : kOptions)
        if (o.name == name) return &o;
    return nullptr;
}

const std::string& run_help_text() {
    static const std::string text = [] {
        std::string out = kHelpHead;
        for (const auto& o : kOptions)
            if (o.group == OptionGroup::sandbox) append_option_help(out, {o.name, o.placeholder, o.help});
        out += kHelpExitStatus;
        for (const auto& o : kOptions)
            if (o.group == OptionGroup::network) append_option_help(out, {o.name, o.placeholder, o.help});
        return out + kHelpTail;
    }();
    return text;
}

std::string default_state_dir() {
    const char* env = std::getenv("CORRAL_STATE_DIR");
    if (env == nullptr) return "/var/lib/corral";
    // Set but empty is a mistake (a script's unset variable), not a request
    // for the default: the run's records would land somewhere unexpected.
    if (*env == '\0') throw UsageError("CORRAL_STATE_DIR is set but empty; unset it or name a directory");
    return env;
}

}  // namespace corral::run
