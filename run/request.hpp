// run/request.hpp — what `corral run` was asked to do: every option of the
// command line, as given (unset = not given), before anything is resolved.
//
// Parsing is pure: no file system, no environment, no privileges. Everything
// that depends on the host or on the organisation (the default state dir,
// whether the rootfs exists, the worker's limits) is decided by resolve_run
// (run/resolve.hpp) and its caller, so option errors can be unit-tested and
// always come out as one line naming the option, the bad text and the accepted
// form (UsageError; `corral run` exits 2 on it).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/option_table.hpp"
#include "names/host.hpp"
#include "names/rootfs_source.hpp"
#include "rootfs/mount_plan.hpp"
#include "supervisor/seccomp_policy.hpp"
#include "supervisor/uid_lease.hpp"

namespace corral::run {

// Each of stdout.log, stderr.log (and an agent's stdout.jsonl) keeps at most
// this much of the command's output: the run dir is on the host's disk, and
// the box must not be able to fill it. Beyond it the output still streams to
// corral's own stdout/stderr; run.json says how much was logged.
inline constexpr std::uint64_t kDefaultLogLimitBytes = 256ull << 20;

// --bind SRC:DST / --ro-bind SRC:DST, as given (SRC checked when the run is
// planned, rootfs/mount_plan.hpp; DST by rootfs::check_bind_target when parsed).
struct BindRequest {
    std::string source;       // a host directory
    std::string target;       // absolute, normalised path in the box
    bool read_only = false;   // --ro-bind
    bool noexec = false;      // nothing on it runs (no option of `corral run`: an OCI bundle's bind option)
};

// --allow HOST[:PORT]: a tunnel grant for this run only.
struct AllowRequest {
    names::HostPattern host;  // normalised as a config grant's host
    std::uint16_t port = 443;
    std::string text;         // as given, for messages
};

struct RunRequest {
    // The sandbox.
    std::optional<names::RootfsSource> rootfs;    // --rootfs host|DIR|image:NAME; unset: the worker's, else host
    std::optional<std::string> workspace;         // bound read-write at /workspace
    bool review = false;                          // --review: the workspace through an overlay (docs/workspace.md)
    std::optional<std::string> run_dir;           // default <state-dir>/runs/<run-id>
    std::optional<std::string> state_dir;         // default: default_state_dir()
    std::optional<std::uint64_t> memory_bytes;    // --memory
    std::optional<std::uint64_t> pids;            // --pids
    std::optional<std::uint64_t> open_files;      // --nofile
    std::optional<double> cpus;                   // --cpus
    std::optional<std::chrono::milliseconds> timeout;
    std::optional<std::chrono::milliseconds> grace;
    // --wait: how long to wait for a box slot when the state dir runs its
    // max_boxes (run/box_slots.hpp); zero: refused at once.
    std::chrono::milliseconds capacity_wait{0};   // --grace; default supervisor's SandboxSpec::stop_grace
    bool quiet = false;                           // --quiet: no start and summary lines
    std::vector<std::pair<std::string, std::string>> env;   // --env, in order given
    std::optional<std::string> hostname;          // default "corral-<short id>"
    // Where the command starts (absolute, normalised; made in the box's
    // overlay when the rootfs lacks it). No option of `corral run` sets it:
    // the OCI front's config.json does (oci/runtime/bundle_request.hpp).
    // Unset: /workspace, or the image's WorkingDir.
    std::optional<std::string> cwd;
    std::vector<BindRequest> binds;               // --bind / --ro-bind, in order given
    // Tmpfs mounts of the box's own (no option of `corral run`: the OCI
    // front's config.json, oci/runtime/bundle_request.hpp); checked by the plan.
    std::vector<rootfs::BoxTmpfs> tmpfs;
    // A second seccomp filter on every command of the box, after corral's
    // (no option of `corral run`: an OCI bundle's linux.seccomp,
    // oci/runtime/seccomp_profile.hpp); it can only deny more.
    std::optional<supervisor::SeccompFilter> stacked_seccomp;
    std::optional<std::uint64_t> scratch_bytes;   // --scratch-size
    std::optional<std::uint64_t> tmp_bytes;       // --tmp-size
    bool pass_stdin = false;                      // --stdin
    bool tty = false;                             // --tty: CMD on a pty of the box's, joined to corral's terminal
    bool sync_record = false;                     // --sync-record: run.json survives power loss
    std::uint64_t log_limit_bytes = kDefaultLogLimitBytes;   // --log-limit: per log file in the run dir
    supervisor::UidRange uid_range = supervisor::default_uid_range();  // --uid-range
    bool help = false;                            // --help: print run_help_text(), exit 0
    // The network and the agent.
    std::optional<std::string> config_dir;          // --config DIR (organisation directory)
    std::optional<std::string> worker;              // --worker NAME
    std::optional<std::string> gateway;             // --gateway unix:PATH (the PATH)
    std::vector<AllowRequest> allow;                // --allow HOST[:PORT], in order given
    bool ask = false;                               // --ask: an unlisted host asks a person (docs/approvals.md)
    std::optional<bool> capture;                    // --capture / --no-capture (docs/capture.md); unset: config, default
    bool capture_only = false;                      // --capture-only: capture on, no proxy variables in the box
    std::optional<std::string> prompt;              // --prompt TEXT
    std::optional<std::string> prompt_file;         // --prompt-file F
    std::optional<std::string> system_prompt_file;  // --system-prompt-file F
    // CMD ARGS...: empty only with --help or for an agent run (whose command
    // is the worker's agent CLI).
    std::vector<std::string> command;
    // `corral session start`: the sandbox serves execs (no CMD, --prompt,
    // --stdin or --tty of its own); its optional --name.
    bool session = false;
    std::optional<std::string> session_name;
    // corral-oci's container (its id under the runtime's --root): run.json's
    // "kind" is "oci" and names it, so `corral ps` tells an engine's boxes.
    std::optional<std::string> oci_container;

