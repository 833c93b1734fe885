#include "mcp/tools_list.hpp"

#include <set>

#include "mcp/message.hpp"

namespace corral::mcp {

using json = nlohmann::json;

namespace {

Denial malformed(const std::string& server, std::string detail) {
    return Denial{Reason::malformed_result, server, "tools/list of " + server + ": " + std::move(detail)};
}

}  // namespace

ListFilter filter_tools_list(json result, const std::string& server, const Policy& policy, PinBook& pins) {
    ListFilter out;
    if (!result.is_object() || !result.contains("tools") || !result["tools"].is_array()) {
        out.refusal = malformed(server, "the result has no \"tools\" array");
        return out;
    }
    std::set<std::string> names;
    json visible = json::array();
    for (json& t : result["tools"]) {
        if (!t.is_object() || !t.contains("name") || !t["name"].is_string() ||
            !valid_tool_name(t["name"].get_ref<const std::string&>())) {
            out.refusal = malformed(server, "a tool without a valid name");
            return out;
        }
        const std::string& name = t["name"].get_ref<const std::string&>();
        if (!names.insert(name).second) {
            out.refusal = malformed(server, "tool " + name + " listed twice");
            return out;
        }
        std::string digest;
        const Sight s = pins.see_tool(server, name, t, digest);
        if (s == Sight::first_seen) out.first_seen.emplace_back(name, digest);
        if (s == Sight::quarantined) out.quarantined.push_back(name), out.quarantined_digests.push_back(digest);
        else if (!may_allow(policy, server, name)) out.hidden.push_back(name);
        else visible.push_back(std::move(t));
    }
    out.result = std::move(result);
    out.result["tools"] = std::move(visible);
    return out;
}

std::optional<Denial> quarantine_refusal(const PinBook& pins, const std::string& server, const std::string& tool) {
    if (!pins.quarantined(server, tool)) return std::nullopt;
    return Denial{Reason::quarantined, tool,
                  "trusted " + pins.trusted(server, tool).value_or("?") + "; accept the new digest with the operator"};
}

}  // namespace corral::mcp
