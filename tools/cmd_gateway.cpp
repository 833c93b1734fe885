// tools/cmd_gateway.cpp — `corral gateway --config FILE | --org DIR`: the
// egress gateway daemon.
//
// Configuration: either a stand-alone gateway file (--config: [gateway],
// [credentials.*], [[grants]] exactly as written), or an organisation (--org:
// loaded and validated as `corral run --config DIR` does; it serves every
// worker the grants its runs would get from an embedded gateway, scoped to
// that worker: agents::org_gateway_config).
//
// The daemon itself (listeners, threads, signals, the protocol) is
// gateway/daemon.hpp; this file is its command line: the configuration, the
// checks of the paths root will write, and --threads / --grace.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <variant>

#include "agents/agent_profile.hpp"
#include "base/log.hpp"
#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "cli/admin_args.hpp"
#include "config/gateway_config.hpp"
#include "config/org_config.hpp"
#include "gateway/daemon.hpp"
#include "gateway/daemon_claim.hpp"
#include "journal/day_journal.hpp"
#include "journal/key.hpp"
#include "rootfs/host_paths.hpp"
#include "run/worker_tools.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

// The gateway configuration of an organisation, with what it serves told on stderr.
config::GatewayConfig org_config(const std::string& dir) {
    config::OrgConfig org = config::load_org(dir);
    for (const auto& w : org.warnings) log::warn(w.text());
    auto plan = agents::org_gateway_config(org, agents::agent_credential_status(org));
    for (const auto& line : plan.left_out) log::warn("gateway: " + line);
    for (const auto& [name, wc] : org.workers) {
        std::string hosts;
        // Its own: the grants added after org.toml's (which keep their identities).
        for (std::size_t i = org.gateway.grants.size(); i < plan.config.grants.size(); ++i) {
            const auto& g = plan.config.grants[i];
            if (g.identities == std::vector<std::string>{name})
                hosts += (hosts.empty() ? "" : ", ") + g.host.text() + ":" + std::to_string(g.port);
        }
        const config::ResolvedWorker w = config::resolve_worker(org, name);
        const std::string agent = w.egress_only ? std::string("no agent") : std::string(config::to_string(w.agent));
        log::info("gateway: worker " + name + " (" + agent + "): " + (hosts.empty() ? std::string("no grants of its own") : hosts));
        if (auto t = plan.config.worker_tools.find(name); t != plan.config.worker_tools.end()) {
            std::string servers;
            for (const auto& [server, sc] : t->second.servers)
                servers += (servers.empty() ? "" : ", ") + server +
                           (std::holds_alternative<mcp::StdioServer>(sc.transport) ? " (stdio: not served by the daemon)" : "");
            log::info("gateway: worker " + name + ": MCP servers " + servers);
        }
    }
    return std::move(plan.config);
}

}  // namespace

