// base/shell_words.cpp — see shell_words.hpp.
#include "base/shell_words.hpp"

namespace corral {

namespace {

bool plain_shell_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
}

}  // namespace

std::string shell_word(std::string_view arg) {
    bool plain = !arg.empty();
    for (char c : arg) plain = plain && plain_shell_char(c);
    if (plain) return std::string(arg);
    std::string out = "'";
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string shell_words(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& a : argv) {
        if (!out.empty()) out += ' ';
        out += shell_word(a);
    }
    return out;
}

}  // namespace corral
