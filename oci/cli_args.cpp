// oci/cli_args.cpp — the option tables of corral-oci's global options and
// commands (data tables), their --help and their parsers.
#include "oci/cli_args.hpp"

#include <string.h>

#include <array>
#include <span>

#include "base/option_table.hpp"
#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "names/gateway_address.hpp"
#include "oci/state.hpp"

namespace corral::oci {

namespace {

using GlobalOption = Option<GlobalArgs>;
using CommandOption = Option<OciArgs>;

const GlobalOption kGlobalOptions[] = {
    // Repeatable, the last one wins (as runc's): an operator's wrapper may
    // name a root and the engine its own after it.
    {{"--root", "DIR", "where container records are kept (default /run/corral-oci; the last one given wins)", {}, true},
     [](GlobalArgs& g, const std::string& v) { g.root = v; }},
    {{"--log", "FILE", "append the runtime's messages to FILE (default: stderr)"},
     [](GlobalArgs& g, const std::string& v) { g.log = v; }},
    {{"--log-format", "FORMAT", "text or json (one object per line, as engines read it)"},
     [](GlobalArgs& g, const std::string& v) {
         if (v != "text" && v != "json") throw UsageError("--log-format: \"" + v + "\": expected text or json");
         g.log_format = v == "json" ? LogFormat::json : LogFormat::text;
     }},
    {{"--state-dir", "DIR", "corral's state dir for the boxes' runs (default corral's own: `corral ps` lists them)"},
     [](GlobalArgs& g, const std::string& v) {
         if (v.empty() || v.front() != '/') throw UsageError("--state-dir: \"" + v + "\": expected an absolute path");
         g.state_dir = v;
     }},
    {{"--allow-config", "DIR", "an organisation directory a bundle's io.corral.config annotation may name\n"
                               "(repeatable; none: such annotations are refused)", {}, true},
     [](GlobalArgs& g, const std::string& v) {
         if (v.empty() || v.front() != '/') throw UsageError("--allow-config: \"" + v + "\": expected an absolute path");
         g.allowed_configs.push_back(v);
     }},
    {{"--default-config", "DIR", "the organisation directory of a container whose annotations name none"},
     [](GlobalArgs& g, const std::string& v) {
         if (v.empty() || v.front() != '/') throw UsageError("--default-config: \"" + v + "\": expected an absolute path");
         g.default_config = v;
     }},
    {{"--default-worker", "NAME", "the worker of a container whose annotations name none (with --default-config)"},
     [](GlobalArgs& g, const std::string& v) { g.default_worker = v; }},
    {{"--gateway", "unix:PATH", "every box's egress through the node's `corral gateway` daemon at PATH (its\n"
                                "identity worker/run) instead of a gateway embedded in each supervisor"},
     [](GlobalArgs& g, const std::string& v) { g.gateway_socket = names::gateway_socket_path("--gateway", v); }},
    {{"--uid-range", "FIRST-LAST", "the UIDs the boxes lease (default corral's)"},
     [](GlobalArgs& g, const std::string& v) { g.uid_range = v; }},
    {{"--debug", "", "log debug messages too"}, [](GlobalArgs& g, const std::string&) { g.debug = true; }},
    {{"--systemd-cgroup", "", "accepted, changes nothing: the box's cgroup is corral's own"},
     [](GlobalArgs& g, const std::string&) { g.systemd_cgroup = true; }},
    {{"--cgroup-manager", "MANAGER", "cgroupfs or systemd: accepted, changes nothing (disabled is refused:\n"
                                     "every box has its cgroup)"},
     [](GlobalArgs& g, const std::string& v) {
         if (v != "cgroupfs" && v != "systemd")
             throw UsageError("--cgroup-manager: \"" + v + "\": expected cgroupfs or systemd; corral always "
                              "gives the box a cgroup of its own");
         g.systemd_cgroup = v == "systemd";
     }},
    {{"--rootless", "VALUE", "false or auto: corral runs as root (true is refused)"},
     [](GlobalArgs&, const std::string& v) {
         if (v != "false" && v != "auto")
             throw UsageError("--rootless: \"" + v + "\": expected false or auto; corral-oci runs as root");
     }},
    {{"--version", "", "print the version and the runtime spec version", "-v"},
     [](GlobalArgs& g, const std::string&) { g.version = true; }},
};

void store_preserve_fds(OciArgs& a, const std::string& v) {
    if (v.empty() || v.size() > 4 || v.find_first_not_of("0123456789") != std::string::npos)
        throw UsageError("--preserve-fds: \"" + v + "\": expected a number of descriptors");
    a.preserve_fds = static_cast<unsigned>(std::stoul(v));
}

const CommandOption kPidFile{{"--pid-file", "FILE", "write the container process's PID to FILE"},
                             [](OciArgs& a, const std::string& v) { a.pid_file = v; }};
const CommandOption kConsoleSocket{{"--console-socket", "SOCKET",
                                    "send the master of the box's pty to this Unix socket"},
                                   [](OciArgs& a, const std::string& v) { a.console_socket = v; }};
const CommandOption kPreserveFds{{"--preserve-fds", "N", "pass N more descriptors (after stdio) to the process"},
                                 store_preserve_fds};

const CommandOption kCreateOptions[] = {
    {{"--bundle", "DIR", "the bundle: DIR/config.json and its root (default: .)", "-b"},
     [](OciArgs& a, const std::string& v) { a.bundle = v; }},
    kPidFile,
    kConsoleSocket,
    {{"--no-pivot", "", "accepted: corral always enters the root with pivot_root"},
     [](OciArgs& a, const std::string&) { a.no_pivot = true; }},
    {{"--no-new-keyring", "", "accepted: the box cannot use the kernel keyring at all"},
     [](OciArgs& a, const std::string&) { a.no_new_keyring = true; }},
    kPreserveFds,
};

const CommandOption kKillOptions[] = {
    {{"--all", "", "signal every process of the box, not only its init", "-a"},
     [](OciArgs& a, const std::string&) { a.all = true; }},
};

const CommandOption kDeleteOptions[] = {
    {{"--force", "", "kill a box that still runs, then delete it", "-f"},
     [](OciArgs& a, const std::string&) { a.force = true; }},
};

const CommandOption kExecOptions[] = {
    {{"--process", "FILE", "the process to run, as the spec's process JSON", "-p"},
     [](OciArgs& a, const std::string& v) { a.process_file = v; }},
    {{"--detach", "", "return once the process runs", "-d"}, [](OciArgs& a, const std::string&) { a.detach = true; }},
    kPidFile,
    kConsoleSocket,
    {{"--tty", "", "run the process on a pty of the box's", "-t"}, [](OciArgs& a, const std::string&) { a.tty = true; }},
    {{"--cwd", "DIR", "the process's working directory in the box"},
     [](OciArgs& a, const std::string& v) { a.cwd = v; }},
    {{"--env", "NAME=VALUE", "set a variable (repeatable)", "-e", true},
     [](OciArgs& a, const std::string& v) { a.env.push_back(parse_env_pair(v)); }},
    kPreserveFds,
};

const CommandOption kFormatOption{{"--format", "FORMAT", "table or json", "-f"}, [](OciArgs& a, const std::string& v) {
                                      if (v != "table" && v != "json")
                                          throw UsageError("--format: \"" + v + "\": expected table or json");
                                      a.json = v == "json";
                                  }};
const CommandOption kPsOptions[] = {kFormatOption};
const CommandOption kListOptions[] = {
    kFormatOption,
    {{"--quiet", "", "print the ids only", "-q"}, [](OciArgs& a, const std::string&) { a.quiet = true; }},
};

struct CommandRow {
    OciCommand command;
    std::string_view name;
    std::string_view usage;   // after "corral-oci NAME"
    std::string_view summary;
    std::span<const CommandOption> options;
    bool takes_id;
};

const CommandRow kCommands[] = {
    {OciCommand::create, "create", "[OPTIONS] ID", "build the box from a bundle; its process waits for start",
     kCreateOptions, true},
    {OciCommand::start, "start", "ID", "start the created container's process", {}, true},
    {OciCommand::state, "state", "ID", "print the container's state (the spec's JSON)", {}, true},
    {OciCommand::kill, "kill", "[--all] ID [SIGNAL]", "signal the container (default SIGTERM)", kKillOptions, true},
    {OciCommand::delete_, "delete", "[--force] ID", "tear the box down, verified, and forget the container",
     kDeleteOptions, true},
    {OciCommand::features, "features", "", "print what this runtime supports (the spec's JSON)", {}, false},
    {OciCommand::exec, "exec", "[OPTIONS] ID [--] [ARGS...]", "run another process in the container",
     kExecOptions, true},
    {OciCommand::ps, "ps", "[--format table|json] ID", "list the container's processes", kPsOptions, true},
    {OciCommand::pause, "pause", "ID", "refused: corral does not freeze boxes", {}, true},
    {OciCommand::resume, "resume", "ID", "refused: corral does not freeze boxes", {}, true},
    {OciCommand::list, "list", "[--format table|json] [--quiet]", "list the containers under --root", kListOptions,
     false},
};

const CommandRow* find_command(std::string_view name) {
    for (const auto& row : kCommands)
        if (row.name == name) return &row;
    return nullptr;
}

const CommandRow& command_row(OciCommand c) {
    for (const auto& row : kCommands)
        if (row.command == c) return row;
    throw std::logic_error("oci: no row for a command");
}

std::string command_names() {
    std::string out;
    for (const auto& row : kCommands) out += (out.empty() ? "" : ", ") + std::string(row.name);
    return out;
}

// What a command's positionals (and exec's ARGS) say, checked.
void take_positionals(const CommandRow& row, std::vector<std::string> positionals, std::vector<std::string> rest,
                      OciArgs& args) {
    const std::string prefix = std::string(row.name) + ": ";
    // exec and ps: options end at the ID, as runc's do (`ps ID -o pid`);
    // the ID is the first word of the rest.
    if ((row.command == OciCommand::exec || row.command == OciCommand::ps) && positionals.empty() && !rest.empty()) {
        positionals.push_back(rest.front());
        rest.erase(rest.begin());
        if (!rest.empty() && rest.front() == "--") rest.erase(rest.begin());  // "exec ID -- ls -l"
    }
    if (!row.takes_id) {
        if (!positionals.empty()) throw UsageError(prefix + "takes no argument, got \"" + positionals[0] + "\"");
        return;
    }
    if (positionals.empty()) throw UsageError(prefix + "the container ID is missing; usage: corral-oci " +
                                              std::string(row.name) + " " + std::string(row.usage));
    args.id = positionals[0];
    if (Problem bad = check_container_id(args.id)) throw UsageError(prefix + bad->problem);
    const std::size_t allowed = row.command == OciCommand::kill ? 2 : 1;
    if (positionals.size() > allowed)
        throw UsageError(prefix + "unexpected argument \"" + positionals[allowed] + "\"; usage: corral-oci " +
                         std::string(row.name) + " " + std::string(row.usage));
    if (row.command == OciCommand::kill && positionals.size() == 2) args.signal = parse_signal(positionals[1]);
    if (row.command == OciCommand::ps) args.ps_options = std::move(rest);
    if (row.command != OciCommand::exec) return;
    args.exec_args = std::move(rest);
    if (args.process_file && !args.exec_args.empty())
        throw UsageError("exec: --process and ARGS both given; give the process one way");
    if (!args.process_file && args.exec_args.empty())
        throw UsageError("exec: no process: give --process FILE or ARGS after the ID");
}

void parse_command(const CommandRow& row, std::vector<std::string> words, OciArgs& args) {
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    const std::string command = "corral-oci " + std::string(row.name);
    CommandSyntax syntax{command};
    if (row.command == OciCommand::exec || row.command == OciCommand::ps) syntax.command_after = 0;
    CommandLine line = parse_options<OciArgs>(syntax, row.options, static_cast<int>(argv.size()), argv.data(), args);
    if (line.help) {
        args.help = true;
        return;
    }
    take_positionals(row, std::move(line.positionals), std::move(line.command), args);
}

}  // namespace

std::string_view to_string(OciCommand c) {
    if (c == OciCommand::help) return "help";
    if (c == OciCommand::version) return "--version";
    return command_row(c).name;
}

OciArgs parse_oci_args(int argc, char** argv) {
    OciArgs args;
    CommandSyntax syntax{"corral-oci", 0};
    CommandLine line = parse_options<GlobalArgs>(syntax, kGlobalOptions, argc, argv, args.global);
    if (line.help) return args;
    if (args.global.version) {
        args.command = OciCommand::version;
        return args;
    }
    if (line.command.empty()) throw UsageError("a command is missing; commands are " + command_names());
    const CommandRow* row = find_command(line.command[0]);
    if (!row)
        throw UsageError("unknown command \"" + line.command[0] + "\"; commands are " + command_names() +
                         " (run, update, events, checkpoint, restore and spec are runc's, not corral-oci's)");
    args.command = row->command;
    parse_command(*row, std::move(line.command), args);
    return args;
}

int parse_signal(std::string_view text) {
    const std::string bad = "signal \"" + std::string(text) + "\": expected a name (KILL, SIGTERM) or a number 1-64";
    if (text.empty()) throw UsageError(bad);
    if (text.find_first_not_of("0123456789") == std::string_view::npos) {
        if (text.size() > 2) throw UsageError(bad);
        const int n = std::stoi(std::string(text));
        if (n < 1 || n > SIGRTMAX) throw UsageError(bad);
        return n;
    }
    std::string name = ascii_lower(text);
    if (name.rfind("sig", 0) == 0) name.erase(0, 3);
    for (int n = 1; n < NSIG; ++n) {
        const char* abbrev = sigabbrev_np(n);
        if (abbrev && ascii_lower(abbrev) == name) return n;
    }
    throw UsageError(bad);
}

std::string oci_help_text() {
    std::string out =
        "usage: corral-oci [GLOBAL OPTIONS] COMMAND [OPTIONS] ID [ARGS]\n\n"
        "corral as an OCI runtime, for engines (podman --runtime, containerd's runc shim BinaryName,\n"
        "CRI-O runtime_path). Today it answers --version, features and the parsing of every command;\n"
        "the commands that build, run and tear down boxes are not implemented yet\n"
        "(docs/oci-runtime.md).\n\ncommands:\n";
    for (const auto& row : kCommands)
        out += "  " + std::string(row.name) + std::string(10 - row.name.size(), ' ') + std::string(row.summary) + "\n";
    out += "\nglobal options:\n";
    out += options_help(option_specs(std::span<const GlobalOption>(kGlobalOptions)));
    return out;
}

std::string oci_command_help(OciCommand c) {
    if (c == OciCommand::help || c == OciCommand::version) return oci_help_text();
    const CommandRow& row = command_row(c);
    std::string out = "usage: corral-oci " + std::string(row.name) + " " + std::string(row.usage) + "\n\n" +
                      std::string(row.summary) + "\n";
    if (!row.options.empty()) out += "\noptions:\n" + options_help(option_specs(row.options));
    return out;
}

std::string_view unsupported_command_reason(OciCommand c) {
    if (c == OciCommand::pause || c == OciCommand::resume)
        return "corral does not freeze boxes: a frozen box would hold its gateway connections and budgets "
               "without a deadline; stop it (kill) or delete it instead";
    return {};
}

}  // namespace corral::oci
