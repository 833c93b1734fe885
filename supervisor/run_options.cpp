#include "supervisor/run_options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "base/parse.hpp"
#include "base/sys_error.hpp"

namespace corral::supervisor {

namespace {

constexpr const char* kHelp = R"(usage: corral run [OPTIONS] -- CMD [ARGS...]

Runs CMD in a fresh sandbox: new PID, mount, network, IPC, UTS and cgroup
namespaces; a read-only root file system; only a loopback network; its own
UID/GID with no capabilities, no_new_privs and a seccomp filter. Must run as
root. When CMD exits, everything it started is killed and corral verifies that
nothing of the run is left on the host (see docs/architecture.md).

options:
  --rootfs host|DIR      the sandbox's root file system. "host" (default): the
                         host's /usr, /bin, /sbin, /lib* and a minimal /etc,
                         read-only. DIR: an image directory used as the read-only
                         lower layer of an overlay whose writable upper layer is
                         scratch space, so nothing CMD writes ever reaches DIR.
  --workspace DIR        bind DIR read-write at /workspace and start CMD there.
                         CMD acts as DIR's owner (an ID-mapped bind): what it
                         writes belongs to that owner on the host. Set-ID bits
                         cannot be set. A root-owned DIR, or one on a file
                         system that cannot be ID-mapped, is bound as is, with
                         a warning. Refused: /, a path through a symlink, a DIR
                         overlapping corral's state or run dir, /proc, /sys or
                         /dev, a DIR holding a set-ID file, a socket or FIFO.
                         Without it CMD starts in /workspace, an empty directory
                         on the scratch overlay that vanishes with the run.
  --run-dir DIR          where stdout.log, stderr.log and run.json go (created
                         0700, root only: CMD cannot read it).
                         Default: <state-dir>/runs/<run-id>.
  --state-dir DIR        corral's state directory. Default /var/lib/corral, or
                         $CORRAL_STATE_DIR if set.
  --memory SIZE          memory limit of the whole sandbox, e.g. 512M, 2GiB
                         (units B, K/KiB, M/MiB, G/GiB, T/TiB; powers of 1024).
  --pids N               maximum number of processes and threads in the sandbox.
                         Without it CMD's UID may still hold at most 4096 of
                         them (RLIMIT_NPROC; the UID is the run's alone).
  --cpus FLOAT           CPU bandwidth in CPUs, e.g. 0.5 or 2.
                         Limits are enforced through a cgroup made for the run
                         (v2, or v1 where a controller lives only on v1); a limit
                         that cannot be enforced is an error, never ignored.
  --timeout DURATION     kill the sandbox after DURATION (250ms, 30s, 5m, 1h30m,
                         or plain seconds); corral says so and exits 124.
  --env K=V              add K=V to CMD's environment (repeatable; later wins).
                         CMD otherwise sees only PATH, HOME=/home/agent,
                         LANG=C.UTF-8, TERM=dumb, USER/LOGNAME=agent.
  --hostname NAME        the sandbox's hostname. Default "corral-<run id suffix>".
  --stdin                pass corral's stdin to CMD (default: /dev/null).
  --log-limit SIZE       keep at most SIZE of CMD's stdout and of its stderr in
                         the run dir's logs (default 256M): the box cannot fill
                         the host's disk. Beyond it output still streams to
                         corral's stdout/stderr; run.json's "output" says how
                         much was produced and how much logged.
  --sync-record          fsync run.json and its directory, so the record survives
                         a power loss (costs ~10 ms; by default run.json is
                         replaced atomically but not synced).
  --uid-range FIRST-LAST the UIDs runs may lease; each run gets one UID (and the
                         GID of the same number) no other run holds.
                         Default 1900000000-1900000999.
  --help                 show this text.

exit status:
  CMD's exit status, or 128+N if CMD was killed by signal N (or if corral
       itself got SIGINT/SIGTERM/SIGHUP N: the sandbox is killed and still
       torn down and verified)
  124  the --timeout deadline was reached; the sandbox was killed
  125  the sandbox could not be set up (the message names the step), bad
       usage, or not running as root
  126  teardown failed: something of the run survived (the message says what;
       run.json has verdict "failed")
  127  CMD was not found in the sandbox's root file system
  2    malformed command line (unknown option, bad size, duration or K=V)

environment:
  CORRAL_STATE_DIR   default for --state-dir
  CORRAL_LOG=debug   print the duration of every setup and teardown phase
)";

struct ArgCursor {
    int argc;
    char** argv;
    int i = 1;
};

// "--name=value" or "--name value"; `inline_value` is set for the first form.
std::string take_value(ArgCursor& c, std::string_view name, std::optional<std::string_view> inline_value) {
    if (inline_value) return std::string(*inline_value);
    if (c.i + 1 >= c.argc)
        throw UsageError(std::string(name) + ": missing value; see `corral run --help`");
    ++c.i;
    return c.argv[c.i];
}

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

template <typename F>
auto prefixed(std::string_view name, F&& parse) {
    try {
        return parse();
    } catch (const UsageError& e) {
        throw UsageError(std::string(name) + ": " + e.what());
    }
}

}  // namespace

