// gateway/exchange.hpp — one HTTP exchange with an upstream: the request
// head as it leaves the gateway, then the response streamed to the box as it
// arrives (interim responses, head, body or upgraded frames), bounded by
// max_response_bytes and the idle timeout.
//
// Every byte of a response that reaches the box is written by exchange.cpp:
// write_to_client() for interim heads, the final head and each body piece,
// relay_upgraded() (relay.cpp) for the frames of an upgraded connection.
// With a ResponseScrub (an inject grant's credential) each of them passes it
// first (gateway/response_scrub.hpp).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/connection.hpp"
#include "gateway/request_reader.hpp"
#include "gateway/response_scrub.hpp"

namespace corral::gateway {

struct Exchange {
    std::string reason;        // "" = completed
    std::string detail;
    int status = 0;            // status forwarded to the client (0: nothing was, the caller may refuse)
    std::uint64_t bytes_up = 0, bytes_down = 0;
    bool nothing_received = false;  // failed before any response byte: safe to retry on a new connection
    bool upstream_reusable = false;
    bool client_reusable = false;
};

// What the box is told when nothing of the response reached it yet.
inline Refusal refusal_of(const Exchange& x) { return {x.reason, x.detail, Phase::upstream}; }

// The exchange failed before anything of the response reached the box, and
// the box is still there to be told (refusal_of). A box that went away
// (client_gone) is told nothing: its request was allowed and forwarded, and
// the exchange's own line says how it ended.
inline bool box_gets_refusal(const Exchange& x) {
    return !x.reason.empty() && x.status == 0 && x.reason != reason::client_gone;
}

// Sees a response as it is relayed, without holding it back or changing a
// byte (a model request's meter): the final head's status and Content-Type,
// then each piece of the decoded body (de-chunked, before any scrubbing) in
// order, or, after a 101, the upstream's raw frames as they come.
class ResponseObserver {
public:
    virtual ~ResponseObserver() = default;
    virtual void on_head(int status, std::string_view content_type) = 0;
    virtual void on_body(std::string_view piece) = 0;
    virtual void on_upgraded(std::string_view frames) = 0;
};

struct OutgoingRequest {
    const std::string& head;  // request_head()
    const std::string& body;
    bool head_request = false;  // HEAD: the response has no body whatever it announces
    bool websocket = false;     // the box asked for a WebSocket upgrade
    // An inject grant with a credential: every response byte the box gets is
    // scrubbed of it (heads, body, WebSocket frames); a body or frame that
    // cannot be scanned is not passed on. nullptr: relayed as it comes.
    ResponseScrub* scrub = nullptr;
    ResponseObserver* observer = nullptr;
};

// Sends `req` on `up` and relays the response to `client`. upbuf holds bytes
// read from `up` and not yet parsed (kept for the connection's next exchange).
// (Client, Up): (ClientTls, UpstreamTls) or (ClientSocket, tcp::socket).
template <class Client, class Up>
boost::asio::awaitable<Exchange> exchange(Conn& c, Client& client, Up& up, boost::beast::flat_buffer& upbuf,
                                          const OutgoingRequest& req);

// The upstream request head: origin-form `target`, hop-by-hop fields removed
// (Upgrade kept for a WebSocket upgrade), the body framed by Content-Length
// (the body is complete in memory).
std::string request_head(const Request& req, std::string_view target, bool websocket, bool has_body);

bool is_websocket_upgrade(const Request& req);
bool request_has_body(const Request& req);

}  // namespace corral::gateway
