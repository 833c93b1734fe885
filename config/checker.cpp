#include "config/checker.hpp"

#include <algorithm>

#include "base/terminal_text.hpp"

namespace corral::config {

std::string Diagnostic::text() const {
    std::string s = file;
    if (line > 0) s += ":" + std::to_string(line);
    s += ": ";
    switch (form) {
    case Form::value: return s + "key '" + key + "': got " + got + ", allowed: " + allowed;
    case Form::wrong_type: return s + "key '" + key + "': got " + got + ", expected " + allowed;
    case Form::unknown_key: return s + "unknown key '" + key + "', allowed: " + allowed;
    case Form::unlisted_key: return s + "key '" + key + "': unknown key, allowed: " + allowed;
    case Form::missing_key: return s + "key '" + key + "' is missing, allowed: " + allowed;
    case Form::message: break;
    }
    if (!key.empty()) s += "key '" + key + "': ";
    return s + message;
}

std::string diagnostic_lines(const std::vector<Diagnostic>& ds) {
    std::string msg;
    for (const auto& d : ds) msg += (msg.empty() ? "" : "\n") + d.text();
    return msg;
}

void throw_if_any(const std::vector<Diagnostic>& ds) {
    if (!ds.empty()) throw ConfigError(diagnostic_lines(ds));
}

std::size_t line_of(const toml::value& v) { return v.location().line(); }

std::string where_of(const std::string& file, const toml::value& v) {
    auto line = line_of(v);
    return line == 0 ? file : file + ":" + std::to_string(line);
}

std::string quote(std::string_view s) {
    // terminal_text escapes what a terminal acts on (and '\\'); '"' too, so
    // the quotes end where the value does.
    std::string out = "\"";
    for (char c : terminal_text(s)) {
        if (c == '"') out += '\\';
        out += c;
    }
    return out + "\"";
}

std::string describe(const toml::value& v) {
    if (v.is_string()) return quote(v.as_string().str);
    if (v.is_integer()) return std::to_string(v.as_integer());
    if (v.is_boolean()) return v.as_boolean() ? "true" : "false";
    if (v.is_floating()) return "a float";
    if (v.is_table()) return "a table";
    if (v.is_array()) return "an array";
    return "a date/time";
}

const char* type_name(const toml::value& v) {
    switch (v.type()) {
    case toml::value_t::boolean: return "a boolean";
    case toml::value_t::integer: return "an integer";
    case toml::value_t::floating: return "a float";
    case toml::value_t::string: return "a string";
    case toml::value_t::offset_datetime:
    case toml::value_t::local_datetime:
    case toml::value_t::local_date:
    case toml::value_t::local_time: return "a date/time";
    case toml::value_t::array: return "an array";
    case toml::value_t::table: return "a table";
    default: return "nothing";
    }
}

std::vector<std::pair<std::string, const toml::value*>> in_file_order(const toml::value& table) {
    std::vector<std::pair<std::string, const toml::value*>> out;
    for (const auto& [k, v] : table.as_table()) out.emplace_back(k, &v);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        auto la = line_of(*a.second), lb = line_of(*b.second);
        return la != lb ? la < lb : a.first < b.first;
    });
    return out;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
    std::string s;
    for (const auto& i : items) s += (s.empty() ? "" : sep) + i;
    return s;
}

bool Checker::bad(const toml::value& v, std::string key, std::string got, std::string allowed) {
    Diagnostic d;
    d.form = Diagnostic::Form::value;
    d.file = file_;
    d.line = line_of(v);
    d.key = std::move(key);
    d.got = std::move(got);
    d.allowed = std::move(allowed);
    out_.push_back(std::move(d));
    return false;
}

bool Checker::bad_value(const toml::value& v, std::string key, std::string allowed) {
    return bad(v, std::move(key), describe(v), std::move(allowed));
}

bool Checker::wrong_type(const toml::value& v, std::string key, std::string expected) {
    bad(v, std::move(key), type_name(v), std::move(expected));
    out_.back().form = Diagnostic::Form::wrong_type;
    return false;
}

bool Checker::missing(const toml::value& table, std::string key, std::string allowed) {
    bad(table, std::move(key), "", std::move(allowed));
    out_.back().form = Diagnostic::Form::missing_key;
    return false;
}

bool Checker::note(std::size_t line, std::string key, std::string message) {
    Diagnostic d;
    d.file = file_;
    d.line = line;
    d.key = std::move(key);
    d.message = std::move(message);
    out_.push_back(std::move(d));
    return false;
}

void Checker::unknown_keys(const toml::value& table, const std::string& prefix, const std::vector<std::string>& known,
                           Diagnostic::Form form) {
    const std::string allowed = join(known, " | ");
    for (const auto& [k, v] : in_file_order(table)) {
        if (std::find(known.begin(), known.end(), k) != known.end()) continue;
        bad(*v, prefix + k, "", allowed);
        out_.back().form = form;
    }
}

Table::Table(Checker& c, const toml::value& table, std::string prefix, std::set<std::string> known)
    : c_(c), table_(table), prefix_(std::move(prefix)) {
    c_.unknown_keys(table, prefix_.empty() ? "" : prefix_ + ".", {known.begin(), known.end()},
                    Diagnostic::Form::unknown_key);
}

const toml::value* Table::find(const std::string& k) const {
    const auto& t = table_.as_table();
    auto it = t.find(k);
    return it == t.end() ? nullptr : &it->second;
}

std::optional<std::string> Table::string(const std::string& k, const std::string& allowed) {
    const auto* v = find(k);
    if (!v) return std::nullopt;
    if (!v->is_string()) return bad_then_nothing(k, allowed);
    return v->as_string().str;
}

std::optional<std::string> Table::required_string(const std::string& k, const std::string& allowed) {
    if (!has(k)) {
        missing(k, allowed);
        return std::nullopt;
    }
    return string(k, allowed);
}

std::optional<bool> Table::boolean(const std::string& k) {
    const auto* v = find(k);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) return bad_then_nothing(k, "true | false");
    return v->as_boolean();
}

std::optional<std::int64_t> Table::integer(const std::string& k, std::int64_t lo, std::int64_t hi) {
    const auto* v = find(k);
    if (!v) return std::nullopt;
    if (!v->is_integer() || v->as_integer() < lo || v->as_integer() > hi)
        return bad_then_nothing(k, "an integer " + std::to_string(lo) + ".." + std::to_string(hi));
    return v->as_integer();
}

bool is_token_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_beta_name(std::string_view b) {
    if (b.empty()) return false;
    for (char c : b)
        if (!is_token_char(c) || c == ',') return false;
    return true;
}

}  // namespace corral::config
