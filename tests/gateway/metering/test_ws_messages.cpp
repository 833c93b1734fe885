// WebSocket text messages read from a stream of frames, in pieces of any size.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gateway/metering/ws_messages.hpp"

using namespace corral::gateway::metering;

namespace {

std::string frame(unsigned char opcode, bool fin, const std::string& payload, bool mask = false) {
    std::string f;
    f += static_cast<char>((fin ? 0x80 : 0) | opcode);
    unsigned char m = mask ? 0x80 : 0;
    if (payload.size() < 126) {
        f += static_cast<char>(m | payload.size());
    } else if (payload.size() < 65536) {
        f += static_cast<char>(m | 126);
        f += static_cast<char>(payload.size() >> 8), f += static_cast<char>(payload.size() & 0xff);
    } else {
        f += static_cast<char>(m | 127);
        for (int i = 7; i >= 0; --i) f += static_cast<char>((static_cast<std::uint64_t>(payload.size()) >> (8 * i)) & 0xff);
    }
    const unsigned char key[4] = {0x11, 0x22, 0x33, 0x44};
    if (mask) f.append(reinterpret_cast<const char*>(key), 4);
    for (std::size_t i = 0; i < payload.size(); ++i)
        f += mask ? static_cast<char>(payload[i] ^ key[i & 3]) : payload[i];
    return f;
}

struct Seen {
    std::vector<std::string> messages, problems;
};

Seen read_in_pieces(const std::string& stream, std::size_t piece, std::size_t max = 1 << 20) {
    Seen s;
    WebSocketMessages r(
        [&](std::string_view text, std::string_view problem) {
            if (problem.empty()) s.messages.emplace_back(text);
            else s.problems.emplace_back(problem);
        },
        max);
    for (std::size_t i = 0; i < stream.size(); i += piece) r.feed(std::string_view(stream).substr(i, piece));
    return s;
}

}  // namespace

TEST_CASE("ws messages: whole, fragmented, with control frames between, masked, 16- and 64-bit lengths") {
    const std::string big(70'000, 'b'), mid(300, 'm');
    std::string stream = frame(1, true, "{\"a\":1}") + frame(9, true, "ping") + frame(1, false, "frag") +
                         frame(10, true, "") + frame(0, false, "-men") + frame(0, true, "ted") +
                         frame(2, true, "binary is skipped") + frame(1, true, mid) + frame(1, true, big) +
                         frame(1, true, "masked", true) + frame(1, true, "") + frame(8, true, "");
    for (std::size_t piece : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}, std::size_t{4096},
                              stream.size()}) {
        CAPTURE(piece);
        Seen s = read_in_pieces(stream, piece);
        REQUIRE(s.messages.size() == 6);
        CHECK(s.messages[0] == "{\"a\":1}");
        CHECK(s.messages[1] == "frag-mented");
        CHECK(s.messages[2] == mid);
        CHECK(s.messages[3] == big);
        CHECK(s.messages[4] == "masked");
        CHECK(s.messages[5] == "");
        CHECK(s.problems.empty());
    }
}

TEST_CASE("ws messages: an oversize message is reported and skipped; a compressed frame stops the reader") {
    Seen s = read_in_pieces(frame(1, true, std::string(100, 'x')) + frame(1, true, "ok"), 5, 50);
    CHECK(s.messages == std::vector<std::string>{"ok"});
    REQUIRE(s.problems.size() == 1);
    CHECK(s.problems[0].find("over 50 bytes") != std::string::npos);
    std::string rsv1 = frame(1, true, "z");
    rsv1[0] = static_cast<char>(rsv1[0] | 0x40);
    Seen c = read_in_pieces(rsv1 + frame(1, true, "after"), 1);
    CHECK(c.messages.empty());
    REQUIRE(c.problems.size() == 1);
    CHECK(c.problems[0].find("compressed") != std::string::npos);
}
