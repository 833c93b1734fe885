// mcp/tool_pin.hpp — what a tool says about itself, pinned: the SHA-256 of
// its canonical name, description, inputSchema and annotations. A PinBook
// records the digest on first sight; a later different digest quarantines
// the tool (refused, said why) until the operator accepts the new one.
// docs/tools.md "Pinning".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace corral::mcp {

// The canonical JSON hashed: an object of exactly those four members (absent
// ones as null), keys sorted at every level, no whitespace, non-ASCII escaped.
std::string tool_canonical(const nlohmann::json& tool);

// "sha256:<64 hex>" of tool_canonical(tool).
std::string tool_digest(const nlohmann::json& tool);

enum class Sight { first_seen, unchanged, quarantined };

// One tool as a PinBook holds it: what it trusts and what it saw last
// ("" = never seen, only pinned). What a run's pins store keeps of it
// (run/mcp_pin_store.hpp).
struct PinEntry {
    std::string server, tool, trusted, seen;
};

class PinBook {
public:
    // A digest from the configuration: trusted before first sight.
    void pin(const std::string& server, const std::string& tool, const std::string& digest);
    // Records what the server now says. first_seen: recorded and trusted
    // (unless a pin disagrees); quarantined: differs from the trusted digest.
    Sight see(const std::string& server, const std::string& tool, const std::string& digest);
    // see() of tool_digest(tool), computed only when `tool` differs from the
    // last one this book saw under that name (an unchanged tools/list answer
    // is compared, not re-hashed). `digest` gets the tool's digest. `text`,
    // when not empty, is `value` as the server wrote it: then the bytes are
    // compared instead of the trees (equal bytes are an equal tool; unequal
    // bytes are hashed again, so any change of the tool is seen), which costs
    // a memcmp where a tree comparison cost most of the filter
    // (docs/benchmarks.md, session 35).
    Sight see_tool(const std::string& server, const std::string& tool, const nlohmann::json& value,
                   std::string& digest, std::string_view text = {});
    // Whether see_tool with `text` would find it equal to the last sight's
    // bytes, and so need no tree (an outlined tools/list: tools_list.hpp).
    bool knows_text(const std::string& server, const std::string& tool, std::string_view text) const;
    // The operator accepts `digest` (corral mcp trust): it becomes trusted.
    void accept(const std::string& server, const std::string& tool, const std::string& digest);
    bool quarantined(const std::string& server, const std::string& tool) const;
    std::optional<std::string> trusted(const std::string& server, const std::string& tool) const;
    // Every tool pinned or seen, by server and tool name.
    std::vector<PinEntry> entries() const;

private:
    struct Entry {
        std::string trusted;
        std::string seen;  // last digest seen; != trusted means quarantined
        nlohmann::json seen_tool;  // the tool whose digest is `seen` (see_tool without text)
        std::string seen_text;     // or its bytes as the server wrote them (see_tool with text)
    };
    std::map<std::pair<std::string, std::string>, Entry> entries_;
};

}  // namespace corral::mcp
