#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <random>
#include <string>
#include <vector>

#include "gateway/secret_scrubber.hpp"

using namespace corral::gateway;

namespace {

// The test's own encoders (not the scrubber's), applied to whole blobs the way
// an upstream would: the scrubber must catch the secret inside them.
std::string b64(std::string_view s, bool url = false) {
    const char* a = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                        : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 3 <= s.size(); i += 3) {
        unsigned v = (unsigned char)s[i] << 16 | (unsigned char)s[i + 1] << 8 | (unsigned char)s[i + 2];
        out += a[v >> 18 & 63];
        out += a[v >> 12 & 63];
        out += a[v >> 6 & 63];
        out += a[v & 63];
    }
    if (s.size() - i == 1) {
        unsigned v = (unsigned char)s[i] << 16;
        out += a[v >> 18 & 63];
        out += a[v >> 12 & 63];
        if (!url) out += "==";
    } else if (s.size() - i == 2) {
        unsigned v = (unsigned char)s[i] << 16 | (unsigned char)s[i + 1] << 8;
        out += a[v >> 18 & 63];
        out += a[v >> 12 & 63];
        out += a[v >> 6 & 63];
        if (!url) out += "=";
    }
    return out;
}

std::string pct(std::string_view s, bool upper, bool all) {
    const char* h = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        bool unreserved = std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
        if (!all && unreserved) {
            out += (char)c;
        } else {
            out += '%';
            out += h[c >> 4];
            out += h[c & 15];
        }
    }
    return out;
}

std::string hexs(std::string_view s, bool upper) {
    const char* h = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += h[c >> 4];
        out += h[c & 15];
    }
    return out;
}

std::string json_u(std::string_view s, bool upper) {
    const char* h = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += "\\u00";
        out += h[c >> 4];
        out += h[c & 15];
    }
    return out;
}

std::string json_slash(std::string_view s) {
    std::string out;
    for (char c : s) out += c == '/' ? std::string("\\/") : std::string(1, c);
    return out;
}

// A secret with the characters that make encodings differ: '/', '+', '_', '-'.
const std::string kSecret = "sk-ant-api03-Zq8/x+Yw_T0p-9LmNoPqRsTuVwXyZ0123456789abcdefAB";

// Scrubs `in` fed in one piece.
std::string scrub_all(SecretScrubber& s, std::string_view in) {
    std::string out = s.feed(in);
    s.finish(out);
    return out;
}

// Every masked byte is '*', the length is unchanged, and `needle` is gone.
void check_gone(const std::string& in, const std::string& out, const std::string& needle) {
    REQUIRE(out.size() == in.size());
    CHECK(out.find(needle) == std::string::npos);
    for (std::size_t i = 0; i < in.size(); ++i)
        if (out[i] != in[i]) CHECK(out[i] == kScrubMask);
}

// The reference: every occurrence of every pattern masked, found with
// std::string::find on the whole stream.
std::string reference(const ScrubPatterns& p, std::string s) {
    std::vector<bool> mask(s.size(), false);
    for (const auto& pat : p.patterns())
        for (auto pos = s.find(pat.bytes); pos != std::string::npos; pos = s.find(pat.bytes, pos + 1))
            for (std::size_t k = pos; k < pos + pat.bytes.size(); ++k) mask[k] = true;
    for (std::size_t i = 0; i < s.size(); ++i)
        if (mask[i]) s[i] = kScrubMask;
    return s;
}

}  // namespace

TEST_CASE("secret_scrubber: the literal secret and the rendered header value are masked in place") {
    SecretScrubber s(injected_strings(kSecret, {"Bearer " + kSecret}));
    std::string in = "{\"echo\":\"Bearer " + kSecret + "\",\"n\":1}";
    auto out = scrub_all(s, in);
    check_gone(in, out, kSecret);
    CHECK(out == "{\"echo\":\"" + std::string(7 + kSecret.size(), '*') + "\",\"n\":1}");
    CHECK(s.matches() == 1);
    CHECK(scrub_form_names(s.forms()) == "literal");
}

TEST_CASE("secret_scrubber: base64 and base64url of a blob holding the secret, at every alignment") {
    SecretScrubber s(std::vector<std::string>{kSecret});
    for (bool url : {false, true}) {
        for (std::string prefix : {"", "a", "ab", "abc", "Basic user:", "{\"k\":\""}) {
            for (std::string suffix : {"", "x", "xy", "\"}"}) {
                CAPTURE(url);
                CAPTURE(prefix);
                CAPTURE(suffix);
                std::string blob = b64(prefix + kSecret + suffix, url);
                std::string in = "token=" + blob + "; more";
                auto out = scrub_all(s, in);
                REQUIRE(out.size() == in.size());
                CHECK(out != in);
                // What is left of the blob no longer decodes to the secret:
                // at most 2 characters on each side of the secret's span stay.
                auto masked = std::count(out.begin(), out.end(), kScrubMask);
                CHECK(masked >= static_cast<long>(kSecret.size() * 4 / 3 - 4));
                CHECK(out.substr(0, 6) == "token=");
                CHECK(out.substr(out.size() - 6) == "; more");
                // (a base64url pattern without - or _ is the base64 one, searched once)
                CHECK((s.forms() & (static_cast<std::uint8_t>(ScrubForm::base64) |
                                    static_cast<std::uint8_t>(ScrubForm::base64url))));
            }
        }
    }
}

