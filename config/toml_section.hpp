// config/toml_section.hpp — reading one TOML table of a configuration file
// with every problem reported as one line:
//   FILE:LINE: key 'KEY': got VALUE, allowed: WHAT
// Shared by the parsers of the gateway's sections, the budgets and prices,
// and the grants' model policy, so every file says what is wrong the same way.
// Internal to config/.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/gateway_config.hpp"

#include <toml.hpp>

namespace corral::config {

// "FILE:LINE" of a value ("FILE" when toml11 has no line for it).
std::string where_of(const std::string& file, const toml::value& v);
// A string as a message shows it: quoted, control characters as '?'.
std::string quote(std::string_view s);
// A value as a message shows it ("got 3", "got \"x\"", "got a table").
std::string describe(const toml::value& v);

[[noreturn]] void fail(const std::string& file, const toml::value& v, const std::string& key, const std::string& got,
                       const std::string& allowed);
[[noreturn]] void fail_value(const std::string& file, const toml::value& v, const std::string& key,
                             const std::string& allowed);

// HTTP token characters (RFC 9110 tchar), for header names.
bool is_token_char(char c);
// An anthropic-beta name: token characters, no ',' (the header's separator).
bool is_beta_name(std::string_view b);
inline constexpr const char* kBetaNameAllowed = "a beta name of token characters, e.g. \"oauth-2025-04-20\"";

// Every problem goes to `errors` (one line each) and parsing goes on: a
// step that throws ConfigError is recorded and the next independent one runs.
using Errors = std::vector<std::string>;
void add_lines(Errors& errors, const std::string& text);

// Runs one independent check; returns whether it passed.
template <typename Step>
bool step(Errors& errors, Step&& f) {
    try {
        f();
        return true;
    } catch (const ConfigError& e) {
        add_lines(errors, e.what());
        return false;
    }
}

// A table whose keys are checked against a known set.
class Section {
public:
    // Each unknown key is one line in `errors`, in file order.
    Section(const std::string& file, const toml::value& table, std::string prefix, std::set<std::string> known,
            Errors& errors);

    std::string key(const std::string& k) const { return prefix_.empty() ? k : prefix_ + "." + k; }
    const toml::value* find(const std::string& k) const;
    [[noreturn]] void missing(const std::string& k, const std::string& allowed) const;

    std::optional<std::string> string(const std::string& k, const std::string& allowed) const;
    std::optional<bool> boolean(const std::string& k) const;
    std::optional<std::int64_t> integer(const std::string& k, std::int64_t lo, std::int64_t hi) const;
    // A TOML string or integer parsed with a base/parse.hpp parser, whose
    // UsageError is re-thrown with the file, line and key in front.
    template <typename Parse>
    auto parsed(const std::string& k, const std::string& allowed, Parse parse) const
        -> std::optional<decltype(parse(std::string_view{}))> {
        const auto* v = find(k);
        if (!v) return std::nullopt;
        std::string text;
        if (v->is_string())
            text = v->as_string().str;
        else if (v->is_integer() && v->as_integer() >= 0)
            text = std::to_string(v->as_integer());
        else
            fail_value(file_, *v, key(k), allowed);
        try {
            return parse(text);
        } catch (const UsageError&) {
            fail_value(file_, *v, key(k), allowed);
        }
    }
    const std::string& file() const { return file_; }
    const toml::value& table() const { return table_; }

private:
    const std::string& file_;
    const toml::value& table_;
    std::string prefix_;
};

}  // namespace corral::config
