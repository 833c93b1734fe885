// oci/cli_args.hpp — the OCI runtime command line as runc shapes it, which
// is what engines call (docs/oci-runtime.md "The command line"):
//
//   corral-oci [GLOBAL OPTIONS] COMMAND [OPTIONS] ID [ARGS]
//
// GLOBAL OPTIONS come before COMMAND (--root, --log, --log-format,
// --systemd-cgroup, --debug, --version); each COMMAND has a table of its
// own (base/option_table.hpp). Pure: parsing names the option or argument
// that is wrong (UsageError); what a command does is the front's.
#pragma once

#include <csignal>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corral::oci {

// Where container records live unless --root says otherwise (on tmpfs, as
// runc's /run/runc: a reboot forgets them, and the boxes with them).
inline constexpr std::string_view kDefaultStateRoot = "/run/corral-oci";

enum class OciCommand { help, version, create, start, state, kill, delete_, features, exec, ps, pause, resume, list };
std::string_view to_string(OciCommand c);

enum class LogFormat { text, json };

struct GlobalArgs {
    std::string root{kDefaultStateRoot};
    std::optional<std::string> log;   // --log FILE: the runtime's own messages (engines read the last error there)
    LogFormat log_format = LogFormat::text;
    bool debug = false;
    // --systemd-cgroup, --cgroup-manager systemd|cgroupfs: accepted and
    // ignored: the box's cgroup is corral's own, whatever linux.cgroupsPath
    // says (config.json's cgroupsPath is replaced too).
    bool systemd_cgroup = false;
    bool version = false;             // --version / -v: the command is OciCommand::version
    // Node settings an engine does not pass but an operator's wrapper can:
    // the state dir of the boxes' runs and the UIDs they lease (checked by
    // the front, which knows the rules: run/state_dir.hpp, supervisor/uid_lease.hpp).
    std::optional<std::string> state_dir;
    std::optional<std::string> uid_range;
    // The organisation directories a bundle may choose with its
    // io.corral.config annotation: they hold grants and credentials, and a
    // pod spec is not the node operator's (features.json lists the
    // annotation as potentially unsafe).
    std::vector<std::string> allowed_configs;
    // The node's default: a container whose annotations choose no
    // organisation directory is this one's; with no worker either, it is
    // default_worker's run (every container of the node behind one worker's
    // grants without a pod spec having to say so).
    std::optional<std::string> default_config;
    std::optional<std::string> default_worker;
    // --gateway unix:PATH: the node's `corral gateway` daemon, every box's
    // way out (the run's --gateway); unset: each supervisor embeds one.
    std::optional<std::string> gateway_socket;
};

struct OciArgs {
    GlobalArgs global;
    OciCommand command = OciCommand::help;
    bool help = false;                   // COMMAND --help
    std::string id;                      // the container (every command but help, version, features, list)
    // create
    std::string bundle = ".";
    std::optional<std::string> pid_file;        // create, exec
    std::optional<std::string> console_socket;  // create, exec
    bool no_pivot = false;                      // accepted: corral always pivots (pivot_root)
    bool no_new_keyring = false;                // accepted: the box's seccomp denies the keyring calls
    unsigned preserve_fds = 0;                  // create, exec
    // kill
    int signal = SIGTERM;
    bool all = false;
    // delete
    bool force = false;
    // exec
    std::optional<std::string> process_file;    // --process F: the spec's process JSON
    bool detach = false;
    bool tty = false;
    std::optional<std::string> cwd;
    std::vector<std::pair<std::string, std::string>> env;
    std::vector<std::string> exec_args;         // ARGS after ID (without --process)
    // ps, list
    bool json = false;
    std::vector<std::string> ps_options;
    bool quiet = false;
};

// argv[0] is the program. Throws UsageError naming the option or argument.
OciArgs parse_oci_args(int argc, char** argv);

// "KILL", "SIGKILL", "9", "sigkill": the signal's number. Throws UsageError.
int parse_signal(std::string_view text);

// The program's --help, and a command's.
std::string oci_help_text();
std::string oci_command_help(OciCommand c);

// pause and resume: what the front answers (corral does not freeze boxes).
std::string_view unsupported_command_reason(OciCommand c);

}  // namespace corral::oci
