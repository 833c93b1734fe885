// cli/approvals_args.cpp — the option tables of `corral approvals`,
// `approve` and `deny` (data tables).
#include "cli/approvals_args.hpp"

#include "base/sys_error.hpp"
#include "cli/command_table.hpp"
#include "run/request.hpp"

namespace corral::cli {

namespace {

constexpr Option<ApprovalsArgs> kStateDirOption = {
    {"--state-dir", "DIR", "the state dir whose runs (and gateway daemon) to ask (default /var/lib/corral)"},
    [](ApprovalsArgs& a, const std::string& v) {
        if (v.empty()) throw UsageError("--state-dir: empty path; expected a directory");
        a.state_dir = v;
    }};

const Option<ApprovalsArgs> kApprovalsOptions[] = {
    kStateDirOption,
    {{"--json", "", "one JSON object per request, a line each, instead of the table"},
     [](ApprovalsArgs& a, const std::string&) { a.as_json = true; }},
    {{"--follow", "", "keep watching: print each new request as it arrives", "-f"},
     [](ApprovalsArgs& a, const std::string&) { a.follow = true; }},
};

const Option<ApprovalsArgs> kApproveOptions[] = {
    kStateDirOption,
    {{"--always", "", "an egress request: its host and port become a grant for the rest of the run\n"
                      "(that host and port only, never a wildcard)"},
     [](ApprovalsArgs& a, const std::string&) { a.always = true; }},
};

const Option<ApprovalsArgs> kDenyOptions[] = {
    kStateDirOption,
    {{"--reason", "TEXT", "why, in a few words: the box is told who denied it and this"},
     [](ApprovalsArgs& a, const std::string& v) { a.reason = v; }},
};

constexpr const char* kApprovalsHelp =
    "usage: corral approvals [--json] [-f] [--state-dir DIR]\n"
    "\n"
    "The requests waiting for a person's approval, in every run of the state dir and its\n"
    "gateway daemon: a grant with approval = true holds the box's request until someone\n"
    "decides (corral approve ID, corral deny ID) or its approval_timeout passes (docs/approvals.md).\n";

constexpr const char* kApproveHelp =
    "usage: corral approve ID [--always] [--state-dir DIR]\n"
    "\n"
    "Approves the waiting request ID (`corral approvals` lists them): that exact request,\n"
    "once. A decision is made once, only while the request waits, and only by root.\n";

constexpr const char* kDenyHelp =
    "usage: corral deny ID [--reason TEXT] [--state-dir DIR]\n"
    "\n"
    "Denies the waiting request ID: the box is refused, told who denied it and why.\n";

}  // namespace

ApprovalsArgs parse_approvals_args(std::string_view command, int argc, char** argv) {
    ApprovalsArgs a;
    a.state_dir = run::default_state_dir();
    const std::string name = "corral " + std::string(command);
    CommandLine line = command == "approvals" ? parse_options<ApprovalsArgs>({name}, kApprovalsOptions, argc, argv, a)
                       : command == "approve" ? parse_options<ApprovalsArgs>({name}, kApproveOptions, argc, argv, a)
                                              : parse_options<ApprovalsArgs>({name}, kDenyOptions, argc, argv, a);
    a.help = line.help;
    if (a.help) return a;
    if (command == "approvals") {
        if (!line.positionals.empty()) throw UsageError("unexpected argument \"" + line.positionals.front() + "\"");
        return a;
    }
    if (line.positionals.size() != 1)
        throw UsageError("expected one request ID (`corral approvals` lists them), got " +
                         std::to_string(line.positionals.size()) + " argument(s)");
    a.id = line.positionals.front();
    if (a.id.rfind("ap-", 0) != 0) throw UsageError("\"" + a.id + "\" is not a request ID such as ap-1-0a1b2c3d");
    return a;
}

std::span<const OptionSpec> approvals_option_specs() { return option_specs_of<kApprovalsOptions>(); }
std::span<const OptionSpec> approve_option_specs() { return option_specs_of<kApproveOptions>(); }
std::span<const OptionSpec> deny_option_specs() { return option_specs_of<kDenyOptions>(); }

const std::string& approvals_help(std::string_view command) {
    static const std::string list = help_with_options(kApprovalsHelp, approvals_option_specs(), 22);
    static const std::string approve = help_with_options(kApproveHelp, approve_option_specs(), 22);
    static const std::string deny = help_with_options(kDenyHelp, deny_option_specs(), 22);
    return command == "approvals" ? list : command == "approve" ? approve : deny;
}

}  // namespace corral::cli
