// gateway/websocket_frame.hpp — the header of one WebSocket frame (RFC 6455
// §5.2), read byte by byte as it arrives: the one place its length rules
// live, for the scrubber (response_scrub.cpp) and the meter's message reader
// (metering/ws_messages.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace corral::gateway {

// How many bytes the header that starts `so_far` has in all: 2, plus a 16-
// or 64-bit length, plus a 4-byte masking key. With fewer than 2 bytes, 2.
inline std::size_t websocket_header_size(std::string_view so_far) {
    std::size_t need = 2;
    if (so_far.size() < 2) return need;
    const auto len7 = static_cast<unsigned char>(so_far[1]) & 0x7f;
    need += len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
    if (static_cast<unsigned char>(so_far[1]) & 0x80) need += 4;
    return need;
}

struct WebSocketHeader {
    bool fin = false;
    bool rsv1 = false;        // compressed (permessage-deflate)
    unsigned char opcode = 0;
    bool masked = false;
    unsigned char mask[4] = {0, 0, 0, 0};
    std::uint64_t payload_length = 0;
};

// A whole header (websocket_header_size(h) bytes) read.
inline WebSocketHeader parse_websocket_header(std::string_view h) {
    WebSocketHeader out;
    const auto b0 = static_cast<unsigned char>(h[0]), b1 = static_cast<unsigned char>(h[1]);
    out.fin = b0 & 0x80;
    out.rsv1 = b0 & 0x40;
    out.opcode = b0 & 0x0f;
    out.masked = b1 & 0x80;
    std::uint64_t len = b1 & 0x7f;
    std::size_t at = 2;
    if (len >= 126) {
        const std::size_t n = len == 126 ? 2 : 8;
        len = 0;
        for (std::size_t i = 0; i < n; ++i) len = (len << 8) | static_cast<unsigned char>(h[at + i]);
        at += n;
    }
    if (out.masked)
        for (int i = 0; i < 4; ++i) out.mask[i] = static_cast<unsigned char>(h[at + i]);
    out.payload_length = len;
    return out;
}

}  // namespace corral::gateway
