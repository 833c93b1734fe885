#include <doctest/doctest.h>

#include <random>
#include <string>

#include "gateway/response_scrub.hpp"

using namespace corral;
using namespace corral::gateway;

namespace {

const std::string kKey = "sk-ant-api03-REALKEY-0123456789abcdef0123456789abcdef";

// A server frame (unmasked): FIN, opcode, payload with the 7/16/64-bit length.
std::string frame(bool fin, int opcode, const std::string& payload, bool rsv1 = false) {
    std::string f;
    f += static_cast<char>((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode);
    auto n = payload.size();
    if (n < 126) {
        f += static_cast<char>(n);
    } else if (n < 65536) {
        f += static_cast<char>(126);
        f += static_cast<char>(n >> 8), f += static_cast<char>(n & 0xff);
    } else {
        f += static_cast<char>(127);
        for (int i = 7; i >= 0; --i) f += static_cast<char>((static_cast<std::uint64_t>(n) >> (8 * i)) & 0xff);
    }
    return f + payload;
}

std::shared_ptr<const ScrubPatterns> patterns() {
    config::CredentialSpec c;
    c.name = "anthropic";
    c.headers = {{"x-api-key", "{key}"}};
    return patterns_for_credential(c, kKey);
}

}  // namespace

TEST_CASE("response_scrub: WebSocket frames keep their headers and lengths; payloads masked across frames") {
    std::string big(70000, 'b');
    big.replace(40000, kKey.size(), kKey);
    const std::string in = frame(true, 1, "text: " + kKey) +                      // one text frame
                           frame(false, 1, "frag: " + kKey.substr(0, 20)) +       // split across a fragmented message
                           frame(true, 9, "") +                                   // a ping between its frames
                           frame(true, 0, kKey.substr(20) + " :end") +
                           frame(true, 2, std::string(300, 'x') + kKey) +         // 16-bit length
                           frame(true, 2, big) +                                  // 64-bit length
                           frame(true, 8, "");                                    // a bare close
    std::string expected = frame(true, 1, "text: " + std::string(kKey.size(), '*')) +
                           frame(false, 1, "frag: " + std::string(20, '*')) + frame(true, 9, "") +
                           frame(true, 0, std::string(kKey.size() - 20, '*') + " :end") +
                           frame(true, 2, std::string(300, 'x') + std::string(kKey.size(), '*'));
    std::string big_masked = big;
    big_masked.replace(40000, kKey.size(), std::string(kKey.size(), '*'));
    expected += frame(true, 2, big_masked) + frame(true, 8, "");

    std::mt19937 rng(5);
    for (int round = 0; round < 50; ++round) {
        WebSocketScrubber ws(patterns());
        std::string out;
        for (std::size_t pos = 0; pos < in.size();) {
            std::size_t n = std::min<std::size_t>(in.size() - pos, round == 0 ? 1 : 1 + rng() % 5000);
            CHECK(ws.feed(std::string_view(in).substr(pos, n), out).empty());
            pos += n;
        }
        REQUIRE(out.size() == in.size());
        CHECK(out == expected);  // the bare close frame is out too: nothing waits for more bytes
        CHECK(ws.payload().matches() == 4);
    }
}

TEST_CASE("response_scrub: a compressed (RSV1) or masked server frame is refused, not passed") {
    WebSocketScrubber ws(patterns());
    std::string out;
    CHECK(ws.feed(frame(true, 1, "x", true), out).find("compressed") != std::string_view::npos);
    CHECK(out.empty());
    WebSocketScrubber ws2(patterns());
    std::string masked = frame(true, 1, "abcd");
    masked[1] = static_cast<char>(masked[1] | 0x80);
    masked.insert(2, "MASK");
    CHECK(ws2.feed(masked, out).find("masked") != std::string_view::npos);
    CHECK(out.empty());
}

TEST_CASE("response_scrub: heads are scanned whole; only identity is a scannable Content-Encoding") {
    ResponseScrub s(patterns());
    std::string head = "HTTP/1.1 200 OK\r\nx-echo: " + kKey + "\r\nlink: </?k=" + kKey + ">\r\n\r\n";
    std::string before = head;
    s.scrub_head(head);
    CHECK(head.size() == before.size());
    CHECK(head.find(kKey) == std::string::npos);
    CHECK(head.find("x-echo: ****") != std::string::npos);
    CHECK(s.matches() == 2);
    CHECK(unscannable_encoding("").empty());
    CHECK(unscannable_encoding(" Identity ").empty());
    CHECK_FALSE(unscannable_encoding("gzip").empty());
    CHECK_FALSE(unscannable_encoding("identity, gzip").empty());
}
