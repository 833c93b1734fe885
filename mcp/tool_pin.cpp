#include "mcp/tool_pin.hpp"

#include "base/sha256.hpp"

namespace corral::mcp {

using json = nlohmann::json;

std::string tool_canonical(const json& tool) {
    // The members written in sorted order; each member's own objects are
    // std::map-backed, so dump() writes their keys sorted. No copy is made.
    static const json null_value;
    std::string out = "{";
    for (const char* k : {"annotations", "description", "inputSchema", "name"}) {
        const json& v = tool.is_object() && tool.contains(k) ? tool[k] : null_value;
        out += (out.size() > 1 ? ",\"" : "\"") + std::string(k) + "\":";
        out += v.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::strict);
    }
    return out + "}";
}

std::string tool_digest(const json& tool) { return "sha256:" + corral::sha256_hex(tool_canonical(tool)); }

void PinBook::pin(const std::string& server, const std::string& tool, const std::string& digest) {
    entries_[{server, tool}].trusted = digest;
}

Sight PinBook::see(const std::string& server, const std::string& tool, const std::string& digest) {
    auto [it, inserted] = entries_.try_emplace({server, tool});
    Entry& e = it->second;
    e.seen = digest;
    if (e.trusted.empty()) {
        e.trusted = digest;
        return Sight::first_seen;
    }
    if (e.trusted == digest) return inserted ? Sight::first_seen : Sight::unchanged;
    return Sight::quarantined;
}

bool PinBook::knows_text(const std::string& server, const std::string& tool, std::string_view text) const {
    auto it = entries_.find({server, tool});
    return it != entries_.end() && !it->second.seen.empty() && !text.empty() && it->second.seen_text == text;
}

Sight PinBook::see_tool(const std::string& server, const std::string& tool, const json& value, std::string& digest,
                        std::string_view text) {
    auto it = entries_.find({server, tool});
    if (it != entries_.end() && !it->second.seen.empty()) {
        const Entry& e = it->second;
        // What was kept of the last sight decides how to compare; a last
        // sight kept as bytes and a tool given without them is hashed.
        const bool same = !e.seen_text.empty() ? !text.empty() && e.seen_text == text
                                               : !e.seen_tool.is_null() && e.seen_tool == value;
        if (same) {
            digest = e.seen;
            return e.seen == e.trusted ? Sight::unchanged : Sight::quarantined;
        }
    }
    digest = tool_digest(value);
    const Sight s = see(server, tool, digest);
    Entry& e = entries_[{server, tool}];
    if (!text.empty()) {
        e.seen_text.assign(text);
        e.seen_tool = nullptr;
    } else {
        e.seen_tool = value;
        e.seen_text.clear();
    }
    return s;
}

void PinBook::accept(const std::string& server, const std::string& tool, const std::string& digest) {
    Entry& e = entries_[{server, tool}];
    e.trusted = digest;
    if (e.seen.empty()) e.seen = digest;
}

bool PinBook::quarantined(const std::string& server, const std::string& tool) const {
    auto it = entries_.find({server, tool});
    return it != entries_.end() && !it->second.seen.empty() && it->second.seen != it->second.trusted;
}

std::optional<std::string> PinBook::trusted(const std::string& server, const std::string& tool) const {
    auto it = entries_.find({server, tool});
    if (it == entries_.end() || it->second.trusted.empty()) return std::nullopt;
    return it->second.trusted;
}

std::vector<PinEntry> PinBook::entries() const {
    std::vector<PinEntry> out;
    for (const auto& [key, e] : entries_) out.push_back(PinEntry{key.first, key.second, e.trusted, e.seen});
    return out;
}

}  // namespace corral::mcp
