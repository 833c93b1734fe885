// gateway/request_checks.hpp — the checks a request must pass before anything
// of it is forwarded, as pure functions of the request and the policy: no
// socket, no clock, no shared state. Each returns the refusal, or nullopt.
//
// The serving side calls them in this order: check_connection_caps (before a
// byte is read), check_proxy_request (the connection's first request), the
// grant and address decisions (upstream.hpp), check_grant_mode, then per
// request inside an inject tunnel check_tunnel_request.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <string>
#include <string_view>

#include "config/gateway_config.hpp"
#include "gateway/host.hpp"
#include "gateway/refusal.hpp"
#include "gateway/request_reader.hpp"

namespace corral::gateway {

// The identity's own share first: a box at its cap is told so, and it is
// refused before it can take the daemon-wide slots every box shares.
// identity_open and open_total include the connection being checked.
std::optional<Refusal> check_connection_caps(const config::GatewayLimits& limits, const std::string& identity,
                                             std::uint64_t identity_open, std::size_t open_total);

// Methods refused in inject and plain mode. TRACE (and IIS's TRACK) make the
// upstream echo the request back, injected credential included; CONNECT
// inside a tunnel would ask the upstream to open a tunnel no grant names.
// Compared without case: some servers read methods that way.
bool is_never_forwarded(std::string_view method);

// An absolute-form http:// target split into its authority and origin-form
// path ("/" when empty); nullopt for any other form, or userinfo ("user@").
struct AbsoluteTarget {
    std::string authority;
    std::string path;
};
std::optional<AbsoluteTarget> split_absolute_http(std::string_view target);

// What the connection's first request asks for: CONNECT host:port, or one
// plain exchange with an absolute http:// target. `host` and `path` are what
// the ledger names even when refused (cut to 256 bytes).
struct ProxyRequest {
    bool connect = false;
    std::optional<Authority> authority;  // set when not refused
    std::string path;                    // plain requests: the origin-form path
    std::string host;                    // for the ledger
    std::optional<Refusal> refusal;
};
ProxyRequest check_proxy_request(const Request& req);

// What the ledger names for a first request whose head was refused (the
// request line was parsed): the target's authority and path.
void name_refused_target(std::string_view target, std::string& host, std::string& path);

// A captured connection's plain HTTP request (docs/capture.md "First
// flight") to `target`, the name and port its address stands for: the
// method is one forwarded, the request target origin-form ("/...", or an
// absolute http:// URL naming `target`), exactly one Host naming the target's
// host (its port, when given, the target's). The origin-form path, or the
// refusal (host_mismatch, unsupported_method, bad_request).
std::variant<std::string, Refusal> check_captured_request(const Request& req, const Authority& target);

// The grant's mode fits the request: inject needs CONNECT and TLS.
std::optional<Refusal> check_grant_mode(bool connect, const config::Grant& grant);

// A request inside an inject tunnel as its checks found it: what every
// later decision (the model policy, metering) reads, whole. The ledger's
// copy of the path is cut for the line; no decision reads that copy.
struct CheckedTunnelRequest {
    std::string method;
    std::string path;  // canonical_route_path of the target, as long as it is
};

// Header names an inject tunnel does not forward (400 header_refused): any
// with '_' (a server that maps '_' to '-' would read anthropic_beta as the
// anthropic-beta the policy checks), and the method-override headers
// (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override: the upstream
// would act as another method than the one checked). Refused, not removed:
// a client that sends them means something corral would not do.
std::optional<Refusal> check_tunnel_header_names(const Request& req);

// One request inside an inject tunnel to connect_host:connect_port under
// `grant`: HTTP/1.1, a method HTTP defines (exactly: "post" is refused) that
// is forwarded, header names check_tunnel_header_names passes, exactly one Host naming the
// CONNECT host and port, a canonical path, a route the grant allows. The
// path is made canonical here, once per request.
std::variant<CheckedTunnelRequest, Refusal> check_tunnel_request(const Request& req, const HostName& connect_host,
                                                                 std::uint16_t connect_port, const config::Grant& grant);

}  // namespace corral::gateway
