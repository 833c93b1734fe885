#include "gateway/refusal.hpp"

#include <boost/asio/ip/address.hpp>
#include <nlohmann/json.hpp>

#include "gateway/address_class.hpp"

namespace corral::gateway {

namespace {

constexpr RefusalRow kRows[] = {
    {reason::none, 200, Phase::request},
    {reason::bad_request, 400, Phase::request},
    {reason::smuggling, 400, Phase::request},
    {reason::bad_host, 400, Phase::request},
    {reason::bad_path, 400, Phase::request},
    {reason::non_canonical_path, 400, Phase::request},
    {reason::trailers_refused, 400, Phase::request},
    {reason::unsupported_method, 405, Phase::request},
    {reason::not_granted, 403, Phase::request},
    {reason::route_denied, 403, Phase::request},
    {reason::approval_denied, 403, Phase::request},
    {reason::approval_timeout, 403, Phase::request},
    {reason::approval_cancelled, 403, Phase::request},
    {reason::private_address, 403, Phase::upstream},
    {reason::mixed_answers, 403, Phase::upstream},
    {reason::numeric_host, 403, Phase::request},
    {reason::gateway_self, 403, Phase::upstream},
    {reason::sni_mismatch, 403, Phase::request},
    {reason::host_mismatch, 403, Phase::request},
    {reason::first_flight, 403, Phase::request},
    {reason::captured_unmapped, 0, Phase::record},
    {reason::dns_malformed, 0, Phase::record},
    {reason::dns_not_supported, 0, Phase::record},
    {reason::synthetic_addresses_exhausted, 0, Phase::record},
    {reason::dns_rate_limited, 0, Phase::record},
    {reason::cleartext_inject, 403, Phase::request},
    {reason::tcp_peer_not_root, 403, Phase::request},
    {reason::session_role_unknown, 403, Phase::request},
    {reason::body_too_large, 413, Phase::request},
    {reason::headers_too_large, 431, Phase::request},
    {reason::budget_exhausted, 429, Phase::request},
    {reason::model_budget, 400, Phase::request},
    {reason::model_policy, 400, Phase::request},
    {reason::ungoverned_route, 400, Phase::request},
    {reason::header_refused, 400, Phase::request},
    {reason::ambiguous_body, 400, Phase::request},
    {reason::model_websocket, 426, Phase::request},
    {reason::leaf_unavailable, 500, Phase::request},
    {reason::upstream_tls, 502, Phase::upstream},
    {reason::upstream_connect, 502, Phase::upstream},
    {reason::upstream_protocol, 502, Phase::upstream},
    {reason::upstream_encoding, 502, Phase::upstream},
    {reason::dns_failure, 502, Phase::upstream},
    {reason::ledger_unwritable, 503, Phase::request},
    {reason::too_many_connections, 503, Phase::request},
    {reason::identity_connection_cap, 503, Phase::request},
    {reason::timeout, 408, Phase::request},
    {reason::timeout, 504, Phase::upstream},
    {reason::client_tls, 0, Phase::record},
    {reason::response_too_large, 0, Phase::record},
    {reason::client_gone, 0, Phase::record},
    {reason::ledger_refusal_cap_reached, 0, Phase::record},
    {reason::ledger_refusals_suppressed, 0, Phase::record},
};

}  // namespace

std::optional<RefusalRow> refusal_row(std::string_view code, Phase phase) {
    std::optional<RefusalRow> any;
    for (const auto& r : kRows) {
        if (r.reason != code) continue;
        if (r.phase == phase) return r;
        if (!any) any = r;
    }
    return any;
}

int refusal_status(std::string_view code, Phase phase) {
    auto r = refusal_row(code, phase);
    return r ? r->status : 500;
}

int status_for_reason(std::string_view code) { return refusal_status(code, Phase::request); }

namespace {

// localhost, *.localhost (RFC 6761: always loopback) and loopback addresses.
bool is_loopback_host(std::string_view host) {
    if (host == "localhost" || host.ends_with(".localhost")) return true;
    boost::system::error_code ec;
    const auto a = boost::asio::ip::make_address(std::string(host), ec);
    return !ec && classify_address(a) == AddressClass::loopback;
}

// HOST as a grant's `host` value and as --allow's argument: IPv6 in brackets.
std::string grant_host(std::string_view host) {
    return host.find(':') == std::string_view::npos ? std::string(host) : "[" + std::string(host) + "]";
}

std::string grant_entry(std::string_view host, std::uint16_t port, bool allow_private) {
    return "a [[grants]] entry with host = \"" + grant_host(host) + "\", port = " + std::to_string(port) +
           ", mode = \"tunnel\"" + (allow_private ? ", allow_private = true" : "");
}

bool is_ip_literal(std::string_view host) {
    boost::system::error_code ec;
    boost::asio::ip::make_address(std::string(host), ec);
    return !ec;
}

constexpr std::string_view kDaemonFiles =
    "the `corral gateway` daemon's organisation (org.toml, or the worker's worker.toml, under its --org DIR) and "
    "restart the daemon; --allow is refused with --gateway";

// --allow NAME makes a grant that must resolve to public addresses: a private
// name is reached only by allow_private in a file, or (a loopback name) by
// asking for the address, which --allow may name (naming it is the consent).
std::string allow_name_is_not_enough(std::string_view host, std::uint16_t port, bool loopback) {
    const std::string p = std::to_string(port);
    return " (--allow " + std::string(host) + ":" + p +
           " is not enough: a name given to --allow must resolve to public addresses" +
           (loopback ? "; or have the client ask for 127.0.0.1:" + p + " and pass --allow 127.0.0.1:" + p : "") + ")";
}

// A special-purpose address given as the host, or a loopback name: its grant
// in a file needs allow_private (an address given to --allow has it).
bool needs_allow_private(std::string_view host) {
    if (is_loopback_host(host)) return true;
    boost::system::error_code ec;
    const auto a = boost::asio::ip::make_address(std::string(host), ec);
    return !ec && is_special_purpose(classify_address(a));
}

// A grant where there is none: where to add it, and (a run's own grants) the
// one-run way.
std::string where_to_grant(GrantsFrom from, std::string_view host, std::uint16_t port, bool loopback) {
    const std::string entry = "add " + grant_entry(host, port, needs_allow_private(host)) + " to ";
    if (from == GrantsFrom::daemon) return entry + std::string(kDaemonFiles);
    if (loopback && !is_ip_literal(host)) return entry + "worker.toml" + allow_name_is_not_enough(host, port, true);
    return entry + "worker.toml, or pass --allow " + grant_host(host) + ":" + std::to_string(port) + " for one run";
}

// A grant that exists but may not reach a special-purpose address.
std::string where_to_allow_private(GrantsFrom from, std::string_view host, std::uint16_t port, bool loopback) {
    const std::string hp = grant_host(host) + ":" + std::to_string(port);
    if (from == GrantsFrom::daemon) return "set it on the grant for " + hp + " in " + std::string(kDaemonFiles);
    return "set it on the grant for " + hp + " in worker.toml or org.toml" + allow_name_is_not_enough(host, port, loopback);
}

// Said of every loopback target: the gateway dials from the host.
constexpr std::string_view kHostLoopback =
    "; the gateway dials from the host, so this reaches the host's loopback, not the box's";

}  // namespace

std::string what_would_allow(std::string_view code, std::string_view host, std::uint16_t port, GrantsFrom from) {
    const std::string hp = std::string(host) + ":" + std::to_string(port);
    const bool loopback = is_loopback_host(host);
    const std::string_view dials_host = loopback ? kHostLoopback : "";
    if (code == reason::not_granted)
        return "no grant covers " + hp + "; to allow it, " + where_to_grant(from, host, port, loopback) +
               std::string(dials_host);
    if (code == reason::private_address)
        return std::string(host) + " resolves to a private, loopback or link-local address, which a grant reaches " +
               "only with allow_private = true: " + where_to_allow_private(from, host, port, loopback) +
               std::string(dials_host);
    if (code == reason::mixed_answers)
        return std::string(host) +
               " resolves to public and private addresses at once (a rebinding signal), which no grant reaches";
    if (code == reason::approval_timeout)
        return "the grant for " + hp + " asks a person first, and nobody decided in time: `corral approvals` lists what waits, `corral approve ID` lets it through";
    if (code == reason::approval_denied) return "a person denied it (`corral deny`); the box was told who and why";
    if (code == reason::route_denied) return "the grant for " + hp + " does not allow this method and path: extend its routes";
    if (code == reason::cleartext_inject) return "the grant for " + hp + " injects a credential, which needs https:// (CONNECT and TLS)";
    if (code == reason::numeric_host) return "requests must name a host, not an IP address; grants are by name";
    if (code == reason::gateway_self) return std::string(host) + " is the gateway itself";
    if (code == reason::sni_mismatch || code == reason::host_mismatch)
        return "the TLS name or Host header differs from the CONNECT host " + hp;
    if (code == reason::first_flight)
        return "a captured connection to " + hp + " sent neither a TLS ClientHello nor an HTTP request its grant takes";
    if (code == reason::synthetic_addresses_exhausted)
        return "the run's DNS stub gave out as many addresses (or captured listeners) as it may; names already given keep theirs";
    if (code == reason::dns_rate_limited) return "the box asked its DNS stub more than it answers per second";
    if (code == reason::model_budget) return "the run's or worker's model budget does not cover it ([budget] in worker.toml; `corral budget show WORKER` with a daemon)";
    if (code == reason::model_policy) return "the grant's model policy ([grants.policy]) refuses what the request asked for";
    if (code == reason::ungoverned_route)
        return "a budget or model policy is in force on " + hp + " and this route is not one it can read: declare it in the grant's routes, or see docs/budgets.md for the model APIs corral refuses";
    if (code == reason::model_websocket) return "model WebSockets are refused under a budget or policy; the client falls back to HTTPS";
    // One code for both: the grant's request budget, and an MCP call over a
    // tool-call budget (mcp/denial.hpp), which its JSON-RPC error names.
    if (code == reason::budget_exhausted)
        return "a budget is spent: the grant's requests, or for an MCP call ([mcp.budget]) the tool calls of the run, "
               "a tool or the worker (`corral budget show WORKER` with a daemon)";
    if (code == reason::upstream_tls) return "the upstream's certificate did not verify against the gateway's trust store";
    if (code == reason::upstream_connect) return hp + " could not be reached from the host";
    if (code == reason::dns_failure) return std::string(host) + " did not resolve on the host";
    if (code == reason::client_tls) return "the box's TLS handshake failed: does the client trust corral's CA?";
    if (code == reason::identity_connection_cap)
        return "the run had as many connections open to the gateway as it may (max_connections_per_identity)";
    if (code == reason::too_many_connections) return "the gateway had as many connections open as it may (max_connections)";
    if (code == reason::ledger_unwritable) return "the ledger cannot be written, so every request is refused";
    return {};
}

namespace {
// The providers' error types for a status (both document these names).
std::string_view anthropic_error_type(int status) {
    switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
    }
}
std::string_view openai_error_type(int status) {
    switch (status) {
    case 401: return "invalid_api_key";
    case 403: return "permission_denied";
    case 429: return "rate_limit_exceeded";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}
}  // namespace

RefusalBody refusal_body(ErrorShape shape, int status, std::string_view code, std::string_view detail) {
    std::string message = "corral gateway: " + std::to_string(status) + " " + std::string(code);
    if (!detail.empty()) message += ": " + std::string(detail);
    constexpr auto replace = nlohmann::json::error_handler_t::replace;
    switch (shape) {
    case ErrorShape::anthropic: {
        nlohmann::ordered_json j;
        j["type"] = "error";
        j["error"]["type"] = anthropic_error_type(status);
        j["error"]["message"] = message;
        return {"application/json", j.dump(-1, ' ', false, replace)};
    }
    case ErrorShape::openai: {
        nlohmann::ordered_json j;
        j["error"]["message"] = message;
        j["error"]["type"] = openai_error_type(status);
        j["error"]["param"] = nullptr;
        j["error"]["code"] = "corral_" + std::string(code);
        return {"application/json", j.dump(-1, ' ', false, replace)};
    }
    case ErrorShape::text: break;
    }
    return {"text/plain; charset=utf-8", message + "\n"};
}

}  // namespace corral::gateway
