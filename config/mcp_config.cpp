// The [mcp] table and its [mcp.servers.NAME]: a stdio server (`command`)
// corral starts outside the agent's box, or a remote Streamable HTTP server
// (`url`) reached through the gateway. docs/tools.md "Configuration".
#include "config/mcp_config.hpp"

#include "config/gateway_values.hpp"
#include "mcp/message.hpp"
#include "names/host.hpp"
#include "names/identity.hpp"

namespace corral::config {
namespace mcp_servers_toml {
namespace {

const std::set<std::string> kStdioKeys = {"command", "env", "secret_env", "cwd"};
const std::set<std::string> kHttpKeys = {"url", "credential", "connect_to", "upstream_ca_file"};

constexpr const char* kUrlAllowed =
    "an https URL \"https://HOST[:PORT]/PATH\" (no user, query or fragment; the path normalised: no //, ., .., %, ;)";
constexpr const char* kCommandAllowed =
    "an array of strings, the program first: an absolute path, then its arguments (no NUL bytes)";
constexpr const char* kEnvNameAllowed = "a variable name, [A-Za-z_][A-Za-z0-9_]*";

std::string names_text(const CredentialNames& known) {
    std::string s;
    for (const auto& n : known.names) s += (s.empty() ? "" : " | ") + n;
    return s.empty() ? "(no [credentials.NAME] sections defined)" : s;
}

// A credential name a server refers to: defined in org.toml (unchecked when
// org.toml's credentials could not be read).
bool credential_ok(Checker& c, const toml::value& v, const std::string& key, const CredentialNames& known) {
    if (!v.is_string()) return c.bad_value(v, key, "the name of a [credentials.NAME] of org.toml: " + names_text(known));
    if (known.complete && !known.names.count(v.as_string().str))
        return c.bad_value(v, key, "the name of a [credentials.NAME] of org.toml: " + names_text(known));
    return true;
}

// The https URL of a remote server: host normalised by names::split_authority
// (the one host normaliser), the path as a route's path must be.
bool parse_url(const std::string& url, mcp::HttpServer& out) {
    constexpr std::string_view scheme = "https://";
    if (url.compare(0, scheme.size(), scheme) != 0) return false;
    const std::string rest = url.substr(scheme.size());
    const auto slash = rest.find('/');
    const std::string authority = rest.substr(0, slash);
    const std::string path = slash == std::string::npos ? "/" : rest.substr(slash);
    auto a = names::split_authority(authority, std::uint16_t{443});
    if (!a.authority || path.find('*') != std::string::npos || !parse_route("POST " + path)) return false;
    out.url = url;
    out.host = a.authority->host.text();
    out.port = a.authority->port;
    out.path = path;
    return true;
}

std::map<std::string, std::string> env_of(Table& s, const std::string& k, const CredentialNames* secrets) {
    std::map<std::string, std::string> out;
    const toml::value* t = s.find(k);
    if (!t) return out;
    Checker& c = s.checker();
    if (!t->is_table()) {
        s.bad(k, secrets ? "a table of VARIABLE = \"credential name\"" : "a table of VARIABLE = \"value\"");
        return out;
    }
    for (const auto& [name, vp] : in_file_order(*t)) {
        const std::string key = s.key(k) + "." + name;
        if (!is_env_name(name)) {
            c.bad(*vp, key, quote(name), kEnvNameAllowed);
        } else if (secrets) {
            if (credential_ok(c, *vp, key, *secrets)) out[name] = vp->as_string().str;
        } else if (!vp->is_string() || vp->as_string().str.find('\0') != std::string::npos) {
            c.bad_value(*vp, key, "a string without NUL bytes");
        } else {
            out[name] = vp->as_string().str;
        }
    }
    return out;
}

void parse_stdio(Table& s, mcp::StdioServer& out, const CredentialNames& known) {
    Checker& c = s.checker();
    const toml::value& cmd = *s.find("command");
    bool ok = cmd.is_array() && !cmd.as_array().empty();
    if (ok)
        for (const auto& a : cmd.as_array()) {
            ok = ok && a.is_string() && a.as_string().str.find('\0') == std::string::npos;
            if (ok) out.argv.push_back(a.as_string().str);
        }
    if (!ok) {
        s.bad("command", kCommandAllowed);
    } else if (!is_absolute_path(out.argv[0])) {
        c.bad(cmd, s.key("command") + "[0]", quote(out.argv[0]),
              "an absolute path to the program (no PATH lookup: the host runs it)");
    }
    out.env = env_of(s, "env", nullptr);
    out.secret_env = env_of(s, "secret_env", &known);
    for (const auto& [name, cred] : out.secret_env)
        if (out.env.count(name))
            c.note(*s.find("secret_env"), s.key("secret_env") + "." + name,
                   "also set in " + s.key("env") + ", allowed: each variable in env or in secret_env, not both");
    if (auto cwd = s.string("cwd", path_allowed)) {
        if (!is_absolute_path(*cwd) || cwd->find('\0') != std::string::npos) s.bad("cwd", path_allowed);
        else out.cwd = *cwd;
    }
}

void parse_http(Table& s, mcp::HttpServer& out, const CredentialNames& known) {
    if (auto url = s.string("url", kUrlAllowed); url && !parse_url(*url, out)) s.bad("url", kUrlAllowed);
    if (const auto* cred = s.find("credential"); cred && credential_ok(s.checker(), *cred, s.key("credential"), known))
        out.credential = cred->as_string().str;
    const std::string ct_allowed = "\"host:port\" or \"[v6]:port\" (port 1..65535)";
    if (auto ct = s.string("connect_to", ct_allowed); ct && !ct->empty()) {
        if (parse_host_port(*ct, names::PortZero::refused)) out.connect_to = *ct;
        else s.bad("connect_to", ct_allowed);
    }
    if (auto ca = s.string("upstream_ca_file", optional_path_allowed); ca && !ca->empty()) {
        if (is_absolute_path(*ca)) out.upstream_ca_file = *ca;
        else s.bad("upstream_ca_file", optional_path_allowed);
    }
}

// The keys of the other transport, each an error naming which transport it belongs to.
void other_transport_keys(Table& s, bool stdio) {
    for (const auto& k : stdio ? kHttpKeys : kStdioKeys)
        if (s.has(k))
            s.bad(k, stdio ? "not with command: " + k + " is for a remote server (url)"
                           : "not with url: " + k + " is for a stdio server (command)");
}

void parse_server(Checker& c, const std::string& name, const toml::value& v, const CredentialNames& known,
                  mcp::ToolsConfig& out) {
    const std::string prefix = "mcp.servers." + (names::check_worker_name(name) ? quote(name) : name);
    if (!v.is_table()) {
        c.bad_value(v, prefix, "a table with command (a stdio server) or url (a remote server)");
        return;
    }
    if (auto bad = names::check_worker_name(name)) {
        c.bad(v, prefix, quote(name) + " (" + bad->problem + ")", mcp_toml::server_name_allowed);
        return;
    }
    // corral's own server (report_outcome, gateway/mcp_builtin.hpp) answers there.
    if (name == mcp::kBuiltinServerName) {
        c.bad(v, prefix, "\"corral\" (reserved: corral's built-in server, report_outcome)", mcp_toml::server_name_allowed);
        return;
    }
    std::set<std::string> keys = {"allow_server_requests"};
    keys.insert(kStdioKeys.begin(), kStdioKeys.end());
    keys.insert(kHttpKeys.begin(), kHttpKeys.end());
    Table s(c, v, prefix, keys);
    mcp::Server server;
    server.name = name;
    server.where = where_of(c.file(), v);
    if (auto a = s.boolean("allow_server_requests")) server.allow_server_requests = *a;
    const bool stdio = s.has("command"), http = s.has("url");
    if (stdio == http) {
        c.note(v, "",
               "keys '" + prefix + ".command' and '" + prefix + ".url': " + (stdio ? "both set" : "neither set") +
                   ", allowed: exactly one of them (command: a stdio server corral starts; url: a remote Streamable "
                   "HTTP server)");
    } else if (stdio) {
        mcp::StdioServer t;
        parse_stdio(s, t, known);
        server.transport = std::move(t);
    } else {
        mcp::HttpServer t;
        parse_http(s, t, known);
        server.transport = std::move(t);
    }
    if (stdio != http) other_transport_keys(s, stdio);
    // Kept even with problems (the configuration is then refused anyway): a
    // rule naming it is not also reported as naming an unknown server.
    out.servers[name] = std::move(server);
}

}  // namespace
}  // namespace mcp_servers_toml

namespace mcp_toml {

void set_where(Diagnostic& d, const std::string& where) {
    const auto colon = where.rfind(':');
    d.file = where;
    d.line = 0;
    if (colon == std::string::npos || colon + 1 == where.size()) return;
    std::size_t line = 0;
    for (char ch : where.substr(colon + 1)) {
        if (ch < '0' || ch > '9') return;
        line = line * 10 + static_cast<std::size_t>(ch - '0');
    }
    d.file = where.substr(0, colon);
    d.line = line;
}

bool valid_tool_key(const std::string& key) {
    const auto slash = key.find('/');
    if (slash == std::string::npos) return false;
    return !names::check_worker_name(key.substr(0, slash)) && mcp::valid_tool_name(key.substr(slash + 1));
}

}  // namespace mcp_toml

mcp::ToolsConfig check_mcp_table(const toml::value& v, const CredentialNames& credentials, Checker& c) {
    mcp::ToolsConfig out;
    if (!v.is_table()) {
        c.bad_value(v, "mcp", "a table: log_arguments, [mcp.servers.NAME], [[mcp.rules]], [mcp.pins], [mcp.budget]");
        return out;
    }
    Table s(c, v, "mcp", {"log_arguments", "servers", "rules", "pins", "budget"});
    if (auto b = s.boolean("log_arguments")) {
        out.log_arguments = *b;
        out.key_where["mcp.log_arguments"] = where_of(c.file(), *s.find("log_arguments"));
    }
    if (const auto* servers = s.find("servers")) {
        if (!servers->is_table())
            s.bad("servers", "a table of [mcp.servers.NAME] tables");
        else
            for (const auto& [name, sv] : in_file_order(*servers))
                mcp_servers_toml::parse_server(c, name, *sv, credentials, out);
    }
    for (const auto& [name, server] : out.servers) out.policy.servers.insert(name);
    if (const auto* rules = s.find("rules")) mcp_toml::check_rules(*rules, c, out);
    if (const auto* pins = s.find("pins")) mcp_toml::check_pins(*pins, c, out);
    if (const auto* budget = s.find("budget")) mcp_toml::check_call_budgets(*budget, c, out);
    return out;
}

}  // namespace corral::config
