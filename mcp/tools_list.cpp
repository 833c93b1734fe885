#include "mcp/tools_list.hpp"

#include <cstring>
#include <set>

#include "mcp/message.hpp"
#include "mcp/strict_json.hpp"

namespace corral::mcp {

using json = nlohmann::json;

namespace {

Denial malformed(const std::string& server, std::string detail) {
    return Denial{Reason::malformed_result, server, "tools/list of " + server + ": " + std::move(detail)};
}

}  // namespace

ListFilter filter_tools_list(json result, const std::string& server, const Policy& policy, PinBook& pins,
                             std::string_view text, const std::vector<ToolSpan>& spans, bool outlined) {
    ListFilter out;
    if (!result.is_object() || !result.contains("tools") || !result["tools"].is_array()) {
        out.refusal = malformed(server, "the result has no \"tools\" array");
        return out;
    }
    const bool with_spans = !spans.empty() && spans.size() == result["tools"].size();
    if (outlined && !with_spans) {
        out.refusal = malformed(server, "an outlined list without its tools' text");
        return out;
    }
    std::set<std::string> names;
    json visible = json::array();
    std::size_t index = 0;
    for (json& t : result["tools"]) {
        const std::size_t i = index++;
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
        const std::string_view bytes =
            with_spans ? text.substr(spans[i].begin, spans[i].end - spans[i].begin) : std::string_view{};
        // An outlined tool is only its name: the digest needs it whole,
        // unless its bytes are the ones the PinBook saw last.
        json whole;
        if (outlined && !pins.knows_text(server, name, bytes)) {
            auto read = parse_mcp_json(bytes);
            if (!read.ok()) {
                out.refusal = malformed(server, "tool " + name + ": " + denial_sentence(*read.error));
                return out;
            }
            whole = std::move(read.value);
        }
        const Sight s = pins.see_tool(server, name, whole.is_null() ? t : whole, digest, bytes);
        if (s == Sight::first_seen) out.first_seen.emplace_back(name, digest);
        if (s == Sight::quarantined) {
            out.quarantined.push_back(name), out.quarantined_digests.push_back(digest);
        } else if (!may_allow(policy, server, name)) {
            out.hidden.push_back(name);
        } else {
            visible.push_back(std::move(t));
            if (with_spans) out.visible_spans.push_back(spans[i]);
        }
    }
    out.result = std::move(result);
    out.result["tools"] = std::move(visible);
    return out;
}

namespace {

// A scanner over text already read the strict way: it only has to find
// where values end, never to judge them.
struct Scan {
    std::string_view t;
    std::size_t at = 0;

    void space() {
        while (at < t.size() && (t[at] == ' ' || t[at] == '\t' || t[at] == '\n' || t[at] == '\r')) ++at;
    }
    bool eat(char c) {
        space();
        if (at >= t.size() || t[at] != c) return false;
        ++at;
        return true;
    }
    // A string at `at` (its opening quote); its contents, or nullopt when it
    // holds an escape (a key spelt with one is not compared by its bytes).
    std::optional<std::string_view> string() {
        space();
        if (at >= t.size() || t[at] != '"') return std::nullopt;
        const std::size_t begin = ++at;
        bool escaped = false;
        while (at < t.size() && t[at] != '"') {
            if (t[at] == '\\') escaped = true, ++at;
            ++at;
        }
        if (at >= t.size()) return std::nullopt;
        ++at;
        if (escaped) return std::nullopt;
        return t.substr(begin, at - 1 - begin);
    }
    // Past the string whose opening quote is at `at`; false when the text
    // ends first. memchr finds each quote (most of a tools/list is strings);
    // a quote after an odd run of backslashes is escaped.
    bool skip_string() {
        std::size_t from = at + 1;
        for (;;) {
            const void* q = std::memchr(t.data() + from, '"', t.size() - from);
            if (q == nullptr) return false;
            const std::size_t quote = static_cast<std::size_t>(static_cast<const char*>(q) - t.data());
            std::size_t slashes = 0;
            while (quote - slashes > at + 1 && t[quote - slashes - 1] == '\\') ++slashes;
            from = quote + 1;
            if (slashes % 2 == 0) {
                at = from;
                return true;
            }
        }
    }
    // Past one value of any kind; false when the text ends first.
    bool value() {
        space();
        int depth = 0;
        while (at < t.size()) {
            const char c = t[at];
            if (c == '"') {
                if (!skip_string()) return false;
            } else if (c == '{' || c == '[') {
                ++depth, ++at;
                continue;
            } else if (c == '}' || c == ']') {
                if (depth == 0) return true;   // the end of the container this value is in
                --depth, ++at;
            } else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
                return true;
            } else {
                ++at;
                continue;
            }
            if (depth == 0) return true;
        }
        return depth == 0;
    }
    // Each member of the object at `at`: `on(key)` is called with `at` on its
    // value and must leave `at` past it. False on an escaped key or bad text.
    template <class On>
    bool members(On on) {
        if (!eat('{')) return false;
        if (eat('}')) return true;
        do {
            auto key = string();
            if (!key || !eat(':')) return false;
            if (!on(*key)) return false;
        } while (eat(','));
        return eat('}');
    }
};

}  // namespace

std::optional<std::vector<ToolSpan>> tool_spans(std::string_view message) {
    Scan s{message};
    std::optional<std::vector<ToolSpan>> found;
    const bool read = s.members([&](std::string_view key) {
        if (key != "result") return s.value();
        return s.members([&](std::string_view k) {
            s.space();
            if (k != "tools" || s.at >= s.t.size() || s.t[s.at] != '[') return s.value();
            ++s.at;
            found.emplace();
            if (s.eat(']')) return true;
            do {
                s.space();
                const std::size_t begin = s.at;
                if (!s.value()) return false;
                found->push_back({begin, s.at});
            } while (s.eat(','));
            return s.eat(']');
        });
    });
    if (!read) return std::nullopt;
    return found;
}

bool reads_as_dumped(std::string_view text) {
    // memchr for each byte of interest: most texts hold none or few.
    if (std::memchr(text.data(), '\n', text.size()) || std::memchr(text.data(), '\r', text.size())) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const void* b = std::memchr(text.data() + i, '\\', text.size() - i);
        if (b == nullptr) return true;
        i = static_cast<std::size_t>(static_cast<const char*>(b) - text.data());
        if (++i >= text.size()) return false;
        switch (text[i]) {
            case '"': case '\\': case 'b': case 'f': case 'n': case 'r': case 't': continue;
            case 'u': break;
            default: return false;   // "\/" and anything else dump never writes
        }
        // \u00XX below 0x20: a control character, as dump escapes one.
        if (i + 4 >= text.size() || text[i + 1] != '0' || text[i + 2] != '0' || (text[i + 3] != '0' && text[i + 3] != '1'))
            return false;
        const char h = text[i + 4];
        if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) return false;
        i += 4;
    }
    return true;
}

std::optional<Denial> quarantine_refusal(const PinBook& pins, const std::string& server, const std::string& tool) {
    if (!pins.quarantined(server, tool)) return std::nullopt;
    return Denial{Reason::quarantined, tool,
                  "trusted " + pins.trusted(server, tool).value_or("?") + "; accept the new digest with the operator"};
}

}  // namespace corral::mcp
