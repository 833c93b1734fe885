// run/request_parse.cpp — argv → RunRequest for `corral run` and `corral
// session start`: one option loop over the option table (options.cpp), the
// options that must or must not go together, and a session's host paths
// anchored to the caller's directory.
#include <cctype>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/option_table.hpp"
#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "names/box_environment.hpp"
#include "run/request.hpp"

namespace corral::run {

namespace {

// The options that must, or must not, go together.
void check_combination(const RunRequest& r) {
    if (r.prompt && r.prompt_file) throw UsageError("--prompt and --prompt-file: give one of them, not both");
    if (r.agent() && !r.worker)
        throw UsageError("--prompt needs --config DIR --worker NAME (the worker says which agent runs)");
    if (r.worker && !r.config_dir) throw UsageError("--worker " + *r.worker + " needs --config DIR");
    if (r.config_dir && !r.worker) throw UsageError("--config needs --worker NAME (whose grants apply)");
    if (r.system_prompt_file && !r.agent())
        throw UsageError("--system-prompt-file applies only to an agent run (--prompt)");
    if (r.agent() && !r.command.empty())
        throw UsageError("--prompt runs the worker's agent: give either --prompt or `-- CMD`, not both");
    // An agent run's proxy, CA, home, sentinel credentials and telemetry
    // switches are corral's: overriding one would break the run or put a
    // real key in the box (worker.toml's [env] refuses the same names). A
    // `-- CMD` run keeps --env as the operator's last word.
    if (r.agent())
        for (const auto& kv : r.env)
            if (names::is_reserved_env(kv.first))
                throw UsageError("--env " + kv.first +
                                 ": set by corral itself in an agent run (proxy, CA, agent home, credentials or "
                                 "telemetry); allowed: any other variable");
    if (!r.allow.empty() && r.gateway)
        throw UsageError("--allow " + r.allow.front().text +
                         ": a `corral gateway` daemon (--gateway) serves its organisation's grants only; give --allow "
                         "without --gateway, or add the grant to the daemon's org.toml");
    if (r.ask && r.gateway)
        throw UsageError("--ask: a `corral gateway` daemon (--gateway) decides with its organisation's grants "
                         "only; give --ask without --gateway, or give the daemon's grant `approval = true`");
    if (r.capture_only && r.capture == false)
        throw UsageError("--capture-only and --no-capture: --capture-only takes the proxy variables away and leaves "
                         "capture as the box's only way out; give one of them");
    if (r.review && !r.workspace)
        throw UsageError("--review reviews the workspace: give --workspace DIR with it");
    if (r.tty && r.pass_stdin)
        throw UsageError("--tty and --stdin: --tty already makes the terminal CMD's stdin; give one of them");
    if (r.tty && r.agent())
        throw UsageError("--tty and --prompt: --prompt runs the agent non-interactively (its JSON lines to "
                         "stdout.jsonl); for the agent's interactive terminal UI run `corral run --tty --config DIR "
                         "--worker NAME -- CLI`");
    // image:NAME without a command runs the image's Entrypoint + Cmd (resolve_run).
    const bool image_command = r.rootfs && std::holds_alternative<names::ImageRootfs>(*r.rootfs);
    if (r.command.empty() && !r.help && !r.agent() && !image_command && !r.session)
        throw UsageError("missing command: expected `corral run [OPTIONS] -- CMD [ARGS...]`");
    if (!r.command.empty() && r.command.front().empty())
        throw UsageError("empty command name: expected `corral run [OPTIONS] -- CMD [ARGS...]`");
}

}  // namespace

namespace {

bool valid_session_name(const std::string& n);

// The option loop both parsers share (base/option_table.hpp over the run's
// table, and a session's --name after it); the command (after `--` or the
// first non-option) goes to r.command.
void parse_options(int argc, char** argv, RunRequest& r) {
    const CommandSyntax syntax{r.session ? "corral session start" : "corral run", 0, docker_habit};
    const auto table = run_option_table();
    std::vector<OptionSpec> specs(run_option_specs().begin(), run_option_specs().end());
    if (r.session) specs.push_back(session_name_option());
    CommandLine line = parse_command_line(syntax, specs, argc, argv, [&](std::size_t row, const std::string& v) {
        if (row < table.size()) return table[row].apply(r, v);
        if (!valid_session_name(v))
            throw UsageError("--name \"" + v + "\": expected a lower-case letter or digit, then up to 39 of [a-z0-9-]");
        r.session_name = v;
    });
    if (line.help) r.help = true;
    r.command = std::move(line.command);
}

bool valid_session_name(const std::string& n) {
    if (n.empty() || n.size() > 40 || !(std::islower(static_cast<unsigned char>(n[0])) || std::isdigit(static_cast<unsigned char>(n[0]))))
        return false;
    for (char c : n)
        if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-'))
            return false;
    return true;
}

}  // namespace

// The caller's directory joined to a relative host path (not normalised: the
// kernel would walk "a/../b" through a's target, and so does the result).
void anchor_to_cwd(std::string& path) {
    if (!path.empty() && path.front() != '/') path = std::filesystem::current_path().string() + "/" + path;
}
void anchor_to_cwd(std::optional<std::string>& path) {
    if (path) anchor_to_cwd(*path);
}

// A session's supervisor leaves the caller's directory (chdir "/") before it
// reads any path, so the host paths are anchored to the caller's directory
// while the caller's process still has it: they mean what they mean to
// `corral run` started there.
void anchor_host_paths(RunRequest& r) {
    // --rootfs DIR was made absolute when parsed; its text as given is what
    // run.json records for a session refused before its plan.
    if (auto* dir = r.rootfs ? std::get_if<names::DirRootfs>(&*r.rootfs) : nullptr) anchor_to_cwd(dir->given);
    for (auto* p : {&r.workspace, &r.run_dir, &r.state_dir, &r.config_dir, &r.prompt_file, &r.system_prompt_file})
        anchor_to_cwd(*p);
    for (auto& b : r.binds) anchor_to_cwd(b.source);
}

RunRequest parse_run_request(int argc, char** argv) {
    RunRequest r;
    parse_options(argc, argv, r);
    check_combination(r);
    return r;
}

RunRequest parse_session_request(int argc, char** argv) {
    RunRequest r;
    r.session = true;
    parse_options(argc, argv, r);
    if (!r.command.empty())
        throw UsageError("a session takes no command (\"" + r.command.front() +
                         "\"): start it, then run commands in it with `corral exec ID -- CMD`");
    if (r.agent()) throw UsageError("--prompt: give the prompt to an exec of the session, not to `session start`");
    if (r.pass_stdin) throw UsageError("--stdin: a session has no stdin of its own");
    if (r.tty) throw UsageError("--tty: a session has no terminal of its own");
    check_combination(r);
    anchor_host_paths(r);
    return r;
}

}  // namespace corral::run
