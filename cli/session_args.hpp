// cli/session_args.hpp — the command lines of `corral exec` and `corral
// session start|stop|ls` (start's options are `corral run`'s,
// run/request.hpp, less a command's own, plus --name).
#pragma once

#include <span>
#include <string>

#include "base/option_table.hpp"
#include "run/exec_protocol.hpp"

namespace corral::cli {

// What `corral exec` was asked: the request for the session, the session's
// handle and the state dir.
struct ExecArgs {
    run::ExecRequest request;
    std::string state_dir;  // default run::default_state_dir()
    std::string key;
    bool help = false;
};
// Options, then ID, then CMD ARGS... (after `--` or the next word). Throws
// UsageError naming the option; what needs the terminal is the caller's to check.
ExecArgs parse_exec_args(int argc, char** argv);
std::span<const OptionSpec> exec_option_specs();
const std::string& exec_help();

// `corral session start`'s options, for the docs (its parser is run::parse_session_request).
std::span<const OptionSpec> session_start_option_specs();
const std::string& session_help();

}  // namespace corral::cli
