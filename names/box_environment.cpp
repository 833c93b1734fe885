#include "names/box_environment.hpp"

namespace corral::names {
namespace {

bool same_without_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        auto up = [](char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; };
        if (up(a[i]) != up(b[i])) return false;
    }
    return true;
}

bool starts_without_case(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && same_without_case(s.substr(0, prefix.size()), prefix);
}

}  // namespace

bool is_reserved_env(std::string_view name) {
    for (const auto& v : proxy_variables)
        if (same_without_case(name, v.name)) return true;
    for (auto v : ca_bundle_variables)
        if (same_without_case(name, v)) return true;
    for (auto v : {agent_home_variable, claude_config_dir_variable, claude_api_key_variable, codex_home_variable,
                   pi_agent_dir_variable})
        if (same_without_case(name, v)) return true;
    for (const auto& v : claude_switches)
        if (same_without_case(name, v.name)) return true;
    for (const auto& v : pi_switches)
        if (same_without_case(name, v.name)) return true;
    for (auto v : credential_variables)
        if (same_without_case(name, v)) return true;
    return starts_without_case(name, "GIT_CONFIG_KEY_") || starts_without_case(name, "GIT_CONFIG_VALUE_");
}

bool is_proxy_variable(std::string_view name) {
    for (const auto& v : proxy_variables)
        if (name == v.name) return true;
    return false;
}

}  // namespace corral::names
