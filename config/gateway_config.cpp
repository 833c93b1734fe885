#include "config/gateway_config.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <optional>
#include <fstream>
#include <set>
#include <sstream>

#include "base/fd.hpp"
#include "base/parse.hpp"
#include "config/grant_policy.hpp"
#include "config/toml_section.hpp"
#include "config/toml_text.hpp"
#include "names/identity.hpp"

namespace corral::config {
namespace {

// ---- value checks ------------------------------------------------------------

bool is_absolute_path(std::string_view p) { return !p.empty() && p.front() == '/' && p.find('\0') == p.npos; }

constexpr const char* path_allowed = "an absolute path";
constexpr const char* optional_path_allowed = "\"\" or an absolute path";

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "host:port" or "[v6]:port" (names::split_authority); port 0 only where a
// listener may ask for any free port.
std::optional<names::Authority> parse_host_port(const std::string& s, names::PortZero zero) {
    return names::split_authority(s, std::nullopt, zero).authority;
}

bool is_loopback_literal(const std::string& ip) {
    unsigned char buf[16];
    if (inet_pton(AF_INET, ip.c_str(), buf) == 1) return buf[0] == 127;
    return ip == "::1";
}

// Only {key} and {token} may appear in braces; no control characters (CR/LF
// would let a template split the header).
bool is_valid_template(std::string_view t) {
    for (std::size_t i = 0; i < t.size(); ++i) {
        auto u = static_cast<unsigned char>(t[i]);
        if (u < 0x20 || u == 0x7f) return false;
        if (t[i] == '{') {
            if (t.substr(i, 5) == "{key}")
                i += 4;
            else if (t.substr(i, 7) == "{token}")
                i += 6;
            else
                return false;
        } else if (t[i] == '}') {
            return false;
        }
    }
    return true;
}

// "METHOD /path" or "METHOD /prefix/*".
std::optional<Route> parse_route(const std::string& text) {
    auto space = text.find(' ');
    if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) return std::nullopt;
    Route r;
    r.text = text;
    r.method = text.substr(0, space);
    std::string path = text.substr(space + 1);
    if (r.method != "*") {
        if (r.method.empty()) return std::nullopt;
        for (char c : r.method)
            if (!(c >= 'A' && c <= 'Z')) return std::nullopt;
    }
    if (path.empty() || path.front() != '/') return std::nullopt;
    if (path.back() == '*') {
        path.pop_back();
        if (path.empty() || path.back() != '/') return std::nullopt;
        r.prefix = true;
    }
    for (char c : path) {
        auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || std::string_view("?#%\\;*").find(c) != std::string_view::npos)
            return std::nullopt;
    }
    // Routes are compared with normalised request paths, so they must be normal themselves.
    if (path.find("//") != std::string::npos) return std::nullopt;
    std::size_t pos = 1;
    while (pos <= path.size()) {
        auto slash = path.find('/', pos);
        auto seg = path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
        if (seg == "." || seg == "..") return std::nullopt;
        if (slash == std::string::npos) break;
        pos = slash + 1;
    }
    r.path = path;
    return r;
}

bool is_credential_name(const std::string& n) {
    if (n.empty()) return false;
    for (char c : n)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_' || c == '-')) return false;
    return true;
}

bool is_env_name(const std::string& n) {
    if (n.empty() || is_digit(n[0])) return false;
    for (char c : n)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_')) return false;
    return true;
}

// ---- sections ------------------------------------------------------------------

