#include "base/suggest.hpp"

#include <algorithm>
#include <vector>

namespace corral {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    const std::size_t n = a.size(), m = b.size();
    // d[i][j]: distance between a's first i and b's first j characters.
    std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1, 0));
    for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= n; ++i)
        for (std::size_t j = 1; j <= m; ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[n][m];
}

std::optional<std::string> closest_name(std::string_view typed, std::span<const std::string_view> candidates) {
    std::string_view core = typed;
    while (core.starts_with('-')) core.remove_prefix(1);
    if (core.empty()) return std::nullopt;
    std::optional<std::string_view> best;
    std::size_t best_distance = 0;
    bool tied = false;
    for (auto c : candidates) {
        const std::size_t d = edit_distance(typed, c);
        if (!best || d < best_distance) {
            best = c;
            best_distance = d;
            tied = false;
        } else if (d == best_distance) {
            tied = true;
        }
    }
    // Two or more equally close names: none of them is what was meant more
    // than the other, so say nothing rather than guess.
    if (!best || tied || best_distance == 0 || best_distance > 2 || best_distance * 2 > core.size()) return std::nullopt;
    return std::string(*best);
}

}  // namespace corral
