// supervisor/run_options.hpp — what `corral run` was asked to do, parsed from argv.
//
// Parsing is pure: no file system, no environment, no privileges. Everything
// that depends on the host (the default state dir, whether the rootfs exists,
// whether we are root) is decided later by the caller, so option errors can be
// unit-tested and always come out as one line naming the option, the bad text
// and the accepted form (UsageError; `corral run` exits 2 on it).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "supervisor/uid_lease.hpp"

namespace corral::supervisor {

// Each of stdout.log, stderr.log (and an agent's stdout.jsonl) keeps at most
// this much of the command's output: the run dir is on the host's disk, and
// the box must not be able to fill it. Beyond it the output still streams to
// corral's own stdout/stderr; run.json says how much was logged.
inline constexpr std::uint64_t kDefaultLogLimitBytes = 256ull << 20;

struct RunOptions {
    std::string rootfs = "host";                  // "host" or an image directory
    std::optional<std::string> workspace;         // bound read-write at /workspace
    std::optional<std::string> run_dir;           // default <state-dir>/runs/<run-id>
    std::optional<std::string> state_dir;         // default: default_state_dir()
    std::optional<std::uint64_t> memory_bytes;    // --memory
    std::optional<std::uint64_t> pids;            // --pids
    std::optional<double> cpus;                   // --cpus
    std::optional<std::chrono::milliseconds> timeout;
    std::vector<std::pair<std::string, std::string>> env;   // --env, in order given
    std::optional<std::string> hostname;          // default "corral-<short id>"
    bool pass_stdin = false;                      // --stdin
    bool sync_record = false;                     // --sync-record: run.json survives power loss
    std::uint64_t log_limit_bytes = kDefaultLogLimitBytes;   // --log-limit: per log file in the run dir
    UidRange uid_range = default_uid_range();     // --uid-range
    bool help = false;                            // --help: print run_help_text(), exit 0
    std::vector<std::string> command;             // CMD ARGS...; never empty unless help
};

// argv[0] is the subcommand name ("run"); options follow, then `--` and the
// command (the first argument that is not an option also starts the command).
// Throws UsageError: "--memory: invalid size \"12XB\": expected ...".
RunOptions parse_run_options(int argc, char** argv);

// The full `corral run --help` text; explains every option and the exit codes.
const char* run_help_text();

// /var/lib/corral unless CORRAL_STATE_DIR is set (non-empty).
std::string default_state_dir();

// A hostname the kernel and resolvers accept: 1..64 chars of [A-Za-z0-9-.],
// not starting or ending with '-' or '.'. Throws UsageError naming the text.
void check_hostname(const std::string& name);

}  // namespace corral::supervisor