GatewayLimits parse_limits(const std::string& file, const toml::value& v, Errors& errors) {
    GatewayLimits l;
    if (!v.is_table()) {
        step(errors, [&] { fail_value(file, v, "gateway.limits", "a table"); });
        return l;
    }
    Section s(file, v, "gateway.limits",
              {"max_header_bytes", "max_body_bytes", "max_response_bytes", "read_timeout", "idle_timeout",
               "max_connections", "max_connections_per_identity", "requests_per_identity",
               "ledger_refusals_per_identity"},
              errors);
    const std::string size_allowed = "a size > 0 such as \"16KiB\", \"1MiB\" (units B, K/KiB, M/MiB, G/GiB, T/TiB)";
    const std::string duration_allowed = "a duration > 0 such as \"30s\", \"250ms\", \"2m\", \"1h\"";
    auto size = [&](const char* k, std::uint64_t& out) {
        step(errors, [&] {
            if (auto x = s.parsed(k, size_allowed, [](std::string_view t) { return parse_size(t); })) {
                if (*x == 0) fail_value(file, *s.find(k), s.key(k), size_allowed);
                out = *x;
            }
        });
    };
    auto duration = [&](const char* k, std::chrono::milliseconds& out) {
        step(errors, [&] {
            if (auto x = s.parsed(k, duration_allowed, [](std::string_view t) { return parse_duration(t); })) {
                if (x->count() == 0) fail_value(file, *s.find(k), s.key(k), duration_allowed);
                out = *x;
            }
        });
    };
    size("max_header_bytes", l.max_header_bytes);
    size("max_body_bytes", l.max_body_bytes);
    size("max_response_bytes", l.max_response_bytes);
    duration("read_timeout", l.read_timeout);
    duration("idle_timeout", l.idle_timeout);
    bool max_ok = step(errors, [&] {
        if (auto x = s.integer("max_connections", 1, 1'000'000)) l.max_connections = static_cast<std::uint64_t>(*x);
    });
    // One identity's share can be at most the whole; an omitted share shrinks
    // with a small max_connections instead of making that config invalid.
    l.max_connections_per_identity = std::min(l.max_connections_per_identity, l.max_connections);
    step(errors, [&] {
        if (auto x = s.integer("max_connections_per_identity", 1, 1'000'000)) {
            if (max_ok && static_cast<std::uint64_t>(*x) > l.max_connections)
                fail_value(file, *s.find("max_connections_per_identity"), s.key("max_connections_per_identity"),
                           "an integer 1..max_connections (" + std::to_string(l.max_connections) + ")");
            l.max_connections_per_identity = static_cast<std::uint64_t>(*x);
        }
    });
    step(errors, [&] {
        if (auto x = s.integer("requests_per_identity", 0, INT64_MAX))
            l.requests_per_identity = static_cast<std::uint64_t>(*x);
    });
    step(errors, [&] {
        if (auto x = s.integer("ledger_refusals_per_identity", 0, INT64_MAX))
            l.ledger_refusals_per_identity = static_cast<std::uint64_t>(*x);
    });
    return l;
}

GatewaySettings parse_settings(const std::string& file, const toml::value& v, Errors& errors) {
    GatewaySettings g;
    if (!v.is_table()) {
        step(errors, [&] { fail_value(file, v, "gateway", "a table"); });
        return g;
    }
    const std::size_t before = errors.size();
    Section s(file, v, "gateway",
              {"listen_unix", "listen_tcp", "tcp_identity", "ledger", "state_dir", "upstream_ca_file", "hosts_file",
               "limits"},
              errors);
    auto path = [&](const char* k, std::string& out, bool optional) {
        step(errors, [&] {
            const char* allowed = optional ? optional_path_allowed : path_allowed;
            if (auto x = s.string(k, allowed)) {
                if (!(optional && x->empty()) && !is_absolute_path(*x)) fail_value(file, *s.find(k), s.key(k), allowed);
                out = *x;
            }
        });
    };
    path("listen_unix", g.listen_unix, true);
    path("ledger", g.ledger, false);
    path("state_dir", g.state_dir, false);
    path("upstream_ca_file", g.upstream_ca_file, true);
    path("hosts_file", g.hosts_file, true);
    if (!g.upstream_ca_file.empty())
        g.upstream_ca_file_where = where_of(file, *s.find("upstream_ca_file")) + ": key '" + s.key("upstream_ca_file") + "'";
    if (!g.hosts_file.empty())
        g.hosts_file_where = where_of(file, *s.find("hosts_file")) + ": key '" + s.key("hosts_file") + "'";
    step(errors, [&] {
        const std::string tcp_allowed = "\"\" or a loopback \"127.x.y.z:PORT\" / \"[::1]:PORT\" (PORT 0..65535)";
        if (auto x = s.string("listen_tcp", tcp_allowed); x && !x->empty()) {
            auto hp = parse_host_port(*x, names::PortZero::allowed);
            if (!hp || !is_loopback_literal(hp->host.text()))
                fail_value(file, *s.find("listen_tcp"), s.key("listen_tcp"), tcp_allowed);
            g.listen_tcp = *x;
            g.listen_tcp_host = hp->host.text();
            g.listen_tcp_port = hp->port;
        }
    });
    step(errors, [&] {
        const std::string id_allowed(names::identity_allowed);
        if (auto x = s.string("tcp_identity", id_allowed)) {
            if (!names::parse_identity(*x))
                fail_value(file, *s.find("tcp_identity"), s.key("tcp_identity"), id_allowed);
            g.tcp_identity = *x;
        }
    });
    if (const auto* l = s.find("limits")) g.limits = parse_limits(file, *l, errors);
    // Only when the listeners themselves parsed: a bad one is already reported.
    if (errors.size() == before && g.listen_unix.empty() && g.listen_tcp.empty())
        errors.push_back(where_of(file, v) +
                         ": keys 'gateway.listen_unix' and 'gateway.listen_tcp' are both empty, allowed: at least "
                         "one listener (a socket path and/or a loopback address:port)");
    return g;
}

