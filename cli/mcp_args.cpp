// cli/mcp_args.cpp — the option tables of `corral mcp ls|trust` (data tables).
#include "cli/mcp_args.hpp"

#include <string_view>
#include <vector>

#include "base/sys_error.hpp"
#include "cli/command_table.hpp"

namespace corral::cli {

namespace {

const std::string& nonempty_mcp_path(std::string_view option, const std::string& v) {
    if (v.empty()) throw UsageError(std::string(option) + ": empty path; expected a directory");
    return v;
}

const Option<McpArgs> kMcpLsOptions[] = {
    {{"--config", "DIR", "organisation directory (required): DIR/org.toml and DIR/workers/NAME/worker.toml"},
     [](McpArgs& a, const std::string& v) { a.config_dir = nonempty_mcp_path("--config", v); }},
    {{"--worker", "NAME", "only this worker (trust: required when more than one worker has SERVER)"},
     [](McpArgs& a, const std::string& v) { a.worker = v; }},
    {{"--state-dir", "DIR", "where the pins are kept (default: the organisation's [gateway] state_dir,\n"
                            "as a run's embedded gateway keeps them)"},
     [](McpArgs& a, const std::string& v) { a.state_dir = nonempty_mcp_path("--state-dir", v); }},
    {{"--json", "", "ls: one JSON object instead of the table"}, [](McpArgs& a, const std::string&) { a.as_json = true; }},
};

const Option<McpArgs> kMcpTrustOptions[] = {
    kMcpLsOptions[0],
    kMcpLsOptions[1],
    kMcpLsOptions[2],
    {{"--force", "", "trust: accept DIGEST even when it is not the quarantined one (or none is)"},
     [](McpArgs& a, const std::string&) { a.force = true; }},
    {{"--all-quarantined", "", "trust: accept every quarantined tool's new digest (--worker's, else every\n"
                               "worker's), in place of SERVER/TOOL DIGEST"},
     [](McpArgs& a, const std::string&) { a.all_quarantined = true; }},
};

constexpr const char* kMcpHelp =
    "usage: corral mcp ls --config DIR [--worker NAME] [--state-dir DIR] [--json]\n"
    "       corral mcp trust --config DIR [--worker NAME] [--state-dir DIR] [--force] SERVER/TOOL DIGEST\n"
    "       corral mcp trust --config DIR [--worker NAME] [--state-dir DIR] --all-quarantined\n"
    "\n"
    "A worker's MCP servers and the tool pins its runs keep in STATE_DIR/mcp/WORKER/pins.json:\n"
    "each tool's trusted digest (its name, description, input schema and annotations), when\n"
    "and by which run it was first seen, and the new digest of a quarantined tool (one whose\n"
    "description changed; its calls are refused). Pins in the configuration ([mcp.pins])\n"
    "outrank the store and are shown as such.\n"
    "  ls     the servers and their tools as a table (--json: one object)\n"
    "  trust  accept DIGEST, the new digest `ls` shows for a quarantined SERVER/TOOL: the\n"
    "         next run serves the tool again (a digest that is not the one seen is refused\n"
    "         unless --force)\n";

}  // namespace

McpArgs parse_mcp_args(int argc, char** argv) {
    McpArgs a;
    const bool trust = argc > 0 && std::string_view(argv[0]) == "trust";
    CommandLine line = trust ? parse_options<McpArgs>({"corral mcp trust"}, kMcpTrustOptions, argc, argv, a)
                             : parse_options<McpArgs>({"corral mcp ls"}, kMcpLsOptions, argc, argv, a);
    a.help = line.help;
    if (a.help) return a;
    if (trust && a.all_quarantined) {
        if (!line.positionals.empty())
            throw UsageError("--all-quarantined takes no SERVER/TOOL DIGEST, got \"" + line.positionals.front() + "\"");
        if (a.force) throw UsageError("--force and --all-quarantined: give one");
    } else if (trust) {
        if (line.positionals.size() != 2)
            throw UsageError("expected SERVER/TOOL DIGEST, got " + std::to_string(line.positionals.size()) +
                             " argument(s)");
        a.key = line.positionals[0];
        a.digest = line.positionals[1];
        if (a.key.find('/') == std::string::npos || a.key.front() == '/' || a.key.back() == '/')
            throw UsageError("\"" + a.key + "\" is not SERVER/TOOL");
        bool hex = a.digest.size() == 71 && a.digest.rfind("sha256:", 0) == 0;
        for (std::size_t i = 7; hex && i < a.digest.size(); ++i)
            hex = (a.digest[i] >= '0' && a.digest[i] <= '9') || (a.digest[i] >= 'a' && a.digest[i] <= 'f');
        if (!hex)
            throw UsageError("\"" + a.digest + "\" is not a digest; expected sha256: and 64 hex digits, as `corral mcp ls` shows");
    } else if (!line.positionals.empty()) {
        throw UsageError("unexpected argument \"" + line.positionals.front() + "\"; corral mcp ls takes only options");
    }
    if (a.config_dir.empty()) throw UsageError("--config DIR is required");
    return a;
}

std::span<const OptionSpec> mcp_ls_option_specs() { return option_specs_of<kMcpLsOptions>(); }
std::span<const OptionSpec> mcp_trust_option_specs() { return option_specs_of<kMcpTrustOptions>(); }

const std::string& mcp_help() {
    static const std::string text = [] {
        std::vector<OptionSpec> all(mcp_ls_option_specs().begin(), mcp_ls_option_specs().end());
        auto trust = mcp_trust_option_specs();
        all.insert(all.end(), trust.end() - 2, trust.end());  // --force, --all-quarantined
        return help_with_options(kMcpHelp, all, 20);
    }();
    return text;
}

}  // namespace corral::cli
