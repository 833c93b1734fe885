// gateway/upstream.hpp — the way to an upstream: the grant, name resolution,
// address vetting, dialling only vetted addresses, and verified TLS.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gateway/connection.hpp"

namespace corral::gateway {

// A granted, resolved and vetted destination.
struct Target {
    HostName host;
    std::uint16_t port = 0;
    const config::Grant* grant = nullptr;
    std::vector<boost::asio::ip::address> addresses;  // vetted; dial only these
    std::uint16_t dial_port = 0;
};

// The grant for host:port (under --ask, an unlisted one gets asked_grant,
// kept in c): fills t.host, t.port and t.grant; a refusal when not granted.
// Nothing is resolved: resolve_target does that once the request may go.
std::optional<Refusal> choose_grant(Conn& c, const Authority& a, Target& t);

// Resolution (hosts table, then the system resolver; the grant's connect_to
// replaces the name dialled) and address vetting, for a target whose host,
// port and grant are set (choose_grant; the MCP endpoint's servers:
// mcp_endpoint.hpp). A refusal when no vetted address is left.
boost::asio::awaitable<std::optional<Refusal>> resolve_target(Conn& c, Target& t);

// Connects `s` to the first vetted address that answers. Never resolves.
// c.upstream points at `s` from here on, for the watchdog.
boost::asio::awaitable<bool> dial(Conn& c, boost::asio::ip::tcp::socket& s, const Target& t);

// The refusal for a dial that failed (timed out or refused).
Refusal dial_refusal(const Conn& c, const Target& t);

// The pool key for connections to exactly this vetted target and trust store.
std::string pool_key(const Target& t, const std::string& ca_file);
// The trust store the target's upstream certificate is verified against.
const std::string& trust_store(const Conn& c, const Target& t);
// The key a connection of `c` puts and takes pooled upstream connections
// under (UpstreamPool): pool_key for the target and its trust store, within
// c's event loop only: a socket taken by a connection on another loop would
// complete its I/O on the wrong thread (and wake that loop for every
// operation). open_upstream gives every new connection this key.
std::string loop_pool_key(Conn& c, const Target& t);

// A new verified TLS connection to the target's upstream, or nullptr and
// `refusal` set.
boost::asio::awaitable<std::unique_ptr<UpstreamConn>> open_upstream(Conn& c, const Target& t,
                                                                    std::optional<Refusal>& refusal);

// True when an idle upstream connection has sent nothing since its last
// complete response (see upstream.cpp).
bool upstream_is_quiet(UpstreamConn& up);

}  // namespace corral::gateway
