// The gateway's sections ([gateway], [gateway.limits], [credentials.NAME],
// [[grants]]) read with the config checker: each key is one independent check
// that records its Diagnostic and lets the next one run.
#include <algorithm>
#include <map>

#include "approval/queue.hpp"
#include "base/parse.hpp"
#include "config/checker.hpp"
#include "config/gateway_config.hpp"
#include "config/gateway_values.hpp"
#include "config/grant_policy.hpp"
#include "names/identity.hpp"

namespace corral::config {
namespace {

GatewayLimits parse_limits(Checker& c, const toml::value& v) {
    GatewayLimits l;
    if (!v.is_table()) {
        c.bad_value(v, "gateway.limits", "a table");
        return l;
    }
    Table s(c, v, "gateway.limits",
            {"max_header_bytes", "max_body_bytes", "max_response_bytes", "read_timeout", "idle_timeout",
             "max_connections", "max_connections_per_identity", "requests_per_identity",
             "ledger_refusals_per_identity"});
    const std::string size_allowed = "a size > 0 such as \"16KiB\", \"1MiB\" (units B, K/KiB, M/MiB, G/GiB, T/TiB)";
    const std::string duration_allowed = "a duration > 0 such as \"30s\", \"250ms\", \"2m\", \"1h\"";
    auto size = [&](const char* k, std::uint64_t& out) {
        if (auto x = s.parsed(k, size_allowed, [](std::string_view t) { return parse_size(t); })) {
            if (*x == 0) s.bad(k, size_allowed);
            else out = *x;
        }
    };
    auto duration = [&](const char* k, std::chrono::milliseconds& out) {
        if (auto x = s.parsed(k, duration_allowed, [](std::string_view t) { return parse_duration(t); })) {
            if (x->count() == 0) s.bad(k, duration_allowed);
            else out = *x;
        }
    };
    size("max_header_bytes", l.max_header_bytes);
    size("max_body_bytes", l.max_body_bytes);
    size("max_response_bytes", l.max_response_bytes);
    duration("read_timeout", l.read_timeout);
    duration("idle_timeout", l.idle_timeout);
    auto max = s.integer("max_connections", 1, 1'000'000);
    if (max) l.max_connections = static_cast<std::uint64_t>(*max);
    const bool max_ok = max || !s.has("max_connections");
    // One identity's share can be at most the whole; an omitted share shrinks
    // with a small max_connections instead of making that config invalid.
    l.max_connections_per_identity = std::min(l.max_connections_per_identity, l.max_connections);
    if (auto x = s.integer("max_connections_per_identity", 1, 1'000'000)) {
        if (max_ok && static_cast<std::uint64_t>(*x) > l.max_connections)
            s.bad("max_connections_per_identity",
                  "an integer 1..max_connections (" + std::to_string(l.max_connections) + ")");
        else
            l.max_connections_per_identity = static_cast<std::uint64_t>(*x);
    }
    if (auto x = s.integer("requests_per_identity", 0, INT64_MAX))
        l.requests_per_identity = static_cast<std::uint64_t>(*x);
    if (auto x = s.integer("ledger_refusals_per_identity", 0, INT64_MAX))
        l.ledger_refusals_per_identity = static_cast<std::uint64_t>(*x);
    return l;
}

// "FILE:LINE: key 'KEY'" of a file path the parser does not read, for the
// error the gateway gives when reading it fails.
std::string where_key(Table& s, const std::string& k) {
    return where_of(s.file(), *s.find(k)) + ": key '" + s.key(k) + "'";
}

// approval_command = ["/abs/path", "arg", ...], approval_command_user =
// "NAME" (not root: the hook reads what a box asked for).
void parse_approval_hook(Table& s, GatewaySettings& g) {
    const std::string allowed = "an array of strings, the first an absolute path, no NUL bytes (the notifier "
                                "hook, run with the request as JSON on stdin)";
    if (const auto* cmd = s.find("approval_command")) {
        std::vector<std::string> argv;
        bool ok = cmd->is_array() && !cmd->as_array().empty();
        if (ok)
            for (const auto& item : cmd->as_array()) {
                ok = ok && item.is_string() && item.as_string().str.find('\0') == std::string::npos;
                if (ok) argv.push_back(item.as_string().str);
            }
        if (!ok || !is_absolute_path(argv.front())) s.bad("approval_command", allowed);
        else g.approval_command = std::move(argv);
    }
    const std::string user_allowed = "a user name of the host other than root ([a-z_][a-z0-9_-]*, at most 32), "
                                     "the hook's Unix user (default nobody)";
    if (auto u = s.string("approval_command_user", user_allowed)) {
        if (!is_user_name(*u) || *u == "root") s.bad("approval_command_user", user_allowed);
        else g.approval_command_user = *u;
    }
}

GatewaySettings parse_settings(Checker& c, const toml::value& v) {
    GatewaySettings g;
    if (!v.is_table()) {
        c.bad_value(v, "gateway", "a table");
        return g;
    }
    const std::size_t before = c.count();
    Table s(c, v, "gateway",
            {"listen_unix", "listen_tcp", "tcp_identity", "ledger", "state_dir", "upstream_ca_file", "hosts_file",
             "journal", "limits", "approval_command", "approval_command_user"});
    auto path = [&](const char* k, std::string& out, bool optional) {
        const char* allowed = optional ? optional_path_allowed : path_allowed;
        if (auto x = s.string(k, allowed)) {
            if (!(optional && x->empty()) && !is_absolute_path(*x)) s.bad(k, allowed);
            else out = *x;
        }
    };
    path("listen_unix", g.listen_unix, true);
    path("ledger", g.ledger, false);
    path("state_dir", g.state_dir, false);
    path("upstream_ca_file", g.upstream_ca_file, true);
    path("hosts_file", g.hosts_file, true);
    if (!g.upstream_ca_file.empty()) g.upstream_ca_file_where = where_key(s, "upstream_ca_file");
    if (!g.hosts_file.empty()) g.hosts_file_where = where_key(s, "hosts_file");
    const std::string tcp_allowed = "\"\" or a loopback \"127.x.y.z:PORT\" / \"[::1]:PORT\" (PORT 0..65535)";
    if (auto x = s.string("listen_tcp", tcp_allowed); x && !x->empty()) {
        auto hp = parse_host_port(*x, names::PortZero::allowed);
        if (!hp || !is_loopback_literal(hp->host.text())) {
            s.bad("listen_tcp", tcp_allowed);
        } else {
            g.listen_tcp = *x;
            g.listen_tcp_host = hp->host.text();
            g.listen_tcp_port = hp->port;
        }
    }
    const std::string id_allowed(names::identity_allowed);
    if (auto x = s.string("tcp_identity", id_allowed)) {
        if (!names::parse_identity(*x))
            s.bad("tcp_identity", id_allowed);
        else
            g.tcp_identity = *x;
    }
    if (auto x = s.boolean("journal")) g.journal = *x;
    if (const auto* l = s.find("limits")) g.limits = parse_limits(c, *l);
    parse_approval_hook(s, g);
    // Only when the listeners themselves parsed: a bad one is already reported.
    if (c.count() == before && g.listen_unix.empty() && g.listen_tcp.empty())
        c.note(v, "",
               "keys 'gateway.listen_unix' and 'gateway.listen_tcp' are both empty, allowed: at least one listener "
               "(a socket path and/or a loopback address:port)");
    return g;
}

// The [credentials.NAME] `template`: header name → value template, sorted by
// name so the header order is stable (toml11 tables are unordered).
void parse_template(Table& s, const toml::value& t, CredentialSpec& c) {
    Checker& ch = s.checker();
    const std::string allowed = "a table of header name = value template using {key} / {token}";
    if (!t.is_table() || t.as_table().empty()) {
        s.bad("template", allowed);
        return;
    }
    std::map<std::string, std::string> sorted;
    for (const auto& entry : t.as_table()) {
        // Named references: clang (C++20) cannot capture structured bindings.
        const std::string& hname = entry.first;
        const toml::value& hv = entry.second;
        const std::string key = s.key("template") + "." + hname;
        bool name_ok = !hname.empty();
        for (char ch_ : hname) name_ok = name_ok && is_token_char(ch_);
        if (!name_ok) {
            ch.bad(hv, key, "header name " + quote(hname), "an HTTP header name (token characters)");
            continue;
        }
        if (!hv.is_string() || !is_valid_template(hv.as_string().str)) {
            ch.bad_value(hv, key, "a string without control characters whose only braces are {key} or {token}");
            continue;
        }
        std::string lname = hname;
        for (auto& x : lname) x = lower(x);
        if (lname == "host" || lname == "content-length" || lname == "transfer-encoding" || lname == "connection" ||
            lname == "upgrade" || lname == "te") {
            ch.bad(hv, key, "header name " + quote(hname),
                   "any header except host, content-length, transfer-encoding, connection, upgrade, te (they frame "
                   "the request)");
            continue;
        }
        sorted[lname] = hv.as_string().str;
    }
    for (auto& [lname, value] : sorted) c.headers.emplace_back(lname, value);
    c.template_given = true;
}

// nullopt when the section has a problem (each one is recorded).
std::optional<CredentialSpec> parse_credential(Checker& ch, const std::string& name, const toml::value& v) {
    const std::string prefix = "credentials." + name;
    const std::size_t before = ch.count();
    if (!v.is_table()) {
        ch.bad_value(v, prefix, "a table");
        return std::nullopt;
    }
    if (!is_credential_name(name)) ch.bad(v, prefix, quote(name), "a credential name of [A-Za-z0-9_-]");
    Table s(ch, v, prefix, {"kind", "file", "env", "template", "anthropic_beta"});
    CredentialSpec c;
    c.name = name;
    c.where = where_of(ch.file(), v);
    const std::string kind_allowed = "api_key | oauth_token";
    bool kind_ok = false;
    if (auto kind = s.required_string("kind", kind_allowed)) {
        kind_ok = true;
        if (*kind == "api_key")
            c.kind = CredentialKind::api_key;
        else if (*kind == "oauth_token")
            c.kind = CredentialKind::oauth_token;
        else
            kind_ok = s.bad("kind", kind_allowed);
    }

    const std::string env_allowed = "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)";
    auto file_v = s.string("file", path_allowed);
    auto env_v = s.string("env", env_allowed);
    const bool forms_ok = (file_v || !s.has("file")) && (env_v || !s.has("env"));
    if (forms_ok && file_v.has_value() == env_v.has_value()) {
        ch.note(v, "",
                "keys '" + prefix + ".file' and '" + prefix + ".env': " + (file_v ? "both set" : "neither set") +
                    ", allowed: exactly one of them");
    } else if (forms_ok && file_v) {
        if (!is_absolute_path(*file_v)) s.bad("file", path_allowed);
        else c.file = *file_v;
    } else if (forms_ok) {
        if (!is_env_name(*env_v)) s.bad("env", env_allowed);
        else c.env = *env_v;
    }

    if (const auto* t = s.find("template"))
        parse_template(s, *t, c);
    else if (kind_ok && c.kind == CredentialKind::api_key)
        c.headers = {{"x-api-key", "{key}"}};
    else
        c.headers = {{"authorization", "Bearer {token}"}};
    if (auto b = s.string("anthropic_beta", kBetaNameAllowed)) {
        if (!is_beta_name(*b)) s.bad("anthropic_beta", kBetaNameAllowed);
        else c.anthropic_beta = *b;
    }
    if (ch.count() != before) return std::nullopt;
    return c;
}

// Each element of the array `k` (every bad one, not only the first): `take`
// returns false for an element it refuses.
template <typename Take>
void each_string(Table& s, const std::string& k, const std::string& allowed, Take take) {
    std::size_t i = 0;
    for (const auto& item : s.find(k)->as_array()) {
        const std::string key = s.key(k) + "[" + std::to_string(i++) + "]";
        if (!item.is_string() || !take(item.as_string().str)) s.checker().bad_value(item, key, allowed);
    }
}

// nullopt when the entry has a problem (each one is recorded: every bad key,
// every bad route and identity).
// host, port and mode; false when the mode is not known (the checks that
// depend on it are then not made).
bool parse_grant_target(Table& s, Grant& g) {
    const std::string host_allowed =
        "a DNS name, \"*.\" followed by a name of at least two labels, or an IP address (\"127.0.0.1\", \"[::1]\")";
    if (auto host = s.required_string("host", host_allowed)) {
        if (auto pattern = names::parse_host_pattern(*host))
            g.host = std::move(*pattern);
        else
            s.bad("host", host_allowed);
    }
    if (auto p = s.integer("port", 1, 65535)) g.port = static_cast<std::uint16_t>(*p);
    const std::string mode_allowed = "tunnel | inject";
    bool mode_ok = false;
    if (auto mode = s.required_string("mode", mode_allowed)) {
        mode_ok = true;
        if (*mode == "tunnel")
            g.mode = GrantMode::tunnel;
        else if (*mode == "inject")
            g.mode = GrantMode::inject;
        else
            mode_ok = s.bad("mode", mode_allowed);
    }
    return mode_ok;
}

// credential and routes: an inject grant's only.
void parse_grant_credential_and_routes(Table& s, Grant& g, const CredentialNames& known, bool tunnel) {
    std::string cred_names;
    for (const auto& n : known.names) cred_names += (cred_names.empty() ? "" : " | ") + n;
    if (cred_names.empty()) cred_names = "(no [credentials.NAME] sections defined)";
    if (auto cred = s.string("credential", cred_names)) {
        if (tunnel)
            s.bad("credential", "no credential with mode = \"tunnel\" (a blind tunnel cannot inject); use mode = \"inject\"");
        // A name whose own section did not parse is reported there, not again here.
        else if (known.complete && !known.names.count(*cred))
            s.bad("credential", cred_names);
        else
            g.credential = *cred;
    }
    const std::string route_allowed =
        "\"METHOD /path\" or \"METHOD /prefix/*\" (METHOD uppercase or *, path normalised: no //, ., .., %, ?, ;)";
    if (const auto* rv = s.find("routes")) {
        if (!rv->is_array())
            s.bad("routes", "an array of strings: " + route_allowed);
        else if (tunnel)
            s.bad("routes", "no routes with mode = \"tunnel\" (a blind tunnel cannot see them); use mode = \"inject\"");
        else
            each_string(s, "routes", route_allowed, [&](const std::string& text) {
                auto r = parse_route(text);
                if (r) g.routes.push_back(*r);
                return r.has_value();
            });
    }
}

// connect_to and upstream_ca_file: where and how the upstream is reached.
void parse_grant_upstream(Table& s, Grant& g, bool tunnel) {
    const std::string ct_allowed = "\"host:port\" or \"[v6]:port\" (port 1..65535)";
    if (auto ct = s.string("connect_to", ct_allowed); ct && !ct->empty()) {
        if (auto hp = parse_host_port(*ct, names::PortZero::refused)) {
            g.connect_to = *ct;
            g.connect_host = hp->host;
            g.connect_port = hp->port;
        } else {
            s.bad("connect_to", ct_allowed);
        }
    }
    if (auto u = s.string("upstream_ca_file", optional_path_allowed); u && !u->empty()) {
        if (!is_absolute_path(*u)) {
            s.bad("upstream_ca_file", optional_path_allowed);
        } else if (tunnel) {
            s.bad("upstream_ca_file",
                  "no upstream_ca_file with mode = \"tunnel\" (the client verifies the upstream itself)");
        } else {
            g.upstream_ca_file = *u;
            g.upstream_ca_file_where = where_key(s, "upstream_ca_file");
        }
    }
}

// approval = true: each connection waits for a person (docs/approvals.md);
// approval_timeout: how long.
void parse_grant_approval(Table& s, Grant& g) {
    if (auto a = s.boolean("approval")) g.approval = *a;
    g.approval_timeout = approval_timeout_key(s, g.approval, "approval = true");
}

std::optional<Grant> parse_grant(Checker& c, std::size_t index, const toml::value& v, const CredentialNames& known) {
    const std::string prefix = "grants[" + std::to_string(index) + "]";
    if (!v.is_table()) {
        c.bad_value(v, prefix, "a table");
        return std::nullopt;
    }
    const std::size_t before = c.count();
    Table s(c, v, prefix,
            {"host", "port", "mode", "credential", "routes", "identities", "allow_private", "connect_to",
             "upstream_ca_file", "policy", "approval", "approval_timeout"});
    Grant g;
    g.index = index;
    g.where = where_of(c.file(), v);
    const bool mode_ok = parse_grant_target(s, g);
    // The checks that depend on the mode are made only when it is known.
    const bool tunnel = mode_ok && g.mode == GrantMode::tunnel;
    parse_grant_credential_and_routes(s, g, known, tunnel);
    const std::string id_allowed(names::identity_pattern_allowed);
    if (const auto* iv = s.find("identities")) {
        if (!iv->is_array())
            s.bad("identities", "an array of strings: " + id_allowed);
        else
            each_string(s, "identities", id_allowed, [&](const std::string& glob) {
                if (!names::is_identity_pattern(glob)) return false;
                g.identities.push_back(glob);
                return true;
            });
    }
    if (auto a = s.boolean("allow_private")) g.allow_private = *a;
    parse_grant_approval(s, g);
    parse_grant_upstream(s, g, tunnel);
    if (const auto* pv = s.find("policy")) {
        if (tunnel)
            s.bad("policy", "no policy with mode = \"tunnel\" (a blind tunnel cannot see requests); use mode = \"inject\"");
        else
            g.policy = parse_grant_policy(c, *pv, s.key("policy"));
    }
    if (c.count() != before) return std::nullopt;
    return g;
}

}  // namespace

std::vector<Grant> check_grants(const toml::value& grants, const CredentialNames& known, Checker& c) {
    std::vector<Grant> out;
    if (!grants.is_array()) {
        c.bad_value(grants, "grants", "an array of tables ([[grants]])");
        return out;
    }
    std::size_t index = 0;
    for (const auto& v : grants.as_array()) {
        auto grant = parse_grant(c, index, v, known);
        if (grant) {
            bool duplicate = false;
            for (const auto& other : out)
                if (!duplicate && other.host == grant->host && other.port == grant->port &&
                    other.identities == grant->identities) {
                    c.note(v, "grants[" + std::to_string(index) + "]",
                           "duplicates grants[" + std::to_string(other.index) + "] (" + other.where + ") for " +
                               grant->host.text() + ":" + std::to_string(grant->port) +
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
    Checker c(file, out.errors);
    if (!root.is_table()) {
        c.note(0, "", "not a TOML table");
        out.credentials.complete = false;
        return out;
    }
    const auto& top = root.as_table();
    auto gw = top.find("gateway");
    if (gw == top.end())
        c.note(0, "", "section [gateway] is missing, allowed: [gateway] with listen_unix and/or listen_tcp");
    else
        cfg.gateway = parse_settings(c, gw->second);

    if (auto cr = top.find("credentials"); cr != top.end()) {
        if (!cr->second.is_table()) {
            c.bad_value(cr->second, "credentials", "a table of [credentials.NAME] sections");
            out.credentials.complete = false;  // which names exist is unknown: grants' credentials go unchecked
        } else {
            for (const auto& [name, v] : cr->second.as_table()) {
                out.credentials.names.insert(name);
                if (auto spec = parse_credential(c, name, v)) cfg.credentials[name] = std::move(*spec);
            }
        }
    }
    if (auto g = top.find("grants"); g != top.end()) cfg.grants = check_grants(g->second, out.credentials, c);
    return out;
}

}  // namespace corral::config
