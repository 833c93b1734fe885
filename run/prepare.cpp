#include "run/prepare.hpp"

#include <cstring>
#include <filesystem>
#include <string>

#include "agents/agent_profile.hpp"
#include "base/log.hpp"
#include "rootfs/host_paths.hpp"

namespace corral::run {

RunInputs read_run_inputs(const RunRequest& r, std::string run_id, std::string run_dir, std::string state_dir) {
    if (r.rootfs && *r.rootfs != "host")
        rootfs::require_directory("--rootfs", std::filesystem::absolute(*r.rootfs).lexically_normal().string());
    RunInputs in;
    in.run_id = std::move(run_id);
    in.run_dir = std::move(run_dir);
    in.state_dir = std::move(state_dir);
    if (!r.config_dir) return in;
    in.org = config::load_org(r.config_dir->c_str());
    for (const auto& w : in.org->warnings) log::warn(w.text());
    in.worker = config::resolve_worker(*in.org, *r.worker);
    // An egress-only worker has no agent, so no agent credential to look for.
    if (!in.worker->egress_only)
        in.agent_credential =
            config::credential_status(in.org->gateway, agents::required_credential(in.worker->agent).name);
    return in;
}

void check_run_can_start(const RunRequest& r, const RunInputs& in, const RunPlan& plan) {
    // The gateway keeps its CA here (created 0755 by path): it must be a
    // root-only tree, and no workspace may reach it (resolve_run protects it).
    rootfs::require_root_only_tree(r.config_dir ? "[gateway] state_dir" : "--state-dir",
                                   plan.gateway.gateway.state_dir + "/ca");
    if (r.agent()) {
        auto kind = in.worker->agent;
        if (auto msg = agents::missing_credential_message(plan.worker, kind, in.agent_credential); !msg.empty())
            throw UsageError(msg);
    }
}

nlohmann::json run_record_fields(const RunRequest& r, const std::string& run_id,
                                 const std::optional<config::ResolvedWorker>& worker, const Egress* egress,
                                 const AgentRun* agent) {
    using nlohmann::json;
    std::string name = worker ? worker->name : r.worker.value_or("adhoc");
    json out{{"worker", name},
             {"identity", name + "/" + run_id},
             {"gateway", egress ? egress->record_fields() : unstarted_gateway_record(r)}};
    // An agent run names its agent once the worker is resolved, even when it
    // was refused before the CLI's profile was made.
    out["agent"] = r.agent() && worker ? json(std::string(config::to_string(worker->agent))) : json(nullptr);
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
    return out;
}

namespace {

std::string signal_name(int sig) {
    const char* abbrev = sigabbrev_np(sig);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string how_it_ended(const supervisor::RunRecord& r) {
    const std::string st = " (" + std::to_string(r.status) + ")";
    if (r.outcome == "exited") return "exited " + std::to_string(r.status);
    if (r.outcome == "killed") return "CMD killed by " + (r.signal ? signal_name(*r.signal) : std::string("a signal")) + st;
    if (r.outcome == "stopped") return "stopped by `corral stop`" + st;
    if (r.outcome == "interrupted")
        return "interrupted by " + (r.stop && r.stop->signal ? signal_name(*r.stop->signal) : std::string("a signal")) + st;
    if (r.outcome == "deadline") return "deadline reached" + st;
    if (r.outcome == "not_found") return "command not found" + st;
    if (r.outcome == "usage_error") return "refused: bad usage" + st;
    if (r.outcome == "teardown_failed") return "TEARDOWN FAILED" + st;
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
    if (const auto g = record.extra.find("gateway"); g != record.extra.end() && g->is_object()) {
        const auto& requests = (*g)["requests"];
        const auto& refusals = (*g)["refusals"];
        if (requests.is_number_unsigned())
            line += "; " + std::to_string(requests.get<std::uint64_t>()) + " request" +
                    (requests.get<std::uint64_t>() == 1 ? "" : "s") +
                    (refusals.is_number_unsigned() ? ", " + std::to_string(refusals.get<std::uint64_t>()) + " refused" : "");
    }
    return line + "; record " + run_dir + "/run.json";
}

}  // namespace corral::run
