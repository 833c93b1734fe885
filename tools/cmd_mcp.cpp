// tools/cmd_mcp.cpp — `corral mcp ls|trust`: each worker's MCP servers and
// the tool pins its runs keep (run/mcp_pin_store.hpp), and the operator's
// acceptance of a quarantined tool's new digest. Strings a server sent (tool
// names) are shown through terminal_text / terminal_json.
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/sys_error.hpp"
#include "base/terminal_text.hpp"
#include "cli/action_front.hpp"
#include "cli/mcp_args.hpp"
#include "config/org_config.hpp"
#include "run/mcp_pin_store.hpp"
#include "run/state_dir.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

using nlohmann::json;

// A worker as `corral mcp` shows it: its servers and the tools known of them.
struct McpWorkerView {
    std::string name;
    std::string store;  // the pins file, "" when no run has kept any
    mcp::ToolsConfig tools;
    run::PinRecords records;
};

std::string state_dir_option(const McpArgs& a) { return a.state_dir ? "--state-dir" : "[gateway] state_dir"; }

// The workers asked for (--worker, else all), each with its store's records.
std::vector<McpWorkerView> read_views(const McpArgs& a, const config::OrgConfig& org, const std::string& state) {
    std::vector<McpWorkerView> out;
    for (const auto& [name, wc] : org.workers) {
        if (a.worker && *a.worker != name) continue;
        McpWorkerView v{name, "", config::resolve_worker(org, name).tools, {}};
        const std::string dir = state.empty() ? "" : run::open_pin_store_dir(state_dir_option(a), state, name, false);
        if (!dir.empty()) {
            run::PinStore store(dir);
            v.records = store.read();
            v.store = store.path();
        }
        out.push_back(std::move(v));
    }
    return out;
}

json server_json(const mcp::Server& s) {
    json o = {{"name", s.name}, {"where", s.where}, {"url", nullptr}, {"argv", nullptr}};
    if (const auto* http = std::get_if<mcp::HttpServer>(&s.transport)) o["transport"] = "http", o["url"] = http->url;
    if (const auto* stdio = std::get_if<mcp::StdioServer>(&s.transport)) o["transport"] = "stdio", o["argv"] = stdio->argv;
    o["tools"] = json::array();
    return o;
}

json record_json(const std::string& tool, const run::PinRecord& p) {
    json q = p.quarantined.empty()
                 ? json(nullptr)
                 : json{{"digest", p.quarantined}, {"at", p.quarantined_at}, {"run", p.quarantined_run}};
    return {{"name", tool}, {"source", "store"}, {"trusted", p.trusted}, {"first_seen", p.first_seen},
            {"run", p.run}, {"quarantined", std::move(q)}};
}

// One worker: its servers (as configured, and any the store still names),
// each with its tools: the configuration's pins first, then the store's.
json worker_json(const McpWorkerView& v) {
    std::map<std::string, json> servers;
    for (const auto& [name, s] : v.tools.servers) servers[name] = server_json(s);
    auto server = [&](const std::string& name) -> json& {
        auto [it, added] = servers.try_emplace(name);
        if (added) it->second = {{"name", name}, {"transport", nullptr}, {"where", nullptr}, {"url", nullptr},
                                 {"argv", nullptr}, {"tools", json::array()}};
        return it->second;
    };
    for (const auto& [key, digest] : v.tools.pins) {
        auto [s, t] = run::split_pin_key(key);
        auto w = v.tools.key_where.find("mcp.pins.\"" + key + "\"");
        server(s)["tools"].push_back({{"name", t}, {"source", "config"}, {"trusted", digest},
                                      {"where", w == v.tools.key_where.end() ? "" : w->second}});
    }
    for (const auto& [key, p] : v.records) {
        if (v.tools.pins.count(key)) continue;  // the configuration outranks the store
        auto [s, t] = run::split_pin_key(key);
        server(s)["tools"].push_back(record_json(t, p));
    }
    json out = {{"name", v.name}, {"store", v.store.empty() ? json(nullptr) : json(v.store)}, {"servers", json::array()}};
    for (auto& [name, s] : servers) out["servers"].push_back(std::move(s));
    return out;
}

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : "-"; }

