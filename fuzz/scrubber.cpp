// Fuzz target: SecretScrubber (gateway/secret_scrubber.*) on a stream that
// may hold a secret anywhere, in pieces, with flush points (a WebSocket
// frame's end). Input: [secret length][secret][piece size][flush mask][stream].
// What must hold for every input:
//  - as many bytes come out as went in, and the unmasked bytes are the input's;
//  - the same stream in pieces gives the same bytes as in one piece (without
//    flushes: feed() holds back exactly what it must, whatever the split);
//  - the secret never comes out whole, literally or as lower-case hex
//    (a secret with the mask byte in it is skipped: masking could spell it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/secret_scrubber.hpp"

using namespace corral::gateway;

namespace {

std::string lower_hex(std::string_view s) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

std::string through(SecretScrubber& s, std::string_view stream, std::size_t piece, std::uint8_t flush_mask) {
    std::string out;
    std::size_t n = 0;
    while (!stream.empty()) {
        std::size_t take = std::min(piece, stream.size());
        s.feed(stream.substr(0, take), out);
        stream.remove_prefix(take);
        if (flush_mask & (1u << (n++ % 8))) s.flush(out);
    }
    s.finish(out);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 4) return 0;
    std::string_view in(reinterpret_cast<const char*>(data), size);
    const std::size_t secret_len = 1 + static_cast<unsigned char>(in[0]) % 48;
    if (in.size() < 3 + secret_len) return 0;
    const std::string secret(in.substr(1, secret_len));
    const std::size_t piece = 1 + static_cast<unsigned char>(in[1 + secret_len]) % 64;
    const auto flush_mask = static_cast<std::uint8_t>(in[2 + secret_len]);
    const std::string_view stream = in.substr(3 + secret_len);
    if (secret.find(kScrubMask) != std::string::npos) return 0;

    SecretScrubber whole(std::vector<std::string>{secret});
    std::string one = through(whole, stream, stream.size() + 1, 0);
    SecretScrubber split(std::vector<std::string>{secret});
    std::string pieces = through(split, stream, piece, 0);
    if (one.size() != stream.size() || pieces != one) std::abort();
    for (std::size_t i = 0; i < one.size(); ++i)
        if (one[i] != stream[i] && one[i] != kScrubMask) std::abort();
    if (one.find(secret) != std::string::npos) std::abort();
    if (secret.size() * 2 >= kMinDerivedForm && one.find(lower_hex(secret)) != std::string::npos) std::abort();

    SecretScrubber flushed(std::vector<std::string>{secret});
    std::string framed = through(flushed, stream, piece, flush_mask);
    if (framed.size() != stream.size() || framed.find(secret) != std::string::npos) std::abort();
    return 0;
}
