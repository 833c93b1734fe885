#include "gateway/secret_scrubber.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <set>

namespace corral::gateway {
namespace {

constexpr std::string_view kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kBase64Url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::string_view kHexUpper = "0123456789ABCDEF";
constexpr std::string_view kHexLower = "0123456789abcdef";
constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

// The base64 characters every encoding of a blob holding `s` at byte offset
// `align` (mod 3) must contain, whatever surrounds it. Character j of an
// encoding is bits [6j, 6j+6) of the blob, i.e. bytes 6j/8 … (6j+5)/8: it
// depends on `s` alone when those bytes all lie inside it. Padding ('=')
// only ever replaces characters that also depend on bytes after `s`.
std::string base64_inner(std::string_view s, std::size_t align, std::string_view alphabet) {
    std::string blob(align, '\0');
    blob.append(s);
    while (blob.size() % 3 != 0) blob.push_back('\0');
    std::string out;
    const std::size_t first = align, last = align + s.size() - 1;
    for (std::size_t j = 0; j * 6 < blob.size() * 8; ++j) {
        std::size_t lo = j * 6 / 8, hi = (j * 6 + 5) / 8;
        if (lo < first || hi > last) continue;
        unsigned bits = (static_cast<unsigned char>(blob[lo]) << 8) |
                        (hi < blob.size() && hi != lo ? static_cast<unsigned char>(blob[hi]) : 0u);
        unsigned shift = 16 - (j * 6 % 8) - 6;
        out += alphabet[(bits >> shift) & 0x3f];
    }
    return out;
}

bool is_unreserved(unsigned char c) {  // RFC 3986 §2.3
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~';
}

// keep: which bytes stay as they are (nullptr: every byte is encoded).
std::string percent(std::string_view s, std::string_view hex, bool (*keep)(unsigned char)) {
    std::string out;
    for (unsigned char c : s) {
        if (keep && keep(c)) {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

std::string hex_of(std::string_view s, std::string_view hex) {
    std::string out;
    for (unsigned char c : s) {
        out += hex[c >> 4];
        out += hex[c & 15];
    }
    return out;
}

void json_u(std::string& out, unsigned char c, std::string_view hex) {
    out += "\\u00";
    out += hex[c >> 4];
    out += hex[c & 15];
}

// What a JSON encoder writes for `s` inside a string: the escapes it must use
// (\" and \\), optionally \/ (PHP, some Java encoders) and \u00XX for the
// HTML-sensitive <>&' (Go, .NET).
std::string json_encoder(std::string_view s, bool escape_slash, bool escape_html, std::string_view hex) {
    std::string out;
    for (unsigned char c : s) {
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '/' && escape_slash) out += "\\/";
        else if (escape_html && (c == '<' || c == '>' || c == '&' || c == '\'')) json_u(out, c, hex);
        else out += static_cast<char>(c);
    }
    return out;
}

std::string json_all(std::string_view s, std::string_view hex) {
    std::string out;
    for (unsigned char c : s) json_u(out, c, hex);
    return out;
}

// Decodes standard base64 (padding optional); "" when it is not base64.
std::string base64_decode(std::string_view s) {
    while (!s.empty() && s.back() == '=') s.remove_suffix(1);
    std::string out;
    unsigned acc = 0;
    int bits = 0;
    for (char ch : s) {
        auto v = kBase64.find(ch);
        if (v == std::string_view::npos) return {};
        acc = (acc << 6) | static_cast<unsigned>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xff);
        }
    }
    return out;
}

}  // namespace

std::string scrub_form_names(std::uint8_t forms) {
    static constexpr std::pair<ScrubForm, std::string_view> names[] = {
        {ScrubForm::literal, "literal"}, {ScrubForm::base64, "base64"}, {ScrubForm::base64url, "base64url"},
        {ScrubForm::percent, "percent"}, {ScrubForm::json, "json"},     {ScrubForm::hex, "hex"},
    };
    std::string out;
    for (const auto& [bit, name] : names) {
        if (!(forms & static_cast<std::uint8_t>(bit))) continue;
        if (!out.empty()) out += ',';
        out += name;
    }
    return out;
}

std::vector<std::string> injected_strings(const std::string& secret, const std::vector<std::string>& rendered_values) {
    std::vector<std::string> out{secret};
    for (const auto& v : rendered_values) {
        if (v != secret) out.push_back(v);
        // "Basic <base64 of user:pass>": an upstream may quote the decoded pair.
        if (v.size() > 6 && (v.compare(0, 6, "Basic ") == 0 || v.compare(0, 6, "basic ") == 0)) {
            auto pair = base64_decode(std::string_view(v).substr(6));
            bool printable = !pair.empty() && std::all_of(pair.begin(), pair.end(), [](char c) {
                return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
            });
            if (printable && pair.find(':') != std::string::npos) out.push_back(pair);
        }
    }
    return out;
}

ScrubPatterns::ScrubPatterns(const std::vector<std::string>& secrets) {
    std::set<std::string> seen;
    auto add = [&](std::string bytes, ScrubForm form) {
        if (bytes.empty()) return;
        if (form != ScrubForm::literal && bytes.size() < kMinDerivedForm) return;
        if (!seen.insert(bytes).second) return;
        patterns_.push_back({std::move(bytes), form});
    };
    for (const auto& s : secrets) {
        if (s.empty()) continue;
        add(s, ScrubForm::literal);
        for (std::size_t align = 0; align < 3; ++align) {
            add(base64_inner(s, align, kBase64), ScrubForm::base64);
            add(base64_inner(s, align, kBase64Url), ScrubForm::base64url);
        }
        for (auto hex : {kHexUpper, kHexLower}) {
            add(percent(s, hex, nullptr), ScrubForm::percent);
            add(percent(s, hex, is_unreserved), ScrubForm::percent);
            // encodeURIComponent leaves !'()* alone too.
            add(percent(s, hex,
                        [](unsigned char c) {
                            return is_unreserved(c) || c == '!' || c == '\'' || c == '(' || c == ')' || c == '*';
                        }),
                ScrubForm::percent);
            for (bool slash : {true, false})
                for (bool html : {true, false}) add(json_encoder(s, slash, html, hex), ScrubForm::json);
            add(json_all(s, hex), ScrubForm::json);
            add(hex_of(s, hex), ScrubForm::hex);
        }
    }
    compile();
}

// Aho–Corasick over byte classes, with every goto completed into a full
// transition table (a DFA): scanning is then one table lookup per byte and
// one check of the state's longest match, whatever the number of patterns.
void ScrubPatterns::compile() {
    byte_class_.fill(0);
    classes_ = 1;
    for (const auto& p : patterns_) {
        longest_ = std::max(longest_, p.bytes.size());
        for (unsigned char c : p.bytes)
            if (byte_class_[c] == 0) byte_class_[c] = static_cast<std::uint16_t>(classes_++);
    }
    next_.assign(classes_, kNone);
    match_len_.assign(1, 0);
    match_forms_.assign(1, 0);
    depth_.assign(1, 0);
    prefix_forms_.assign(1, 0);
    for (const auto& p : patterns_) {
        std::uint32_t s = 0;
        for (unsigned char c : p.bytes) {
            if (next_[s * classes_ + byte_class_[c]] == kNone) {
                next_[s * classes_ + byte_class_[c]] = static_cast<std::uint32_t>(match_len_.size());
                match_len_.push_back(0);
                match_forms_.push_back(0);
                depth_.push_back(depth_[s] + 1);
                prefix_forms_.push_back(0);
                next_.resize(next_.size() + classes_, kNone);
            }
            s = next_[s * classes_ + byte_class_[c]];
            prefix_forms_[s] |= static_cast<std::uint8_t>(p.form);
        }
        match_len_[s] = std::max<std::uint32_t>(match_len_[s], static_cast<std::uint32_t>(p.bytes.size()));
        match_forms_[s] |= static_cast<std::uint8_t>(p.form);
    }
    std::vector<std::uint32_t> fail(match_len_.size(), 0);
    std::deque<std::uint32_t> queue;
    for (std::size_t c = 0; c < classes_; ++c) {
        auto& t = next_[c];
        if (t == kNone) {
            t = 0;
        } else {
            fail[t] = 0;
            queue.push_back(t);
        }
    }
    while (!queue.empty()) {
        auto u = queue.front();
        queue.pop_front();
        // fail[u] is shallower, so already final: every pattern that is a
        // suffix of u's path also ends here.
        match_len_[u] = std::max(match_len_[u], match_len_[fail[u]]);
        match_forms_[u] |= match_forms_[fail[u]];
        for (std::size_t c = 0; c < classes_; ++c) {
            auto& t = next_[u * classes_ + c];
            auto via_fail = next_[fail[u] * classes_ + c];
            if (t == kNone) {
                t = via_fail;
            } else {
                fail[t] = via_fail;
                queue.push_back(t);
            }
        }
    }
    for (auto& t : next_)
        t = static_cast<std::uint32_t>(t * classes_) | (match_len_[t] != 0 ? kMatchBit : 0u);
    starts_.fill(false);
    for (const auto& p : patterns_) starts_[static_cast<unsigned char>(p.bytes.front())] = true;
}

SecretScrubber::SecretScrubber(std::shared_ptr<const ScrubPatterns> patterns) : p_(std::move(patterns)) {
    if (!p_) p_ = std::make_shared<const ScrubPatterns>(std::vector<std::string>{});
}

SecretScrubber::SecretScrubber(const std::vector<std::string>& secrets)
    : p_(std::make_shared<const ScrubPatterns>(secrets)) {}

void SecretScrubber::feed(std::string_view in, std::string& out) {
    const ScrubPatterns& p = *p_;
    if (p.empty()) {
        out.append(in);
        return;
    }
    std::size_t start = window_.size();
    window_.append(in);
    const std::uint32_t* next = p.next_.data();
    const std::uint16_t* byte_class = p.byte_class_.data();
    const bool* starts = p.starts_.data();
    const auto classes = static_cast<std::uint32_t>(p.classes_);
    const std::size_t size = window_.size();
    char* w = window_.data();
    std::uint32_t row = state_ * classes;
    for (std::size_t i = start; i < size; ++i) {
        if (row == 0) {
            // At the root a byte no pattern starts with leads back to the
            // root: skip those without walking the table.
            while (i < size && !starts[static_cast<unsigned char>(w[i])]) ++i;
            if (i == size) break;
        }
        std::uint32_t e = next[row + byte_class[static_cast<unsigned char>(w[i])]];
        row = e & ~ScrubPatterns::kMatchBit;
        if (e & ScrubPatterns::kMatchBit) {
            std::uint32_t s = row / classes;
            std::uint32_t len = p.match_len_[s];
            // The window holds every byte of the pattern prefix the state
            // stood for before `in` (a suffix of that prefix), so the match
            // starts inside it; after a flush() it may have started in bytes
            // already released, and what is still here is masked.
            std::uint64_t end = position_ + i + 1, begin = end - len;
            if (begin >= masked_end_) ++matches_;
            for (std::uint64_t k = std::max({begin, masked_end_, position_}); k < end; ++k)
                w[k - position_] = kScrubMask;
            masked_end_ = end;
            forms_ |= p.match_forms_[s];
        }
    }
    std::uint32_t s = row / classes;
    state_ = s;
    // Only the bytes of the prefix the state stands for can be part of a
    // later match (one that also covers the next byte: at most longest() - 1
    // of them).
    std::size_t keep = std::min<std::size_t>({p.depth_[s], p.longest() - 1, window_.size()});
    std::size_t release = window_.size() - keep;
    out.append(window_, 0, release);
    window_.erase(0, release);
    position_ += release;
}

void SecretScrubber::flush(std::string& out) {
    if (window_.size() >= kMinDerivedForm) {
        std::uint64_t end = position_ + window_.size();
        if (masked_end_ <= position_) ++matches_;
        for (std::uint64_t k = std::max(masked_end_, position_); k < end; ++k) window_[k - position_] = kScrubMask;
        masked_end_ = end;
        forms_ |= p_->prefix_forms_[state_];
    }
    out.append(window_);
    position_ += window_.size();
    window_.clear();
}

void SecretScrubber::finish(std::string& out) {
    flush(out);
    state_ = 0;
}

}  // namespace corral::gateway
