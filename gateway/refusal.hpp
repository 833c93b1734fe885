// gateway/refusal.hpp — every reason the gateway refuses or cuts a request
// for, the HTTP status it answers with, and in which phase it can happen.
//
// One table (refusal.cpp) is the only place a reason's status is written
// down: the serving side answers with refusal_status(), the ledger records the
// same code and status, docs/gateway.md lists the same rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corral::gateway {

namespace reason {
inline constexpr std::string_view none = "";  // allowed
inline constexpr std::string_view bad_request = "bad_request";
inline constexpr std::string_view smuggling = "smuggling";
inline constexpr std::string_view bad_host = "bad_host";
inline constexpr std::string_view bad_path = "bad_path";
inline constexpr std::string_view non_canonical_path = "non_canonical_path";
inline constexpr std::string_view trailers_refused = "trailers_refused";
inline constexpr std::string_view unsupported_method = "unsupported_method";
inline constexpr std::string_view not_granted = "not_granted";
inline constexpr std::string_view route_denied = "route_denied";
inline constexpr std::string_view private_address = "private_address";
inline constexpr std::string_view mixed_answers = "mixed_answers";
inline constexpr std::string_view numeric_host = "numeric_host";
inline constexpr std::string_view gateway_self = "gateway_self";
inline constexpr std::string_view sni_mismatch = "sni_mismatch";
inline constexpr std::string_view host_mismatch = "host_mismatch";
// Transparent capture (docs/capture.md): a captured connection's first bytes
// are neither a TLS ClientHello nor an HTTP request, or not what its grant
// takes (an inject grant takes TLS only); closed without an answer, since
// the box's program speaks no proxy protocol to read one in.
inline constexpr std::string_view first_flight = "first_flight";
// A captured connection whose local address stands for no name (closed).
inline constexpr std::string_view captured_unmapped = "captured_unmapped";
// The box's DNS stub (status 0: answered in DNS, not HTTP): a malformed
// query (FORMERR, or silence), an opcode or class it does not serve
// (NOTIMP, REFUSED), a name past the run's synthetic address or captured
// listener limit (REFUSED), queries past its rate (dropped unanswered).
// Its NXDOMAIN for a name no grant covers is not_granted (bad_host,
// numeric_host), the proxy's codes for the same verdicts.
inline constexpr std::string_view dns_malformed = "dns_malformed";
inline constexpr std::string_view dns_not_supported = "dns_not_supported";
inline constexpr std::string_view synthetic_addresses_exhausted = "synthetic_addresses_exhausted";
inline constexpr std::string_view dns_rate_limited = "dns_rate_limited";
// An inject grant asked for over plain http:// (inject needs CONNECT and TLS).
inline constexpr std::string_view cleartext_inject = "cleartext_inject";
// The daemon's listen_tcp serves root's connections only; the peer's socket
// is not root's, or its owner could not be read (fail closed).
inline constexpr std::string_view tcp_peer_not_root = "tcp_peer_not_root";
// A session's connection whose socket is no role's UID, or whose owner could
// not be read (fail closed: its ledger line could not name its role).
inline constexpr std::string_view session_role_unknown = "session_role_unknown";
inline constexpr std::string_view body_too_large = "body_too_large";
inline constexpr std::string_view headers_too_large = "headers_too_large";
inline constexpr std::string_view budget_exhausted = "budget_exhausted";
// A grant with approval = true (docs/approvals.md): a person denied the
// request, no decision came by its deadline (never a deny, never an
// approval), or the approver stopped (the run ended, the daemon restarted).
inline constexpr std::string_view approval_denied = "approval_denied";
inline constexpr std::string_view approval_timeout = "approval_timeout";
inline constexpr std::string_view approval_cancelled = "approval_cancelled";
// A model request whose worst case does not fit what its budget has left, or
// any request once usage went unmetered under a token or USD budget
// (gateway/metering/budget.hpp). 400: the one status every client treats
// as final (the Anthropic and OpenAI SDKs retry 408, 409, 429 and 5xx, and
// honour x-should-retry; codex retries every status but 400, and 401 after
// a refresh), so the CLI stops and shows corral's sentence.
inline constexpr std::string_view model_budget = "model_budget";
// A model request the inject grant's model policy refuses (a model, a tool,
// a source, a beta not allowed).
inline constexpr std::string_view model_policy = "model_policy";
// Under a budget or a model policy, a request neither can govern: a model API
// corral does not meter, a model route asked with a method the meter does
// not read, or a request that could spend on a route neither a known model
// route nor in the grant's routes (gateway/metering/model_routes.hpp). 400,
// in the provider's error shape, for model_budget's reason.
inline constexpr std::string_view ungoverned_route = "ungoverned_route";
// Inside an inject tunnel: a header an upstream could read as another
// method (X-HTTP-Method-Override and its kin), or a header name with '_'
// (some servers read anthropic_beta as anthropic-beta).
inline constexpr std::string_view header_refused = "header_refused";
// Under a budget or a body-reading model policy, a model request's body that
// two JSON readers could read differently (a duplicate key, keys differing
// only in case, an upper case key where the API's are lower case:
// gateway/metering/model_body.hpp).
inline constexpr std::string_view ambiguous_body = "ambiguous_body";
// codex's Responses WebSocket under a budget or a body-reading policy: no
// response on it could be reserved or checked before it is sent. 426 makes
// codex stream over HTTP instead, where each request is.
inline constexpr std::string_view model_websocket = "model_websocket";
inline constexpr std::string_view upstream_tls = "upstream_tls";
inline constexpr std::string_view upstream_connect = "upstream_connect";
inline constexpr std::string_view upstream_protocol = "upstream_protocol";  // no valid HTTP/1.1 from the upstream
// An inject grant's response body compressed anyway (the request asked for
// identity): it cannot be scanned for the credential, so it is not passed on.
inline constexpr std::string_view upstream_encoding = "upstream_encoding";
inline constexpr std::string_view dns_failure = "dns_failure";
inline constexpr std::string_view leaf_unavailable = "leaf_unavailable";  // no certificate for the CONNECT host
inline constexpr std::string_view ledger_unwritable = "ledger_unwritable";
inline constexpr std::string_view too_many_connections = "too_many_connections";
inline constexpr std::string_view identity_connection_cap = "identity_connection_cap";
inline constexpr std::string_view timeout = "timeout";
// Recorded, never answered: the box's TLS handshake failed (there is no
// channel to answer on), a response cut at max_response_bytes after its head
// went out.
inline constexpr std::string_view client_tls = "client_tls";
inline constexpr std::string_view response_too_large = "response_too_large";
// The box closed its connection before the exchange ended: while the answer
// was awaited (ClientDepartureWatch) or while it was being written.
inline constexpr std::string_view client_gone = "client_gone";
// The ledger's own lines, never an answer to a client (status 0): an
// identity's refusals passed ledger_refusals_per_identity and are no longer
// written one by one; and the running count of them since, at 2×, 4×, 8×… the cap.
inline constexpr std::string_view ledger_refusal_cap_reached = "ledger_refusal_cap_reached";
inline constexpr std::string_view ledger_refusals_suppressed = "ledger_refusals_suppressed";
// Not a refusal either (decision allow, the response's status; no row in the
// table): an upstream sent an injected secret back and the gateway masked it
// (one line per response or WebSocket connection, with `form` and `matches`).
inline constexpr std::string_view secret_reflected = "secret_reflected";
}  // namespace reason

