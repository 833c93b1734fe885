#include "gateway/response_scrub.hpp"

#include <strings.h>

#include <algorithm>

#include "gateway/headers.hpp"
#include "gateway/websocket_frame.hpp"

namespace corral::gateway {

std::shared_ptr<const ScrubPatterns> patterns_for_credential(const config::CredentialSpec& granted,
                                                             const std::string& secret) {
    std::vector<std::string> rendered;
    for (const auto& [name, tmpl] : granted.headers) rendered.push_back(render_template(tmpl, secret));
    return std::make_shared<const ScrubPatterns>(injected_strings(secret, rendered));
}

std::string_view WebSocketScrubber::feed(std::string_view in, std::string& out) {
    for (;;) {
        if (!in_payload_) {
            if (header_.size() < websocket_header_size(header_)) {
                if (in.empty()) break;
                header_ += in.front();
                in.remove_prefix(1);
                continue;  // a header that just completed (a bare close frame) is handled at once
            }
            const WebSocketHeader h = parse_websocket_header(header_);
            if (h.rsv1) return "a compressed WebSocket frame (RSV1): its payload cannot be scanned";
            if (h.masked) return "a masked WebSocket frame from the server";
            const std::uint64_t len = h.payload_length;
            out += header_;
            header_.clear();
            remaining_ = len;
            in_payload_ = true;
        }
        auto n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, in.size()));
        payload_.feed(in.substr(0, n), out);
        in.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) {
            payload_.flush(out);  // the frame's last byte is out: its length holds
            in_payload_ = false;
            continue;
        }
        if (in.empty()) break;
    }
    return {};
}

void ResponseScrub::scrub_head(std::string& head) {
    SecretScrubber s(patterns);
    std::string out;
    out.reserve(head.size());
    s.feed(head, out);
    s.finish(out);
    head_matches += s.matches();
    head_forms |= s.forms();
    head = std::move(out);
}

std::string unscannable_encoding(std::string_view content_encoding) {
    while (!content_encoding.empty() && (content_encoding.front() == ' ' || content_encoding.front() == '\t'))
        content_encoding.remove_prefix(1);
    while (!content_encoding.empty() && (content_encoding.back() == ' ' || content_encoding.back() == '\t'))
        content_encoding.remove_suffix(1);
    if (content_encoding.empty() ||
        (content_encoding.size() == 8 && ::strncasecmp(content_encoding.data(), "identity", 8) == 0))
        return {};
    return "Content-Encoding other than identity on an inject grant (its body cannot be scanned for the credential)";
}

}  // namespace corral::gateway
