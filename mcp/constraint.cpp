// mcp/constraint.cpp — evaluating one argument constraint.
#include "mcp/constraint.hpp"

#include <array>
#include <cmath>
#include <string_view>

#include "base/glob.hpp"

namespace corral::mcp {
namespace {

using json = nlohmann::json;

// UTF-8 of characters that render as a slash, backslash or dot: a path that
// holds one is refused, whatever a server or file system would make of it.
constexpr std::array<std::string_view, 11> kLookAlikes = {
    "\u2215",  // DIVISION SLASH
    "\uFF0F",  // FULLWIDTH SOLIDUS
    "\u2044",  // FRACTION SLASH
    "\u29F8",  // BIG SOLIDUS
    "\u2571",  // BOX DRAWINGS LIGHT DIAGONAL
    "\u29F5",  // REVERSE SOLIDUS OPERATOR
    "\uFE68",  // SMALL REVERSE SOLIDUS
    "\uFF3C",  // FULLWIDTH REVERSE SOLIDUS
    "\u2024",  // ONE DOT LEADER
    "\uFF0E",  // FULLWIDTH FULL STOP
    "\u3002",  // IDEOGRAPHIC FULL STOP
};

std::string describe(const json& v) {
    std::string s = v.dump(-1, ' ', true, json::error_handler_t::replace);
    if (s.size() > 80) s = s.substr(0, 77) + "...";
    return s;
}

Verdict fail(Outcome o, const Constraint& c, std::string what) { return {o, "at " + c.pointer + ": " + what}; }

Verdict eval_string(const Constraint& c, const json& v) {
    if (!v.is_string()) return fail(Outcome::invalid, c, "a string is required, got " + std::string(v.type_name()));
    const std::string& s = v.get_ref<const std::string&>();
    if (c.kind == ConstraintKind::glob)
        return glob_match(c.pattern, s) ? Verdict{Outcome::match, ""}
                                        : fail(Outcome::no_match, c, describe(v) + " does not match " + c.pattern);
    if (s.size() > kMaxRegexInput)
        return fail(Outcome::invalid, c, std::to_string(s.size()) + " bytes; a regex checks at most 4096");
    try {
        if (c.compiled && std::regex_match(s, *c.compiled)) return {Outcome::match, ""};
    } catch (const std::regex_error&) {
        return fail(Outcome::invalid, c, "the regex could not be evaluated on this value");
    }
    return fail(Outcome::no_match, c, describe(v) + " does not match /" + c.pattern + "/");
}

Verdict eval_range(const Constraint& c, const json& v) {
    if (!v.is_number())
        return fail(Outcome::invalid, c, "a number is required, got " + std::string(v.type_name()) + " " + describe(v));
    const double d = v.get<double>();
    if (c.integer && !v.is_number_integer() && !v.is_number_unsigned())
        return fail(Outcome::invalid, c, "a whole number is required, got " + describe(v));
    if ((c.min && d < *c.min) || (c.max && d > *c.max))
        return fail(Outcome::no_match, c, describe(v) + " is outside the allowed range");
    return {Outcome::match, ""};
}

Verdict eval_path(const Constraint& c, const json& v) {
    if (!v.is_string()) return fail(Outcome::invalid, c, "a path string is required, got " + std::string(v.type_name()));
    auto norm = normalise_path(v.get<std::string>(), c.root);
    if (!norm) return fail(Outcome::invalid, c, norm.problem());
    const bool under = *norm == c.root || c.root == "/" ||
                       (norm->size() > c.root.size() && norm->compare(0, c.root.size(), c.root) == 0 &&
                        (*norm)[c.root.size()] == '/');
    return under ? Verdict{Outcome::match, ""}
                 : fail(Outcome::no_match, c, describe(v) + " is not under " + c.root + " (normalised: " +
                                                  describe(json(*norm)) + ")");
}

}  // namespace

Problem compile(Constraint& c) {
    if (c.kind != ConstraintKind::regex) return std::nullopt;
    try {
        c.compiled = std::make_shared<const std::regex>(c.pattern, std::regex::ECMAScript);
        return std::nullopt;
    } catch (const std::regex_error& e) {
        return Failed{"regex /" + c.pattern + "/ does not compile: " + e.what()};
    }
}

Checked<std::string> normalise_path(const std::string& path, const std::string& root) {
    if (path.empty()) return Failed{"an empty path"};
    for (unsigned char ch : path)
        if (ch < 0x20 || ch == 0x7f || ch == '\\')
            return Failed{ch == 0      ? "a NUL byte in the path"
                          : ch == '\\' ? "a backslash in the path"
                                       : "a control character in the path"};
    for (auto la : kLookAlikes)
        if (path.find(la) != std::string::npos) return Failed{"a Unicode look-alike of a slash or dot in the path"};
    const std::string full = path[0] == '/' ? path : root + "/" + path;
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (i <= full.size()) {
        std::size_t j = full.find('/', i);
        if (j == std::string::npos) j = full.size();
        std::string seg = full.substr(i, j - i);
        if (seg == "..") {
            if (parts.empty()) return Failed{"\"..\" climbs above /"};
            parts.pop_back();
        } else if (!seg.empty() && seg != ".") {
            parts.push_back(std::move(seg));
        }
        i = j + 1;
    }
    std::string out;
    for (const auto& p : parts) out += "/" + p;
    if (out.empty()) out = "/";
    return out;
}

Verdict evaluate(const Constraint& c, const json& arguments) {
    json::json_pointer ptr;
    try {
        ptr = json::json_pointer(c.pointer);
    } catch (const json::exception&) {
        return fail(Outcome::invalid, c, "not a JSON pointer");
    }
    const json* v = nullptr;
    try {
        if (arguments.contains(ptr)) v = &arguments.at(ptr);
    } catch (const json::exception&) {
        v = nullptr;
    }
    if (!v) return fail(Outcome::absent, c, "argument missing");
    switch (c.kind) {
        case ConstraintKind::exact:
            return *v == c.value ? Verdict{Outcome::match, ""}
                                 : fail(Outcome::no_match, c, describe(*v) + " is not " + describe(c.value));
        case ConstraintKind::one_of:
            for (const auto& ch : c.choices)
                if (*v == ch) return {Outcome::match, ""};
            return fail(Outcome::no_match, c, describe(*v) + " is not one of the allowed values");
        case ConstraintKind::glob:
        case ConstraintKind::regex: return eval_string(c, *v);
        case ConstraintKind::range: return eval_range(c, *v);
        case ConstraintKind::path_under: return eval_path(c, *v);
    }
    return fail(Outcome::invalid, c, "unknown constraint kind");
}

}  // namespace corral::mcp