TEST_CASE("secret_scrubber: percent-encoding, upper and lower case, every byte or only reserved ones") {
    SecretScrubber s(std::vector<std::string>{kSecret});
    for (bool upper : {false, true})
        for (bool all : {false, true}) {
            std::string enc = pct(kSecret, upper, all);
            std::string in = "GET /?q=" + enc + "&x=1";
            auto out = scrub_all(s, in);
            check_gone(in, out, enc);
            CHECK(out == "GET /?q=" + std::string(enc.size(), '*') + "&x=1");
            CHECK(scrub_form_names(s.forms()).find("percent") != std::string::npos);
        }
}

TEST_CASE("secret_scrubber: JSON string escapes \\u00XX and \\/") {
    SecretScrubber s(std::vector<std::string>{kSecret});
    for (const auto& enc : {json_u(kSecret, false), json_u(kSecret, true), json_slash(kSecret)}) {
        std::string in = "{\"authorization\":\"" + enc + "\"}";
        auto out = scrub_all(s, in);
        check_gone(in, out, enc);
        CHECK(out == "{\"authorization\":\"" + std::string(enc.size(), '*') + "\"}");
    }
    CHECK(scrub_form_names(s.forms()) == "json");
}

TEST_CASE("secret_scrubber: hex, both cases") {
    SecretScrubber s(std::vector<std::string>{kSecret});
    for (bool upper : {false, true}) {
        std::string enc = hexs(kSecret, upper);
        std::string in = "digest " + enc + "\n";
        auto out = scrub_all(s, in);
        check_gone(in, out, enc);
    }
    CHECK(scrub_form_names(s.forms()) == "hex");
}

TEST_CASE("secret_scrubber: a Basic credential's decoded pair is scrubbed too") {
    std::string pair = "svc-user:" + kSecret;
    std::string basic = b64(pair);
    auto strings = injected_strings(basic, {"Basic " + basic});
    CHECK(std::find(strings.begin(), strings.end(), pair) != strings.end());
    SecretScrubber s(strings);
    std::string in = "you sent " + pair + " and " + basic;
    auto out = scrub_all(s, in);
    check_gone(in, out, pair);
    CHECK(out.find(basic) == std::string::npos);
    CHECK(out.substr(0, 9) == "you sent ");
}

TEST_CASE("secret_scrubber: holds back at most longest() - 1 bytes and releases them at finish()") {
    auto p = std::make_shared<const ScrubPatterns>(std::vector<std::string>{kSecret});
    SecretScrubber s(p);
    std::string out;
    std::string in(10000, 'z');
    for (std::size_t i = 0; i < in.size(); i += 333) {
        s.feed(std::string_view(in).substr(i, 333), out);
        CHECK(s.held() <= p->longest() - 1);
        CHECK(out.size() + s.held() == std::min(in.size(), i + 333));
    }
    s.finish(out);
    CHECK(out == in);
    CHECK(s.held() == 0);
    CHECK(s.matches() == 0);
}

TEST_CASE("secret_scrubber: only a possible start of a form is held back: an SSE event leaves whole") {
    SecretScrubber s(injected_strings(kSecret, {"Bearer " + kSecret}));
    std::string event = "event: content_block_delta\ndata: {\"text\":\"sk-ant\"}\n\n";
    CHECK(s.feed(event) == event);
    CHECK(s.held() == 0);
    // Ending in the start of the secret: exactly that start waits.
    CHECK(s.feed("data: sk-an") == "data: ");
    CHECK(s.held() == 5);
    CHECK(s.feed("d") == "sk-and");
    CHECK(s.held() == 0);
}

TEST_CASE("secret_scrubber: flush() releases the held start, masked from 8 bytes on, and keeps searching") {
    SecretScrubber s(std::vector<std::string>{kSecret});
    // A secret split after 20 bytes (two WebSocket frames): both parts masked.
    std::string out = s.feed(kSecret.substr(0, 20));
    s.flush(out);
    CHECK(out == std::string(20, '*'));
    std::string rest = s.feed(kSecret.substr(20) + " tail");
    s.finish(rest);
    CHECK(rest == std::string(kSecret.size() - 20, '*') + " tail");
    CHECK(s.matches() == 1);
    // Split after 5 bytes: those 5 pass (fewer than kMinDerivedForm), the rest is masked.
    SecretScrubber t(std::vector<std::string>{kSecret});
    out = t.feed(kSecret.substr(0, 5));
    t.flush(out);
    CHECK(out == kSecret.substr(0, 5));
    out = t.feed(kSecret.substr(5) + "\n");
    CHECK(out == std::string(kSecret.size() - 5, '*') + "\n");
    // A stream ending in 8+ bytes of a form: masked at finish().
    SecretScrubber u(std::vector<std::string>{kSecret});
    out = u.feed("x " + kSecret.substr(0, 30));
    u.finish(out);
    CHECK(out == "x " + std::string(30, '*'));
}