// nullopt when the section has a problem (each one is in `errors`).
std::optional<CredentialSpec> parse_credential(const std::string& file, const std::string& name, const toml::value& v,
                                               Errors& errors) {
    const std::string prefix = "credentials." + name;
    const std::size_t before = errors.size();
    if (!v.is_table()) {
        step(errors, [&] { fail_value(file, v, prefix, "a table"); });
        return std::nullopt;
    }
    if (!is_credential_name(name))
        errors.push_back(where_of(file, v) + ": key '" + prefix + "': got " + quote(name) +
                         ", allowed: a credential name of [A-Za-z0-9_-]");
    Section s(file, v, prefix, {"kind", "file", "env", "template", "anthropic_beta"}, errors);
    CredentialSpec c;
    c.name = name;
    c.where = where_of(file, v);
    const std::string kind_allowed = "api_key | oauth_token";
    const bool kind_ok = step(errors, [&] {
        auto kind = s.string("kind", kind_allowed);
        if (!kind) s.missing("kind", kind_allowed);
        if (*kind == "api_key")
            c.kind = CredentialKind::api_key;
        else if (*kind == "oauth_token")
            c.kind = CredentialKind::oauth_token;
        else
            fail_value(file, *s.find("kind"), s.key("kind"), kind_allowed);
    });

    step(errors, [&] {
        const std::string env_allowed = "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)";
        std::optional<std::string> file_v, env_v;
        bool forms_ok = step(errors, [&] { file_v = s.string("file", path_allowed); });
        forms_ok = step(errors, [&] { env_v = s.string("env", env_allowed); }) && forms_ok;
        if (!forms_ok) return;
        if (file_v.has_value() == env_v.has_value())
            throw ConfigError(c.where + ": keys '" + prefix + ".file' and '" + prefix + ".env': " +
                              (file_v ? "both set" : "neither set") + ", allowed: exactly one of them");
        if (file_v) {
            if (!is_absolute_path(*file_v)) fail_value(file, *s.find("file"), s.key("file"), path_allowed);
            c.file = *file_v;
        } else {
            if (!is_env_name(*env_v)) fail_value(file, *s.find("env"), s.key("env"), env_allowed);
            c.env = *env_v;
        }
    });

    if (const auto* t = s.find("template")) {
        const std::string allowed = "a table of header name = value template using {key} / {token}";
        if (!t->is_table() || t->as_table().empty()) {
            step(errors, [&] { fail_value(file, *t, s.key("template"), allowed); });
        } else {
            // toml11 tables are unordered; sort by name so the header order is stable.
            std::map<std::string, std::pair<const toml::value*, std::string>> sorted;
            for (const auto& entry : t->as_table()) {
                // Named references: clang (C++20) cannot capture structured bindings.
                const std::string& hname = entry.first;
                const toml::value& hv = entry.second;
                step(errors, [&] {
                    std::string key = s.key("template") + "." + hname;
                    bool name_ok = !hname.empty();
                    for (char ch : hname) name_ok = name_ok && is_token_char(ch);
                    if (!name_ok)
                        throw ConfigError(where_of(file, hv) + ": key '" + key + "': got header name " + quote(hname) +
                                          ", allowed: an HTTP header name (token characters)");
                    if (!hv.is_string() || !is_valid_template(hv.as_string().str))
                        fail_value(file, hv, key,
                                   "a string without control characters whose only braces are {key} or {token}");
                    std::string lname = hname;
                    for (auto& ch : lname) ch = lower(ch);
                    if (lname == "host" || lname == "content-length" || lname == "transfer-encoding" ||
                        lname == "connection" || lname == "upgrade" || lname == "te")
                        throw ConfigError(where_of(file, hv) + ": key '" + key + "': got header name " + quote(hname) +
                                          ", allowed: any header except host, content-length, transfer-encoding, "
                                          "connection, upgrade, te (they frame the request)");
                    sorted[lname] = {&hv, hv.as_string().str};
                });
            }
            for (auto& [lname, p] : sorted) c.headers.emplace_back(lname, p.second);
            c.template_given = true;
        }
    } else if (kind_ok && c.kind == CredentialKind::api_key) {
        c.headers = {{"x-api-key", "{key}"}};
    } else {
        c.headers = {{"authorization", "Bearer {token}"}};
    }
    step(errors, [&] {
        const std::string beta_allowed = kBetaNameAllowed;
        if (auto b = s.string("anthropic_beta", beta_allowed)) {
            if (!is_beta_name(*b)) fail_value(file, *s.find("anthropic_beta"), s.key("anthropic_beta"), beta_allowed);
            c.anthropic_beta = *b;
        }
    });
    if (errors.size() != before) return std::nullopt;
    return c;
}

