// gateway/response_scrub.hpp — what an inject-mode response looks like on its
// way back to the box: every injected secret masked (gateway/secret_scrubber.hpp)
// in the heads, the body and the WebSocket frames the upstream sends.
//
// Pure (no I/O): the connection handler calls these at the points where it
// writes to the client.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "config/gateway_config.hpp"
#include "gateway/secret_scrubber.hpp"

namespace corral::gateway {

// The patterns for one grant's credential: the secret, every header value the
// grant renders from it, and a Basic pair decoded (injected_strings).
std::shared_ptr<const ScrubPatterns> patterns_for_credential(const config::CredentialSpec& granted,
                                                             const std::string& secret);

// Server→client WebSocket frames (RFC 6455 §5.2), scrubbed without changing
// any frame's length: headers pass as they are, every payload byte goes
// through one SecretScrubber for the whole connection (text, binary,
// continuation and control frames alike, so a form split across frames or
// messages is still found), flushed at the end of each frame, because a frame
// must be complete before the box can act on it and a server may wait for the
// answer to it (see SecretScrubber::flush for what a flush can let through).
// Refuses what it cannot scan: a compressed frame (RSV1, permessage-deflate,
// which the gateway never lets the box negotiate) and a masked one (a server
// must not mask, and the scan needs the plain payload).
class WebSocketScrubber {
public:
    explicit WebSocketScrubber(std::shared_ptr<const ScrubPatterns> patterns) : payload_(std::move(patterns)) {}

    // Appends the scrubbed bytes to `out`. Returns "" or, for a frame it
    // cannot scan, what is wrong (the connection must then be cut; nothing of
    // that frame's payload was appended).
    std::string_view feed(std::string_view in, std::string& out);

    const SecretScrubber& payload() const { return payload_; }

private:
    SecretScrubber payload_;
    std::string header_;           // the frame header being read
    std::uint64_t remaining_ = 0;  // payload bytes of the current frame still to come
    bool in_payload_ = false;
};

// One exchange's scrubbing: heads (interim and final) one by one, the body as
// a stream, the WebSocket frames after a 101.
struct ResponseScrub {
    explicit ResponseScrub(std::shared_ptr<const ScrubPatterns> p)
        : patterns(p), body(p), websocket(std::move(p)) {}

    // Masks in place: `head` is a complete head (status line and fields), a
    // stream of its own (a form cannot span heads).
    void scrub_head(std::string& head);

    std::uint64_t matches() const { return head_matches + body.matches() + websocket.payload().matches(); }
    std::uint8_t forms() const {
        return static_cast<std::uint8_t>(head_forms | body.forms() | websocket.payload().forms());
    }

    std::shared_ptr<const ScrubPatterns> patterns;
    SecretScrubber body;
    WebSocketScrubber websocket;
    std::uint64_t head_matches = 0;
    std::uint8_t head_forms = 0;
};

// An inject-mode response whose body the gateway could not scan: a
// Content-Encoding other than identity (the request asked for identity).
// Returns "" or what is wrong, for a 502 `upstream_encoding`.
std::string unscannable_encoding(std::string_view content_encoding);

}  // namespace corral::gateway
