#include "tools/run_agent.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "base/log.hpp"
#include "base/regular_file.hpp"
#include "base/sys_error.hpp"
#include "config/gateway_config.hpp"
#include "gateway/gateway.hpp"
#include "gateway/identity.hpp"
#include "rootfs/host_paths.hpp"
#include "rootfs/mount_plan.hpp"
#include "rootfs/trust_store.hpp"
#include "shim/bridge.hpp"

namespace corral::cli {

namespace fs = std::filesystem;
using namespace corral::supervisor;

namespace {

// Where the box finds corral's CA: the full bundle (image's or host's roots
// plus corral's CA) for tools that replace the default store (SSL_CERT_FILE,
// CURL_CA_BUNDLE, ...), the CA alone for Node's "extra" certificates.
constexpr const char* kBundleInBox = "/etc/ssl/certs/ca-certificates.crt";
constexpr const char* kCaInBox = "/etc/corral/ca.crt";

constexpr const char* kEgressHelp = R"(
network and agents (docs/architecture.md "The bridge"):
  Every run's only way out is a proxy on 127.0.0.1:3128 and [::1]:3128 inside
  the box (HTTP(S)_PROXY and friends are set), served by corral's gateway with
  the run's identity WORKER/RUN-ID. When a grant injects credentials (or with
  --gateway) the box trusts corral's CA; otherwise its own trust store is kept.
  Without --config there are no grants: every request is refused with 403 and logged.
  --config DIR           organisation directory (org.toml, workers/NAME/worker.toml)
  --worker NAME          the worker whose grants, credentials, limits and agent apply
  --prompt TEXT          run the worker's agent CLI on TEXT (instead of CMD)
  --prompt-file F        the same, prompt read from F (a regular file of at
                         most 4 MiB, named without any symbolic link on the
                         way: root reads it, and F may lie where an agent wrote;
                         no NUL bytes; the CLI takes the prompt as one command-
                         line argument, which Linux caps at 131071 bytes: for
                         codex the system prompt and the prompt together)
  --system-prompt-file F system prompt for the agent (same rules as F)
  --gateway unix:PATH    hand connections to a running `corral gateway` daemon
                         (identity announced per connection) instead of the
                         gateway embedded in this process
  An agent run streams the CLI's JSON lines to <run-dir>/stdout.jsonl and to
  stdout; the embedded gateway's ledger is <run-dir>/ledger.jsonl.
)";

// SB-A's options that take a value (so their value is never taken for CMD).
const std::set<std::string_view> kRunValueOptions = {"--rootfs", "--workspace", "--run-dir", "--state-dir",
                                                     "--memory", "--pids",      "--cpus",    "--timeout",
                                                     "--env",    "--hostname",  "--uid-range", "--log-limit"};

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

