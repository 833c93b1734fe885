// config/gateway_values.hpp — the single values the gateway's sections hold:
// paths, "host:port", routes, header templates and names (host names and
// identities are names/'s). Each returns whether (or what) a text is, never a message: the
// section parsers (gateway_sections.cpp) say what is wrong. Internal to config/.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/gateway_config.hpp"
#include "names/host.hpp"

namespace corral::config {

inline constexpr const char* path_allowed = "an absolute path";
inline constexpr const char* optional_path_allowed = "\"\" or an absolute path";

bool is_absolute_path(std::string_view p);
char lower(char c);
// "host:port" or "[v6]:port" (names::split_authority), the host normalised;
// port 0 only where `zero` allows it (a listener asking for any free port).
std::optional<names::Authority> parse_host_port(const std::string& s, names::PortZero zero);
bool is_loopback_literal(const std::string& ip);

// Only {key} and {token} may appear in braces; no control characters (CR/LF
// would let a template split the header).
bool is_valid_template(std::string_view t);
// "METHOD /path" or "METHOD /prefix/*", the path already normal.
std::optional<Route> parse_route(const std::string& text);
bool is_credential_name(const std::string& n);
bool is_env_name(const std::string& n);
// A Unix user name as useradd takes it: [a-z_][a-z0-9_-]*, at most 32.
bool is_user_name(const std::string& n);

class Table;
// The one value here that reports its own problem (a grant's and an MCP
// rule's alike): `approval_timeout`, whole seconds within the approval
// queue's bounds, only beside approval (`asks`); the default when absent
// or wrong (the wrong value is reported through `s`).
std::chrono::seconds approval_timeout_key(Table& s, bool asks, std::string_view asks_key);

}  // namespace corral::config