// nullopt when the entry has a problem (each one is in `errors`: every bad
// key, every bad route and identity).
std::optional<Grant> parse_grant(const std::string& file, std::size_t index, const toml::value& v,
                                 const CredentialNames& known, Errors& errors) {
    const std::string prefix = "grants[" + std::to_string(index) + "]";
    if (!v.is_table()) {
        step(errors, [&] { fail_value(file, v, prefix, "a table"); });
        return std::nullopt;
    }
    const std::size_t before = errors.size();
    Section s(file, v, prefix,
              {"host", "port", "mode", "credential", "routes", "identities", "allow_private", "connect_to",
               "upstream_ca_file", "policy"},
              errors);
    Grant g;
    g.index = index;
    g.where = where_of(file, v);
    step(errors, [&] {
        const std::string host_allowed =
            "a DNS name, \"*.\" followed by a name of at least two labels, or an IP address (\"127.0.0.1\", \"[::1]\")";
        auto host = s.string("host", host_allowed);
        if (!host) s.missing("host", host_allowed);
        auto pattern = names::parse_host_pattern(*host);
        if (!pattern) fail_value(file, *s.find("host"), s.key("host"), host_allowed);
        g.host = std::move(*pattern);
    });
    step(errors, [&] {
        if (auto p = s.integer("port", 1, 65535)) g.port = static_cast<std::uint16_t>(*p);
    });
    const bool mode_ok = step(errors, [&] {
        const std::string mode_allowed = "tunnel | inject";
        auto mode = s.string("mode", mode_allowed);
        if (!mode) s.missing("mode", mode_allowed);
        if (*mode == "tunnel")
            g.mode = GrantMode::tunnel;
        else if (*mode == "inject")
            g.mode = GrantMode::inject;
        else
            fail_value(file, *s.find("mode"), s.key("mode"), mode_allowed);
    });
    // The checks that depend on the mode are made only when it is known.
    const bool tunnel = mode_ok && g.mode == GrantMode::tunnel;

    step(errors, [&] {
        std::string cred_names;
        for (const auto& n : known.names) cred_names += (cred_names.empty() ? "" : " | ") + n;
        if (cred_names.empty()) cred_names = "(no [credentials.NAME] sections defined)";
        if (auto c = s.string("credential", cred_names)) {
            if (tunnel)
                fail_value(file, *s.find("credential"), s.key("credential"),
                           "no credential with mode = \"tunnel\" (a blind tunnel cannot inject); use mode = \"inject\"");
            // A name whose own section did not parse is reported there, not again here.
            if (known.complete && !known.names.count(*c))
                fail_value(file, *s.find("credential"), s.key("credential"), cred_names);
            g.credential = *c;
        }
    });
    const std::string route_allowed =
        "\"METHOD /path\" or \"METHOD /prefix/*\" (METHOD uppercase or *, path normalised: no //, ., .., %, ?, ;)";
    if (const auto* rv = s.find("routes")) {
        if (!rv->is_array()) {
            step(errors, [&] { fail_value(file, *rv, s.key("routes"), "an array of strings: " + route_allowed); });
        } else if (tunnel) {
            step(errors, [&] {
                fail_value(file, *rv, s.key("routes"),
                           "no routes with mode = \"tunnel\" (a blind tunnel cannot see them); use mode = \"inject\"");
            });
        } else {
            std::size_t i = 0;
            for (const auto& item : rv->as_array()) {  // every bad route, not only the first
                const std::string key = s.key("routes") + "[" + std::to_string(i++) + "]";
                step(errors, [&] {
                    if (!item.is_string()) fail_value(file, item, key, route_allowed);
                    auto r = parse_route(item.as_string().str);
                    if (!r) fail_value(file, item, key, route_allowed);
                    g.routes.push_back(*r);
                });
            }
        }
    }
    const std::string id_allowed(names::identity_pattern_allowed);
    if (const auto* iv = s.find("identities")) {
        if (!iv->is_array()) {
            step(errors, [&] { fail_value(file, *iv, s.key("identities"), "an array of strings: " + id_allowed); });
        } else {
            std::size_t i = 0;
            for (const auto& item : iv->as_array()) {
                const std::string key = s.key("identities") + "[" + std::to_string(i++) + "]";
                step(errors, [&] {
                    if (!item.is_string() || !names::is_identity_pattern(item.as_string().str))
                        fail_value(file, item, key, id_allowed);
                    g.identities.push_back(item.as_string().str);
                });
            }
        }
    }
    step(errors, [&] {
        if (auto a = s.boolean("allow_private")) g.allow_private = *a;
    });
    step(errors, [&] {
        const std::string ct_allowed = "\"host:port\" or \"[v6]:port\" (port 1..65535)";
        if (auto c = s.string("connect_to", ct_allowed); c && !c->empty()) {
            auto hp = parse_host_port(*c, names::PortZero::refused);
            if (!hp) fail_value(file, *s.find("connect_to"), s.key("connect_to"), ct_allowed);
            g.connect_to = *c;
            g.connect_host = hp->host;
            g.connect_port = hp->port;
        }
    });
    step(errors, [&] {
        if (auto u = s.string("upstream_ca_file", optional_path_allowed); u && !u->empty()) {
            if (!is_absolute_path(*u))
                fail_value(file, *s.find("upstream_ca_file"), s.key("upstream_ca_file"), optional_path_allowed);
            if (tunnel)
                fail_value(file, *s.find("upstream_ca_file"), s.key("upstream_ca_file"),
                           "no upstream_ca_file with mode = \"tunnel\" (the client verifies the upstream itself)");
            g.upstream_ca_file = *u;
            g.upstream_ca_file_where =
                where_of(file, *s.find("upstream_ca_file")) + ": key '" + s.key("upstream_ca_file") + "'";
        }
    });
    if (const auto* pv = s.find("policy")) {
        if (tunnel)
            step(errors, [&] {
                fail_value(file, *pv, s.key("policy"),
                           "no policy with mode = \"tunnel\" (a blind tunnel cannot see requests); use mode = \"inject\"");
            });
        else
            g.policy = parse_grant_policy(file, *pv, s.key("policy"), errors);
    }
    if (errors.size() != before) return std::nullopt;
    return g;
}

}  // namespace

