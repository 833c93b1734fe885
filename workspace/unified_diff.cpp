#include "workspace/unified_diff.hpp"

#include <algorithm>
#include <vector>

namespace corral::workspace {

namespace {

constexpr std::size_t kContext = 3;

std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> lines;
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t eol = text.find('\n', at);
        const std::size_t end = eol == std::string_view::npos ? text.size() : eol + 1;
        lines.push_back(text.substr(at, end - at));
        at = end;
    }
    return lines;
}

struct Edit {
    char op;        // ' ', '-', '+'
    std::size_t a;  // line of `before` (' ', '-')
    std::size_t b;  // line of `after` (' ', '+')
};

// The shortest edit script (Myers 1986), or nullopt past max_d.
std::optional<std::vector<Edit>> edit_script(const std::vector<std::string_view>& A,
                                             const std::vector<std::string_view>& B, std::size_t max_d) {
    const long n = static_cast<long>(A.size()), m = static_cast<long>(B.size());
    const long limit = std::min<long>(static_cast<long>(max_d), n + m);
    const long off = limit + 1;
    std::vector<long> v(static_cast<std::size_t>(2 * limit + 3), 0);
    std::vector<std::vector<long>> trace;
    auto at = [&](std::vector<long>& w, long k) -> long& { return w[static_cast<std::size_t>(k + off)]; };
    for (long d = 0; d <= limit; ++d) {
        trace.push_back(v);
        for (long k = -d; k <= d; k += 2) {
            long x = (k == -d || (k != d && at(v, k - 1) < at(v, k + 1))) ? at(v, k + 1) : at(v, k - 1) + 1;
            long y = x - k;
            while (x < n && y < m && A[static_cast<std::size_t>(x)] == B[static_cast<std::size_t>(y)]) ++x, ++y;
            at(v, k) = x;
            if (x < n || y < m) continue;
            // Back from (n, m) through each round's furthest points.
            std::vector<Edit> script;
            for (long e = d; e >= 0; --e) {
                std::vector<long>& w = trace[static_cast<std::size_t>(e)];
                const long kk = x - y;
                const long pk = (kk == -e || (kk != e && at(w, kk - 1) < at(w, kk + 1))) ? kk + 1 : kk - 1;
                const long px = e == 0 ? 0 : at(w, pk), py = e == 0 ? 0 : px - pk;
                while (x > px && y > py) --x, --y, script.push_back({' ', static_cast<std::size_t>(x), static_cast<std::size_t>(y)});
                if (e == 0) break;
                if (x == px) script.push_back({'+', static_cast<std::size_t>(px), static_cast<std::size_t>(py)});
                else script.push_back({'-', static_cast<std::size_t>(px), static_cast<std::size_t>(py)});
                x = px, y = py;
            }
            std::reverse(script.begin(), script.end());
            return script;
        }
    }
    return std::nullopt;
}

std::string range(std::size_t start, std::size_t count) {
    // diff's form: "L" for one line, "L,N" otherwise; an empty range names the line before it.
    if (count == 1) return std::to_string(start + 1);
    return std::to_string(count == 0 ? start : start + 1) + "," + std::to_string(count);
}

void put_line(std::string& out, char op, std::string_view line) {
    out += op;
    out.append(line.data(), line.size());
    if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

}  // namespace

std::optional<std::string> unified_diff_text(std::string_view before, std::string_view after,
                                             const std::string& label_before, const std::string& label_after,
                                             std::size_t max_edits) {
    const auto A = lines_of(before), B = lines_of(after);
    auto script = edit_script(A, B, max_edits);
    if (!script) return std::nullopt;
    std::vector<std::size_t> changes;
    for (std::size_t i = 0; i < script->size(); ++i)
        if ((*script)[i].op != ' ') changes.push_back(i);
    if (changes.empty()) return std::string();
    std::string out = "--- " + label_before + "\n+++ " + label_after + "\n";
    for (std::size_t c = 0; c < changes.size();) {
        // A hunk: changes whose gaps are at most two contexts long, with a context around them.
        std::size_t last = c;
        while (last + 1 < changes.size() && changes[last + 1] - changes[last] <= 2 * kContext + 1) ++last;
        const std::size_t from = changes[c] >= kContext ? changes[c] - kContext : 0;
        const std::size_t to = std::min(script->size(), changes[last] + kContext + 1);
        std::size_t a_start = 0, b_start = 0, a_count = 0, b_count = 0;
        for (std::size_t i = 0; i < from; ++i) {
            a_start += (*script)[i].op != '+';
            b_start += (*script)[i].op != '-';
        }
        std::string body;
        for (std::size_t i = from; i < to; ++i) {
            const Edit& e = (*script)[i];
            a_count += e.op != '+';
            b_count += e.op != '-';
            put_line(body, e.op, e.op == '+' ? B[e.b] : A[e.a]);
        }
        out += "@@ -" + range(a_start, a_count) + " +" + range(b_start, b_count) + " @@\n" + body;
        c = last + 1;
    }
    return out;
}

}  // namespace corral::workspace
