// cli/action_front.cpp — the NOUN ACTION front, and the option tables of
// `corral ca`, `corral key` and `corral budget` (data tables).
#include "cli/action_front.hpp"

#include "base/sys_error.hpp"
#include "cli/command_table.hpp"
#include "config/org_config.hpp"
#include "names/gateway_address.hpp"
#include "names/identity.hpp"

namespace corral::cli {

std::optional<int> ActionFront::take_action(int argc, char** argv, std::initializer_list<std::string_view> actions) {
    if (argc < 2) {
        std::fputs(usage_.c_str(), stderr);
        return 2;
    }
    if (is_help(argv[1])) return help();
    action_ = argv[1];
    std::string allowed;
    for (auto a : actions) {
        if (a == action_) return std::nullopt;
        allowed += (allowed.empty() ? "" : ", ") + std::string(a);
    }
    return bad_usage("unknown " + noun_ + " action \"" + action_ + "\"; expected: " + allowed);
}

int ActionFront::help() const {
    std::fputs(usage_.c_str(), stdout);
    return 0;
}

int ActionFront::bad_usage(const std::string& problem) const {
    std::fprintf(stderr, "corral %s: %s (see corral %s --help)\n", noun_.c_str(), problem.c_str(), noun_.c_str());
    return 2;
}

namespace {

const Option<StateDirArgs> kCaOptions[] = {
    {{"--state-dir", "DIR", "default $CORRAL_STATE_DIR, else /var/lib/corral (as corral run; for a\n"
                            "`corral gateway` daemon, its config's [gateway] state_dir)"},
     [](StateDirArgs& a, const std::string& v) {
         if (v.empty()) throw UsageError("--state-dir: empty path; expected a directory");
         a.state_dir = v;
     }},
};

const Option<StateDirArgs> kKeyOptions[] = {
    {{"--state-dir", "DIR", "default $CORRAL_STATE_DIR, else /var/lib/corral"}, kCaOptions[0].store},
};

constexpr const char* kCaHelp =
    "usage: corral ca init [--state-dir DIR]\n"
    "\n"
    "Creates corral's certificate authority in DIR/ca/ (ECDSA P-256; ca.key mode 0600,\n"
    "ca.crt mode 0644) unless it already exists, and prints the certificate's path.\n";

constexpr const char* kKeyHelp =
    "usage: corral key init|show [--state-dir DIR]\n"
    "\n"
    "The Ed25519 key corral signs run journals with (docs/journal.md).\n"
    "  init   create DIR/journal/signing.key (0600, in a 0700 dir) and signing.pub unless they\n"
    "         exist; prints the public key (PEM)\n"
    "  show   print the public key (PEM) and, on stderr, its fingerprint; creates nothing\n";

constexpr const char* kKeyHelpTail =
    "Keep a copy of the public key where this host cannot rewrite it: a journal checked\n"
    "against a key read from the same host proves only that its root signed it.\n";

const Option<BudgetArgs> kBudgetOptions[] = {
    {{"--gateway", "unix:PATH", "the daemon's socket (default /run/corral/gateway.sock)"},
     [](BudgetArgs& a, const std::string& v) {
         a.socket = names::gateway_socket_path("--gateway", v);
     }},
};

constexpr const char* kBudgetHelp =
    "usage: corral budget show WORKER [--gateway unix:PATH]\n"
    "       corral budget reset WORKER [--gateway unix:PATH]\n"
    "\n"
    "A worker's budget across its runs ([budget.worker] in its worker.toml or org.toml)\n"
    "is kept by the gateway daemon (`corral gateway --org DIR`) in STATE_DIR/budgets/WORKER.json\n"
    "and survives its restarts. show prints it as one JSON line (limits, spent, remaining,\n"
    "exhausted; with [mcp.budget] tool_calls_per_worker also tool_calls: limit, used,\n"
    "remaining, file); reset sets what was spent (and the tool calls used) back to zero\n"
    "and prints the result.\n";

}  // namespace

StateDirArgs parse_state_dir_args(std::string_view command, int argc, char** argv) {
    StateDirArgs a;
    const std::span<const Option<StateDirArgs>> table =
        command == "corral ca" ? std::span<const Option<StateDirArgs>>(kCaOptions) : kKeyOptions;
    CommandLine line = parse_options<StateDirArgs>({command}, table, argc, argv, a);
    a.help = line.help;
    if (!a.help && !line.positionals.empty())
        throw UsageError("unexpected argument \"" + line.positionals.front() + "\"; expected: --state-dir DIR");
    return a;
}

std::span<const OptionSpec> ca_option_specs() { return option_specs_of<kCaOptions>(); }

std::span<const OptionSpec> key_option_specs() { return option_specs_of<kKeyOptions>(); }

const std::string& ca_help() {
    static const std::string text = help_with_options(kCaHelp, ca_option_specs(), 20);
    return text;
}

const std::string& key_help() {
    static const std::string text = help_with_options(kKeyHelp, key_option_specs(), 20) + kKeyHelpTail;
    return text;
}

BudgetArgs parse_budget_args(int argc, char** argv) {
    BudgetArgs a;
    a.socket = std::string(config::default_gateway_socket);
    CommandLine line = parse_options<BudgetArgs>({"corral budget"}, kBudgetOptions, argc, argv, a);
    a.help = line.help;
    if (a.help) return a;
    if (line.positionals.size() > 1)
        throw UsageError("unexpected argument \"" + line.positionals[1] + "\"; expected: WORKER [--gateway unix:PATH]");
    if (line.positionals.empty()) throw UsageError("missing WORKER");
    a.worker = line.positionals.front();
    if (auto bad = names::check_worker_name(a.worker))
        throw UsageError("invalid worker name \"" + a.worker + "\": " + bad->problem);
    return a;
}

std::span<const OptionSpec> budget_option_specs() { return option_specs_of<kBudgetOptions>(); }

const std::string& budget_help() {
    static const std::string text = help_with_options(kBudgetHelp, budget_option_specs(), 24);
    return text;
}

}  // namespace corral::cli