    bool agent() const { return prompt.has_value() || prompt_file.has_value(); }
};

// Which part of `corral run --help` an option is explained in.
enum class OptionGroup { sandbox, network };

// One option of `corral run`: the parser, --help and the tests all read this
// table, so an option cannot be known to one and missing from another.
struct RunOption {
    std::string_view name;         // "--memory"
    std::string_view placeholder;  // "SIZE"; empty: a switch that takes no value
    OptionGroup group;
    std::string_view help;         // its lines in --help, without the indentation
    // Stores the option's value in the request; throws UsageError naming the option.
    void (*apply)(RunRequest& r, const std::string& value);
    bool repeatable = false;       // may be given more than once; others only once
};

std::span<const RunOption> run_option_table();
// The table as base/option_table.hpp's parser, help and gen_docs read it.
std::span<const OptionSpec> run_option_specs();
// The option of that name ("-h" is --help's short form), or null.
const RunOption* find_option(std::string_view name);
// `corral session start`'s own option, read with the run's table.
const OptionSpec& session_name_option();

// argv[0] is the subcommand name ("run"); options follow, then `--` and the
// command (the first argument that is not an option also starts the command).
// Also checks the options go together (an agent run has no CMD, --worker needs
// --config, ...). Throws UsageError: "--memory: invalid size \"12XB\": expected ...".
RunRequest parse_run_request(int argc, char** argv);

// `corral session start [OPTIONS]`: the same options but for the command
// and what only a command has (--prompt, --stdin, --tty), plus --name NAME
// ([a-z0-9][a-z0-9-]{0,39}). Throws UsageError.
RunRequest parse_session_request(int argc, char** argv);

// "did you mean" and the Docker habits: the usage error for an unknown
// option `arg` of `corral run` (names the closest option, or what corral has
// instead of a Docker flag such as -e, -v, -it, -w).
std::string unknown_option_message(std::string_view arg);
// Just the Docker habit's answer for `flag` ("-v"), or empty.
std::string docker_habit(std::string_view flag);

// The full `corral run --help` text, built from run_option_table().
const std::string& run_help_text();

// /var/lib/corral unless CORRAL_STATE_DIR is set (non-empty).
std::string default_state_dir();

}  // namespace corral::run
