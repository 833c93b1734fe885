#include "base/terminal_text.hpp"

#include <cstdint>

namespace corral {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// The code point that starts at s[i] and its length in bytes; length 0 when
// the bytes there are not valid UTF-8 (the caller takes one byte as it is).
struct CodePoint {
    char32_t value = 0;
    std::size_t length = 0;
};

CodePoint decode_utf8(std::string_view s, std::size_t i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) return {b0, 1};
    std::size_t n;
    char32_t cp, min;
    if ((b0 & 0xe0) == 0xc0) n = 2, cp = b0 & 0x1f, min = 0x80;
    else if ((b0 & 0xf0) == 0xe0) n = 3, cp = b0 & 0x0f, min = 0x800;
    else if ((b0 & 0xf8) == 0xf0) n = 4, cp = b0 & 0x07, min = 0x10000;
    else return {};
    if (i + n > s.size()) return {};
    for (std::size_t k = 1; k < n; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xc0) != 0x80) return {};
        cp = (cp << 6) | (b & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return {};
    return {cp, n};
}

// A code point at or above U+007F that a terminal acts on or that changes
// how the line reads without being seen (the header's list).
bool is_hidden_control(char32_t cp) {
    return (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x180e || (cp >= 0x200b && cp <= 0x200f) ||
           (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) || cp == 0xfeff ||
           (cp >= 0xfff9 && cp <= 0xfffb);
}

void append_u_escape(std::string& out, char32_t cp) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 0xf];
}

void append_x_escape(std::string& out, unsigned char b) {
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
}

}  // namespace

std::string terminal_text(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const CodePoint c = decode_utf8(s, i);
        if (c.length == 0) {
            append_x_escape(out, static_cast<unsigned char>(s[i++]));
            continue;
        }
        if (c.value == '\\') out += "\\\\";
        else if (c.value == '\t') out += "\\t";
        else if (c.value == '\n') out += "\\n";
        else if (c.value == '\r') out += "\\r";
        else if (c.value < 0x20 || c.value == 0x7f) append_x_escape(out, static_cast<unsigned char>(c.value));
        else if (is_hidden_control(c.value)) append_u_escape(out, c.value);
        else out.append(s.substr(i, c.length));
        i += c.length;
    }
    return out;
}

std::string terminal_json(std::string_view json_text) {
    std::string out;
    out.reserve(json_text.size());
    for (std::size_t i = 0; i < json_text.size();) {
        const CodePoint c = decode_utf8(json_text, i);
        if (c.length == 0) {
            append_u_escape(out, 0xfffd);
            ++i;
            continue;
        }
        if (is_hidden_control(c.value) || (c.value < 0x20 && c.value != '\n')) append_u_escape(out, c.value);
        else out.append(json_text.substr(i, c.length));
        i += c.length;
    }
    return out;
}

}  // namespace corral
