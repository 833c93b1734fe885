// workspace/unified_diff: diff -u's format in process (headers, ranges,
// context, merged hunks, a missing last newline), and, on random edits, a
// diff that turns the old text into the new one when applied.
#include <doctest/doctest.h>

#include <random>
#include <sstream>
#include <vector>

#include "workspace/unified_diff.hpp"

namespace corral::workspace {
namespace {

std::string diff(const std::string& a, const std::string& b) {
    auto d = unified_diff_text(a, b, "a/f", "b/f");
    REQUIRE(d);
    return *d;
}

// Applies a unified diff of whole lines (every line ends in "\n" here).
std::string apply_patch(const std::string& before, const std::string& patch) {
    std::vector<std::string> a;
    std::istringstream in(before);
    for (std::string l; std::getline(in, l);) a.push_back(l);
    std::vector<std::string> out;
    std::size_t next = 0;  // the next line of `a` not yet copied
    std::istringstream p(patch);
    for (std::string l; std::getline(p, l);) {
        if (l.starts_with("---") || l.starts_with("+++")) continue;
        if (l.starts_with("@@")) {
            std::size_t start = std::stoul(l.substr(4));
            const bool empty = l.find(",0 ") != std::string::npos && l.find(",0 ") < l.find(" +");
            std::size_t first = empty ? start : start - 1;
            while (next < first) out.push_back(a[next++]);
            continue;
        }
        if (l[0] == ' ') out.push_back(a[next++]);
        else if (l[0] == '-') ++next;
        else if (l[0] == '+') out.push_back(l.substr(1));
    }
    while (next < a.size()) out.push_back(a[next++]);
    std::string joined;
    for (const auto& l : out) joined += l + "\n";
    return joined;
}

TEST_CASE("diff -u's format: headers, ranges, one hunk per nearby change, the missing last newline") {
    CHECK(diff("same\n", "same\n").empty());
    CHECK(diff("one\ntwo\n", "one\nTWO\nthree\n") ==
          "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n one\n-two\n+TWO\n+three\n");
    CHECK(diff("", "new\n") == "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+new\n");
    CHECK(diff("x\n", "") == "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-x\n");
    CHECK(diff("a\nb", "a\nc") ==
          "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n");
    std::string twenty, changed;
    for (int i = 1; i <= 20; ++i) {
        twenty += std::to_string(i) + "\n";
        changed += (i == 2 || i == 18 ? "x" : std::to_string(i)) + "\n";
    }
    // Changes 16 lines apart: two hunks, three lines of context each.
    CHECK(diff(twenty, changed) ==
          "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n 1\n-2\n+x\n 3\n 4\n 5\n@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+x\n 19\n 20\n");
}

TEST_CASE("a pair further apart than max_edits is left to the caller") {
    CHECK_FALSE(unified_diff_text("a\nb\nc\n", "x\ny\nz\n", "a", "b", 3));
    CHECK(unified_diff_text("a\nb\nc\n", "x\ny\nz\n", "a", "b", 6));
}

TEST_CASE("on random edits, applying the diff to the old text gives the new one") {
    std::mt19937 rng(31);
    for (int round = 0; round < 300; ++round) {
        CAPTURE(round);
        std::vector<std::string> lines;
        const int n = static_cast<int>(rng() % 40);
        for (int i = 0; i < n; ++i) lines.push_back("l" + std::to_string(rng() % 8));
        std::vector<std::string> edited = lines;
        for (int e = static_cast<int>(rng() % 6); e > 0; --e) {
            const std::size_t at = edited.empty() ? 0 : rng() % (edited.size() + 1);
            switch (rng() % 3) {
                case 0: edited.insert(edited.begin() + static_cast<long>(at), "n" + std::to_string(rng() % 5)); break;
                case 1: if (at < edited.size()) edited.erase(edited.begin() + static_cast<long>(at)); break;
                default: if (at < edited.size()) edited[at] = "c" + std::to_string(rng() % 5); break;
            }
        }
        std::string a, b;
        for (const auto& l : lines) a += l + "\n";
        for (const auto& l : edited) b += l + "\n";
        const std::string patch = diff(a, b);
        CHECK(apply_patch(a, patch) == b);
    }
}

}  // namespace
}  // namespace corral::workspace