std::string_view to_string(CredentialKind k) { return k == CredentialKind::api_key ? "api_key" : "oauth_token"; }
std::string_view to_string(GrantMode m) { return m == GrantMode::tunnel ? "tunnel" : "inject"; }

std::vector<Grant> check_grants(const toml::value& grants, const std::string& file, const CredentialNames& known,
                                std::vector<std::string>& errors) {
    std::vector<Grant> out;
    if (!grants.is_array()) {
        step(errors, [&] { fail_value(file, grants, "grants", "an array of tables ([[grants]])"); });
        return out;
    }
    std::size_t index = 0;
    for (const auto& v : grants.as_array()) {
        auto grant = parse_grant(file, index, v, known, errors);
        if (grant) {
            bool duplicate = false;
            for (const auto& other : out)
                if (!duplicate && other.host == grant->host && other.port == grant->port &&
                    other.identities == grant->identities) {
                    errors.push_back(grant->where + ": key 'grants[" + std::to_string(index) + "]': duplicates grants[" +
                                     std::to_string(other.index) + "] (" + other.where + ") for " + grant->host.text() + ":" +
                                     std::to_string(grant->port) +
                                     ", allowed: one grant per host, port and identity scope");
                    duplicate = true;
                }
            if (!duplicate) out.push_back(std::move(*grant));
        }
        ++index;
    }
    return out;
}

