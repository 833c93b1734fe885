// names/box_environment: the variables corral sets in a box, and the reserved check that reads them.
#include <doctest/doctest.h>

#include <string>

#include "names/box_environment.hpp"

using namespace corral::names;

TEST_CASE("every variable of the tables is reserved, in either case") {
    auto both_cases = [](std::string_view name) {
        std::string lower(name), upper(name);
        for (auto& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        for (auto& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
        CAPTURE(name);
        CHECK(is_reserved_env(name));
        CHECK(is_reserved_env(lower));
        CHECK(is_reserved_env(upper));
    };
    for (const auto& v : proxy_variables) both_cases(v.name);
    for (auto v : ca_bundle_variables) both_cases(v);
    for (auto v : {agent_home_variable, claude_config_dir_variable, claude_api_key_variable, codex_home_variable,
                   pi_agent_dir_variable})
        both_cases(v);
    for (const auto& v : claude_switches) both_cases(v.name);
    for (const auto& v : pi_switches) both_cases(v.name);
}

TEST_CASE("credential variables are refused although corral never sets them") {
    for (const char* k : {"OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_OAUTH_TOKEN",
                          "CLAUDE_CODE_OAUTH_TOKEN", "openai_api_key"}) {
        CAPTURE(k);
        CHECK(is_reserved_env(k));
    }
    for (auto v : credential_variables) CHECK(is_reserved_env(v));
}

TEST_CASE("git's indexed config entries are reserved; other names are not") {
    CHECK(is_reserved_env("GIT_CONFIG_KEY_1"));
    CHECK(is_reserved_env("git_config_value_7"));
    CHECK(is_reserved_env("GIT_CONFIG_COUNT"));
    for (const char* free_name : {"MY_TOOL_FLAG", "PATH", "LANG", "GIT_AUTHOR_NAME", "HTTP_PROXY_X", "XHOME",
                                  "ANTHROPIC_MODEL", "GIT_CONFIG_KEY", "OPENAI_BASE"}) {
        CAPTURE(free_name);
        CHECK_FALSE(is_reserved_env(free_name));
    }
}