void require_argv_fits_exec(const AgentProfile& p, AgentKind kind, std::size_t prompt_bytes,
                            std::size_t system_prompt_bytes) {
    std::size_t total = 0;
    for (const auto& a : p.argv) {
        total += a.size() + 1 + sizeof(char*);
        if (a.size() <= kMaxArgBytes) continue;
        throw PromptError("one argument of " + std::string(to_string(kind)) + "'s command line would be " +
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

std::string read_optional_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return {};
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// Hands the agent its home (written before the UID was leased). Never
// follows a symlink: the tree was written by us, but be strict anyway.
void chown_tree(const std::string& root, uid_t uid, gid_t gid) {
    check_sys(::lchown(root.c_str(), uid, gid), "lchown", root);
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it)
        check_sys(::lchown(it->path().c_str(), uid, gid), "lchown", it->path().string());
}

}  // namespace

const char* egress_help_text() { return kEgressHelp; }

RunOptions parse_run_command(int argc, char** argv, EgressOptions& eg) {
    std::vector<std::string> rest;
    rest.emplace_back(argc > 0 ? argv[0] : "run");
    bool command_started = false;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (command_started) {
            rest.push_back(arg);
            continue;
        }
        if (arg == "--" || arg.size() < 2 || arg[0] != '-') {
            command_started = true;
            rest.push_back(arg);
            continue;
        }
        std::string name = arg;
        std::optional<std::string> inline_value;
        if (auto eq = arg.find('='); eq != std::string::npos && arg.starts_with("--")) {
            name = arg.substr(0, eq);
            inline_value = arg.substr(eq + 1);
        }
        auto value = [&]() -> std::string {
            if (inline_value) return *inline_value;
            if (i + 1 >= argc) throw UsageError(name + ": missing value; see `corral run --help`");
            return argv[++i];
        };
        auto nonempty = [&](std::string v) {
            if (v.empty()) throw UsageError(name + ": empty value");
            return v;
        };
        if (name == "--config") eg.config_dir = nonempty(value());
        else if (name == "--worker") eg.worker = nonempty(value());
        else if (name == "--prompt") {
            eg.prompt = value();
            if (eg.prompt->empty()) throw UsageError("--prompt: empty; the agent needs a task");
        }
        else if (name == "--prompt-file") eg.prompt_file = nonempty(value());
        else if (name == "--system-prompt-file") eg.system_prompt_file = nonempty(value());
        else if (name == "--gateway") {
            std::string v = value();
            if (!v.starts_with("unix:") || v.size() <= 5 || v[5] != '/')
                throw UsageError("--gateway: got \"" + v + "\", expected unix:/ABSOLUTE/PATH of a `corral gateway` socket");
            eg.gateway = v.substr(5);
        } else {
            if (name == "--rootfs") eg.rootfs_given = true;
            rest.push_back(arg);
            if (!inline_value && kRunValueOptions.count(name) && i + 1 < argc) rest.emplace_back(argv[++i]);
        }
    }
    if (eg.prompt && eg.prompt_file) throw UsageError("--prompt and --prompt-file: give one of them, not both");
    if (eg.agent() && !eg.worker)
        throw UsageError("--prompt needs --config DIR --worker NAME (the worker says which agent runs)");
    if (eg.worker && !eg.config_dir) throw UsageError("--worker " + *eg.worker + " needs --config DIR");
    if (eg.config_dir && !eg.worker) throw UsageError("--config needs --worker NAME (whose grants apply)");
    if (eg.system_prompt_file && !eg.agent()) throw UsageError("--system-prompt-file applies only to an agent run (--prompt)");
    // The command starts at the first argument that is neither an option nor an option's value.
    bool has_command = false;
    for (std::size_t i = 1; i < rest.size(); ++i) {
        if (rest[i] == "--") {
            has_command = i + 1 < rest.size();
            break;
        }
        if (rest[i].empty() || rest[i][0] != '-') {
            has_command = true;
            break;
        }
        if (rest[i].find('=') == std::string::npos && kRunValueOptions.count(rest[i])) ++i;
    }
    if (eg.agent() && has_command)
        throw UsageError("--prompt runs the worker's agent: give either --prompt or `-- CMD`, not both");
    if (eg.agent()) rest.insert(rest.end(), {"--", "corral-agent"});  // replaced by the agent's argv
    std::vector<char*> ptrs;
    for (auto& s : rest) ptrs.push_back(s.data());
    RunOptions opts;
    try {
        opts = parse_run_options(static_cast<int>(ptrs.size()), ptrs.data());
    } catch (const UsageError& e) {
        // The sandbox options' parser lists only its own options; an operator
        // who mistyped one of these needs to see them too.
        std::string text = e.what();
        if (!text.starts_with("unknown option ")) throw;
        auto end = text.rfind(", --help");
        if (end == std::string::npos) throw;
        text.insert(end, ", --config, --worker, --prompt, --prompt-file, --system-prompt-file, --gateway");
        throw UsageError(text);
    }
    if (eg.agent()) opts.command.clear();
    // An agent run's proxy, CA, home, sentinel credentials and telemetry
    // switches are corral's: overriding one would break the run or put a
    // real key in the box (worker.toml's [env] refuses the same names). A
    // `-- CMD` run keeps --env as the operator's last word.
    if (eg.agent())
        for (const auto& kv : opts.env)
            if (config::is_reserved_env(kv.first))
                throw UsageError("--env " + kv.first +
                                 ": set by corral itself in an agent run (proxy, CA, agent home, credentials or "
                                 "telemetry); allowed: any other variable");
    return opts;
}

