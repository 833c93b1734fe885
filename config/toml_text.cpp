#include "config/toml_text.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <regex>
#include <sstream>

#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral::config {

std::size_t first_invalid_utf8(std::string_view text) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n) {
        const unsigned char c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF;   // the allowed range of the second byte
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;        // no overlong three-byte forms
            if (c == 0xED) hi = 0x9F;        // no UTF-16 surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;        // no overlong four-byte forms
            if (c == 0xF4) hi = 0x8F;        // nothing above U+10FFFF
        } else {
            return i;                         // a continuation byte, C0/C1, or F5..FF
        }
        if (n - i < len || s[i + 1] < lo || s[i + 1] > hi) return i;
        for (std::size_t k = 2; k < len; ++k)
            if ((s[i + k] & 0xC0) != 0x80) return i;
        i += len;
    }
    return std::string_view::npos;
}

namespace {

// An org's or gateway's TOML is a few KiB; a bound keeps a mistaken path
// (a log, an image) from being read whole into memory.
constexpr std::size_t kMaxTomlFileBytes = 4u << 20;

// toml11's first message line without its "[error] toml::function_name: " prefix.
std::string first_message_line(const std::string& what) {
    std::string first = what.substr(0, what.find('\n'));
    if (first.rfind("[error] ", 0) == 0) first = first.substr(8);
    if (first.rfind("toml::", 0) == 0)
        if (auto colon = first.find(": "); colon != std::string::npos) first = first.substr(colon + 2);
    return first;
}

// toml11's picture names the offending line as " N | text"; prefer it to the
// exception's own location, which can point at the start of the construct.
std::size_t pictured_line(const std::string& what, std::size_t fallback) {
    static const std::regex numbered(R"(\n\s*(\d+) \|)");
    std::smatch m;
    if (std::regex_search(what, m, numbered)) return std::stoul(m[1]);
    return fallback;
}

}  // namespace

TomlDocument parse_toml_text(std::string_view text, const std::string& file) {
    TomlDocument doc;
    if (std::size_t bad = first_invalid_utf8(text); bad != std::string_view::npos) {
        std::string_view before = text.substr(0, bad);
        doc.line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
        std::size_t line_start = before.rfind('\n');
        std::size_t column = bad - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
        doc.problem = "not valid UTF-8 at column " + std::to_string(column) +
                      " (byte " + std::to_string(bad) + "), allowed: a UTF-8 text file";
        return doc;
    }
    std::istringstream in{std::string(text)};
    try {
        doc.root = toml::parse(in, file);
    } catch (const toml::exception& e) {
        doc.line = pictured_line(e.what(), e.location().line());
        doc.problem = "TOML syntax error: " + first_message_line(e.what());
    } catch (const std::exception& e) {
        doc.problem = std::string("cannot parse: ") + e.what();
    }
    return doc;
}

Problem check_toml_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return Failed{errno == ENOENT ? "does not exist, allowed: a regular TOML file" : "cannot read: " + errno_text(errno)};
    // toml11 itself answers a directory with std::bad_alloc.
    if (S_ISDIR(st.st_mode)) return Failed{"is a directory, allowed: a regular TOML file"};
    if (!S_ISREG(st.st_mode)) return Failed{"is not a regular file, allowed: a regular TOML file"};
    return std::nullopt;
}

TomlDocument parse_toml_file(const std::string& path) {
    if (auto bad = check_toml_file(path)) return {std::nullopt, 0, bad->problem};
    std::optional<std::string> text;
    try {
        text = read_whole_file({path, kMaxTomlFileBytes});
    } catch (const SysError& e) {
        return {std::nullopt, 0, "cannot read: " + errno_text(e.error())};
    } catch (const UsageError&) {
        return {std::nullopt, 0, "is larger than 4 MiB, allowed: a TOML file of at most 4 MiB"};
    }
    if (!text) return {std::nullopt, 0, "does not exist, allowed: a regular TOML file"};
    return parse_toml_text(*text, path);
}

}  // namespace corral::config
