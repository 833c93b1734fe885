// tools/cmd_doctor.cpp — `corral doctor`: probe every kernel feature corral
// needs (supervisor/doctor.hpp), then what this host holds for it: the state
// dir, the agent CLIs, and a configured gateway daemon's socket.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/sys_error.hpp"
#include "base/terminal_text.hpp"
#include "agents/agent_profile.hpp"
#include "config/org_config.hpp"
#include "gateway/identity.hpp"
#include "journal/key.hpp"
#include "run/request.hpp"
#include "run/bridge.hpp"
#include "run/mcp_pin_store.hpp"
#include "run/state_dir.hpp"
#include "supervisor/doctor.hpp"
#include "cli/admin_args.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

int doctor_bad_usage(const std::string& problem) {
    std::fprintf(stderr, "corral doctor: %s; see `corral doctor --help`\n", problem.c_str());
    return 2;
}

// Each agent CLI corral can run, where `corral run --prompt` would look on
// this host. Not required: `-- CMD` runs need none.
std::vector<supervisor::Check> check_agent_clis() {
    std::vector<supervisor::Check> out;
    for (auto kind : {config::AgentKind::pi, config::AgentKind::claude, config::AgentKind::codex}) {
        agents::AgentInputs in;
        in.run_id = "doctor";
        in.worker = "doctor";
        auto profile = agents::make_agent_profile(kind, in);
        supervisor::Check c;
        c.feature = "agent CLI " + std::string(config::to_string(kind));
        c.required = false;
        if (auto missing = agents::cli_missing_in_rootfs(profile, names::HostRootfs{}, in.agents_prefix)) {
            c.detail = *missing;
            c.remedy = "sudo tools/install-npm-deps.sh (pinned " + std::string(agents::pinned_cli_version(kind)) +
                       "); only agent runs (--prompt) of this agent need it";
        } else {
            auto installed = agents::installed_cli_version(profile, in.agents_prefix, "/");
            const std::string note = agents::cli_version_note(profile, installed);
            c.ok = note.empty();
            c.detail = "found, version " + installed.version.value_or("unknown") + " (pinned " +
                       agents::pinned_cli_version(kind) + ")" + (note.empty() ? "" : ": " + note);
            if (!c.ok) c.remedy = "sudo tools/install-npm-deps.sh installs the pinned version";
        }
        out.push_back(std::move(c));
    }
    return out;
}

// The daemon's socket answers a counts query (any identity: the daemon
// answers zeros for one it never saw).
supervisor::Check check_daemon_socket(const std::string& socket, const std::string& where) {
    supervisor::Check c;
    c.feature = "gateway daemon";
    auto id = gateway::parse_identity("doctor/probe");
    auto counts = run::query_daemon_counts(socket, *id, std::chrono::milliseconds(2000));
    c.ok = counts.has_value();
    if (c.ok) {
        c.detail = "unix:" + socket + " (" + where + ") answers" +
                   (counts->ledger_failure.empty() ? ", its ledger ok" : ", but its ledger failed: " + counts->ledger_failure);
        if (!counts->ledger_failure.empty()) {
            c.ok = false;
            c.remedy = "fix the ledger's file system and restart `corral gateway`";
        }
    } else {
        c.detail = "unix:" + socket + " (" + where + "): " + counts.problem();
        c.remedy = "start it (systemctl start corral-gateway, or `corral gateway --org ORG`), or fix the path";
    }
    return c;
}

// The journal key's public half (journal/key.hpp), for the operator to keep
// off the host: a warning when there is none yet (the first `corral key init`
// makes it). Doctor only reads: it never creates a key. Returns the PEM.
template <typename Add>
std::string add_journal_key_check(const std::string& state_dir, Add&& add) {
    journal::KeyFiles files = journal::key_files(state_dir);
    try {
        journal::PublicKey key = journal::PublicKey::from_file(files.pub_path);
        // One line per check: the PEM's one base64 line (an Ed25519 key's
        // SubjectPublicKeyInfo fits in one), whole in --json.
        std::string pem = key.pem(), body;
        for (std::size_t pos = 0; pos < pem.size();) {
            std::size_t eol = std::min(pem.find('\n', pos), pem.size());
            if (pem.compare(pos, 5, "-----") != 0) body += pem.substr(pos, eol - pos);
            pos = eol + 1;
        }
        add(supervisor::Check{"journal key", true,
                              key.fingerprint() + " " + body + " in " + files.pub_path + " (PEM: corral key show)", "",
                              false});
        return pem;
    } catch (const std::exception& e) {
        add(supervisor::Check{"journal key", false, e.what(), "corral key init --state-dir " + state_dir, false});
        return {};
    }
}

// The state dir's checks: the ID-mapping probe makes, chowns and mounts a
// directory where it is pointed: in the state dir only once that is known
// to be root's alone (else in /run/corral), so the state dir is checked first.
std::string add_state_dir_checks(const DoctorArgs& a, const std::function<void(supervisor::Check)>& add) {
    std::string dir;
    try {
        dir = a.state_dir ? *a.state_dir : run::default_state_dir();
    } catch (const std::exception& e) {
        add(supervisor::Check{"state dir", false, e.what(), "unset CORRAL_STATE_DIR or name a directory", true});
    }
    if (dir.empty()) return {};
    supervisor::Check state = supervisor::check_state_dir(dir);
    add(supervisor::check_idmapped_mounts(state.ok ? dir : "/run/corral"));
    add(std::move(state));
    return add_journal_key_check(dir, add);
}

