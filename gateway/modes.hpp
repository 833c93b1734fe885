// gateway/modes.hpp — what a connection becomes once its first request is
// granted: a blind tunnel (tunnel_mode.cpp), one plain-HTTP exchange
// (tunnel_mode.cpp, a tunnel grant reached by an absolute http:// URL), or
// an inject-mode TLS session served request by request (inject_mode.cpp).
#pragma once

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <string>

#include "gateway/connection.hpp"
#include "gateway/request_reader.hpp"
#include "gateway/upstream.hpp"

namespace corral::gateway {

// CONNECT to a tunnel grant: connect first (so a failure is a 502), answer
// 200 (not on a captured connection, which sent no CONNECT), then relay
// blindly until both sides are done, c.buf's bytes first.
boost::asio::awaitable<void> serve_tunnel(std::shared_ptr<Conn> cp, Target t, Clock::time_point started);

// An absolute-form http:// request to a tunnel grant: its body, one exchange
// over plain TCP, then the connection closes.
boost::asio::awaitable<void> serve_plain(std::shared_ptr<Conn> cp, Target t, ParsedRequest& pr, std::string path,
                                         Clock::time_point started);

// CONNECT to an inject grant, after the 200: TLS terminated with the host's
// leaf (c.server_tls, made before the 200), then request by request with the
// credential injected. Ends with the client's TLS closed.
boost::asio::awaitable<void> serve_inject(std::shared_ptr<Conn> cp, Target t);

}  // namespace corral::gateway
