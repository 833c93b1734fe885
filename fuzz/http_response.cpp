// Fuzz target: an upstream's response as the gateway reads it: the head with
// a StrictResponseParser limited to kMaxResponseHead, the body through a
// small buffer_body window refilled as the gateway does, the input's first
// byte choosing how the bytes arrive (piece size) and whether the request
// was a HEAD.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>

#include "gateway/http_framing.hpp"
#include "gateway/internals.hpp"

using namespace corral::gateway;
namespace http = boost::beast::http;

namespace {

using Parser = StrictResponseParser<http::buffer_body>;

// Moves the next piece of the input into the read buffer; false at its end.
bool receive(boost::beast::flat_buffer& buf, std::string_view& left, std::size_t piece) {
    if (left.empty()) return false;
    std::size_t take = std::min(piece, left.size());
    auto space = buf.prepare(take);
    std::memcpy(space.data(), left.data(), take);
    buf.commit(take);
    left.remove_prefix(take);
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::size_t piece = 1 + (data[0] & 0x7f) % 97;
    const bool head_request = data[0] & 0x80;
    std::string_view left(reinterpret_cast<const char*>(data + 1), size - 1);
    boost::beast::flat_buffer buf(kUpstreamReadBuffer);
    boost::beast::error_code ec;

    // Interim (1xx) heads come first, then the final one.
    for (int interim = 0; interim < 4; ++interim) {
        Parser p;
        p.header_limit(kMaxResponseHead);
        p.body_limit(boost::none);
        if (head_request) p.skip(true);
        while (!p.is_header_done()) {
            std::size_t used = buf.size() ? p.put(buf.data(), ec) : 0;
            if (used > buf.size()) std::abort();
            buf.consume(used);
            if (buf.size() == 0 || ec == http::error::need_more || (!ec && used == 0)) {
                ec = {};
                if (!receive(buf, left, piece)) return 0;
                continue;
            }
            if (ec) return 0;
        }
        int status = p.get().result_int();
        if (status >= 100 && status < 200 && status != 101) continue;

        char window[64];
        while (!p.is_done()) {
            p.get().body().data = window;
            p.get().body().size = sizeof window;
            while (buf.size() != 0 && !p.is_done() && p.get().body().size != 0) {
                std::size_t used = p.put(buf.data(), ec);
                if (used > buf.size()) std::abort();
                buf.consume(used);
                if (ec == http::error::need_more || ec == http::error::need_buffer) {
                    ec = {};
                    break;
                }
                if (ec) return 0;
                if (used == 0) break;
            }
            if (p.get().body().size > sizeof window) std::abort();
            if (p.is_done()) break;
            if (p.get().body().size == sizeof window && !receive(buf, left, piece)) {
                p.put_eof(ec);  // connection close ends a body without a length
                return 0;
            }
        }
        return 0;
    }
    return 0;
}