TEST_CASE("secret_scrubber: no secrets means a pass-through that holds nothing") {
    SecretScrubber s(std::vector<std::string>{});
    CHECK_FALSE(s.active());
    CHECK(s.feed("abc") == "abc");
    CHECK(s.held() == 0);
}

TEST_CASE("secret_scrubber: finish() ends a stream: the next one is a new search") {
    SecretScrubber s(std::vector<std::string>{kSecret});
    std::string half1 = kSecret.substr(0, 20), half2 = kSecret.substr(20);
    std::string out = s.feed(half1);
    s.finish(out);  // a stream ending in 20 bytes of the secret: masked
    CHECK(out == std::string(20, '*'));
    out.clear();
    s.feed(half2, out);
    s.finish(out);
    CHECK(out == half2);  // not a form on its own
}

TEST_CASE("secret_scrubber: property: random splits never let a form through and change nothing else") {
    std::mt19937 rng(20261201);
    const std::vector<std::string> secrets{kSecret, "Bearer " + kSecret, "ghp_0123456789abcdefABCDEF/+xyz"};
    auto patterns = std::make_shared<const ScrubPatterns>(secrets);
    // Every way the test can encode a secret (independently of the scrubber).
    auto forms_of = [&](const std::string& sec, std::mt19937& r) {
        std::string pre(r() % 3, 'q'), post(r() % 3, 'w');
        return std::vector<std::pair<std::string, std::string>>{
            {sec, sec},
            {b64(pre + sec + post), ""},
            {b64(pre + sec + post, true), ""},
            {pct(sec, true, true), pct(sec, true, true)},
            {pct(sec, false, false), pct(sec, false, false)},
            {json_u(sec, false), json_u(sec, false)},
            {json_slash(sec), json_slash(sec)},
            {hexs(sec, true), hexs(sec, true)},
            {hexs(sec, false), hexs(sec, false)},
        };
    };
    const std::string filler_chars =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=%\\\"{}:, \n-_";
    for (int round = 0; round < 300; ++round) {
        std::string stream;
        std::vector<std::pair<std::string, std::string>> inserted;  // (blob, what must be gone: "" = the secret's core)
        int n = 1 + static_cast<int>(rng() % 6);
        for (int k = 0; k < n; ++k) {
            std::size_t filler = rng() % 200;
            for (std::size_t i = 0; i < filler; ++i) stream += filler_chars[rng() % filler_chars.size()];
            const auto& sec = secrets[rng() % secrets.size()];
            auto forms = forms_of(sec, rng);
            auto f = forms[rng() % forms.size()];
            stream += f.first;
            inserted.push_back(f);
        }
        for (std::size_t i = 0; i < rng() % 50; ++i) stream += filler_chars[rng() % filler_chars.size()];
        stream += '\n';  // a byte no form holds: finish() has no tail to judge

        SecretScrubber s(patterns);
        std::string out;
        for (std::size_t pos = 0; pos < stream.size();) {
            std::size_t len = std::min<std::size_t>(stream.size() - pos, rng() % 4 == 0 ? 1 : rng() % 97);
            s.feed(std::string_view(stream).substr(pos, len), out);
            CHECK(s.held() <= patterns->longest() - 1);
            pos += len;
        }
        s.finish(out);
        REQUIRE(out.size() == stream.size());
        CHECK(out == reference(*patterns, stream));
        for (const auto& [blob, needle] : inserted) {
            if (!needle.empty()) CHECK(out.find(needle) == std::string::npos);
            // A base64 blob: no 3-aligned window of it decoding to a secret
            // span survives; checked as "the blob is not intact".
            CHECK(out.find(blob) == std::string::npos);
        }
        CHECK(s.matches() >= static_cast<std::uint64_t>(n));
    }
}

TEST_CASE("secret_scrubber: an ordinary long SSE model stream is byte-identical after scanning") {
    // The shape of the model stand-ins' streams: message_start, many
    // content_block_delta events, message_stop; ids and text random.
    std::mt19937 rng(7);
    auto word = [&](std::size_t n) {
        static const std::string chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        std::string w;
        for (std::size_t i = 0; i < n; ++i) w += chars[rng() % chars.size()];
        return w;
    };
    std::string sse = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_" + word(24) +
                      "\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-standin\"}}\n\n";
    for (int i = 0; i < 20000; ++i)
        sse += "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
               "\"text_delta\",\"text\":\"" + word(1 + rng() % 30) + " \\u00e9\\n\"}}\n\n";
    sse += "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    SecretScrubber s(injected_strings(kSecret, {"Bearer " + kSecret}));
    std::string out;
    for (std::size_t pos = 0; pos < sse.size(); pos += 16384) s.feed(std::string_view(sse).substr(pos, 16384), out);
    s.finish(out);
    CHECK(out == sse);
    CHECK(s.matches() == 0);
}
