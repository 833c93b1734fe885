#include "run/agent_run.hpp"

#include "run/bridge.hpp"

#include "rootfs/mount_plan.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/regular_file.hpp"
#include "mcp/servers.hpp"

namespace corral::run {

namespace fs = std::filesystem;

namespace {

// --prompt-file and --system-prompt-file may sit in a workspace an earlier
// agent wrote: root reads them without following links (a planted link would
// hand a root-only file to the box and the model provider), without blocking
// on a FIFO, and at most 4 MiB.
std::string read_text_file(const std::string& option, const std::string& path) {
    auto text = read_regular_file({option, path, PathWalk::no_symlinks, "", 4u << 20});
    if (!text) throw UsageError(option + " " + path + ": no such file");
    // The text becomes a command-line argument, which ends at the first NUL:
    // the rest would be dropped without a word.
    if (auto nul = text->find('\0'); nul != std::string::npos)
        throw PromptError(option + " " + path + ": a NUL byte at offset " + std::to_string(nul) +
                          "; allowed: text without NUL bytes");
    if (option == "--prompt-file" && text->find_first_not_of(" \t\r\n") == std::string::npos)
        throw PromptError(option + " " + path + ": empty (or only white space); the agent needs a task");
    return *text;
}

// Linux caps one execve argument at MAX_ARG_STRLEN (32 pages, the NUL
// included) and all of them with the environment at ARG_MAX; a longer
// prompt would fail at execve, after the sandbox was built, as E2BIG.
constexpr std::size_t kMaxArgBytes = 32 * 4096 - 1;

void require_argv_fits_exec(const agents::AgentProfile& p, config::AgentKind kind, std::size_t prompt_bytes,
                            std::size_t system_prompt_bytes) {
    std::size_t total = 0;
    for (const auto& a : p.argv) {
        total += a.size() + 1 + sizeof(char*);
        if (a.size() <= kMaxArgBytes) continue;
        throw PromptError("one argument of " + std::string(config::to_string(kind)) + "'s command line would be " +
                          std::to_string(a.size()) + " bytes (the prompt is " + std::to_string(prompt_bytes) +
                          " bytes, the system prompt " + std::to_string(system_prompt_bytes) +
                          "); Linux allows at most " + std::to_string(kMaxArgBytes) +
                          " bytes per argument (MAX_ARG_STRLEN); allowed: shorter texts, or a file in the "
                          "workspace that the prompt tells the agent to read");
    }
    long arg_max = ::sysconf(_SC_ARG_MAX);
    // The environment still has to fit beside the arguments: keep 64 KiB for it.
    if (arg_max > 0 && total + (64u << 10) > static_cast<std::size_t>(arg_max))
        throw PromptError("the agent's command line is " + std::to_string(total) + " bytes; with its environment it " +
                          "must stay under ARG_MAX (" + std::to_string(arg_max) + " bytes here)");
}

// The CLI itself (its binary, or node and its script: the profile's version
// command without "--version"), the worker's model, then the caller's
// arguments after the CLI's name; no prompt, no non-interactive switches.
std::vector<std::string> interactive_argv(const agents::AgentProfile& p, const config::ResolvedWorker& w,
                                          const std::vector<std::string>& command) {
    std::vector<std::string> argv(p.version_argv.begin(), p.version_argv.end() - 1);
    if (!w.model.empty()) argv.insert(argv.end(), {"--model", w.model});
    argv.insert(argv.end(), command.begin() + 1, command.end());
    return argv;
}

}  // namespace

AgentRun prepare_agent_run(const RunRequest& r, const RunInputs& in, const RunPlan& plan) {
    const config::ResolvedWorker& w = *in.worker;
    const bool session = r.session;          // each exec --prompt brings its own prompt
    const bool interactive = !r.agent() && !session;  // interactive_agent_run: `--tty -- CLI ARGS...`
    agents::AgentInputs ai;
    ai.run_id = in.run_id;
    ai.worker = plan.worker;
    if (r.agent()) ai.prompt = r.prompt ? *r.prompt : read_text_file("--prompt-file", *r.prompt_file);
    if (r.system_prompt_file) ai.system_prompt = read_text_file("--system-prompt-file", *r.system_prompt_file);
    ai.model = w.model;
    ai.chatgpt_account_id = w.chatgpt_account_id;
    ai.credential = agents::credential_mode_for(in.agent_credential.kind);
    ai.home_rel = "home";
    ai.home_in_box = "/home/agent";
    // Its MCP servers as corral's endpoints on the box's MCP listener, a
    // stdio one's as a remote one's (its process is in a box of its own).
    for (const auto& [name, server] : plan.gateway.tools.servers) ai.mcp.servers.push_back(name);
    if (plan.builtin_tools) ai.mcp.servers.push_back(std::string(mcp::kBuiltinServerName));
    ai.mcp.port = mcp_bridge_port;
    AgentRun out;
    out.profile = agents::make_agent_profile(w.agent, ai);
    out.inputs = ai;
    const agents::AgentProfile& p = out.profile;
    if (!session) require_argv_fits_exec(p, w.agent, ai.prompt.size(), ai.system_prompt.size());
    const auto& spec = plan.spec;
    // Checked before anything is written or started: found missing only after
    // the sandbox is built, the run would end as a bare "command not found".
    // An image's layers are looked at top first: the CLI is there if a layer has it.
    const bool host = std::holds_alternative<names::HostRootfs>(spec.rootfs.source);
    std::string cli_root = host ? "/" : names::to_string(spec.rootfs.source);
    if (host) {
        if (auto missing = agents::cli_missing_in_rootfs(p, spec.rootfs.source, ai.agents_prefix))
            throw AgentProgramNotFound(*missing);
    } else {
        std::optional<std::string> missing;
        bool found = false;
        for (const auto& dir : rootfs::image_lookup_dirs(spec.rootfs)) {
            missing = agents::cli_missing_in_rootfs(p, names::DirRootfs{dir, dir}, ai.agents_prefix);
            if (!missing) {
                cli_root = dir;
                found = true;
                break;
            }
        }
        if (!found) throw AgentProgramNotFound(missing.value_or("no layers to look in: " + names::to_string(spec.rootfs.source)));
    }

    // The home is written now (owner: root) and handed to the agent's UID at
    // the hook point, once launch_sandbox has leased it.
    agents::write_agent_home(p, in.run_dir, std::nullopt);
    const std::string home = *spec.rootfs.home_dir;  // resolve_run's, for every run with an agent
    if (!fs::is_directory(home)) {
        std::error_code ec;
        fs::create_directory(home, ec);
        check_sys(::chmod(home.c_str(), 0700), "chmod", home);
    }
    if (!session) out.argv = interactive ? interactive_argv(p, w, r.command) : p.argv;
    // run.json says what ran: null, and why, when the version cannot be read
    // (never the pinned version in its place).
    auto installed = agents::installed_cli_version(p, ai.agents_prefix, cli_root);
    out.cli_version = installed.version;
    if (auto note = agents::cli_version_note(p, installed); !note.empty()) out.messages.push_back(note);
    return out;
}

std::vector<std::string> agent_prompt_argv(const AgentRun& agent, const std::string& prompt) {
    if (prompt.find_first_not_of(" \t\r\n") == std::string::npos)
        throw PromptError("--prompt: empty (or only white space); the agent needs a task");
    if (prompt.find('\0') != std::string::npos) throw PromptError("--prompt: a NUL byte; allowed: text without NUL bytes");
    agents::AgentInputs ai = agent.inputs;
    ai.prompt = prompt;
    agents::AgentProfile p = agents::make_agent_profile(agent.profile.kind, ai);
    require_argv_fits_exec(p, agent.profile.kind, ai.prompt.size(), ai.system_prompt.size());
    return p.argv;
}

std::string read_prompt_file(const std::string& option, const std::string& path) { return read_text_file(option, path); }

void hand_agent_home(const std::string& root, uid_t uid, gid_t gid) {
    check_sys(::lchown(root.c_str(), uid, gid), "lchown", root);
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it)
        check_sys(::lchown(it->path().c_str(), uid, gid), "lchown", it->path().string());
}

}  // namespace corral::run
