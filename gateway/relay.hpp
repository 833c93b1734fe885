// gateway/relay.hpp — moving bytes both ways once no HTTP is parsed any more:
// a blind tunnel between plain sockets (splice, else pooled buffers) and an
// upgraded (WebSocket) connection between two streams.
#pragma once

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <string>

#include "gateway/connection.hpp"
#include "gateway/exchange.hpp"
#include "gateway/response_scrub.hpp"

namespace corral::gateway {

// Both directions of a blind tunnel until both have ended: splice(2) when
// pipes are available, else user-space copies through pooled buffers. Each
// side's EOF is passed on as a half-close; a reset or failed write ends both.
boost::asio::awaitable<void> relay_sockets(Conn& c, ClientSocket& client, boost::asio::ip::tcp::socket& up,
                                           std::uint64_t& bytes_up, std::uint64_t& bytes_down);

// Both directions of an upgraded connection until either side closes. These
// writes to the client carry the upstream's WebSocket frames as they come,
// through `scrub` when given (an inject grant's credential): a frame it cannot
// scan ends the connection, with what was wrong in `problem`. `observer`
// (a model request's meter) sees the upstream's bytes as they are read.
// (Client, Up): (ClientTls, UpstreamTls) or (ClientSocket, tcp::socket).
template <class Client, class Up>
boost::asio::awaitable<void> relay_upgraded(Conn& c, Client& client, Up& up, std::uint64_t& bytes_up,
                                            std::uint64_t& bytes_down, WebSocketScrubber* scrub = nullptr,
                                            std::string* problem = nullptr, ResponseObserver* observer = nullptr);

}  // namespace corral::gateway
