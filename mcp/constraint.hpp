// mcp/constraint.hpp — one condition on one argument of a tool call, at a
// JSON pointer into the call's arguments: exact value, one of a set, glob,
// regex (full match, bounded input), number range, or a path under a root
// after lexical normalisation. Types are never coerced: "5" is not 5.
#pragma once

#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/checked.hpp"

namespace corral::mcp {

enum class ConstraintKind { exact, one_of, glob, regex, range, path_under };

struct Constraint {
    std::string pointer;  // "/path", "/options/mode"
    ConstraintKind kind = ConstraintKind::exact;
    nlohmann::json value;                 // exact
    std::vector<nlohmann::json> choices;  // one_of
    std::string pattern;                  // glob, regex
    std::optional<double> min, max;       // range (inclusive)
    bool integer = false;                 // range: whole numbers only
    std::string root;                     // path_under: an absolute, normalised directory
    std::shared_ptr<const std::regex> compiled;  // regex, set by compile()
};

// Regex inputs longer than this are not matched (std::regex backtracks).
inline constexpr std::size_t kMaxRegexInput = 4096;

// Builds `compiled` for a regex constraint; the problem when the pattern is
// not an ECMAScript regex.
Problem compile(Constraint& c);

enum class Outcome { match, no_match, absent, invalid };

struct Verdict {
    Outcome outcome;
    std::string why;  // for no_match / absent / invalid: one line naming the pointer
};

Verdict evaluate(const Constraint& c, const nlohmann::json& arguments);

// Lexical normalisation of a path argument against `root`: relative paths are
// taken under root; "." and empty segments dropped, ".." pops. The problem for NUL, backslashes, Unicode look-alike slashes or dots, control
// characters, or a ".." above "/".
Checked<std::string> normalise_path(const std::string& path, const std::string& root);

}  // namespace corral::mcp
