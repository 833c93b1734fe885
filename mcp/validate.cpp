// mcp/validate.cpp — validate_rules(): a rule that cannot do what it says is
// an error at load, never a silent no-op (docs/tools.md "Validation").
#include <cctype>
#include <string>
#include <vector>

#include "base/glob.hpp"
#include "mcp/policy.hpp"

namespace corral::mcp {
namespace {

using json = nlohmann::json;

bool valid_tool_glob(const std::string& g) {
    if (g.empty() || g.size() > 128) return false;
    for (unsigned char c : g)
        if (!std::isalnum(c) && c != '_' && c != '.' && c != '-' && c != '*' && c != '?') return false;
    return true;
}

std::vector<std::string> tokens(const std::string& pointer) {
    std::vector<std::string> out;
    json::json_pointer p(pointer);
    while (!p.empty()) {
        out.insert(out.begin(), p.back());
        p.pop_back();
    }
    return out;
}

// The schema node at `pointer` inside an input schema, or nullptr with `why`.
const json* schema_at(const json& schema, const std::string& pointer, std::string& why) {
    const json* node = &schema;
    for (const auto& token : tokens(pointer)) {
        if (node->is_object() && node->contains("properties") && (*node)["properties"].is_object()) {
            const json& props = (*node)["properties"];
            if (!props.contains(token)) return why = "no property \"" + token + "\"", nullptr;
            node = &props[token];
        } else if (node->is_object() && node->contains("items") && (*node)["items"].is_object()) {
            node = &(*node)["items"];
        } else {
            return why = "nothing under \"" + token + "\"", nullptr;
        }
    }
    return node;
}

// A schema "type" the constraint can never satisfy, or empty.
std::string type_conflict(const Constraint& c, const json& node) {
    if (!node.is_object() || !node.contains("type") || !node["type"].is_string()) return "";
    const std::string t = node["type"];
    const bool number = t == "number" || t == "integer";
    if (c.kind == ConstraintKind::range && !number) return t;
    if ((c.kind == ConstraintKind::glob || c.kind == ConstraintKind::regex || c.kind == ConstraintKind::path_under) &&
        t != "string")
        return t;
    return "";
}

void check_constraint(Constraint& c, const std::string& where, std::vector<std::string>& errors) {
    try {
        (void)json::json_pointer(c.pointer);
    } catch (const json::exception&) {
        errors.push_back(where + ": \"" + c.pointer + "\" is not a JSON pointer (\"/name\", \"/a/b\")");
        return;
    }
    if (auto bad = compile(c)) errors.push_back(where + ": " + bad->problem);
    if (c.kind == ConstraintKind::one_of && c.choices.empty())
        errors.push_back(where + ": an empty list of allowed values never matches");
    if (c.kind == ConstraintKind::range && c.min && c.max && *c.min > *c.max)
        errors.push_back(where + ": range min is above max, so it never matches");
    if (c.kind == ConstraintKind::path_under) {
        const bool absolute = !c.root.empty() && c.root[0] == '/';
        auto norm = normalise_path(absolute ? c.root : std::string(), "/");
        if (!absolute || !norm || *norm != c.root)
            errors.push_back(where + ": root \"" + c.root + "\" must be an absolute normalised path");
    }
}

void check_schemas(const Rule& r, const std::map<std::string, json>& tools, std::vector<std::string>& errors) {
    bool any = false;
    for (const auto& [tool, schema] : tools) {
        if (!glob_match(r.tool, tool)) continue;
        any = true;
        for (const auto& c : r.when) {
            std::string why;
            const json* node = schema_at(schema, c.pointer, why);
            if (!node)
                errors.push_back("rule " + r.name + ": constrains " + c.pointer + ", which tool " + tool +
                                 "'s input schema does not have (" + why + ")");
            else if (auto t = type_conflict(c, *node); !t.empty())
                errors.push_back("rule " + r.name + ": constraint on " + c.pointer + " never matches; tool " + tool +
                                 " declares it " + t);
        }
    }
    if (!any)
        errors.push_back("rule " + r.name + ": tool \"" + r.tool + "\" matches no tool server " + r.server + " lists");
}

}  // namespace

std::vector<std::string> validate_rules(Policy& p, const KnownSchemas& schemas) {
    std::vector<std::string> errors;
    std::string known;
    for (const auto& s : p.servers) known += (known.empty() ? "" : ", ") + s;
    for (auto& r : p.rules) {
        const std::string where = "rule " + r.name;
        if (!p.servers.count(r.server))
            errors.push_back(where + ": unknown server \"" + r.server + "\" (this worker has: " +
                             (known.empty() ? "none" : known) + ")");
        if (!valid_tool_glob(r.tool))
            errors.push_back(where + ": tool \"" + r.tool + "\" never matches; a tool name is 1..128 of " +
                             "A-Z a-z 0-9 _ . - (glob: * ?)");
        for (auto& c : r.when) check_constraint(c, where + ", " + c.pointer, errors);
        auto known_server = schemas.find(r.server);
        if (known_server != schemas.end() && valid_tool_glob(r.tool)) check_schemas(r, known_server->second, errors);
    }
    return errors;
}

}  // namespace corral::mcp
