// cli/runs_args.cpp — the option tables of `corral ps`, `logs`, `stop`,
// `inspect` and `prune` (data tables), their --help and their parsers.
#include "cli/runs_args.hpp"

#include <algorithm>
#include <climits>
#include <set>

#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "cli/command_table.hpp"
#include "run/request.hpp"
#include "supervisor/outcome.hpp"

namespace corral::cli {

namespace {

using RunsOption = Option<RunsArgs>;

const RunsOption kStateDir{{"--state-dir", "DIR", "corral's state directory (default $CORRAL_STATE_DIR, else\n"
                                                  "/var/lib/corral)"},
                           [](RunsArgs& a, const std::string& v) { a.state_dir = v; }};

const RunsOption kPsOptions[] = {
    {{"--json", "", "one JSON array of the runs"}, [](RunsArgs& a, const std::string&) { a.json_out = true; }},
    {{"--all", "", "every run, not only the running ones", "-a"}, [](RunsArgs& a, const std::string&) { a.all = true; }},
    kStateDir,
};

const RunsOption kLogsOptions[] = {
    {{"--follow", "", "keep printing until the run has ended", "-f"},
     [](RunsArgs& a, const std::string&) { a.follow = true; }},
    kStateDir,
};

const RunsOption kStopOptions[] = {
    {{"--grace", "D", "time between SIGTERM and SIGKILL (default: the run's own)"},
     [](RunsArgs& a, const std::string& v) {
         try {
             a.grace = parse_duration(v);
         } catch (const UsageError& e) {
             throw UsageError(std::string("--grace: ") + e.what());
         }
         // It travels to the supervisor as a signal's int payload.
         if (a.grace->count() > INT32_MAX) throw UsageError("--grace: at most 24 days");
     }},
    kStateDir,
};

const RunsOption kInspectOptions[] = {kStateDir};

constexpr const char* kPsHelp = R"(usage: corral ps [--json] [-a|--all] [--state-dir DIR]

Lists the runs of the state dir, newest first: running ones, or every run
with -a (then also OUTCOME: how it ended, and ENDED: when). STATE is running, starting (no run.json yet), finished, or lost (run.json
says running but its supervisor is gone: killed, or the host rebooted).

options:
)";
constexpr const char* kLogsHelp = R"(usage: corral logs [-f|--follow] [--state-dir DIR] ID

Prints run ID's stdout log (stdout.log, or an agent's stdout.jsonl) on stdout
and its stderr.log on stderr; for a session, each exec's logs in exec order.
With -f, keeps printing what the run (or each exec of the session) writes
until it has ended. ID may be any unique prefix of at least 4 characters.

options:
)";
constexpr const char* kStopHelp = R"(usage: corral stop [--grace D] [--state-dir DIR] ID

Stops run ID as SIGTERM to its corral would: CMD's process group gets SIGTERM,
the sandbox SIGKILL after the grace (the run's --grace, default 10s, or D),
then the verified teardown. Waits until the run has ended and prints its
summary. Exit 0 when it ended, 1 when it was not running, 2 for bad usage.

options:
)";
constexpr const char* kInspectHelp = R"(usage: corral inspect [--state-dir DIR] ID

Prints run ID's run.json (docs/run-record.md) with its live state: "state" is
running, finished or lost, and "run_dir" says where it is.

options:
)";

struct RunsCommand {
    std::string_view name;
    std::span<const RunsOption> table;
    const char* help;
};
const RunsCommand kRunsCommands[] = {
    {"ps", kPsOptions, kPsHelp},
    {"logs", kLogsOptions, kLogsHelp},
    {"stop", kStopOptions, kStopHelp},
    {"inspect", kInspectOptions, kInspectHelp},
    // `corral session stop|ls` (their help is the session's).
    {"session stop", kStopOptions, ""},
    {"session ls", kPsOptions, ""},
};

const RunsCommand& runs_command(std::string_view cmd) {
    for (const auto& c : kRunsCommands)
        if (c.name == cmd) return c;
    throw std::logic_error("no runs command " + std::string(cmd));
}

