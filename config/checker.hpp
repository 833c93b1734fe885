// config/checker.hpp — the one way config/ reports a problem in a file.
//
// Every problem is a Diagnostic that keeps its parts (file, line, key, what
// was got, what is allowed) so callers can show, sort or filter them; its
// text() is the one line a user reads. Parsing never throws to steer itself:
// a check records its Diagnostic and returns, and the next independent check
// runs, so one `corral validate` shows every mistake at once. ConfigError is
// thrown only at the public boundary (load_org, load_gateway_config,
// parse_gateway_sections), holding the diagnostics' texts one per line.
// Internal to config/, except Diagnostic and ConfigError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/sys_error.hpp"

#include <toml.hpp>

namespace corral::config {

struct ConfigError : UsageError {
    using UsageError::UsageError;
};

// One problem (or warning) found in the configuration. WHERE below is
// "FILE:LINE", or "FILE" when the line is 0 (the file or directory as a whole).
struct Diagnostic {
    enum class Form {
        value,         // WHERE: key 'KEY': got GOT, allowed: ALLOWED
        wrong_type,    // WHERE: key 'KEY': got GOT, expected ALLOWED
        unknown_key,   // WHERE: unknown key 'KEY', allowed: ALLOWED            (the gateway's sections)
        unlisted_key,  // WHERE: key 'KEY': unknown key, allowed: ALLOWED       (org.toml's and worker.toml's own)
        missing_key,   // WHERE: key 'KEY' is missing, allowed: ALLOWED
        // WHERE: key 'KEY': MESSAGE ("key 'KEY': " left out when KEY is "").
        // Free text for the problems that are not one key's got/allowed: a
        // missing file or directory, a TOML syntax error, a rule across two
        // keys, a warning; got and allowed are then empty.
        message,
    };
    Form form = Form::message;
    std::string file;
    std::size_t line = 0;  // 0 = the file (or directory) as a whole
    std::string key;       // dotted key, e.g. "sandbox.memory", "" when about the file
    std::string got;       // the value as the text shows it: "\"x\"", "3", "a table"
    std::string allowed;   // what the key accepts
    std::string message;   // Form::message only
    std::string worker;    // the worker it concerns, "" = the organisation
    std::string text() const;
};

// The texts of `ds`, one per line (what a ConfigError holds).
std::string diagnostic_lines(const std::vector<Diagnostic>& ds);
// Throws ConfigError(diagnostic_lines(ds)) when `ds` is not empty.
void throw_if_any(const std::vector<Diagnostic>& ds);

// Where toml11 found `v` (0 when it has no line for it).
std::size_t line_of(const toml::value& v);
// "FILE:LINE" of a value ("FILE" when toml11 has no line for it).
std::string where_of(const std::string& file, const toml::value& v);
// A string as a message shows it: quoted, escaped as base/terminal_text.hpp says.
std::string quote(std::string_view s);
// A value as a message shows it ("3", "\"x\"", "a table").
std::string describe(const toml::value& v);
// A value's type as a message names it ("a string", "an integer").
const char* type_name(const toml::value& v);
// A table's entries in file order, so diagnostics come out in the order a reader meets them.
std::vector<std::pair<std::string, const toml::value*>> in_file_order(const toml::value& table);
std::string join(const std::vector<std::string>& items, const char* sep);

// Collects the diagnostics of one file. Every recording function returns
// false, so a check ends with `return c.bad_value(...)`.
class Checker {
public:
    Checker(std::string file, std::vector<Diagnostic>& out) : file_(std::move(file)), out_(out) {}

    const std::string& file() const { return file_; }
    // Problems recorded so far (by any checker on the same list): a part is
    // clean when the count did not move while it was checked.
    std::size_t count() const { return out_.size(); }

    bool bad(const toml::value& v, std::string key, std::string got, std::string allowed);
    bool bad_value(const toml::value& v, std::string key, std::string allowed);  // got = describe(v)
    bool wrong_type(const toml::value& v, std::string key, std::string expected);  // got = type_name(v)
    bool missing(const toml::value& table, std::string key, std::string allowed);
    bool note(std::size_t line, std::string key, std::string message);
    bool note(const toml::value& v, std::string key, std::string message) {
        return note(line_of(v), std::move(key), std::move(message));
    }
    // Each key of `table` not in `known`, in file order, as `form`
    // (unknown_key or unlisted_key), KEY = prefix + name.
    void unknown_keys(const toml::value& table, const std::string& prefix, const std::vector<std::string>& known,
                      Diagnostic::Form form);
    void add(Diagnostic d) { out_.push_back(std::move(d)); }

private:
    std::string file_;
    std::vector<Diagnostic>& out_;
};

// A table whose keys are checked against a known set (each unknown key is a
// Form::unknown_key diagnostic). The getters return nullopt both when the key
// is absent (nothing recorded) and when its value is wrong (one Diagnostic
// recorded); has(k) tells the two apart where it matters.
class Table {
public:
    Table(Checker& c, const toml::value& table, std::string prefix, std::set<std::string> known);

    std::string key(const std::string& k) const { return prefix_.empty() ? k : prefix_ + "." + k; }
    const toml::value* find(const std::string& k) const;
    bool has(const std::string& k) const { return find(k) != nullptr; }

    // Recorders about key `k` (which must be present for bad()); they return false.
    bool bad(const std::string& k, const std::string& allowed) { return c_.bad_value(*find(k), key(k), allowed); }
    bool missing(const std::string& k, const std::string& allowed) { return c_.missing(table_, key(k), allowed); }

    std::optional<std::string> string(const std::string& k, const std::string& allowed);
    // string(), recording a missing_key diagnostic when `k` is absent.
    std::optional<std::string> required_string(const std::string& k, const std::string& allowed);
    std::optional<bool> boolean(const std::string& k);
    std::optional<std::int64_t> integer(const std::string& k, std::int64_t lo, std::int64_t hi);
    // A TOML string or non-negative integer read by a base/parse.hpp parser;
    // the parser's UsageError becomes this key's got/allowed diagnostic.
    template <typename Parse>
    auto parsed(const std::string& k, const std::string& allowed, Parse parse)
        -> std::optional<decltype(parse(std::string_view{}))> {
        const auto* v = find(k);
        if (!v) return std::nullopt;
        std::string text;
        if (v->is_string())
            text = v->as_string().str;
        else if (v->is_integer() && v->as_integer() >= 0)
            text = std::to_string(v->as_integer());
        else
            return bad_then_nothing(k, allowed);
        try {
            return parse(text);
        } catch (const UsageError&) {
            return bad_then_nothing(k, allowed);
        }
    }

    Checker& checker() { return c_; }
    const std::string& file() const { return c_.file(); }
    const toml::value& table() const { return table_; }

private:
    std::nullopt_t bad_then_nothing(const std::string& k, const std::string& allowed) {
        bad(k, allowed);
        return std::nullopt;
    }
    Checker& c_;
    const toml::value& table_;
    std::string prefix_;
};

// HTTP token characters (RFC 9110 tchar), for header names.
bool is_token_char(char c);
// An anthropic-beta name: token characters, no ',' (the header's separator).
bool is_beta_name(std::string_view b);
inline constexpr const char* kBetaNameAllowed = "a beta name of token characters, e.g. \"oauth-2025-04-20\"";

}  // namespace corral::config
