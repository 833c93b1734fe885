// approval/protocol.cpp — see protocol.hpp.
#include "approval/protocol.hpp"

#include "journal/journal.hpp"

namespace corral::approval {

namespace {

using nlohmann::json;

std::string line_of(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string control_dir(const std::string& state_dir) { return state_dir + "/approvals"; }
std::string run_control_socket(const std::string& state_dir, const std::string& run_id) {
    return control_dir(state_dir) + "/" + run_id + ".sock";
}
std::string daemon_control_socket(const std::string& state_dir) { return control_dir(state_dir) + "/gateway.sock"; }

std::string list_request() { return line_of({{"op", "list"}}); }

std::string decide_request(const std::string& id, bool approve, const std::string& reason, bool always) {
    return line_of({{"op", "decide"}, {"id", id}, {"approve", approve}, {"reason", reason}, {"always", always}});
}

Checked<ControlRequest> parse_control_request(std::string_view line) {
    if (line.size() > kMaxControlLine)
        return Failed{"request longer than " + std::to_string(kMaxControlLine) + " bytes"};
    json j = json::parse(line, nullptr, false);
    if (!j.is_object()) return Failed{"not a JSON object"};
    const auto op = j.find("op");
    if (op == j.end() || !op->is_string()) return Failed{"no \"op\" (allowed: \"list\", \"decide\")"};
    ControlRequest r;
    if (*op == "list") return r;
    if (*op != "decide") return Failed{"unknown op " + op->dump() + " (allowed: \"list\", \"decide\")"};
    r.op = ControlRequest::Op::decide;
    const auto id = j.find("id");
    const auto approve = j.find("approve");
    if (id == j.end() || !id->is_string() || id->get_ref<const std::string&>().empty())
        return Failed{"decide: \"id\" must be a request id such as \"ap-1-0a1b2c3d\""};
    if (approve == j.end() || !approve->is_boolean()) return Failed{"decide: \"approve\" must be true or false"};
    r.id = *id;
    r.approve = *approve;
    if (auto reason = j.find("reason"); reason != j.end()) {
        if (!reason->is_string()) return Failed{"decide: \"reason\" must be a string"};
        r.reason = *reason;
    }
    if (auto always = j.find("always"); always != j.end()) {
        if (!always->is_boolean()) return Failed{"decide: \"always\" must be true or false"};
        r.always = *always;
    }
    return r;
}

json entry_json(const Entry& e) {
    const Request& r = e.request;
    json j = {{"id", e.id},
              {"kind", r.kind == Request::Kind::tool ? "tool" : "egress"},
              {"identity", r.identity},
              {"digest", e.digest},
              {"asked_at", journal::utc_time(e.asked_at)},
              {"deadline", journal::utc_time(e.deadline)},
              {"state", state_name(e.state)}};
    if (r.kind == Request::Kind::tool) {
        j["server"] = r.server;
        j["tool"] = r.tool;
        j["arguments"] = r.arguments;
        j["arguments_digest"] = r.arguments_digest;
    } else {
        j["method"] = r.method;
        j["host"] = r.host;
        j["port"] = r.port;
        j["path"] = r.path;
    }
    if (e.decided_at) {
        j["decided_at"] = journal::utc_time(*e.decided_at);
        j["decided_by"] = e.decided_by.empty() ? json(nullptr) : json(e.decided_by);
        j["reason"] = e.reason;
        j["always"] = e.always;
    }
    return j;
}

std::string list_answer(const std::string& decider, const std::vector<Entry>& pending) {
    json list = json::array();
    for (const auto& e : pending) list.push_back(entry_json(e));
    return line_of({{"decider", decider}, {"pending", std::move(list)}});
}

std::string decide_answer(const Checked<Entry>& decided) {
    if (!decided) return error_answer(decided.problem());
    return line_of({{"ok", true}, {"entry", entry_json(*decided)}});
}

std::string error_answer(const std::string& sentence) { return line_of({{"ok", false}, {"error", sentence}}); }

json approval_counts_json(const ApprovalCounts& c) {
    return {{"requested", c.requested}, {"approved", c.approved}, {"denied", c.denied},
            {"timed_out", c.timed_out}, {"cancelled", c.cancelled}};
}

Checked<ApprovalCounts> approval_counts_from_json(const json& j) {
    if (!j.is_object()) return Failed{"approvals must be an object of five counts"};
    ApprovalCounts c;
    for (auto [key, field] : {std::pair{"requested", &c.requested}, {"approved", &c.approved}, {"denied", &c.denied},
                              {"timed_out", &c.timed_out}, {"cancelled", &c.cancelled}}) {
        auto it = j.find(key);
        if (it == j.end() || !it->is_number_unsigned())
            return Failed{std::string("approvals.") + key + " must be an unsigned integer"};
        *field = it->get<std::uint64_t>();
    }
    return c;
}

}  // namespace corral::approval
