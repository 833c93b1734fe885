#include "run/prepare.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "agents/agent_profile.hpp"
#include "base/log.hpp"
#include "base/sha256.hpp"
#include "image/source.hpp"
#include "rootfs/host_paths.hpp"
#include "rootfs/mount_plan.hpp"
#include "supervisor/terminal.hpp"

namespace corral::run {

namespace {

// What a new user gives --rootfs that is not a root file system, said
// precisely: an archive, an image layout, a root the agent cannot enter, a
// tree under someone's home.
void require_rootfs_directory(const std::string& option, const std::string& path) {
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        throw UsageError(option + " " + path + ": is a file, not a directory; an image archive or rootfs tarball is "
                         "imported first: `corral image import " + path + " --name NAME`, then --rootfs image:NAME");
    rootfs::require_directory(option, path);
    if (auto hint = image::image_directory_hint(path)) throw UsageError(option + " " + path + ": " + *hint);
    if ((st.st_mode & S_IXOTH) == 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
        throw UsageError(option + " " + path + ": mode " + mode +
                         ": the agent (an unprivileged UID) cannot enter the image's root; chmod 0755 it "
                         "(umoci unpack makes its rootfs 0700), or import the image (corral image import)");
    }
    std::error_code ec;
    const std::string real = std::filesystem::weakly_canonical(path, ec).string();
    if (real.starts_with("/home/"))
        throw UsageError(option + " " + path + ": is under a user's home directory (" + real +
                         "), which its user can change under a running box; images belong to root: import it "
                         "(`corral image import`, kept in STATE_DIR/images) or keep the tree in a root-only "
                         "directory such as /srv/corral/rootfs");
}

// image:NAME (from --rootfs or the worker): the image and its layers, from the store.
void read_image(const RunRequest& r, RunInputs& in) {
    const names::RootfsSource rootfs = requested_rootfs(r, in.worker);
    const auto* wanted = std::get_if<names::ImageRootfs>(&rootfs);
    if (!wanted) return;
    image::ImageStore store(in.state_dir);
    in.image_hold = store.hold(wanted->name);  // before get(): a removal is refused or already done
    in.image = store.get(wanted->name);
    for (const auto& l : in.image->layers) in.image_layer_dirs.push_back(store.layer_dir(l));
}

}  // namespace

RunInputs read_run_inputs(const RunRequest& r, std::string run_id, std::string run_dir, std::string state_dir) {
    if (const auto* dir = r.rootfs ? std::get_if<names::DirRootfs>(&*r.rootfs) : nullptr) {
        if (!std::filesystem::exists(dir->path))
            if (auto hint = image::registry_reference_hint(dir->given))
                throw UsageError("--rootfs " + dir->given + ": " + *hint);
        require_rootfs_directory("--rootfs", dir->path);
    }
    RunInputs in;
    in.run_id = std::move(run_id);
    in.run_dir = std::move(run_dir);
    in.state_dir = std::move(state_dir);
    if (r.tty) in.terminal_type = supervisor::box_terminal_type(std::getenv("TERM"));
    if (!r.config_dir) {
        read_image(r, in);
        return in;
    }
    in.org = config::load_org(r.config_dir->c_str());
    in.worker = config::resolve_worker(*in.org, *r.worker);
    // An egress-only worker has no agent, so no agent credential to look for.
    if (!in.worker->egress_only)
        in.agent_credential =
            config::credential_status(in.org->gateway, agents::required_credential(in.worker->agent).name);
    read_image(r, in);
    return in;
}

void check_run_can_start(const RunRequest& r, const RunInputs& in, const RunPlan& plan) {
    // The gateway keeps its CA here (created 0755 by path): it must be a
    // root-only tree, and no workspace may reach it (resolve_run protects it).
    rootfs::require_root_only_tree(r.config_dir ? "[gateway] state_dir" : "--state-dir",
                                   plan.gateway.gateway.state_dir + "/ca");
    if (plan.agent) {
        auto kind = in.worker->agent;
        if (auto msg = agents::missing_credential_message(plan.worker, kind, in.agent_credential); !msg.empty())
            throw UsageError(msg);
    }
    auto mcp = mcp_not_served(plan.worker, plan.gateway.tools, plan.daemon_socket.has_value());
    if (!mcp.empty()) throw UsageError((plan.daemon_socket ? "--gateway unix:" + *plan.daemon_socket + ": " : "") + mcp.front());
}

std::string tool_calls_per_worker_refusal(const std::string& worker) {
    return "worker " + worker + ": [mcp.budget] tool_calls_per_worker (a tool-call budget across the worker's runs) "
           "is kept by the gateway daemon: run with --gateway unix:PATH against `corral gateway --org DIR`, or "
           "leave tool_calls_per_worker out and use tool_calls_per_run (per run)";
}

std::string worker_budget_refusal(const std::string& worker) {
    return "worker " + worker + ": [budget.worker] (a budget across the worker's runs) is kept by the gateway daemon: "
           "run with --gateway unix:PATH against `corral gateway --org DIR`, or leave [budget.worker] out and use "
           "[budget] (per run)";
}

std::vector<std::string> mcp_not_served(const std::string& worker, const mcp::ToolsConfig& tools, bool daemon) {
    std::vector<std::string> out;
    // The run starts each stdio server in a box of its own (run/mcp_servers.hpp)
    // and only its embedded gateway talks to them.
    for (const auto& [name, s] : tools.servers)
        if (daemon && std::holds_alternative<mcp::StdioServer>(s.transport))
            out.push_back("worker " + worker + ": MCP server " + name + " (" + s.where + ") is a stdio server, and "
                          "the gateway daemon serves remote Streamable HTTP servers only (url = \"https://...\"), "
                          "not stdio servers: run it without --gateway (the run's embedded gateway starts it in a box "
                          "of its own), or remove it from the worker's [mcp.servers]");
    // A budget across the worker's runs needs one keeper for all of them,
    // the daemon: never silently unenforced by a run's embedded gateway.
    if (!daemon && !tools.empty() && tools.budgets.per_worker) out.push_back(tool_calls_per_worker_refusal(worker));
    return out;
}

nlohmann::json run_record_fields(const RunRequest& r, const std::string& run_id, const RunSoFar& run) {
    using nlohmann::json;
    const std::optional<config::ResolvedWorker> no_worker;
    const auto& worker = run.inputs ? run.inputs->worker : no_worker;
    const AgentRun* agent = run.agent;
    const image::StoredImage* image = run.inputs && run.inputs->image ? &*run.inputs->image : nullptr;
    const std::string name = run.plan ? run.plan->worker : worker ? worker->name : r.worker.value_or("adhoc");
    json out{{"kind", r.session ? "session" : r.oci_container ? "oci" : "run"},
             {"worker", name},
             {"identity", run.plan ? run.plan->identity.str() : name + "/" + run_id},
             {"gateway", run.egress ? run.egress->record_fields() : unstarted_gateway_record(r)},
             {"tools", run.egress ? run.egress->tools_record() : json(nullptr)}};
    // An agent run names its agent once the worker is resolved, even when it
    // was refused before the CLI's profile was made.
    const auto kind = run.plan ? run.plan->agent : requested_agent(r, worker);
    out["agent"] = kind ? json(std::string(config::to_string(*kind))) : json(nullptr);
    if (r.oci_container) out["oci_container"] = *r.oci_container;
    out["cli_version"] = agent && agent->cli_version ? json(*agent->cli_version) : json(nullptr);
    // The grants the command line added (--allow), beside the organisation's.
    json grants = json::array();
    for (const auto& a : r.allow)
        grants.push_back({{"host", a.host.text()}, {"port", a.port}, {"mode", "tunnel"}, {"where", "--allow " + a.text}});
    out["grants"] = grants;
    json binds = json::array();
    for (const auto& b : r.binds)
        binds.push_back({{"source", b.source}, {"target", b.target}, {"read_only", b.read_only}});
    out["binds"] = binds;
    if (r.session) out["session"] = {{"name", r.session_name ? json(*r.session_name) : json(nullptr)}};
    // What the box's tree was made of: its layers are content-addressed, so
    // their digests (and one digest over them) name it whatever its NAME
    // later points at. layers_sha256: SHA-256 of the layer digests, one per
    // line, each line ending in '\n'.
    if (image) {
        std::string joined;
        for (const auto& l : image->layers) joined += l + "\n";
        out["image"] = {{"name", image->name},
                        {"layers", image->layers},
                        {"layers_sha256", "sha256:" + sha256_hex(joined)},
                        {"source", image->source},
                        {"imported_at", image->imported_at}};
    }
    return out;
}

namespace {

std::string signal_name(int sig) {
    const char* abbrev = sigabbrev_np(sig);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string how_it_ended(const supervisor::RunRecord& r) {
    const std::string st = " (" + std::to_string(r.status) + ")";
    using supervisor::Outcome;
    switch (r.outcome.value_or(Outcome::setup_failed)) {
    case Outcome::exited: return "exited " + std::to_string(r.status);
    case Outcome::killed: return "CMD killed by " + (r.signal ? signal_name(*r.signal) : std::string("a signal")) + st;
    case Outcome::stopped: return "stopped by `corral stop`" + st;
    case Outcome::interrupted:
        return "interrupted by " + (r.stop && r.stop->signal ? signal_name(*r.stop->signal) : std::string("a signal")) + st;
    case Outcome::deadline: return "deadline reached" + st;
    case Outcome::not_found: return "command not found" + st;
    case Outcome::usage_error: return "refused: bad usage" + st;
    case Outcome::teardown_failed: return "TEARDOWN FAILED" + st;
    case Outcome::setup_failed:
    case Outcome::refused:
    case Outcome::caller_gone: break;
    }
    return "setup failed" + st;
}

std::string seconds(std::chrono::system_clock::duration d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fs", std::chrono::duration<double>(d).count());
    return buf;
}

}  // namespace

std::string run_summary_line(const supervisor::RunRecord& record, const std::string& run_dir) {
    std::string line = record.id + ": " + how_it_ended(record) + " after " + seconds(record.ended_at - record.started_at);
    // What the host attests (docs/approvals.md "The attested outcome").
    if (const auto a = record.extra.find("attested"); a != record.extra.end() && a->is_object() &&
                                                       a->value("outcome", nlohmann::json(nullptr)).is_string())
        line += "; attested " + (*a)["outcome"].get<std::string>();
    if (const auto g = record.extra.find("gateway"); g != record.extra.end() && g->is_object()) {
        const auto& requests = (*g)["requests"];
        const auto& refusals = (*g)["refusals"];
        if (requests.is_number_unsigned())
            line += "; " + std::to_string(requests.get<std::uint64_t>()) + " request" +
                    (requests.get<std::uint64_t>() == 1 ? "" : "s") +
                    (refusals.is_number_unsigned() ? ", " + std::to_string(refusals.get<std::uint64_t>()) + " refused" : "");
    }
    if (const auto t = record.extra.find("tools"); t != record.extra.end() && t->is_object()) {
        // "N tool call(s)[, M refused]" when the box made any tools/call.
        std::uint64_t calls = t->value("calls", std::uint64_t{0}), refused = 0;
        if (const auto rf = t->find("refused"); rf != t->end() && rf->is_object())
            for (const auto& n : *rf) refused += n.is_number_unsigned() ? n.get<std::uint64_t>() : 0;
        if (calls)
            line += "; " + std::to_string(calls) + " tool call" + (calls == 1 ? "" : "s") +
                    (refused ? ", " + std::to_string(refused) + " refused" : "");
    }
    return line + "; record " + run_dir + "/run.json";
}

}  // namespace corral::run