namespace {
// --config takes a stand-alone gateway file; an organisation's org.toml given
// there fails on its [engine] (or its missing [gateway]): say what was meant.
config::GatewayConfig load_standalone_config(const std::string& path) {
    try {
        return config::load_gateway_config(path);
    } catch (const config::ConfigError& e) {
        std::string text = e.what();
        const bool org_name = std::filesystem::path(path).filename() == "org.toml";
        if (!org_name && text.find("unknown key 'engine'") == std::string::npos) throw;
        auto dir = std::filesystem::path(path).parent_path().string();
        auto eol = text.find('\n');
        text.insert(eol == std::string::npos ? text.size() : eol,
                    "; this looks like an organisation's org.toml: use corral gateway --org " + (dir.empty() ? "." : dir));
        throw config::ConfigError(text);
    }
}

// A malformed command line: one line naming the problem, exit 2 (as every
// corral subcommand), not the 125 of a gateway that failed to start.
int gateway_bad_usage(const std::string& problem) {
    std::fprintf(stderr, "corral gateway: %s (see corral gateway --help)\n", problem.c_str());
    return 2;
}
// The daemon journal's admission: what this daemon serves, never a secret
// (credentials by name only).
nlohmann::json daemon_admission(const config::GatewayConfig& cfg, const std::string& source, unsigned threads) {
    nlohmann::json grants = nlohmann::json::array();
    for (const auto& g : cfg.grants) {
        nlohmann::json routes = nlohmann::json::array();
        for (const auto& r : g.routes) routes.push_back(r.text);
        grants.push_back({{"host", g.host.text()},
                          {"port", g.port},
                          {"mode", std::string(config::to_string(g.mode))},
                          {"credential", g.credential},
                          {"routes", routes},
                          {"identities", g.identities},
                          {"connect_to", g.connect_to}});
    }
    return {{"kind", "gateway_daemon"},
            {"config", source},
            {"pid", static_cast<long long>(::getpid())},
            {"threads", threads},
            {"listen_unix", cfg.gateway.listen_unix},
            {"listen_tcp", cfg.gateway.listen_tcp},
            {"ledger", cfg.gateway.ledger},
            {"grants", grants},
            {"started_at", journal::utc_time(std::chrono::system_clock::now())}};
}

// The CA key, the ledger and the socket are written by root by path: only in
// trees nobody but root can change (rootfs/host_paths.hpp). The full paths:
// a file root creates must not land in a directory others can write, even a
// sticky one (they could plant it first).
void require_root_only_paths(const config::GatewayConfig& cfg) {
    rootfs::require_root_only_tree("[gateway] state_dir", cfg.gateway.state_dir + "/ca");
    if (!cfg.gateway.ledger.empty()) {
        rootfs::require_root_only_tree("[gateway] ledger", cfg.gateway.ledger);
        // The ledger is opened without following links: say so now, not as a
        // refusal of every request later. Its directory is made here if new.
        struct stat lst {};
        if (::lstat(cfg.gateway.ledger.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
            throw UsageError("[gateway] ledger " + cfg.gateway.ledger + ": is a symbolic link; name the file itself");
        (void)rootfs::open_root_only_dir("[gateway] ledger",
                                         std::filesystem::path(cfg.gateway.ledger).parent_path().string(), 0700);
    }
    if (!cfg.gateway.listen_unix.empty()) {
        rootfs::require_root_only_tree("[gateway] listen_unix", cfg.gateway.listen_unix);
        // The default socket's directory (/run/corral) is gone after a reboot: made here (0755) if missing.
        (void)rootfs::open_root_only_dir("[gateway] listen_unix",
                                         std::filesystem::path(cfg.gateway.listen_unix).parent_path().string(), 0755);
    }
}

// The daemon with its signed journal (docs/journal.md "The daemon's
// journal"): what it serves, then every decision, then how it stopped.
int serve_with_journal(config::GatewayConfig cfg, const std::string& source, const GatewayArgs& g) {
    std::vector<std::string> notes;
    auto day_journal = journal::DayJournal::open(cfg.gateway.state_dir + "/journal/gateway",
                                                 journal::SigningKey::load_or_create(cfg.gateway.state_dir),
                                                 daemon_admission(cfg, source, g.threads), notes);
    for (const auto& n : notes) log::info("gateway: " + n);
    log::info("gateway: journal " + day_journal->path());
    auto mcp_tools = run::daemon_worker_tools(cfg);
    gateway::DaemonOptions options{std::move(cfg), source, g.threads, g.grace, day_journal->decision_sink(),
                                   std::move(mcp_tools)};
    int status;
    try {
        status = gateway::serve_daemon(std::move(options));
    } catch (const std::exception& e) {
        day_journal->end("failed_to_start", {{"error", e.what()}});
        throw;
    }
    day_journal->end("stopped", {{"exit_status", status}});
    return status;
}

}  // namespace

int cmd_gateway(int argc, char** argv) {
    GatewayArgs g;
    try {
        g = parse_gateway_args(argc, argv);
    } catch (const UsageError& e) {
        return gateway_bad_usage(e.what());
    }
    if (g.help) return std::fputs(gateway_help().c_str(), stdout), 0;
    auto cfg = g.org_dir.empty() ? load_standalone_config(g.config_path) : org_config(g.org_dir);
    const std::string source = g.org_dir.empty() ? g.config_path : cfg.file;
    require_root_only_paths(cfg);
    // One daemon per state dir and socket, claimed before either is touched:
    // a second one must not recover the first's live journal as lost nor,
    // stopping, remove the socket the first serves (gateway/daemon_claim.hpp).
    (void)rootfs::open_root_only_dir("[gateway] state_dir", cfg.gateway.state_dir, 0700);
    const auto claim = gateway::DaemonClaim::take(cfg.gateway.state_dir, cfg.gateway.listen_unix);
    // A closed stderr must not kill the daemon at its first log line (the
    // daemon ignores SIGPIPE for its sockets anyway).
    ::signal(SIGPIPE, SIG_IGN);
    if (!cfg.gateway.journal) {
        log::warn("gateway: " + source + ": journal = false: decisions go to the ledger only, unsigned; "
                  "nothing will prove they were not edited (docs/journal.md)");
        auto mcp_tools = run::daemon_worker_tools(cfg);
        return gateway::serve_daemon({std::move(cfg), source, g.threads, g.grace, {}, std::move(mcp_tools)});
    }
    return serve_with_journal(std::move(cfg), source, g);
}

}  // namespace corral::cli
