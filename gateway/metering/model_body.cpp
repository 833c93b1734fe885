// gateway/metering/model_body.cpp — see model_body.hpp.
#include "gateway/metering/model_body.hpp"

#include <string>

namespace corral::gateway::metering {

namespace {

using nlohmann::json;

std::optional<JsonProblem> upper_case_key_in(const json& obj, const std::string& pointer) {
    if (!obj.is_object()) return std::nullopt;
    for (const auto& [key, value] : obj.items()) {
        (void)value;
        for (char ch : key)
            if (ch >= 'A' && ch <= 'Z')
                return JsonProblem{JsonProblemKind::case_variant_key, key,
                                   "key " + json_quoted(key) + " at JSON pointer " + json_quoted(pointer, 200) +
                                       " has upper case letters; the API's keys there are lower case"};
    }
    return std::nullopt;
}

// The request's own structure: the top level, each entry of tools[],
// messages[] and input[], and each content block in an entry's content[].
std::optional<JsonProblem> upper_case_structural_key(const json& d) {
    if (auto p = upper_case_key_in(d, "")) return p;
    for (const char* list : {"tools", "messages", "input"}) {
        auto it = d.find(list);
        if (it == d.end() || !it->is_array()) continue;
        for (std::size_t i = 0; i < it->size(); ++i) {
            const json& entry = (*it)[i];
            const std::string at = std::string("/") + list + "/" + std::to_string(i);
            if (auto p = upper_case_key_in(entry, at)) return p;
            if (!entry.is_object()) continue;
            auto content = entry.find("content");
            if (content == entry.end() || !content->is_array()) continue;
            for (std::size_t j = 0; j < content->size(); ++j)
                if (auto p = upper_case_key_in((*content)[j], at + "/content/" + std::to_string(j))) return p;
        }
    }
    return std::nullopt;
}

}  // namespace

ModelBody parse_model_body(std::string_view body, std::size_t max_bytes) {
    ModelBody b;
    b.bytes = body.size();
    if (body.size() > max_bytes) {
        b.too_large = true;
        return b;
    }
    // No depth bound beyond the size: the builder and the policy's and
    // facts' walks are iterative, and a URL source or a document nested
    // 20 000 levels deep must still be found, not waved through unread.
    StrictJson parsed = parse_strict_json(body, StrictJsonLimits{max_bytes, max_bytes + 1});
    if (!parsed.ok()) {
        const JsonProblemKind k = parsed.problem->kind;
        if (k == JsonProblemKind::duplicate_key || k == JsonProblemKind::case_variant_key)
            b.ambiguous = std::move(parsed.problem);
        return b;
    }
    if (!parsed.value.is_object()) return b;
    if (auto p = upper_case_structural_key(parsed.value)) {
        b.ambiguous = std::move(p);
        return b;
    }
    b.object = std::move(parsed.value);
    return b;
}

}  // namespace corral::gateway::metering
