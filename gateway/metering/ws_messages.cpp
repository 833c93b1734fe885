#include "gateway/metering/ws_messages.hpp"

#include <algorithm>

#include "gateway/websocket_frame.hpp"

namespace corral::gateway::metering {

namespace {
constexpr unsigned char kContinuation = 0x0, kText = 0x1;
bool is_control(unsigned char opcode) { return opcode & 0x8; }
}  // namespace

void WebSocketMessages::feed(std::string_view in) {
    // A header that completes with the input's last byte is handled at once
    // (an empty frame ends there), so the loop runs while there is a byte
    // or a complete header.
    while (!stopped_) {
        if (!in_payload_) {
            if (header_.size() < websocket_header_size(header_)) {
                if (in.empty()) break;
                header_ += in.front();
                in.remove_prefix(1);
                continue;  // the size may grow once the length byte is in
            }
            const WebSocketHeader h = parse_websocket_header(header_);
            if (h.rsv1) {
                stopped_ = true;
                on_message_({}, "a compressed WebSocket frame (RSV1): its messages cannot be read");
                return;
            }
            fin_ = h.fin;
            opcode_ = h.opcode;
            masked_ = h.masked;
            for (int i = 0; i < 4; ++i) mask_[i] = h.mask[i];
            const std::uint64_t len = h.payload_length;
            header_.clear();
            mask_pos_ = 0;
            remaining_ = len;
            in_payload_ = true;
            if (opcode_ == kText) {
                if (in_text_) {
                    // A new message before the last one's final fragment.
                    on_message_({}, "a WebSocket text message began inside another");
                }
                in_text_ = true, oversize_ = false;
                message_.clear();
            }
        }
        auto n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, in.size()));
        const bool keep = !is_control(opcode_) && in_text_ && !oversize_ &&
                          (opcode_ == kText || opcode_ == kContinuation);
        if (keep) {
            if (message_.size() + n > max_) {
                oversize_ = true;
                message_.clear();
                message_.shrink_to_fit();
            } else {
                std::size_t start = message_.size();
                message_.append(in.data(), n);
                if (masked_)
                    for (std::size_t i = start; i < message_.size(); ++i)
                        message_[i] = static_cast<char>(message_[i] ^ mask_[(mask_pos_++) & 3]);
            }
        }
        in.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) end_frame();
        else if (in.empty()) break;
    }
}

void WebSocketMessages::end_frame() {
    in_payload_ = false;
    if (is_control(opcode_) || !fin_ || !in_text_) return;
    if (opcode_ != kText && opcode_ != kContinuation) return;
    in_text_ = false;
    if (oversize_)
        on_message_({}, "a WebSocket text message over " + std::to_string(max_) + " bytes");
    else
        on_message_(message_, {});
    message_.clear();
}

}  // namespace corral::gateway::metering