const char* run_help_text() { return kHelp; }

std::string default_state_dir() {
    const char* env = std::getenv("CORRAL_STATE_DIR");
    if (env == nullptr) return "/var/lib/corral";
    // Set but empty is a mistake (a script's unset variable), not a request
    // for the default: the run's records would land somewhere unexpected.
    if (*env == '\0') throw UsageError("CORRAL_STATE_DIR is set but empty; unset it or name a directory");
    return env;
}

void check_hostname(const std::string& name) {
    bool ok = !name.empty() && name.size() <= 64 && name.front() != '-' && name.front() != '.' &&
              name.back() != '-' && name.back() != '.';
    for (char ch : name) {
        bool allowed = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                       ch == '-' || ch == '.';
        if (!allowed) ok = false;
    }
    if (!ok)
        throw UsageError("--hostname: invalid hostname \"" + name +
                         "\": expected 1 to 64 characters of letters, digits, '-' and '.', "
                         "not starting or ending with '-' or '.'");
}

RunOptions parse_run_options(int argc, char** argv) {
    RunOptions o;
    ArgCursor c{argc, argv};
    for (; c.i < argc; ++c.i) {
        std::string_view arg = argv[c.i];
        if (arg == "--") {
            ++c.i;
            break;
        }
        if (arg.size() < 2 || arg[0] != '-') break;  // the command starts here
        std::string_view name = arg;
        std::optional<std::string_view> inline_value;
        if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
            name = arg.substr(0, eq);
            inline_value = arg.substr(eq + 1);
        }
        auto no_value = [&] {
            if (inline_value)
                throw UsageError(std::string(name) + ": takes no value, got \"" + std::string(*inline_value) + "\"");
        };
        if (name == "--help" || name == "-h") {
            no_value();
            o.help = true;
        } else if (name == "--stdin") {
            no_value();
            o.pass_stdin = true;
        } else if (name == "--sync-record") {
            no_value();
            o.sync_record = true;
        } else if (name == "--rootfs") {
            o.rootfs = require_path(name, take_value(c, name, inline_value));
        } else if (name == "--workspace") {
            o.workspace = require_path(name, take_value(c, name, inline_value));
        } else if (name == "--run-dir") {
            o.run_dir = require_path(name, take_value(c, name, inline_value));
        } else if (name == "--state-dir") {
            o.state_dir = require_path(name, take_value(c, name, inline_value));
        } else if (name == "--memory") {
            auto text = take_value(c, name, inline_value);
            o.memory_bytes = prefixed(name, [&] { return parse_size(text); });
            if (*o.memory_bytes < 1024 * 1024)
                throw UsageError("--memory: invalid size \"" + text + "\": expected at least 1M (a sandbox needs some memory to start)");
        } else if (name == "--log-limit") {
            auto text = take_value(c, name, inline_value);
            o.log_limit_bytes = prefixed(name, [&] { return parse_size(text); });
            if (o.log_limit_bytes == 0)
                throw UsageError("--log-limit: invalid size \"" + text + "\": expected at least 1 byte, e.g. 64M");
        } else if (name == "--pids") {
            o.pids = parse_count(name, take_value(c, name, inline_value));
        } else if (name == "--cpus") {
            o.cpus = parse_cpus(take_value(c, name, inline_value));
        } else if (name == "--timeout") {
            auto text = take_value(c, name, inline_value);
            o.timeout = prefixed(name, [&] { return parse_duration(text); });
            if (o.timeout->count() == 0)
                throw UsageError("--timeout: invalid duration \"" + text + "\": expected a duration above zero, e.g. 30s");
        } else if (name == "--env") {
            auto text = take_value(c, name, inline_value);
            o.env.push_back(prefixed(name, [&] { return parse_env_pair(text); }));
        } else if (name == "--hostname") {
            o.hostname = take_value(c, name, inline_value);
            check_hostname(*o.hostname);
        } else if (name == "--uid-range") {
            auto text = take_value(c, name, inline_value);
            o.uid_range = prefixed(name, [&] { return parse_uid_range(text); });
        } else {
            throw UsageError("unknown option \"" + std::string(arg) +
                             "\"; options are --rootfs, --workspace, --run-dir, --state-dir, --memory, --pids, "
                             "--cpus, --timeout, --env, --hostname, --stdin, --log-limit, --sync-record, --uid-range, --help");
        }
    }
    for (; c.i < argc; ++c.i) o.command.emplace_back(argv[c.i]);
    if (o.command.empty() && !o.help)
        throw UsageError("missing command: expected `corral run [OPTIONS] -- CMD [ARGS...]`");
    if (!o.command.empty() && o.command.front().empty())
        throw UsageError("empty command name: expected `corral run [OPTIONS] -- CMD [ARGS...]`");
    return o;
}

}  // namespace corral::supervisor
