#include "names/run_id.hpp"

#include <algorithm>

#include "base/sys_error.hpp"

namespace corral::names {

namespace {

bool is_id_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
}

bool all_digits(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool all_lower_hex(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// "<8 digits>T<digits>Z-<6 hex>" with `time_digits` digits after the 'T'.
bool is_stamp_form(std::string_view id, std::size_t time_digits) {
    const std::size_t z = 9 + time_digits;
    return id.size() == z + 8 && all_digits(id.substr(0, 8)) && id[8] == 'T' &&
           all_digits(id.substr(9, time_digits)) && id[z] == 'Z' && id[z + 1] == '-' &&
           all_lower_hex(id.substr(z + 2));
}

std::string shown(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return "'" + std::string(1, c) + "'";
    static constexpr char digits[] = "0123456789abcdef";
    return std::string("byte 0x") + digits[u >> 4] + digits[u & 15];
}

}  // namespace

bool is_drawn_run_id(std::string_view id) {
    return is_stamp_form(id, 9) || is_stamp_form(id, 6);  // HHMMSSmmm, or HHMMSS (older)
}

bool is_run_id(std::string_view id) {
    return !id.empty() && id.size() <= max_run_id_length && id.front() != '.' &&
           std::all_of(id.begin(), id.end(), is_id_char);
}

void require_run_id(std::string_view id, std::string_view where) {
    if (is_run_id(id)) return;
    const std::string prefix = where.empty() ? std::string() : std::string(where) + ": ";
    const std::string allowed =
        "expected an id as `corral ps` shows it: letters, digits, '-', '_', '.' (not first), at most " +
        std::to_string(max_run_id_length) + " characters";
    if (id.empty()) throw UsageError(prefix + "empty run id; " + allowed);
    if (id.size() > max_run_id_length)
        throw UsageError(prefix + "a run id of " + std::to_string(id.size()) + " characters; " + allowed);
    const std::string head = prefix + "run id \"" + std::string(id) + "\"";
    if (id.front() == '.') throw UsageError(head + " starts with '.'; " + allowed);
    const auto bad = std::find_if_not(id.begin(), id.end(), is_id_char);
    throw UsageError(head + " contains " + shown(*bad) + "; " + allowed);
}

}  // namespace corral::names
