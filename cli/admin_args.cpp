// cli/admin_args.cpp — the option tables (data tables) of `corral doctor`,
// `corral gateway` and `corral journal verify`, their --help and parsers.
#include "cli/admin_args.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "cli/command_table.hpp"
#include "names/gateway_address.hpp"

namespace corral::cli {

namespace {

const Option<DoctorArgs> kDoctorOptions[] = {
    {{"--json", "", "one JSON object: {\"ok\", \"exit_status\", \"checks\": [{name, status,\n"
                    "detail, remedy, required}]} (status ok | fail | warn)"},
     [](DoctorArgs& a, const std::string&) { a.as_json = true; }},
    {{"--state-dir", "DIR", "the state dir to check (default $CORRAL_STATE_DIR, else /var/lib/corral)"},
     [](DoctorArgs& a, const std::string& v) {
         if (v.empty()) throw UsageError("--state-dir: expected a directory");
         a.state_dir = v;
     }},
    {{"--config", "ORG", "check the daemon socket ORG/org.toml names, and its workers' MCP pins"},
     [](DoctorArgs& a, const std::string& v) {
         if (v.empty()) throw UsageError("--config: expected an organisation directory");
         a.config_dir = v;
     }},
    {{"--gateway", "unix:P", "check the daemon socket P"},
     [](DoctorArgs& a, const std::string& v) {
         a.gateway_socket = names::gateway_socket_path("--gateway", v);
     }},
};

constexpr const char* kDoctorHead =
    "usage: corral doctor [--json] [--state-dir DIR] [--config ORG] [--gateway unix:PATH]\n\n"
    "Checks, by actually using each one, every kernel feature `corral run` needs:\n"
    "running as root; the pid, mount, network, ipc, uts and cgroup namespaces (unshare in a\n"
    "throwaway child); clone3 with CLONE_PIDFD; pidfd_open and pidfd_send_signal;\n"
    "no_new_privs; a seccomp filter (libseccomp); an overlay mount in a throwaway mount\n"
    "namespace; an rtnetlink socket in a new network namespace; where the memory, pids and\n"
    "cpu cgroup controllers live (v2 or v1); and a real run cgroup with all three limits.\n"
    "Then this host: ID-mapped mounts (a real detached ID-mapped copy of a directory in the\n"
    "state dir), the state dir (missing, or root's and writable by root only), each agent CLI\n"
    "(found under /usr/local/lib/corral-agents, its version against the pinned one), and a\n"
    "gateway daemon's socket when one is configured (--gateway, or --config ORG's [gateway]\n"
    "listen_unix): reachable, and answering a counts query; with --config, the MCP pins store\n"
    "of each worker with MCP servers: readable, and how many tools are quarantined (a warning).\n\n";
constexpr const char* kDoctorTail =
    "\nPrints one line per check:\n"
    "  ok   <feature>: <what was found>\n"
    "  FAIL <feature>: <what is missing> — <what to do>\n"
    "  warn <feature>: <what is missing> — <what to do>   (corral runs without it)\n\n"
    "Exit status: 0 if every required check is ok (warnings do not count), 1 otherwise, 2 on bad usage.\n";

// A value the gateway's options all need.
std::string nonempty(std::string_view option, const std::string& v) {
    if (v.empty()) throw UsageError(std::string(option) + " needs a non-empty value");
    return v;
}

const Option<GatewayArgs> kGatewayOptions[] = {
    {{"--config", "FILE", "gateway TOML ([gateway], [credentials.*], [[grants]]); see docs/gateway.md"},
     [](GatewayArgs& g, const std::string& v) { g.config_path = nonempty("--config", v); }},
    {{"--org", "DIR", "an organisation (DIR/org.toml, DIR/workers/*/worker.toml), validated as\n"
                      "`corral run --config DIR` does: org.toml's [gateway] and [credentials], its\n"
                      "[[grants]], and for every worker the grants its agent implies plus its\n"
                      "worker.toml grants, usable only by that worker's runs (identity WORKER/RUN).\n"
                      "Needs [gateway] listen_unix (default /run/corral/gateway.sock).\n"
                      "A worker whose agent's credential is unavailable is served without its\n"
                      "model grants, with a warning naming it; see docs/gateway.md"},
     [](GatewayArgs& g, const std::string& v) { g.org_dir = nonempty("--org", v); }},
    {{"--threads", "N", "event-loop threads (default: CPUs, at most 4)"},
     [](GatewayArgs& g, const std::string& v) {
         // The text is kept alive: `end` points into it after the call.
         const std::string text = nonempty("--threads", v);
         char* end = nullptr;
         const unsigned long n = std::strtoul(text.c_str(), &end, 10);
         if (*end || n < 1 || n > 64) throw UsageError("--threads \"" + v + "\": expected a number from 1 to 64");
         g.threads = static_cast<unsigned>(n);
     }},
    {{"--grace", "D", "at SIGTERM/SIGINT, how long open connections may take to finish\n"
                      "(default 10s; e.g. 500ms, 30s, 0s)"},
     [](GatewayArgs& g, const std::string& v) {
         try {
             g.grace = parse_duration(nonempty("--grace", v));
         } catch (const UsageError& e) {
             if (v.empty()) throw;
             throw UsageError("--grace \"" + v + "\": " + e.what());
         }
     }},
};

constexpr const char* kGatewayHead =
    "usage: corral gateway (--config FILE | --org DIR) [--threads N] [--grace D]\n"
    "\n"
    "Runs the egress gateway: CONNECT and absolute-form http:// proxy with grants,\n"
    "address vetting, TLS interception with credential injection, limits and a ledger.\n"
    "\n";

// A journal option's value: a file or directory, never empty.
void set_path(std::optional<std::string>& into, const std::string& v, const char* problem) {
    if (v.empty()) throw UsageError(problem);
    into = v;
}

const Option<JournalArgs> kJournalOptions[] = {
    {{"--key", "PUBKEY", "the public key (PEM; `corral key show`); default the state dir's journal/signing.pub,\n"
                         "which proves less: whoever can rewrite the journal there can rewrite it"},
     [](JournalArgs& a, const std::string& v) { set_path(a.key, v, "--key: expected a PEM public key file"); }},
    {{"--run-json", "FILE", "the run.json to compare"},
     [](JournalArgs& a, const std::string& v) { set_path(a.run_json, v, "--run-json: expected a run.json file"); }},
    {{"--ledger", "FILE", "the ledger to compare with the journal's decision records"},
     [](JournalArgs& a, const std::string& v) { set_path(a.ledger, v, "--ledger: expected a ledger file"); }},
    {{"--state-dir", "DIR", "where the key and the runs are; default the state dir the journal is in\n"
                            "(STATE/runs/ID, STATE/journal/gateway), else $CORRAL_STATE_DIR, else /var/lib/corral"},
     [](JournalArgs& a, const std::string& v) { set_path(a.state_dir, v, "--state-dir: expected a directory"); }},
};

constexpr const char* kJournalHead =
    "usage: corral journal verify FILE|RUN_DIR|RUN [--key PUBKEY] [--run-json RUNJSON] [--ledger LEDGER]\n"
    "                             [--state-dir DIR]\n"
    "       corral journal verify JOURNAL_DIR [--key PUBKEY] [--state-dir DIR]\n"
    "\n"
    "Checks a run's journal.jsonl: every line canonical JSON, signed (Ed25519) by the key,\n"
    "chained (prev = SHA-256 of the line before), numbered 1, 2, ... without a gap, and ended\n"
    "by one terminal record; then that run.json (RUNJSON, default: run.json beside FILE, if\n"
    "there is one) and the ledger (LEDGER, default: ledger.jsonl beside FILE when the run's\n"
    "gateway journalled its decisions there) agree with the journal, that every log whose\n"
    "SHA-256 a record holds (the run's, each exec's) is still that file, and that the state\n"
    "dir gives FILE's directory to the run the journal names. The first bad record or file is\n"
    "named, with why; a good journal's run is named (id, admission time). A run dir means its\n"
    "journal.jsonl, a RUN (id, unique part, session name) that run's. The verdict names the key\n"
    "and where it was read; a journal signed with another key is told from a changed one.\n"
    "A directory (the daemon's STATE_DIR/journal/gateway) is checked as one chain: each\n"
    "YYYY-MM-DD.N.jsonl, oldest first, must verify, have ended (all but the newest), and\n"
    "name the file before it and the SHA-256 of that file's last line in its admission.\n";

const Option<ValidateArgs> kValidateOptions[] = {
    {{"--config", "DIR", "organisation directory: DIR/org.toml and DIR/workers/NAME/worker.toml"},
     [](ValidateArgs& v, const std::string& d) { v.dir = d; }},
    {{"--worker", "NAME", "show only this worker"}, [](ValidateArgs& v, const std::string& w) { v.only = w; }},
    {{"--skip-secrets", "", "check that needed credentials are defined, not that their secrets are readable here"},
     [](ValidateArgs& v, const std::string&) { v.skip_secrets = true; }},
    {{"--json", "", "print one JSON object (diagnostics, workers, daemon) instead of the text; same exit status"},
     [](ValidateArgs& v, const std::string&) { v.as_json = true; }},
};

}  // namespace

ValidateArgs parse_validate_args(int argc, char** argv) {
    ValidateArgs v;
    CommandLine line = parse_options<ValidateArgs>({"corral validate"}, kValidateOptions, argc, argv, v);
    v.help = line.help;
    if (v.help) return v;
    if (!line.positionals.empty())
        throw UsageError("unexpected argument \"" + line.positionals.front() + "\"; corral validate takes only options");
    if (v.dir.empty()) throw UsageError("--config DIR is required");
    return v;
}

std::span<const OptionSpec> validate_option_specs() { return option_specs_of<kValidateOptions>(); }

const std::string& validate_help() {
    static const std::string text =
        help_with_options("usage: corral validate --config DIR [--worker NAME] [--skip-secrets] [--json]\n",
                          validate_option_specs(), 19) +
        "exit status: 0 every worker could start, 2 a problem (each named), bad usage\n";
    return text;
}

DoctorArgs parse_doctor_args(int argc, char** argv) {
    DoctorArgs a;
    CommandLine line = parse_options<DoctorArgs>({"corral doctor"}, kDoctorOptions, argc, argv, a);
    a.help = line.help;
    if (!a.help && !line.positionals.empty())
        throw UsageError("unexpected argument \"" + line.positionals.front() + "\"; corral doctor takes only options");
    return a;
}

std::span<const OptionSpec> doctor_option_specs() { return option_specs_of<kDoctorOptions>(); }

const std::string& doctor_help() {
    static const std::string text = help_with_options(kDoctorHead, doctor_option_specs(), 21) + kDoctorTail;
    return text;
}

GatewayArgs parse_gateway_args(int argc, char** argv) {
    GatewayArgs g;
    g.threads = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
    CommandLine line = parse_options<GatewayArgs>({"corral gateway"}, kGatewayOptions, argc, argv, g);
    g.help = line.help;
    if (g.help) return g;
    if (!line.positionals.empty())
        throw UsageError("unexpected argument \"" + line.positionals.front() +
                         "\"; expected: --config FILE | --org DIR, [--threads N], [--grace D]");
    if (!g.config_path.empty() && !g.org_dir.empty())
        throw UsageError("--config and --org: give one of them, not both");
    if (g.config_path.empty() && g.org_dir.empty()) throw UsageError("--config FILE or --org DIR is required");
    return g;
}

std::span<const OptionSpec> gateway_option_specs() { return option_specs_of<kGatewayOptions>(); }

const std::string& gateway_help() {
    static const std::string text =
        help_with_options(kGatewayHead, gateway_option_specs(), 18) +
        "\nUnix clients (listen_unix, root peers only) first send \"CORRAL-IDENTITY worker/run\\n\".\n"
        "TCP clients (listen_tcp, for tests and benchmarks) are served only if their socket is root's.\n"
        "Prints \"listening unix:PATH\" / \"listening tcp:ADDR:PORT\" once ready.\n"
        "SIGHUP reopens the ledger; SIGTERM/SIGINT stop accepting, let open connections finish\n"
        "(at most --grace), then exit 0.\n";
    return text;
}

JournalArgs parse_journal_args(int argc, char** argv) {
    JournalArgs a;
    CommandLine line = parse_options<JournalArgs>({"corral journal"}, kJournalOptions, argc, argv, a);
    a.help = line.help;
    if (a.help) return a;
    if (line.positionals.size() > 1)
        throw UsageError("one FILE only; got \"" + line.positionals[0] + "\" and \"" + line.positionals[1] + "\"");
    if (line.positionals.empty()) throw UsageError("missing FILE (a run's journal.jsonl)");
    a.file = line.positionals.front();
    return a;
}

std::span<const OptionSpec> journal_option_specs() { return option_specs_of<kJournalOptions>(); }

const std::string& journal_help() {
    static const std::string text = help_with_options(kJournalHead, journal_option_specs(), 20) +
                                    "exit status: 0 valid, 1 incomplete (no terminal record yet), 3 invalid, 2 bad usage\n";
    return text;
}

}  // namespace corral::cli