GatewaySectionsCheck check_gateway_sections(const toml::value& root, const std::string& file) {
    GatewaySectionsCheck out;
    GatewayConfig& cfg = out.config;
    cfg.file = file;
    if (!root.is_table()) {
        out.errors.push_back(file + ": not a TOML table");
        out.credentials.complete = false;
        return out;
    }
    const auto& top = root.as_table();
    auto gw = top.find("gateway");
    if (gw == top.end())
        out.errors.push_back(file + ": section [gateway] is missing, allowed: [gateway] with listen_unix and/or listen_tcp");
    else
        cfg.gateway = parse_settings(file, gw->second, out.errors);

    if (auto c = top.find("credentials"); c != top.end()) {
        if (!c->second.is_table()) {
            step(out.errors, [&] { fail_value(file, c->second, "credentials", "a table of [credentials.NAME] sections"); });
            out.credentials.complete = false;  // which names exist is unknown: grants' credentials go unchecked
        } else {
            for (const auto& [name, v] : c->second.as_table()) {
                out.credentials.names.insert(name);
                if (auto spec = parse_credential(file, name, v, out.errors))
                    cfg.credentials[name] = std::move(*spec);
            }
        }
    }
    if (auto g = top.find("grants"); g != top.end()) cfg.grants = check_grants(g->second, file, out.credentials, out.errors);
    return out;
}

void keep_used_credentials(GatewayConfig& cfg) {
    std::set<std::string> used;
    for (const auto& g : cfg.grants)
        if (!g.credential.empty()) used.insert(g.credential);
    for (auto it = cfg.credentials.begin(); it != cfg.credentials.end();)
        it = used.count(it->first) ? std::next(it) : cfg.credentials.erase(it);
}

CredentialSpec credential_for_grant(const CredentialSpec& c, const Grant& grant) {
    CredentialSpec out = c;
    if (!c.template_given && !grant.default_headers.empty()) out.headers = grant.default_headers;
    return out;
}

GatewayConfig parse_gateway_sections(const toml::value& root, const std::string& file) {
    GatewaySectionsCheck c = check_gateway_sections(root, file);
    if (!c.errors.empty()) {
        std::string msg;
        for (const auto& e : c.errors) msg += (msg.empty() ? "" : "\n") + e;
        throw ConfigError(msg);
    }
    return std::move(c.config);
}


