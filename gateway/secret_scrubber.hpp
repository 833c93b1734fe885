// gateway/secret_scrubber.hpp — masks injected secrets in what an upstream
// sends back to the box.
//
// The box only ever holds sentinel credentials, so a real secret in a
// response can only have come from an upstream reflecting the request the
// gateway injected it into (an echo endpoint, an error quoting a header). The
// scrubber finds every occurrence of each secret in the encodings an upstream
// is likely to use and overwrites it in place with a mask of the same length
// (kScrubMask), so framing that counts bytes (Content-Length, chunk sizes,
// WebSocket frame lengths) stays right and a stream stays a stream.
//
// Pure: no I/O, no allocation per byte. ScrubPatterns is built once per set of
// secrets (an Aho–Corasick automaton over every form of every secret, compiled
// to a table, so scanning costs one lookup per byte whatever the number of
// forms); SecretScrubber is the per-stream state (one per response body, per
// head, per WebSocket direction), cheap to make.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace corral::gateway {

// The byte a matched form is overwritten with: ASCII, so a masked text stays
// valid UTF-8 (WebSocket text frames, JSON) and a masked header value stays a
// valid field value.
inline constexpr char kScrubMask = '*';

// Derived forms shorter than this are not searched for (an 8-byte base64 or
// hex string occurs by chance about once in 10^14 positions; a shorter one
// would start masking ordinary text). The literal secret is always searched.
inline constexpr std::size_t kMinDerivedForm = 8;

// The encodings searched for (one bit each, so a match can report several).
enum class ScrubForm : std::uint8_t {
    literal = 1 << 0,    // the bytes as injected
    base64 = 1 << 1,     // standard alphabet, at each of the three alignments inside a longer blob
    base64url = 1 << 2,  // URL-safe alphabet (-_), likewise
    percent = 1 << 3,    // %XX, upper or lower case: every byte, or every byte but the unreserved ones
    json = 1 << 4,       // JSON string escapes: \/ \" \\, \u00XX for <>&' or for every byte
    hex = 1 << 5,        // two hex digits per byte, upper or lower case
};

// "literal,base64" for a set of ScrubForm bits, in the order above.
std::string scrub_form_names(std::uint8_t forms);

// The strings to scrub for one injected credential: the secret itself, each
// header value the gateway rendered from it (e.g. "Bearer <token>"), and, for
// a rendered value "Basic <b64>", the decoded "user:pass" pair.
std::vector<std::string> injected_strings(const std::string& secret, const std::vector<std::string>& rendered_values);

// Every form of every secret, compiled. Immutable once built: share it
// (shared_ptr) between the streams of every exchange that injects the same
// secrets.
class ScrubPatterns {
public:
    struct Pattern {
        std::string bytes;
        ScrubForm form;
    };

    // Empty strings are ignored; duplicates (a form that encodes to the same
    // bytes as another) are searched once.
    explicit ScrubPatterns(const std::vector<std::string>& secrets);

    const std::vector<Pattern>& patterns() const { return patterns_; }
    // Length of the longest pattern (0 with none): a stream holds back at most
    // longest() - 1 bytes.
    std::size_t longest() const { return longest_; }
    bool empty() const { return patterns_.empty(); }

private:
    friend class SecretScrubber;
    void compile();

    std::vector<Pattern> patterns_;
    std::size_t longest_ = 0;
    std::array<std::uint16_t, 256> byte_class_{};  // 0 = a byte no pattern contains
    std::size_t classes_ = 1;
    // next_[state * classes_ + class]: the next state's row offset (state *
    // classes_), kMatchBit set when a pattern ends there (the scan loop then
    // needs no multiply and no second lookup per byte).
    static constexpr std::uint32_t kMatchBit = 0x80000000u;
    std::vector<std::uint32_t> next_;
    std::array<bool, 256> starts_{};             // bytes some pattern starts with
    std::vector<std::uint32_t> match_len_;       // longest pattern ending in state (0 = none)
    std::vector<std::uint8_t> match_forms_;      // forms of every pattern ending in state
    std::vector<std::uint32_t> depth_;           // length of the pattern prefix the state stands for
    std::vector<std::uint8_t> prefix_forms_;     // forms of the patterns that prefix starts
};

// One stream (a response body, a head, a WebSocket direction). Bytes go in
// through feed() and come out, masked, in the same order and number. Only the
// bytes that could still become the start of a match are held back: the
// longest suffix of what was seen that is a prefix of some form, and never
// more than longest() - 1 bytes. A byte no form contains ('\n', ' ', '}' for
// the usual secrets) therefore releases everything before it: an SSE event,
// which ends in "\n\n", leaves at once and whole.
class SecretScrubber {
public:
    explicit SecretScrubber(std::shared_ptr<const ScrubPatterns> patterns);
    // Convenience (tests, fuzzing): builds its own patterns.
    explicit SecretScrubber(const std::vector<std::string>& secrets);

    // Appends to `out` the bytes that can no longer be part of a match.
    void feed(std::string_view in, std::string& out);
    std::string feed(std::string_view in) {
        std::string out;
        feed(in, out);
        return out;
    }
    // Appends every byte still held back, where the framing cannot wait for
    // more (the end of a WebSocket frame). The held bytes are the start of a
    // form: when there are kMinDerivedForm or more of them they are masked
    // (a secret's first 8 bytes in some encoding are already too much to let
    // through), fewer pass as they are. The search goes on where it was, so
    // a form completed by the bytes fed next is masked in those bytes too:
    // a secret split at a flush point leaks at most its first 7 form bytes.
    void flush(std::string& out);
    // The end of the stream: flush(), then forget the search state (the
    // scrubber can serve a new stream; its counts stay).
    void finish(std::string& out);
    std::string finish() {
        std::string out;
        finish(out);
        return out;
    }

    // Bytes held back now (≤ longest() - 1).
    std::size_t held() const { return window_.size(); }
    // Occurrences masked so far (overlapping matches count once; a held tail
    // masked by flush() counts as one) and their forms.
    std::uint64_t matches() const { return matches_; }
    std::uint8_t forms() const { return forms_; }
    bool active() const { return !p_->empty(); }

private:
    std::shared_ptr<const ScrubPatterns> p_;
    std::uint32_t state_ = 0;
    std::string window_;               // bytes seen and not yet released
    std::uint64_t position_ = 0;       // stream offset of window_[0]
    std::uint64_t masked_end_ = 0;     // stream offset one past the last masked byte
    std::uint64_t matches_ = 0;
    std::uint8_t forms_ = 0;
};

}  // namespace corral::gateway
