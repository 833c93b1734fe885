// Fuzz target: a request as the gateway reads it from a client. The head is
// delimited by scan_head, checked by check_request_framing, then parsed by
// the StrictRequestParser with the gateway's limits, the body fed in the
// pieces the input's first byte chooses (the way bytes arrive from a socket).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/string_body.hpp>

#include "gateway/http_framing.hpp"

using namespace corral::gateway;
namespace http = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::size_t piece = 1 + data[0] % 64;
    std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);

    constexpr std::size_t kMaxHeader = 16 * 1024;  // [gateway.limits] defaults
    constexpr std::size_t kMaxBody = 64 * 1024;
    HeadScan scan = scan_head(in.substr(0, std::min(in.size(), kMaxHeader + 1)));
    if (scan.bare_lf || scan.end == std::string_view::npos) return 0;
    if (scan.end > in.size()) std::abort();
    std::string_view head = in.substr(0, scan.end);
    if (auto refused = check_request_framing(head)) {
        if (refused->detail.empty() || refused->reason.empty()) std::abort();  // a refusal always says why
        return 0;
    }
    StrictRequestParser<http::string_body> p;
    p.header_limit(kMaxHeader + 4);
    p.body_limit(kMaxBody);
    p.eager(false);
    boost::beast::error_code ec;
    std::size_t used = p.put(boost::asio::buffer(head.data(), head.size()), ec);
    if (ec || !p.is_header_done() || used > head.size()) return 0;
    std::string rest(in.substr(used));  // a copy: parsers see exactly their bytes
    p.eager(true);
    // As Beast's own read loop (http::async_read, what the gateway reads a
    // body with): bytes left over are offered again at once, but after
    // need_more only together with new ones.
    std::string_view left = rest;
    std::string pending;
    bool need_bytes = true;
    while (!p.is_done()) {
        if (need_bytes) {
            if (left.empty()) break;
            std::size_t take = std::min(piece, left.size());
            pending.append(left.substr(0, take));
            left.remove_prefix(take);
        }
        std::size_t n = p.put(boost::asio::buffer(pending.data(), pending.size()), ec);
        if (n > pending.size()) std::abort();
        pending.erase(0, n);
        if (ec == http::error::need_more) {
            ec = {};
            need_bytes = true;
            continue;
        }
        if (ec) break;
        need_bytes = n == 0 || pending.empty();
    }
    if (p.is_done() && p.get().body().size() > kMaxBody) std::abort();
    return 0;
}
