// base/glob.cpp — see glob.hpp.
#include "base/glob.hpp"

#include <cstddef>

namespace corral {

bool glob_match(std::string_view pattern, std::string_view text) {
    // A '*' of the pattern is always a wildcard (checked before a literal
    // match, so a '*' in the text cannot end its expansion); on a mismatch
    // the last '*' seen absorbs one more byte.
    std::size_t p = 0, t = 0;
    std::size_t star = std::string_view::npos, star_t = 0;
    while (t < text.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            star_t = t;
        } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
            ++p;
            ++t;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            t = ++star_t;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

}  // namespace corral