// Where in a connection's life a refusal is decided. The same reason can
// answer differently by phase: a timeout while the box's request is being
// read is the box's (408), one while the upstream is awaited is the
// upstream's (504).
enum class Phase {
    request,   // accepting, reading and checking the box's request
    upstream,  // resolving, dialling, TLS to and waiting on the upstream
    record,    // a ledger line only: nothing can be answered (status 0)
};

struct RefusalRow {
    std::string_view reason;
    int status;  // 0: recorded, never answered
    Phase phase;
};

// The row for `code` in `phase`; a code with one row answers the same in
// every phase. nullopt for a code not in the table.
std::optional<RefusalRow> refusal_row(std::string_view code, Phase phase = Phase::request);

// The status of `code` refused in `phase`: 200 for "", 500 for a code not in
// the table (a refusal the table forgot still fails closed).
int refusal_status(std::string_view code, Phase phase);

// refusal_status(code, Phase::request).
int status_for_reason(std::string_view code);

// Where the grants of the refused run come from, which decides what the
// operator can change: the run's own (worker.toml, org.toml, --allow), or a
// `corral gateway` daemon's organisation (--gateway: --allow is refused there,
// and a grant added to the daemon's files counts once the daemon restarts).
enum class GrantsFrom { run, daemon };

// For the operator (corral run's live refusal lines): what would let a
// request refused for `code` through, or what the refusal protects, in one
// sentence naming host:port; "" for a code without advice. A loopback host
// (localhost, 127.0.0.0/8, ::1) is told the grant that reaches it, and that
// it is the host's loopback the gateway dials, not the box's.
std::string what_would_allow(std::string_view code, std::string_view host, std::uint16_t port,
                             GrantsFrom from = GrantsFrom::run);

// How the answer's body is written: corral's text line, or the error object
// of the model API the request was for, so the CLI shows corral's sentence
// as the provider's error message instead of failing to parse the body.
enum class ErrorShape { text, anthropic, openai };

// A decision to refuse: the reason code, the one line saying what was wrong
// (sent to the box, so never a secret), and the phase for its status.
struct Refusal {
    std::string reason;
    std::string detail;
    Phase phase = Phase::request;
    ErrorShape shape = ErrorShape::text;
    int status() const { return refusal_status(reason, phase); }
};

// The answer's body and Content-Type:
//   text       "corral gateway: STATUS CODE: DETAIL\n"
//   anthropic  {"type":"error","error":{"type":"permission_error","message":"corral gateway: ..."}}
//   openai     {"error":{"message":"corral gateway: ...","type":"...","param":null,"code":"corral_CODE"}}
struct RefusalBody {
    std::string content_type;
    std::string body;
};
RefusalBody refusal_body(ErrorShape shape, int status, std::string_view code, std::string_view detail);

}  // namespace corral::gateway
