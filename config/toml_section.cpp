#include "config/toml_section.hpp"

#include <algorithm>
#include <utility>

namespace corral::config {

std::string where_of(const std::string& file, const toml::value& v) {
    auto loc = v.location();
    if (loc.line() == 0) return file;
    return file + ":" + std::to_string(loc.line());
}

std::string quote(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20)
            out += '?';
        else
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

void fail(const std::string& file, const toml::value& v, const std::string& key, const std::string& got,
          const std::string& allowed) {
    throw ConfigError(where_of(file, v) + ": key '" + key + "': got " + got + ", allowed: " + allowed);
}

void fail_value(const std::string& file, const toml::value& v, const std::string& key, const std::string& allowed) {
    fail(file, v, key, describe(v), allowed);
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

void add_lines(Errors& errors, const std::string& text) {
    std::size_t pos = 0;
    while (pos <= text.size()) {
        auto nl = text.find('\n', pos);
        std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
        if (!line.empty()) errors.push_back(line);
        if (nl == std::string::npos) break;
        pos = nl + 1;
    }
}

Section::Section(const std::string& file, const toml::value& table, std::string prefix, std::set<std::string> known,
                 Errors& errors)
    : file_(file), table_(table), prefix_(std::move(prefix)) {
    std::string allowed;
    for (const auto& name : known) allowed += (allowed.empty() ? "" : " | ") + name;
    std::vector<std::pair<std::size_t, std::string>> unknown;
    for (const auto& [k, v] : table.as_table())
        if (!known.count(k))
            unknown.emplace_back(v.location().line(),
                                 where_of(file, v) + ": unknown key '" + key(k) + "', allowed: " + allowed);
    std::sort(unknown.begin(), unknown.end());
    for (auto& [line, text] : unknown) errors.push_back(std::move(text));
}

const toml::value* Section::find(const std::string& k) const {
    const auto& t = table_.as_table();
    auto it = t.find(k);
    return it == t.end() ? nullptr : &it->second;
}

void Section::missing(const std::string& k, const std::string& allowed) const {
    throw ConfigError(where_of(file_, table_) + ": key '" + key(k) + "' is missing, allowed: " + allowed);
}

std::optional<std::string> Section::string(const std::string& k, const std::string& allowed) const {
    const auto* v = find(k);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail_value(file_, *v, key(k), allowed);
    return v->as_string().str;
}

std::optional<bool> Section::boolean(const std::string& k) const {
    const auto* v = find(k);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) fail_value(file_, *v, key(k), "true | false");
    return v->as_boolean();
}

std::optional<std::int64_t> Section::integer(const std::string& k, std::int64_t lo, std::int64_t hi) const {
    const auto* v = find(k);
    if (!v) return std::nullopt;
    std::string allowed = "an integer " + std::to_string(lo) + ".." + std::to_string(hi);
    if (!v->is_integer() || v->as_integer() < lo || v->as_integer() > hi) fail_value(file_, *v, key(k), allowed);
    return v->as_integer();
}

}  // namespace corral::config