std::set<std::string> parse_outcomes(const std::string& list) {
    std::set<std::string> out;
    std::size_t at = 0;
    while (at <= list.size()) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const std::string name = list.substr(at, comma - at);
        if (!supervisor::parse_outcome(name))
            throw UsageError("--outcome: unknown outcome \"" + name +
                             "\"; expected a comma-separated list of exited, killed, deadline, stopped, "
                             "interrupted, not_found, setup_failed, usage_error, teardown_failed");
        out.insert(name);
        at = comma + 1;
    }
    return out;
}

const Option<PruneArgs> kPruneOptions[] = {
    {{"--older-than", "D", "how long ago a run must have ended: 90m, 36h, 7d (default 14d)"},
     [](PruneArgs& a, const std::string& v) {
         try {
             a.rules.older_than = parse_duration(v);
         } catch (const UsageError& e) {
             throw UsageError(std::string("--older-than: ") + e.what());
         }
     }},
    {{"--outcome", "O,...", "only runs that ended so (exited, killed, deadline, stopped,\n"
                            "interrupted, not_found, setup_failed, usage_error, teardown_failed)"},
     [](PruneArgs& a, const std::string& v) { a.rules.outcomes = parse_outcomes(v); }},
    {{"--dry-run", "", "say what would be removed, remove nothing", "-n"},
     [](PruneArgs& a, const std::string&) { a.dry_run = true; }},
    {{"--json", "", "one JSON object: {removed|would_remove: [{id, outcome, ended_at, bytes}], bytes}"},
     [](PruneArgs& a, const std::string&) { a.json_out = true; }},
    {{"--state-dir", "DIR", "default $CORRAL_STATE_DIR, else /var/lib/corral"},
     [](PruneArgs& a, const std::string& v) { a.state_dir = v; }},
};

constexpr const char* kPruneHelp =
    "usage: corral prune [--older-than D] [--outcome O[,O...]] [--dry-run] [--json] [--state-dir DIR]\n"
    "\n"
    "Removes the finished runs of the state dir that ended more than D ago (default 14d),\n"
    "oldest first, with their run dirs (record, logs, journal, the agent's home). A run\n"
    "refused before its sandbox existed goes once it is an hour old, whatever D. Never a\n"
    "run that is running, starting or lost (the next `corral run` ends a lost run's\n"
    "journal first). A run given --run-dir elsewhere loses only its entry: that\n"
    "directory is yours and stays.\n";

}  // namespace

RunsArgs parse_runs_args(std::string_view cmd, int argc, char** argv) {
    const RunsCommand& c = runs_command(cmd);
    RunsArgs a;
    a.state_dir = run::default_state_dir();
    const std::string name = "corral " + std::string(cmd);
    CommandLine line = parse_options<RunsArgs>({name}, c.table, argc, argv, a);
    a.help = line.help;
    a.positional = std::move(line.positionals);
    return a;
}

std::span<const OptionSpec> runs_option_specs(std::string_view cmd) {
    static const auto specs = [] {
        std::vector<std::vector<OptionSpec>> out;
        for (const auto& c : kRunsCommands) out.push_back(option_specs(c.table));
        return out;
    }();
    for (std::size_t i = 0; i < std::size(kRunsCommands); ++i)
        if (kRunsCommands[i].name == cmd) return specs[i];
    throw std::logic_error("no runs command " + std::string(cmd));
}

const std::string& runs_help(std::string_view cmd) {
    static const auto texts = [] {
        std::vector<std::string> out;
        for (const auto& c : kRunsCommands) out.push_back(help_with_options(c.help, runs_option_specs(c.name)));
        return out;
    }();
    for (std::size_t i = 0; i < std::size(kRunsCommands); ++i)
        if (kRunsCommands[i].name == cmd) return texts[i];
    throw std::logic_error("no runs command " + std::string(cmd));
}

PruneArgs parse_prune_args(int argc, char** argv) {
    PruneArgs a;
    a.state_dir = run::default_state_dir();
    CommandLine line = parse_options<PruneArgs>({"corral prune"}, kPruneOptions, argc, argv, a);
    a.help = line.help;
    if (!a.help && !line.positionals.empty())
        throw UsageError("takes no arguments, got \"" + line.positionals.front() + "\"");
    return a;
}

std::span<const OptionSpec> prune_option_specs() { return option_specs_of<kPruneOptions>(); }

const std::string& prune_help() {
    static const std::string text = help_with_options(kPruneHelp, prune_option_specs(), 19);
    return text;
}

}  // namespace corral::cli
