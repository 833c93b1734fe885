#include "gateway/request_checks.hpp"

#include <boost/beast/http.hpp>

#include <iterator>

#include "gateway/grants.hpp"
#include "gateway/http_framing.hpp"

namespace corral::gateway {

namespace http = boost::beast::http;

std::optional<Refusal> check_connection_caps(const config::GatewayLimits& limits, const std::string& identity,
                                             std::uint64_t identity_open, std::size_t open_total) {
    if (identity_open > limits.max_connections_per_identity)
        return Refusal{std::string(reason::identity_connection_cap),
                       identity + " holds more than max_connections_per_identity (" +
                           std::to_string(limits.max_connections_per_identity) + ") open connections"};
    if (open_total > limits.max_connections)
        return Refusal{std::string(reason::too_many_connections),
                       "more than max_connections (" + std::to_string(limits.max_connections) + ") open"};
    return std::nullopt;
}

bool is_never_forwarded(std::string_view method) {
    return iequals(method, "TRACE") || iequals(method, "TRACK") || iequals(method, "CONNECT");
}

std::optional<AbsoluteTarget> split_absolute_http(std::string_view target) {
    constexpr std::string_view scheme = "http://";
    if (target.size() < scheme.size() || !iequals(target.substr(0, scheme.size()), scheme)) return std::nullopt;
    target.remove_prefix(scheme.size());
    auto end = target.find_first_of("/?#");
    AbsoluteTarget a;
    a.authority = std::string(target.substr(0, end));
    if (a.authority.find('@') != std::string::npos) return std::nullopt;  // userinfo: refuse, never forward
    a.path = end == std::string_view::npos ? "/" : std::string(target.substr(end));
    if (a.path.front() != '/') a.path.insert(0, "/");
    return a;
}

void name_refused_target(std::string_view target, std::string& host, std::string& path) {
    auto abs = split_absolute_http(target);
    host = abs ? abs->authority.substr(0, 256) : std::string(target.substr(0, 256));
    if (abs) path = abs->path.substr(0, 256);
}

ProxyRequest check_proxy_request(const Request& req) {
    ProxyRequest r;
    std::string_view target = req.target();
    r.connect = req.method() == http::verb::connect;
    std::optional<AbsoluteTarget> absolute;
    AuthorityCheck ac;
    if (r.connect) {
        ac = split_authority(target);
    } else {
        absolute = split_absolute_http(target);
        if (!absolute) {
            r.path = std::string(target.substr(0, 256));
            r.refusal = Refusal{std::string(reason::unsupported_method),
                                "expected CONNECT host:port or an absolute http:// request target"};
            return r;
        }
        ac = split_authority(absolute->authority, 80);
        if (is_never_forwarded(req.method_string())) {
            r.host = absolute->authority.substr(0, 256), r.path = absolute->path.substr(0, 256);
            r.refusal = Refusal{std::string(reason::unsupported_method),
                                std::string(req.method_string()) + " is not forwarded"};
            return r;
        }
    }
    if (!ac.authority) {
        r.host = std::string((absolute ? std::string_view(absolute->authority) : target).substr(0, 256));
        r.refusal = Refusal{ac.reason, "cannot use the requested host"};
        return r;
    }
    r.host = ac.authority->host.text();
    r.authority = std::move(ac.authority);
    if (absolute) r.path = std::move(absolute->path);
    return r;
}

std::variant<std::string, Refusal> check_captured_request(const Request& req, const Authority& target) {
    const std::string named = target.host.text() + ":" + std::to_string(target.port);
    if (is_never_forwarded(req.method_string()))
        return Refusal{std::string(reason::unsupported_method), std::string(req.method_string()) + " is not forwarded"};
    auto names_target = [&](std::string_view authority) {
        auto a = split_authority(authority, target.port);
        return a.authority && a.authority->host == target.host && a.authority->port == target.port;
    };
    std::string path(req.target());
    if (!path.starts_with("/")) {
        auto absolute = split_absolute_http(path);
        if (!absolute) return Refusal{std::string(reason::bad_request), "expected an origin-form request target"};
        if (!names_target(absolute->authority))
            return Refusal{std::string(reason::host_mismatch), "the request's URL names another host than " + named};
        path = std::move(absolute->path);
    }
    if (req.count(http::field::host) != 1)
        return Refusal{std::string(reason::host_mismatch), "a captured request needs exactly one Host header"};
    if (!names_target(req[http::field::host]))
        return Refusal{std::string(reason::host_mismatch), "the Host header names another host than " + named};
    return path;
}

std::optional<Refusal> check_grant_mode(bool connect, const config::Grant& grant) {
    if (!connect && grant.mode == config::GrantMode::inject)
        return Refusal{std::string(reason::cleartext_inject),
                       "this host is granted in inject mode, which requires CONNECT and TLS"};
    return std::nullopt;
}

namespace {

// A method or header name as a refusal shows it: printable ASCII only, at
// most 32 bytes (it came from the box).
std::string shown_token(std::string_view m) {
    std::string out;
    for (char ch : m.substr(0, 32)) out += (ch > 0x20 && ch < 0x7f) ? ch : '?';
    return out;
}

}  // namespace

std::optional<Refusal> check_tunnel_header_names(const Request& req) {
    for (const auto& f : req) {
        std::string_view name = f.name_string();
        if (name.find('_') != std::string_view::npos)
            return Refusal{std::string(reason::header_refused),
                           "header name " + shown_token(name) +
                               " has '_', which some servers read as '-'; spell it with '-'"};
        for (std::string_view override_name : {"x-http-method-override", "x-http-method", "x-method-override"})
            if (boost::beast::iequals(name, override_name))
                return Refusal{std::string(reason::header_refused),
                               std::string(override_name) + " asks the upstream to take the request as another "
                                                            "method than the one checked; it is not forwarded"};
    }
    return std::nullopt;
}

std::variant<CheckedTunnelRequest, Refusal> check_tunnel_request(const Request& req, const HostName& connect_host,
                                                                 std::uint16_t connect_port, const config::Grant& grant) {
    if (req.version() != 11) return Refusal{std::string(reason::bad_request), "only HTTP/1.1 is served inside a tunnel"};
    if (is_never_forwarded(req.method_string()))
        return Refusal{std::string(reason::unsupported_method), std::string(req.method_string()) + " is not forwarded"};
    if (req.method() == http::verb::unknown)
        return Refusal{std::string(reason::unsupported_method),
                       "method " + shown_token(req.method_string()) +
                           " is not one HTTP defines (methods are case-sensitive: POST, not post)"};
    if (auto refused = check_tunnel_header_names(req)) return *refused;
    auto hosts = req.equal_range(http::field::host);
    if (std::distance(hosts.first, hosts.second) != 1)
        return Refusal{std::string(reason::bad_request), "expected exactly one Host header"};
    auto ha = split_authority(req[http::field::host], connect_port);
    if (!ha.authority || ha.authority->host != connect_host || ha.authority->port != connect_port)
        return Refusal{std::string(reason::host_mismatch), "Host does not name the CONNECT host " + connect_host.text()};
    auto canonical = canonical_route_path(req.target());
    if (auto* refused = std::get_if<Refusal>(&canonical)) return std::move(*refused);
    const std::string_view path = std::get<std::string_view>(canonical);
    if (!route_allowed(grant, req.method_string(), path))
        return Refusal{std::string(reason::route_denied), std::string(req.method_string()) + " " + std::string(path) +
                                                              " is not in the grant's routes"};
    return CheckedTunnelRequest{std::string(req.method_string()), std::string(path)};
}

}  // namespace corral::gateway