void print_table(const json& workers) {
    for (const auto& w : workers) {
        std::printf("worker %s (pins: %s)\n", terminal_text(text_of(w["name"])).c_str(),
                    w["store"].is_null() ? "none kept yet" : terminal_text(text_of(w["store"])).c_str());
        if (w["servers"].empty()) std::printf("  no MCP servers\n");
        for (const auto& s : w["servers"]) {
            std::string where = s["url"].is_string() ? text_of(s["url"]) : "";
            if (s["argv"].is_array())
                for (const auto& arg : s["argv"]) where += (where.empty() ? "" : " ") + text_of(arg);
            std::printf("  server %s  %s  %s  (%s)\n", terminal_text(text_of(s["name"])).c_str(),
                        s["transport"].is_null() ? "not configured" : text_of(s["transport"]).c_str(),
                        terminal_text(where.empty() ? "-" : where).c_str(),
                        terminal_text(text_of(s["where"])).c_str());
            if (s["tools"].empty()) continue;
            std::printf("    %-24s %-71s %-24s %s\n", "TOOL", "TRUSTED", "FIRST SEEN", "STATE");
            for (const auto& t : s["tools"]) {
                std::string state = t["source"] == "config" ? "pinned in " + text_of(t["where"]) : "trusted";
                if (t.contains("quarantined") && t["quarantined"].is_object())
                    state = "QUARANTINED: new " + text_of(t["quarantined"]["digest"]) + " seen " +
                            text_of(t["quarantined"]["at"]);
                std::printf("    %-24s %-71s %-24s %s\n", terminal_text(text_of(t["name"])).c_str(),
                            terminal_text(text_of(t["trusted"])).c_str(),
                            terminal_text(t.contains("first_seen") ? text_of(t["first_seen"]) : "-").c_str(),
                            terminal_text(state).c_str());
            }
        }
    }
}

int mcp_ls(const McpArgs& a, const config::OrgConfig& org, const std::string& state) {
    json workers = json::array();
    for (const auto& v : read_views(a, org, state)) workers.push_back(worker_json(v));
    if (a.as_json) {
        json out = {{"state_dir", state}, {"workers", std::move(workers)}};
        std::printf("%s\n", terminal_json(out.dump(2, ' ', false, json::error_handler_t::replace)).c_str());
    } else {
        print_table(workers);
    }
    return 0;
}

// The worker SERVER belongs to: --worker's, else the one worker that has it.
std::string trust_worker(const McpArgs& a, const config::OrgConfig& org, const std::string& server) {
    std::vector<std::string> with;
    for (const auto& [name, wc] : org.workers)
        if ((!a.worker || *a.worker == name) && config::resolve_worker(org, name).tools.servers.count(server))
            with.push_back(name);
    if (with.size() == 1) return with.front();
    if (with.empty())
        throw UsageError(a.worker ? "worker " + *a.worker + " has no MCP server " + server
                                  : "no worker has an MCP server " + server);
    std::string names;
    for (const auto& n : with) names += (names.empty() ? "" : ", ") + n;
    throw UsageError("MCP server " + server + " is a server of workers " + names + "; name one with --worker");
}

// Why DIGEST is not accepted for the record (nullopt: it is).
std::optional<std::string> trust_refusal(const McpArgs& a, const run::PinRecords& records) {
    auto it = records.find(a.key);
    if (a.force) return std::nullopt;
    if (it == records.end())
        return "no run has seen " + a.key + " yet, so nothing is quarantined (--force trusts " + a.digest +
               " before its first sight)";
    const run::PinRecord& p = it->second;
    if (p.quarantined.empty())
        return a.key + " is not quarantined; it is trusted as " + p.trusted +
               (p.trusted == a.digest ? " already" : " (--force replaces it with " + a.digest + ")");
    if (p.quarantined != a.digest)
        return a.key + " was quarantined with the new digest " + p.quarantined + ", not " + a.digest +
               " (--force trusts " + a.digest + " anyway)";
    return std::nullopt;
}

