// cli/workspace_args.cpp — the option tables of `corral diff`, `apply` and
// `discard` (data tables), their --help and their parser.
#include "cli/workspace_args.hpp"

#include <stdexcept>

#include "base/sys_error.hpp"
#include "cli/command_table.hpp"
#include "run/request.hpp"

namespace corral::cli {

namespace {

using WsOption = Option<WorkspaceArgs>;

const WsOption kStateDir{{"--state-dir", "DIR", "corral's state directory (default $CORRAL_STATE_DIR, else\n"
                                                "/var/lib/corral)"},
                         [](WorkspaceArgs& a, const std::string& v) { a.state_dir = v; }};

const WsOption kDiffOptions[] = {
    {{"--json", "", "one JSON object: {workspace, digest, changes: [{path, kind,\n"
                    "flags, before, after, diff}]}"},
     [](WorkspaceArgs& a, const std::string&) { a.json_out = true; }},
    {{"--stat", "", "one line per change, no file contents"},
     [](WorkspaceArgs& a, const std::string&) { a.stat = true; }},
    kStateDir,
};

const WsOption kApplyOptions[] = {
    {{"--only", "PATH", "apply only PATH and what is below it (repeatable)", {}, true},
     [](WorkspaceArgs& a, const std::string& v) { a.paths.push_back(v); }},
    {{"--expect", "DIGEST", "refuse unless the diff's digest is DIGEST (the one\n"
                            "`corral diff` printed when it was reviewed)"},
     [](WorkspaceArgs& a, const std::string& v) { a.expect = v; }},
    {{"--while-running", "", "apply a session's changes while it still runs, from its\n"
                             "live layer (its agent may still be writing: what it\n"
                             "writes after is applied by a later apply)"},
     [](WorkspaceArgs& a, const std::string&) { a.while_running = true; }},
    kStateDir,
};

const WsOption kDiscardOptions[] = {kStateDir};

constexpr const char* kDiffHelp = R"(usage: corral diff [--json] [--stat] [--state-dir DIR] RUN [PATH...]

Shows what run RUN (a --workspace DIR --review run) changed in DIR, against
DIR as it is now: every path added (A), modified (M), deleted (D, always
listed) or changed in type (T), with its flags (content, mode, owner,
symlink-target, xattr, exec-bit, git-internal: under .git/, ignored: hidden
by DIR's ignore rules, special-file, hard-link, host-changed: DIR's copy
changed since the run started, which apply refuses); a unified diff of each
text file, sizes and SHA-256 of the others. The last line is the diff's
digest, which `corral apply --expect` takes. PATH... shows only those paths
(the digest is always the whole diff's). RUN is a run id, a unique part of
one, or a run dir (a path with a '/', or a directory here that holds a review).

options:
)";
constexpr const char* kApplyHelp = R"(usage: corral apply [--only PATH]... [--expect DIGEST] [--while-running] [--state-dir DIR] RUN

Writes run RUN's reviewed changes into its DIR as DIR's owner (never as
root), each file through a temporary name renamed over the old one, never
through a symlink or a mount inside DIR. A change whose path DIR changed
since the run started is refused as a conflict; the others are applied.
Prints each path applied or refused; exit 0 when every change was applied,
1 when some were refused, 2 for bad usage (or a stale --expect: nothing applied).
A session's changes are applied after `corral session stop`, or while it
runs with --while-running (recorded by the session in its journal and
review; a file applied then is not a conflict later unless it changes on
the host again).

options:
)";
constexpr const char* kDiscardHelp = R"(usage: corral discard [--state-dir DIR] RUN

Drops run RUN's reviewed changes (its upper layer in the run dir). DIR is
not touched.

options:
)";

struct WsCommand {
    std::string_view name;
    std::span<const WsOption> table;
    const char* help;
};
const WsCommand kWsCommands[] = {
    {"diff", kDiffOptions, kDiffHelp},
    {"apply", kApplyOptions, kApplyHelp},
    {"discard", kDiscardOptions, kDiscardHelp},
};

std::size_t index_of(std::string_view cmd) {
    for (std::size_t i = 0; i < std::size(kWsCommands); ++i)
        if (kWsCommands[i].name == cmd) return i;
    throw std::logic_error("no workspace command " + std::string(cmd));
}

}  // namespace

WorkspaceArgs parse_workspace_args(std::string_view cmd, int argc, char** argv) {
    const WsCommand& c = kWsCommands[index_of(cmd)];
    WorkspaceArgs a;
    a.state_dir = run::default_state_dir();
    const std::string name = "corral " + std::string(cmd);
    CommandLine line = parse_options<WorkspaceArgs>({name}, c.table, argc, argv, a);
    a.help = line.help;
    if (a.help) return a;
    if (line.positionals.empty()) throw UsageError("missing RUN: expected `" + name + " RUN`");
    a.run = line.positionals.front();
    if (cmd == "diff") a.paths.assign(line.positionals.begin() + 1, line.positionals.end());
    else if (line.positionals.size() > 1)
        throw UsageError("takes one RUN, got also \"" + line.positionals[1] + "\"" +
                         (cmd == "apply" ? std::string(" (apply only some paths with --only PATH)") : std::string()));
    return a;
}

std::span<const OptionSpec> workspace_option_specs(std::string_view cmd) {
    static const auto specs = [] {
        std::vector<std::vector<OptionSpec>> out;
        for (const auto& c : kWsCommands) out.push_back(option_specs(c.table));
        return out;
    }();
    return specs[index_of(cmd)];
}

const std::string& workspace_help(std::string_view cmd) {
    static const auto texts = [] {
        std::vector<std::string> out;
        for (const auto& c : kWsCommands) out.push_back(help_with_options(c.help, workspace_option_specs(c.name)));
        return out;
    }();
    return texts[index_of(cmd)];
}

}  // namespace corral::cli
