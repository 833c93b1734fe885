// gateway/metering/ws_messages.hpp — the text messages of one direction of a
// WebSocket connection (RFC 6455 §5), read from its frames as they stream
// by, so a meter can read codex's Responses events without holding the
// stream back.
//
// Pure: bytes in, whole messages out. Fragmented messages (a text frame
// without FIN, then continuation frames) are joined; control frames (ping,
// pong, close) may come between fragments and are skipped; binary messages
// are skipped; a masked frame is unmasked (a server must not mask, but the
// reader does not judge). A compressed frame (RSV1) cannot be read: the
// reader stops and says so (the gateway never lets the box negotiate
// permessage-deflate on a metered route, so this is an upstream breaking the
// protocol). A message over max_message_bytes is skipped whole and reported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace corral::gateway::metering {

class WebSocketMessages {
public:
    // A whole text message; or, with `problem` set, why a message (or the
    // stream from here on) could not be read: the meter then knows that what
    // it is counting is incomplete.
    using OnMessage = std::function<void(std::string_view text, std::string_view problem)>;

    WebSocketMessages(OnMessage on_message, std::size_t max_message_bytes)
        : on_message_(std::move(on_message)), max_(max_message_bytes) {}

    void feed(std::string_view bytes);
    bool stopped() const { return stopped_; }

private:
    void end_frame();

    OnMessage on_message_;
    std::size_t max_;
    std::string header_;
    std::uint64_t remaining_ = 0;
    bool in_payload_ = false;
    unsigned char opcode_ = 0;      // of the frame being read
    bool fin_ = false;
    unsigned char mask_[4] = {0, 0, 0, 0};
    bool masked_ = false;
    std::uint64_t mask_pos_ = 0;
    bool in_text_ = false;          // a text message is being assembled
    bool oversize_ = false;         // ... and has grown past max_
    std::string message_;
    bool stopped_ = false;
};

}  // namespace corral::gateway::metering
