#include "base/parse.hpp"

#include <cctype>
#include <cmath>
#include <limits>

#include "base/sys_error.hpp"

namespace corral {

namespace {

bool to_lower_equals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

// Reads a non-negative decimal number with an optional fraction from the front
// of `text`; returns false if there is none.
bool take_number(std::string_view& text, long double& out) {
    std::size_t i = 0;
    long double value = 0;
    bool digits = false;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        value = value * 10 + (text[i] - '0');
        digits = true;
        ++i;
    }
    if (i < text.size() && text[i] == '.') {
        ++i;
        long double scale = 0.1L;
        bool frac = false;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
            value += scale * (text[i] - '0');
            scale /= 10;
            frac = true;
            ++i;
        }
        if (!frac) return false;
    }
    if (!digits) return false;
    out = value;
    text.remove_prefix(i);
    return true;
}

constexpr const char* kSizeForm =
    "expected a non-negative number with an optional unit: B, K/KiB, M/MiB, G/GiB, T/TiB (powers of 1024), e.g. 512M";
constexpr const char* kDurationForm =
    "expected a non-negative duration such as 250ms, 30s, 5m, 1h, 1h30m, or plain seconds like 90";

}  // namespace

std::uint64_t parse_size(std::string_view text) {
    std::string_view rest = text;
    long double value = 0;
    if (!take_number(rest, value))
        throw UsageError("invalid size \"" + std::string(text) + "\": " + kSizeForm);
    long double mult = 1;
    if (rest.empty() || to_lower_equals(rest, "b")) {
        mult = 1;
    } else if (to_lower_equals(rest, "k") || to_lower_equals(rest, "kb") || to_lower_equals(rest, "kib")) {
        mult = 1024.0L;
    } else if (to_lower_equals(rest, "m") || to_lower_equals(rest, "mb") || to_lower_equals(rest, "mib")) {
        mult = 1024.0L * 1024;
    } else if (to_lower_equals(rest, "g") || to_lower_equals(rest, "gb") || to_lower_equals(rest, "gib")) {
        mult = 1024.0L * 1024 * 1024;
    } else if (to_lower_equals(rest, "t") || to_lower_equals(rest, "tb") || to_lower_equals(rest, "tib")) {
        mult = 1024.0L * 1024 * 1024 * 1024;
    } else {
        throw UsageError("invalid size \"" + std::string(text) + "\": unknown unit \"" + std::string(rest) +
                         "\"; " + kSizeForm);
    }
    long double bytes = std::floor(value * mult);
    if (bytes > static_cast<long double>(std::numeric_limits<std::uint64_t>::max()))
        throw UsageError("invalid size \"" + std::string(text) +
                         "\": too large, allowed: at most 16777215T (just under 2^64 bytes)");
    return static_cast<std::uint64_t>(bytes);
}

std::chrono::milliseconds parse_duration(std::string_view text) {
    std::string_view rest = text;
    if (rest.empty()) throw UsageError(std::string("invalid duration \"\": ") + kDurationForm);
    long double total_ms = 0;
    bool any = false;
    while (!rest.empty()) {
        long double value = 0;
        if (!take_number(rest, value))
            throw UsageError("invalid duration \"" + std::string(text) + "\": " + kDurationForm);
        std::size_t u = 0;
        while (u < rest.size() && std::isalpha(static_cast<unsigned char>(rest[u]))) ++u;
        std::string_view unit = rest.substr(0, u);
        rest.remove_prefix(u);
        long double mult;
        if (unit.empty()) {
            // A bare number is seconds, but only as the whole text ("90"), not "1h30".
            if (any || !rest.empty())
                throw UsageError("invalid duration \"" + std::string(text) + "\": missing unit; " + kDurationForm);
            mult = 1000;
        } else if (unit == "ms") {
            mult = 1;
        } else if (unit == "s") {
            mult = 1000;
        } else if (unit == "m") {
            mult = 60'000;
        } else if (unit == "h") {
            mult = 3'600'000;
        } else if (unit == "d") {
            mult = 86'400'000;
        } else {
            throw UsageError("invalid duration \"" + std::string(text) + "\": unknown unit \"" + std::string(unit) +
                             "\"; " + kDurationForm);
        }
        total_ms += value * mult;
        any = true;
    }
    if (total_ms > static_cast<long double>(std::numeric_limits<std::int64_t>::max() / 2))
        throw UsageError("invalid duration \"" + std::string(text) +
                         "\": too large, allowed: at most 53375995583d (about 146 million years)");
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(total_ms)));
}

std::pair<std::string, std::string> parse_env_pair(std::string_view text) {
    auto eq = text.find('=');
    std::string_view key = text.substr(0, eq);
    bool ok = eq != std::string_view::npos && !key.empty() &&
              !std::isdigit(static_cast<unsigned char>(key[0]));
    for (char c : key)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) ok = false;
    if (!ok)
        throw UsageError("invalid environment pair \"" + std::string(text) +
                         "\": expected KEY=VALUE with KEY made of letters, digits and _ (not starting with a digit)");
    return {std::string(key), std::string(text.substr(eq + 1))};
}

std::string format_size(std::uint64_t bytes) {
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (unit < 4 && bytes != 0 && bytes % 1024 == 0) {
        bytes /= 1024;
        ++unit;
    }
    return std::to_string(bytes) + kUnits[unit];
}

std::string format_duration(std::chrono::milliseconds d) {
    auto ms = d.count();
    if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
    return std::to_string(ms) + "ms";
}

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& ch : out)
        if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    return out;
}

}  // namespace corral