namespace {

// A stand-alone gateway file's text: TOML syntax errors become one-line
// ConfigErrors with file:line; only the gateway's top-level keys (and the
// budget and prices) are allowed.
GatewayConfig parse_standalone(TomlDocument doc, const std::string& path) {
    if (!doc.root)
        throw ConfigError(path + (doc.line ? ":" + std::to_string(doc.line) : std::string()) + ": " + doc.problem);
    const toml::value& root = *doc.root;
    Errors errors;
    for (const auto& [k, v] : root.as_table())
        if (k != "gateway" && k != "credentials" && k != "grants" && k != "budget" && k != "prices")
            errors.push_back(where_of(path, v) + ": unknown key '" + k +
                             "', allowed: gateway | credentials | grants | budget | prices");
    GatewaySectionsCheck c = check_gateway_sections(root, path);
    errors.insert(errors.end(), c.errors.begin(), c.errors.end());
    // A stand-alone gateway's [budget] and [prices] apply to every identity
    // it serves (per run: per "worker/run"; [budget.worker]: per worker).
    BudgetConfig budget;
    PriceList prices;
    if (auto b = root.as_table().find("budget"); b != root.as_table().end())
        budget = check_budget_table(b->second, path, errors);
    if (auto p = root.as_table().find("prices"); p != root.as_table().end())
        prices = check_prices_table(p->second, path, errors);
    c.config.metering = resolve_metering(budget, prices, {}, {});
    if (!errors.empty()) {
        std::string msg;
        for (const auto& e : errors) msg += (msg.empty() ? "" : "\n") + e;
        throw ConfigError(msg);
    }
    return std::move(c.config);
}

}  // namespace

GatewayConfig load_gateway_config(const std::string& path) {
    return parse_standalone(parse_toml_file(path), path);
}

GatewayConfig parse_gateway_config(std::string_view text, const std::string& file) {
    return parse_standalone(parse_toml_text(text, file), file);
}

std::map<std::string, std::string> load_credential_secrets(const GatewayConfig& cfg) {
    std::map<std::string, std::string> secrets;
    for (const auto& [name, c] : cfg.credentials) {
        std::string secret;
        std::string origin;
        if (!c.file.empty()) {
            origin = "file " + c.file;
            int fd = ::open(c.file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            if (fd < 0)
                throw ConfigError(c.where + ": credentials." + name + ".file " + quote(c.file) + ": open: " +
                                  errno_text(errno) + " (allowed: a regular file, no symlink)");
            Fd owned(fd);
            struct stat st {};
            check_sys(::fstat(fd, &st), "fstat", c.file);
            if (!S_ISREG(st.st_mode))
                throw ConfigError(c.where + ": credentials." + name + ".file " + quote(c.file) +
                                  ": not a regular file, allowed: a regular file");
            if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
                char mode[8];
                std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
                throw ConfigError(c.where + ": credentials." + name + ".file " + quote(c.file) + ": owner uid " +
                                  std::to_string(st.st_uid) + ", mode " + mode + ", allowed: owner uid " +
                                  std::to_string(::geteuid()) + " and mode 0600 or 0400 (no group/other access)");
            }
            char buf[4096];
            ssize_t n;
            // One allocation: a growing string would leave copies in freed memory.
            secret.reserve(64 * 1024 + sizeof buf);
            while ((n = ::read(fd, buf, sizeof buf)) != 0) {
                if (n < 0) {
                    if (errno == EINTR) continue;
                    throw SysError("read", c.file, errno);
                }
                secret.append(buf, static_cast<std::size_t>(n));
                if (secret.size() > 64 * 1024)
                    throw ConfigError(c.where + ": credentials." + name + ".file " + quote(c.file) +
                                      ": larger than 64KiB, allowed: one secret");
            }
            explicit_bzero(buf, sizeof buf);
        } else {
            origin = "environment variable " + c.env;
            const char* v = std::getenv(c.env.c_str());
            if (!v)
                throw ConfigError(c.where + ": credentials." + name + ".env: variable " + c.env +
                                  " is not set, allowed: a set, non-empty variable");
            secret = v;
        }
        auto is_space = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; };
        while (!secret.empty() && is_space(secret.back())) secret.pop_back();
        std::size_t start = 0;
        while (start < secret.size() && is_space(secret[start])) ++start;
        secret.erase(0, start);
        if (secret.empty())
            throw ConfigError(c.where + ": credentials." + name + ": " + origin +
                              " holds an empty secret, allowed: a non-empty secret");
        for (char ch : secret) {
            auto u = static_cast<unsigned char>(ch);
            if (u <= 0x20 || u >= 0x7f)
                throw ConfigError(c.where + ": credentials." + name + ": " + origin +
                                  " holds a secret with whitespace, control or non-ASCII bytes inside, allowed: "
                                  "printable ASCII without spaces (it goes into an HTTP header)");
        }
        secrets[name] = std::move(secret);
    }
    return secrets;
}

}  // namespace corral::config