RunEgress::RunEgress(EgressOptions eg, const RunOptions& opts, std::string run_id, std::string run_dir,
                     std::string state_dir)
    : eg_(std::move(eg)), opts_(opts), run_id_(std::move(run_id)), run_dir_(std::move(run_dir)),
      state_dir_(std::move(state_dir)) {
    // run.json names the worker asked for, also when the run is refused before it is resolved.
    if (eg_.worker) worker_ = *eg_.worker;
}

RunEgress::~RunEgress() { stop(); }

void RunEgress::prepare(SandboxSpec& spec) {
    // Checked first, as launch_sandbox would, so that --rootfs is named the
    // same way with or without --config (the CA bundles and the agent's CLI
    // are looked up in it before launch).
    if (spec.rootfs.image != "host") rootfs::require_directory("--rootfs", spec.rootfs.image);
    config::GatewayConfig gw;
    if (eg_.config_dir) {
        org_ = config::load_org(eg_.config_dir->c_str());
        for (const auto& w : org_->warnings) log::warn(w.text());
        resolved_ = config::resolve_worker(*org_, *eg_.worker);
        worker_ = resolved_->name;
        gw = org_->gateway;
    } else {
        gw.gateway.state_dir = state_dir_;
    }
    // The embedded gateway keeps its CA here (created 0755 by path): it must
    // be a root-only tree, and no workspace may reach it.
    rootfs::require_root_only_tree(eg_.config_dir ? "[gateway] state_dir" : "--state-dir", gw.gateway.state_dir + "/ca");
    spec.rootfs.protected_dirs.push_back(gw.gateway.state_dir);
    // What decides the next run's grants is never in reach of this run's
    // agent: a workspace may not be, contain or lie in the org directory (an
    // agent that could edit worker.toml would grant itself hosts next time).
    if (eg_.config_dir)
        spec.rootfs.protected_dirs.push_back(std::filesystem::absolute(*eg_.config_dir).lexically_normal().string());
    if (!gateway::parse_identity(identity()))
        throw UsageError("identity " + identity() + ": worker and run id must be made of [A-Za-z0-9._-]");

    std::string left_out;  // said once the run is known to go ahead without the agent's grants
    if (resolved_) {
        AgentKind kind = resolved_->agent;
        auto cred = config::credential_status(gw, required_credential(kind).name);
        if (eg_.agent()) {
            // Before anything starts: a run that cannot authenticate is refused here.
            check_agent_credential(worker_, kind, gw);
        }
        std::vector<config::Grant> implied;
        if (cred.available)
            implied = implied_grants(kind, credential_mode_for(cred.kind), worker_);
        else
            left_out = "worker " + worker_ + ": credential '" + required_credential(kind).name + "' not available (" +
                       cred.problem + "); the agent's model grants are left out of this run";
        gw.grants = worker_grants(*resolved_, implied);
    }

    if (eg_.gateway) {
        // The daemon holds grants, credentials and the ledger; the box needs its CA.
        daemon_socket_ = *eg_.gateway;
        struct stat st{};
        if (::stat(daemon_socket_.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
            throw UsageError("--gateway unix:" + daemon_socket_ + ": no socket there (is `corral gateway` running?)");
        // The box's traffic goes there: a socket only root can have put in place.
        rootfs::require_root_only_tree("--gateway", daemon_socket_);
        std::string ca_path = gw.gateway.state_dir + "/ca/ca.crt";
        ca_pem_ = read_optional_file(ca_path);
        if (ca_pem_.find("BEGIN CERTIFICATE") == std::string::npos)
            throw UsageError("--gateway: cannot read the gateway's CA certificate " + ca_path +
                             " (the daemon's state_dir: [gateway] state_dir in org.toml with --config, else --state-dir)");
    } else {
        // The embedded gateway's ledger is the run's own: one file per run in
        // the run dir, next to run.json (a shared ledger is the daemon's job).
        gw.gateway.ledger = run_dir_ + "/ledger.jsonl";
        // Only the credentials this run's grants use are loaded (an unrelated
        // unreadable credential must not stop the run).
        std::set<std::string> used;
        for (const auto& g : gw.grants)
            if (!g.credential.empty()) used.insert(g.credential);
        for (auto it = gw.credentials.begin(); it != gw.credentials.end();)
            it = used.count(it->first) ? std::next(it) : gw.credentials.erase(it);
        // A configured grant that needs an unreadable credential stops the
        // run: name that grant (its file:line), not only the credential.
        std::set<std::string> checked;
        for (const auto& g : gw.grants) {
            if (g.credential.empty() || !checked.insert(g.credential).second) continue;
            auto st = config::credential_status(gw, g.credential);
            if (!st.available)
                throw UsageError(g.where + ": the grant for " + g.host + ":" + std::to_string(g.port) +
                                 " needs the credential '" + g.credential + "'" +
                                 (st.source.empty() ? "" : " (" + st.source + ")") + ", which is not available: " +
                                 st.problem + (st.fix.empty() ? "" : "; to fix: " + st.fix));
        }
        // Checked now (a run that cannot authenticate must not start) but kept
        // only from start() on, after the clone: the init and the reaper are
        // copies of this process and must hold no secret (docs/security.md).
        for (auto& [name, secret] : config::load_credential_secrets(gw)) explicit_bzero(secret.data(), secret.size());
        credential_specs_ = gw;
        // Only an inject grant makes the gateway speak TLS to the box with
        // corral's CA; without one the box's trust store stays the image's and
        // the CA is not even loaded (a plain `corral run` has no grants).
        intercepts_ = std::any_of(gw.grants.begin(), gw.grants.end(),
                                  [](const config::Grant& g) { return g.mode == config::GrantMode::inject; });
        gateway_ = std::make_unique<gateway::Gateway>(std::move(gw), std::map<std::string, std::string>{});
        if (!gateway_->ledger().healthy())
            throw UsageError("ledger " + gateway_->ledger().path() + ": " + gateway_->ledger().failure());
        if (intercepts_) ca_pem_ = gateway_->ca_certificate_pem();
    }

    if (!left_out.empty()) log::info(left_out);
    if (eg_.agent()) prepare_agent(spec);
    else if (resolved_) apply_worker(spec, {});
    prepare_trust(spec);
}

void RunEgress::prepare_trust(SandboxSpec& spec) {
    if (!intercepts_) {
        auto env = proxy_environment("", shim::bridge_port);
        env.insert(env.end(), spec.env.begin(), spec.env.end());
        spec.env = std::move(env);
        return;
    }
    spec.rootfs.extra_files.push_back({kCaInBox, ca_pem_, 0644});
    // Every bundle gets corral's CA in the overlay (the image or host stays
    // untouched): image mode, each CA bundle the image has (rootfs/trust_store:
    // Debian, Fedora/RHEL, openSUSE, Alpine names, resolved inside the image,
    // non-blocking, bounded, so an image can neither make root read a host file
    // nor hang it); an image without any gets the host's roots at the Debian
    // path, so tunnelled hosts still verify. Host mode shows the host's
    // /etc/ssl/certs, so its bundle there is the one to overlay.
    std::vector<rootfs::CaBundle> bundles;
    bool image = spec.rootfs.image != "host";
    if (image) bundles = rootfs::find_ca_bundles(spec.rootfs.image, 16u << 20);
    if (bundles.empty() && fs::is_regular_file(kBundleInBox)) bundles.push_back({kBundleInBox, read_optional_file(kBundleInBox)});
    if (bundles.empty() && image) bundles.push_back({kBundleInBox, ""});
    for (const auto& b : bundles) spec.rootfs.extra_files.push_back({b.path, rootfs::append_ca(b.pem, ca_pem_), 0644});
    // Host mode without a host bundle: the CA alone is the store.
    auto env = proxy_environment(bundles.empty() ? kCaInBox : bundles.front().path, shim::bridge_port);
    env.emplace_back("NODE_EXTRA_CA_CERTS", kCaInBox);  // later wins: only the extra cert
    // Put corral's variables first so a worker's env cannot silently override
    // them (config refuses reserved names; --env still wins on purpose).
    env.insert(env.end(), spec.env.begin(), spec.env.end());
    spec.env = std::move(env);
}

void RunEgress::prepare_agent(SandboxSpec& spec) {
    const auto& w = *resolved_;
    AgentInputs in;
    in.run_id = run_id_;
    in.worker = worker_;
    in.prompt = eg_.prompt ? *eg_.prompt : read_text_file("--prompt-file", *eg_.prompt_file);
    if (eg_.system_prompt_file) in.system_prompt = read_text_file("--system-prompt-file", *eg_.system_prompt_file);
    in.model = w.model;
    in.chatgpt_account_id = w.chatgpt_account_id;
    auto cred = config::credential_status(org_->gateway, required_credential(w.agent).name);
    in.credential = credential_mode_for(cred.kind);
    in.home_rel = "home";
    in.home_in_box = "/home/agent";
    AgentProfile p = make_agent_profile(w.agent, in);
    require_argv_fits_exec(p, w.agent, in.prompt.size(), in.system_prompt.size());
    apply_worker_rootfs(spec);
    // Checked before anything is written or started: found missing only after
    // the sandbox is built, the run would end as a bare "command not found".
    if (auto missing = cli_missing_in_rootfs(p, spec.rootfs.image, in.agents_prefix))
        throw AgentProgramNotFound(*missing);

    // The home is written now (owner: root) and handed to the agent's UID in
    // start(), once launch_sandbox has leased it.
    write_agent_home(p, run_dir_, std::nullopt);
    if (!fs::is_directory(run_dir_ + "/home")) {
        std::error_code ec;
        fs::create_directory(run_dir_ + "/home", ec);
        check_sys(::chmod((run_dir_ + "/home").c_str(), 0700), "chmod", run_dir_ + "/home");
    }
    spec.rootfs.home_dir = run_dir_ + "/home";
    spec.stdout_log_name = "stdout.jsonl";  // the CLI's JSON lines, streamed live and kept once
    spec.argv = p.argv;
    if (p.stdin_null) spec.pass_stdin = false;
    apply_worker(spec, p.env);
    // run.json says what ran: null, and why, when the version cannot be read
    // (never the pinned version in its place).
    auto installed = installed_cli_version(p, in.agents_prefix, spec.rootfs.image == "host" ? "/" : spec.rootfs.image);
    cli_version_ = installed.version;
    if (auto note = cli_version_note(p, installed); !note.empty()) messages_.push_back(note);
    profile_ = std::move(p);
}

void RunEgress::apply_worker_rootfs(SandboxSpec& spec) const {
    if (!eg_.rootfs_given && resolved_->rootfs != "host") spec.rootfs.image = resolved_->rootfs;
}

// A worker's settings apply to every run of it, agent or `-- CMD`: the
// command line wins, then worker.toml, then org.toml, then the default.
void RunEgress::apply_worker(SandboxSpec& spec, const std::vector<std::pair<std::string, std::string>>& agent_env) {
    const auto& w = *resolved_;
    apply_worker_rootfs(spec);
    spec.env.clear();
    for (const auto& kv : w.env) spec.env.emplace_back(kv.first, kv.second);
    for (const auto& kv : agent_env) spec.env.push_back(kv);
    for (const auto& kv : opts_.env) spec.env.push_back(kv);  // --env wins
    if (!spec.limits.memory_bytes) spec.limits.memory_bytes = w.limits.memory_bytes;
    if (!spec.limits.pids) spec.limits.pids = w.limits.pids;
    if (!spec.limits.cpus) spec.limits.cpus = w.limits.cpus;
    if (!spec.timeout) spec.timeout = w.limits.timeout;
    if (w.limits.tmp_bytes) spec.rootfs.tmp_size_bytes = *w.limits.tmp_bytes;
}

namespace {
// A relay to the daemon, counted while it runs so that stop() asks the daemon
// for the run's counts only after the relays ended. A plain coroutine (not a
// capturing lambda): its parameters live in its own frame.
boost::asio::awaitable<void> counted_relay(boost::asio::ip::tcp::socket s, std::string path, std::string ident,
                                           std::shared_ptr<std::atomic<int>> active) {
    active->fetch_add(1);
    co_await shim::relay_to_daemon(std::move(s), std::move(path), std::move(ident));
    active->fetch_sub(1);
}
}  // namespace

void RunEgress::start(const Sandbox& box) {
    started_ = true;
    if (profile_) chown_tree(run_dir_ + "/home", box.uid(), box.gid());
    Fd netns = box.open_network_namespace();
    shim::BridgeListeners listeners = shim::open_bridge_listeners(netns.get());
    // One event-loop thread: a run's box is one client, its exchanges are
    // asynchronous, and every thread is a clone and a wakeup on each start
    // and stop of a run (the daemon runs one loop per CPU instead).
    ioc_ = std::make_unique<boost::asio::io_context>(1);
    shim::ConnectionHandler handler;
    if (gateway_) {
        gateway::Identity id{worker_, run_id_};
        gateway::Gateway* gw = gateway_.get();
        handler = [gw, id](boost::asio::ip::tcp::socket s) { return gw->serve(std::move(s), id); };
    } else {
        std::string path = daemon_socket_, ident = identity();
        auto active = active_relays_;
        handler = [path, ident, active](boost::asio::ip::tcp::socket s) {
            return counted_relay(std::move(s), path, ident, active);
        };
    }
    if (gateway_) gateway_->install_secrets(config::load_credential_secrets(credential_specs_));
    bridge_ = std::make_unique<shim::Bridge>(*ioc_, std::move(listeners), std::move(handler));
    bridge_->start();
    auto guard = std::make_shared<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
        ioc_->get_executor());
    for (int i = 0; i < 1; ++i)
        threads_.emplace_back([this, guard] { gateway::run_event_loop(*ioc_, "bridge event loop", gateway_.get()); });
    // The guard lives as long as any thread holds it; stop() ends the loop explicitly.
}

void RunEgress::stop() {
    if (stopped_) return;
    stopped_ = true;
    if (bridge_) bridge_->stop();
    if (!gateway_ && ioc_) {
        // Daemon mode: the box is gone, its relays see EOF and end; the
        // daemon counts an exchange when it ends, so ask only after them.
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
        while (active_relays_->load() > 0 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (gateway_ && ioc_) {
        // The box is gone (supervise returned after init exited), so its
        // connections are closed; give the exchanges a moment to write their
        // ledger lines.
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
        while (gateway_->active_connections() > 0 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (ioc_) ioc_->stop();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
    bridge_.reset();
    if (gateway_) gateway_->close_idle_upstreams();  // while ioc_ (their reactor) exists
    if (gateway_) {
        gateway_->ledger().sync();
        requests_ = gateway_->ledger().requests(identity());
        refusals_ = gateway_->ledger().refusals(identity());
    } else if (started_ && !daemon_socket_.empty()) {
        std::string problem;
        if (auto counts = shim::query_daemon_counts(daemon_socket_, identity(), std::chrono::milliseconds(2000), &problem))
            daemon_counts_ = std::make_unique<shim::DaemonCounts>(*counts);
        else
            stop_messages_.push_back(problem + "; requests and refusals recorded as null");
    }
}

nlohmann::json RunEgress::record_fields() const {
    using nlohmann::json;
    // The mode as configured (--gateway or not), whether or not the run got
    // that far; counts only from a gateway that served this run.
    json gw{{"mode", eg_.gateway ? "unix:" + *eg_.gateway : std::string("embedded")}};
    if (!eg_.gateway) {
        gw["ledger"] = gateway_ ? json(run_dir_ + "/ledger.jsonl") : json(nullptr);
        gw["requests"] = gateway_ && started_ ? json(requests_) : json(nullptr);
        gw["refusals"] = gateway_ && started_ ? json(refusals_) : json(nullptr);
    } else {
        // The daemon keeps the ledger (its lines carry this identity) and the
        // counts, asked for at stop(); null if it could not be asked.
        gw["ledger"] = nullptr;
        gw["requests"] = daemon_counts_ ? json(daemon_counts_->requests) : json(nullptr);
        gw["refusals"] = daemon_counts_ ? json(daemon_counts_->refusals) : json(nullptr);
    }
    json out{{"worker", worker_}, {"identity", identity()}, {"gateway", gw}};
    // An agent run names its agent once the worker is resolved, even when it
    // was refused before the CLI's profile was made.
    out["agent"] = eg_.agent() && resolved_ ? json(std::string(config::to_string(resolved_->agent))) : json(nullptr);
    out["cli_version"] = profile_ && cli_version_ ? json(*cli_version_) : json(nullptr);
    return out;
}

}  // namespace corral::cli
