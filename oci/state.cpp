#include "oci/state.hpp"

#include <limits>

#include <nlohmann/json.hpp>

#include "base/strict_json.hpp"

namespace corral::oci {

std::string_view to_string(ContainerStatus s) {
    switch (s) {
        case ContainerStatus::creating: return "creating";
        case ContainerStatus::created: return "created";
        case ContainerStatus::running: return "running";
        case ContainerStatus::stopped: return "stopped";
    }
    return "?";
}

std::optional<ContainerStatus> parse_container_status(std::string_view text) {
    for (auto s : {ContainerStatus::creating, ContainerStatus::created, ContainerStatus::running,
                   ContainerStatus::stopped})
        if (to_string(s) == text) return s;
    return std::nullopt;
}

std::string state_json(const ContainerState& state) {
    // ordered_json: the spec's order (ociVersion, id, status, pid, bundle,
    // annotations), as runc and crun print it.
    nlohmann::ordered_json j;
    j["ociVersion"] = state.oci_version;
    j["id"] = state.id;
    j["status"] = std::string(to_string(state.status));
    if (state.pid && state.status != ContainerStatus::stopped) j["pid"] = *state.pid;
    j["bundle"] = state.bundle;
    if (!state.annotations.empty()) j["annotations"] = state.annotations;
    return j.dump(2) + "\n";
}

namespace {

Checked<std::string> string_member(const nlohmann::json& j, const char* key, bool required) {
    auto it = j.find(key);
    if (it == j.end()) {
        if (required) return Failed{std::string(key) + ": missing"};
        return std::string();
    }
    if (!it->is_string()) return Failed{std::string(key) + ": expected a string"};
    return it->get<std::string>();
}

Problem read_pid(const nlohmann::json& j, ContainerState& s) {
    auto it = j.find("pid");
    if (it == j.end()) {
        if (s.status == ContainerStatus::created || s.status == ContainerStatus::running)
            return Failed{"pid: missing; required while " + std::string(to_string(s.status))};
        return std::nullopt;
    }
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0 ||
        it->get<std::int64_t>() > std::numeric_limits<pid_t>::max())
        return Failed{"pid: expected a process id"};
    s.pid = static_cast<pid_t>(it->get<std::int64_t>());
    return std::nullopt;
}

Problem read_annotations(const nlohmann::json& j, ContainerState& s) {
    auto it = j.find("annotations");
    if (it == j.end()) return std::nullopt;
    if (!it->is_object()) return Failed{"annotations: expected an object"};
    for (const auto& [k, v] : it->items()) {
        if (!v.is_string()) return Failed{"annotations[" + json_quoted(k) + "]: expected a string"};
        s.annotations[k] = v.get<std::string>();
    }
    return std::nullopt;
}

}  // namespace

Checked<ContainerState> parse_state_json(std::string_view text) {
    StrictJson parsed = parse_strict_json(text);
    if (!parsed.ok()) return Failed{"not valid JSON: " + parsed.problem->detail};
    const nlohmann::json& j = parsed.value;
    if (!j.is_object()) return Failed{"expected an object"};
    ContainerState s;
    for (const auto& [key, out] : {std::pair<const char*, std::string*>{"ociVersion", &s.oci_version},
                                   {"id", &s.id}, {"bundle", &s.bundle}}) {
        auto v = string_member(j, key, true);
        if (!v) return Failed{v.problem()};
        *out = std::move(*v);
    }
    if (Problem bad = check_container_id(s.id)) return Failed{"id: " + bad->problem};
    auto status = string_member(j, "status", true);
    if (!status) return Failed{status.problem()};
    auto parsed_status = parse_container_status(*status);
    if (!parsed_status) return Failed{"status: " + json_quoted(*status) + ": expected creating, created, running or stopped"};
    s.status = *parsed_status;
    if (Problem bad = read_pid(j, s)) return *bad;
    if (Problem bad = read_annotations(j, s)) return *bad;
    return s;
}

Problem check_container_id(std::string_view id) {
    const std::string allowed = "; a container id is 1 to " + std::to_string(kMaxContainerIdLength) +
                                " of A-Z, a-z, 0-9, '_', '.', '-', and not \".\" or \"..\"";
    if (id.empty()) return Failed{"empty container id" + allowed};
    if (id.size() > kMaxContainerIdLength)
        return Failed{"container id of " + std::to_string(id.size()) + " characters" + allowed};
    if (id == "." || id == "..") return Failed{"container id " + json_quoted(id) + allowed};
    for (char c : id) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                        c == '.' || c == '-';
        if (!ok) return Failed{"container id " + json_quoted(id) + allowed};
    }
    return std::nullopt;
}

}  // namespace corral::oci
