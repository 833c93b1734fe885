// gateway/mcp_response.hpp — an MCP server's answer on its way back to the
// box (the MCP endpoint, gateway/mcp_endpoint.hpp). Pure: no I/O.
//
// The answer is read whole (bounded by max_response_bytes) and then:
// application/json or text/event-stream, each JSON-RPC message read the
// strict way; a tools/list result filtered to the tools the policy may allow
// and pinned (first sight recorded, a changed digest quarantined); a
// server→client request dropped unless the server may send them; every
// message scrubbed of every secret the gateway holds. An answer that is
// oversize, malformed or of another Content-Type is withheld and replaced by
// a JSON-RPC error (malformed_result) for each request the box sent.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/secret_scrubber.hpp"
#include "mcp/message.hpp"

namespace corral::gateway {

class McpTools;

// What the server sent, as read.
struct McpUpstreamAnswer {
    int status = 0;
    std::string content_type;
    std::string body;
    std::string session_id;     // Mcp-Session-Id, passed back to the box
    bool oversize = false;      // the body passed the cap and was not read whole
};

// The outcome of one request the box sent (a message with an id).
struct McpCallOutcome {
    nlohmann::json id;
    std::string error;          // "CODE MESSAGE" of a JSON-RPC error answer, or "no answer"
    std::uint64_t result_bytes = 0;  // the answer message as the box got it
    std::string result_digest;       // "sha256:<hex>" of those bytes
    std::string result;              // those bytes, cut at keep_result_bytes (log_arguments only)
};

// A tool a tools/list answer showed with a digest other than the trusted one.
struct McpQuarantine {
    std::string tool;
    std::string trusted_digest;
    std::string digest;
};

struct McpAnswer {
    int status = 200;
    std::string content_type;
    std::string body;           // as the box gets it
    std::vector<McpCallOutcome> outcomes;   // one per request message of the box, in order
    std::string withheld;       // "" or why the server's answer was replaced
    std::vector<std::pair<std::string, std::string>> first_seen;  // (tool, digest)
    std::vector<McpQuarantine> quarantined;
    std::uint64_t server_requests_dropped = 0;
    std::uint64_t secrets_masked = 0;
    // The server's messages as parsed, kept so that their trees are freed
    // with the answer, after it was written to the box, not before: freeing a
    // tools/list answer's tree was ~9% of its governance (docs/benchmarks.md,
    // session 35).
    std::shared_ptr<void> parsed;
};

struct McpAnswerContext {
    const std::string& server;
    const std::vector<mcp::Message>& requests;  // what the box sent (read_message)
    bool batch = false;
    bool allow_server_requests = false;
    std::uint64_t cap = 0;      // max_response_bytes
    std::shared_ptr<const ScrubPatterns> patterns;
    std::size_t keep_result_bytes = 0;  // > 0: each outcome keeps its result's first bytes (log_arguments)
};

McpAnswer govern_answer(McpUpstreamAnswer in, const McpAnswerContext& ctx, McpTools& tools);

// The answer for a request refused by corral: a JSON-RPC error per request
// message (an array for a batch), or the single error with `fallback_id`.
std::string denial_body(const mcp::Denial& d, const std::vector<mcp::Message>& requests, bool batch,
                        const nlohmann::json& fallback_id);

// With [mcp] log_arguments: how much of a call's arguments and of its
// result a ledger line keeps (each scrubbed of every secret first).
inline constexpr std::size_t kLoggedTextBytes = 4096;

// `text` whole when it has at most `cap` bytes; else its first `cap` bytes
// (never cutting a UTF-8 sequence) and "...[cut: N bytes]", N its size.
std::string capped_text(std::string_view text, std::size_t cap);

// sha256 of the canonical JSON of `arguments` (keys sorted, no whitespace,
// non-ASCII escaped), "sha256:<hex>".
std::string arguments_digest(const nlohmann::json& arguments);

// The canonical JSON arguments_digest hashes.
std::string arguments_canonical(const nlohmann::json& arguments);

}  // namespace corral::gateway