int mcp_trust(const McpArgs& a, const config::OrgConfig& org, const std::string& worker, const std::string& state_dir) {
    const mcp::ToolsConfig tools = config::resolve_worker(org, worker).tools;
    if (tools.pins.count(a.key)) {
        auto w = tools.key_where.find("mcp.pins.\"" + a.key + "\"");
        std::fprintf(stderr, "corral mcp: worker %s: %s is pinned in the configuration (%s), which outranks the "
                     "store: change the pin there\n", worker.c_str(), terminal_text(a.key).c_str(),
                     w == tools.key_where.end() ? "[mcp.pins]" : w->second.c_str());
        return 1;
    }
    const std::string state = run::make_private_dir(state_dir_option(a), state_dir, run::DirRole::state);
    run::PinStore store(run::open_pin_store_dir(state_dir_option(a), state, worker, /*create=*/true));
    std::optional<std::string> refused;
    store.update([&](run::PinRecords& records) {
        refused = trust_refusal(a, records);
        if (refused) return false;
        run::PinRecord& p = records[a.key];
        const bool seen = p.quarantined == a.digest;
        p.first_seen = seen ? p.quarantined_at : run::pin_store_now();
        p.run = seen ? p.quarantined_run : "";
        p.trusted = a.digest;
        p.quarantined.clear(), p.quarantined_at.clear(), p.quarantined_run.clear();
        return true;
    });
    if (refused) {
        std::fprintf(stderr, "corral mcp: worker %s: %s\n", worker.c_str(), terminal_text(*refused).c_str());
        return 1;
    }
    std::printf("worker %s: %s trusted as %s in %s; its next run serves it\n", worker.c_str(),
                terminal_text(a.key).c_str(), a.digest.c_str(), store.path().c_str());
    return 0;
}

// --all-quarantined: every quarantined tool of the workers asked for
// accepted with the digest its quarantine recorded (not those the
// configuration pins: it decides them).
int mcp_trust_all(const McpArgs& a, const config::OrgConfig& org, const std::string& state_dir) {
    const std::string state = run::require_private_state_dir(state_dir_option(a), state_dir);
    std::size_t accepted = 0;
    for (const auto& [worker_key, wc] : org.workers) {
        const std::string name = worker_key;  // captured below (clang before 16 cannot capture a structured binding)
        if (a.worker && *a.worker != name) continue;
        const mcp::ToolsConfig tools = config::resolve_worker(org, name).tools;
        const std::string dir = run::open_pin_store_dir(state_dir_option(a), state, name, false);
        if (tools.empty() || dir.empty()) continue;
        run::PinStore(dir).update([&](run::PinRecords& records) {
            bool changed = false;
            for (auto& [key, p] : records) {
                if (p.quarantined.empty() || tools.pins.count(key)) continue;
                std::printf("worker %s: %s trusted as %s (was %s)\n", name.c_str(), terminal_text(key).c_str(),
                            p.quarantined.c_str(), p.trusted.c_str());
                p.trusted = p.quarantined, p.first_seen = p.quarantined_at, p.run = p.quarantined_run;
                p.quarantined.clear(), p.quarantined_at.clear(), p.quarantined_run.clear();
                changed = true;
                ++accepted;
            }
            return changed;
        });
    }
    if (accepted == 0) std::printf("nothing is quarantined\n");
    return 0;
}

}  // namespace

int cmd_mcp(int argc, char** argv) {
    ActionFront front("mcp", mcp_help());
    if (auto exit = front.take_action(argc, argv, {"ls", "trust"})) return *exit;
    McpArgs a;
    config::OrgConfig org;
    std::string worker;  // trust's
    try {
        a = parse_mcp_args(argc - 1, argv + 1);
        if (a.help) return front.help();
        org = config::load_org(a.config_dir);
        if (a.worker) (void)config::resolve_worker(org, *a.worker);  // names the known workers
        if (front.action() == "trust" && !a.all_quarantined)
            worker = trust_worker(a, org, run::split_pin_key(a.key).first);
    } catch (const UsageError& e) {
        return front.bad_usage(e.what());
    }
    try {
        const std::string state_dir = a.state_dir.value_or(org.gateway.gateway.state_dir);
        if (front.action() == "trust")
            return a.all_quarantined ? mcp_trust_all(a, org, state_dir) : mcp_trust(a, org, worker, state_dir);
        return mcp_ls(a, org, run::require_private_state_dir(state_dir_option(a), state_dir));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "corral mcp: %s\n", terminal_text(e.what()).c_str());
        return 125;
    }
}

}  // namespace corral::cli