// The gateway daemon a run would use: --gateway's, else the organisation's listen_unix.
void add_gateway_check(const DoctorArgs& a, const std::function<void(supervisor::Check)>& add) {
    if (a.gateway_socket) {
        add(check_daemon_socket(*a.gateway_socket, "--gateway"));
        return;
    }
    if (!a.config_dir) return;
    try {
        config::OrgConfig org = config::load_org(*a.config_dir);
        if (org.gateway.gateway.listen_unix.empty())
            add(supervisor::Check{"gateway daemon", true, *a.config_dir + "/org.toml has no [gateway] listen_unix", "", true});
        else
            add(check_daemon_socket(org.gateway.gateway.listen_unix, *a.config_dir + "/org.toml [gateway] listen_unix"));
    } catch (const std::exception& e) {
        add(supervisor::Check{"gateway daemon", false, std::string("--config ") + *a.config_dir + ": " + e.what(),
                              "fix the organisation (corral validate --config ORG)", true});
    }
}

// The MCP pins stores of the organisation's workers that have MCP servers
// (run/mcp_pin_store.hpp): each readable (an unreadable one stops every run
// of its worker), and how many tools are quarantined (a warning: their calls
// are refused until `corral mcp trust`). Only with --config.
void add_mcp_pins_check(const DoctorArgs& a, const std::function<void(supervisor::Check)>& add) {
    if (!a.config_dir) return;
    supervisor::Check c{"MCP pins", true, "", "", true};
    std::size_t workers = 0, tools = 0, quarantined = 0;
    try {
        config::OrgConfig org = config::load_org(*a.config_dir);
        const std::string state =
            run::require_private_state_dir("[gateway] state_dir", org.gateway.gateway.state_dir);
        for (const auto& [name, wc] : org.workers) {
            if (config::resolve_worker(org, name).tools.empty()) continue;
            ++workers;
            const std::string dir = run::open_pin_store_dir("[gateway] state_dir", state, name, false);
            if (dir.empty()) continue;
            for (const auto& [key, p] : run::PinStore(dir).read()) ++tools, quarantined += !p.quarantined.empty();
        }
    } catch (const std::exception& e) {
        c.ok = false;
        c.detail = e.what();
        c.remedy = "fix or restore the store named (corral mcp ls --config " + *a.config_dir + ")";
        return add(std::move(c));
    }
    if (workers == 0) return;
    c.detail = std::to_string(workers) + " worker(s) with MCP servers, " + std::to_string(tools) + " tool(s) pinned, " +
               std::to_string(quarantined) + " quarantined";
    if (quarantined) {
        c.ok = false;
        c.required = false;
        c.remedy = "review them with `corral mcp ls --config " + *a.config_dir +
                   "` and accept a changed tool with `corral mcp trust`";
    }
    add(std::move(c));
}

void print_doctor_json(const std::vector<supervisor::Check>& checks, bool all_ok, int status,
                       const std::string& journal_key_pem) {
    nlohmann::json out{{"ok", all_ok}, {"exit_status", status}, {"checks", nlohmann::json::array()}};
    out["journal_public_key"] = journal_key_pem.empty() ? nlohmann::json() : nlohmann::json(journal_key_pem);
    for (const auto& c : checks)
        out["checks"].push_back({{"name", c.feature}, {"status", supervisor::check_status(c)}, {"detail", c.detail},
                                 {"remedy", c.remedy}, {"required", c.required}});
    std::printf("%s\n", terminal_json(out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)).c_str());
}

}  // namespace

int cmd_doctor(int argc, char** argv) {
    DoctorArgs a;
    try {
        a = parse_doctor_args(argc, argv);
    } catch (const UsageError& e) {
        return doctor_bad_usage(e.what());
    }
    if (a.help) return std::fputs(doctor_help().c_str(), stdout), 0;
    std::vector<supervisor::Check> checks;
    bool all_ok = true;
    // Each check is printed as it is made (some take a moment), or kept for --json.
    auto add = [&](supervisor::Check c) {
        if (!a.as_json) {
            std::printf("%s\n", terminal_text(supervisor::format_check(c)).c_str());
            std::fflush(stdout);
        }
        all_ok = all_ok && (c.ok || !c.required);
        checks.push_back(std::move(c));
    };
    for (auto& c : supervisor::run_doctor_checks()) add(std::move(c));
    const std::string journal_key_pem = add_state_dir_checks(a, add);
    for (auto& c : check_agent_clis()) add(std::move(c));
    add_gateway_check(a, add);
    add_mcp_pins_check(a, add);
    const int status = all_ok ? 0 : 1;
    if (a.as_json) print_doctor_json(checks, all_ok, status, journal_key_pem);
    return status;
}

}  // namespace corral::cli
