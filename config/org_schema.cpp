#include "config/org_schema.hpp"

#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <regex>

#include "base/parse.hpp"
#include "config/mcp_config.hpp"
#include "names/box_environment.hpp"
#include "names/rootfs_source.hpp"

namespace corral::config {
namespace {

namespace fs = std::filesystem;

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

std::optional<std::string> string_of(Checker& c, const toml::value& v, const std::string& key) {
    if (v.is_string()) return v.as_string().str;
    c.wrong_type(v, key, "a string");
    return std::nullopt;
}

bool is_table(Checker& c, const toml::value& v, const std::string& key) {
    return v.is_table() || c.wrong_type(v, key, "a table");
}

// Sizes: "2GiB" or an integer number of bytes.
std::optional<std::uint64_t> size_value(Checker& c, const toml::value& v, const std::string& key) {
    if (v.is_integer()) {
        if (v.as_integer() > 0) return static_cast<std::uint64_t>(v.as_integer());
        c.bad(v, key, std::to_string(v.as_integer()), "a positive size like 512MiB or 2G, or bytes");
        return std::nullopt;
    }
    if (!v.is_string()) {
        c.bad(v, key, type_name(v), "a size string like \"512MiB\" or an integer of bytes");
        return std::nullopt;
    }
    try {
        auto n = parse_size(v.as_string().str);
        if (n == 0) {
            c.bad(v, key, "\"0\"", "a positive size like 512MiB");
            return std::nullopt;
        }
        return n;
    } catch (const UsageError& e) {  // base/parse.hpp's own sentence names the value and the forms
        c.note(v, key, e.what());
        return std::nullopt;
    }
}

std::optional<std::chrono::milliseconds> timeout_value(Checker& c, const toml::value& v, const std::string& key) {
    if (v.is_integer() && v.as_integer() > 0) return std::chrono::seconds(v.as_integer());
    if (!v.is_string()) {
        // An integer here is not positive: say which one, not "an integer".
        c.bad(v, key, v.is_integer() ? std::to_string(v.as_integer()) : std::string(type_name(v)),
              "a positive duration like \"30m\" or a positive integer of seconds");
        return std::nullopt;
    }
    try {
        auto d = parse_duration(v.as_string().str);
        if (d.count() > 0) return d;
        c.bad(v, key, "\"" + v.as_string().str + "\"", "a positive duration like 30m");
    } catch (const UsageError& e) {
        c.note(v, key, e.what());
    }
    return std::nullopt;
}

// A tmpfs of the box (tmp_size, scratch_size): the bounds `corral run`'s
// --tmp-size and --scratch-size have.
std::optional<std::uint64_t> tmpfs_size_value(Checker& c, const toml::value& v, const std::string& key) {
    auto n = size_value(c, v, key);
    if (n && (*n < kMinBoxTmpfsBytes || *n > kMaxBoxTmpfsBytes)) {
        c.bad(v, key, format_size(*n), "a size from 1MiB to 64GiB");
        return std::nullopt;
    }
    return n;
}

SandboxLimits sandbox_limits(Checker& c, const toml::value& table, const std::string& prefix) {
    SandboxLimits l;
    c.unknown_keys(table, prefix, {"memory", "pids", "cpus", "timeout", "tmp_size", "scratch_size"},
                   Diagnostic::Form::unlisted_key);
    for (const auto& [k, vp] : in_file_order(table)) {
        const toml::value& v = *vp;
        const std::string key = prefix + k;
        if (k == "memory") {
            l.memory_bytes = size_value(c, v, key);
        } else if (k == "tmp_size") {
            l.tmp_bytes = tmpfs_size_value(c, v, key);
        } else if (k == "scratch_size") {
            l.scratch_bytes = tmpfs_size_value(c, v, key);
        } else if (k == "pids") {
            if (v.is_integer() && v.as_integer() > 0)
                l.pids = static_cast<std::uint64_t>(v.as_integer());
            else
                c.bad(v, key, v.is_integer() ? std::to_string(v.as_integer()) : type_name(v),
                      "a positive integer (maximum number of processes)");
        } else if (k == "cpus") {
            double d = v.is_floating() ? v.as_floating() : v.is_integer() ? static_cast<double>(v.as_integer()) : -1;
            if ((v.is_floating() || v.is_integer()) && d > 0 && std::isfinite(d)) {
                l.cpus = d;
            } else {
                std::string got = type_name(v);
                if (v.is_integer()) got = std::to_string(v.as_integer());
                else if (v.is_floating()) got = toml::format(v);
                c.bad(v, key, got, "a positive number of CPUs like 1.5");
            }
        } else if (k == "timeout") {
            l.timeout = timeout_value(c, v, key);
        }
    }
    return l;
}

// An enum: a wrong value and a wrong type get the same answer, naming the allowed values.
std::optional<AgentKind> agent_value(Checker& c, const toml::value& v, const std::string& key) {
    if (!v.is_string()) {
        c.bad(v, key, type_name(v), std::string(agent_kinds_allowed));
        return std::nullopt;
    }
    auto k = parse_agent_kind(v.as_string().str);
    if (!k) c.bad(v, key, in_quotes(v.as_string().str), std::string(agent_kinds_allowed));
    return k;
}

// Names go onto the CLI's command line: no leading '-', no spaces.
std::optional<std::string> model_value(Checker& c, const toml::value& v, const std::string& key) {
    auto s = string_of(c, v, key);
    if (!s) return std::nullopt;
    static const std::regex ok("[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}");
    if (!std::regex_match(*s, ok)) {
        c.bad(v, key, in_quotes(*s), "a model name of letters, digits and . _ : / @ - (not starting with '-')");
        return std::nullopt;
    }
    return s;
}

// "host", "image:NAME", or a directory (relative paths are relative to the
// org directory) that exists now.
std::optional<names::RootfsSource> rootfs_value(Checker& c, const toml::value& v, const std::string& key,
                                                const std::string& org_dir) {
    if (!v.is_string()) {
        c.bad(v, key, type_name(v),
              "\"host\" | \"image:NAME\" | a directory path holding the image's root (absolute, or relative to the "
              "organisation directory)");
        return std::nullopt;
    }
    const std::string& s = v.as_string().str;
    names::RootfsParse parsed = names::parse_rootfs_source(s, org_dir);
    // An image of the store (corral image import): looked up when a run starts.
    if (const auto* problem = std::get_if<names::RootfsProblem>(&parsed)) {
        switch (*problem) {
            case names::RootfsProblem::bad_image_name:
                c.bad(v, key, in_quotes(s),
                      "\"image:NAME\" with NAME of A-Z a-z 0-9 . _ - (starting with a letter or digit)");
                break;
            case names::RootfsProblem::empty:
                c.bad(v, key, "\"\"", "\"host\" or a directory holding the image's root");
                break;
        }
        return std::nullopt;
    }
    const names::RootfsSource& source = std::get<names::RootfsSource>(parsed);
    if (const auto* dir = std::get_if<names::DirRootfs>(&source)) {
        struct stat st {};
        if (::stat(dir->path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
            c.bad(v, key, in_quotes(s) + ": " + dir->path + " is not a directory",
                  "\"host\" or a directory holding the image's root");
            return std::nullopt;
        }
    }
    return source;
}

std::optional<std::string> account_id_value(Checker& c, const toml::value& v, const std::string& key) {
    auto s = string_of(c, v, key);
    static const std::regex ok("[A-Za-z0-9_-]{1,128}");
    if (s && !std::regex_match(*s, ok)) {
        c.bad(v, key, in_quotes(*s), "an account id of letters, digits, '-', '_'");
        return std::nullopt;
    }
    return s;
}

std::map<std::string, std::string> env_table(Checker& c, const toml::value& table) {
    std::map<std::string, std::string> env;
    static const std::regex name_ok("[A-Za-z_][A-Za-z0-9_]*");
    for (const auto& [k, vp] : in_file_order(table)) {
        const std::string key = "env." + k;
        if (!std::regex_match(k, name_ok)) {
            c.note(*vp, key, "not a variable name, allowed: [A-Za-z_][A-Za-z0-9_]*");
            continue;
        }
        if (names::is_reserved_env(k)) {
            c.note(*vp, key,
                   "set by corral itself (proxy, CA, agent home, credentials or telemetry), allowed: any other "
                   "variable");
            continue;
        }
        auto s = string_of(c, *vp, key);
        if (!s) continue;
        if (s->find('\0') != std::string::npos) {
            c.note(*vp, key, "contains a NUL byte");
            continue;
        }
        env[k] = *s;
    }
    return env;
}

// The gateway parser insists on a listener, which a stand-alone gateway
// config needs; in an organisation the gateway is embedded in `corral run` by
// default, so org.toml may leave [gateway] (or its listeners) out. The daemon
// (`corral gateway`) then listens on the documented default socket.
toml::value with_default_listener(const toml::value& root) {
    const auto& top = root.as_table();
    auto gw = top.find("gateway");
    bool has_listener = false;
    if (gw != top.end() && gw->second.is_table()) {
        const auto& t = gw->second.as_table();
        has_listener = t.count("listen_unix") || t.count("listen_tcp");
    }
    if (has_listener || (gw != top.end() && !gw->second.is_table())) return root;
    toml::value copy = root;
    if (gw == top.end()) copy.as_table()["gateway"] = toml::table{};
    copy.as_table()["gateway"].as_table()["listen_unix"] = std::string(default_gateway_socket);
    return copy;
}

}  // namespace

// Transparent capture's switch (docs/capture.md), in org.toml and worker.toml.
constexpr std::string_view kCaptureAllowed =
    "a boolean (true: programs that ignore the proxy variables reach the granted hosts too; "
    "false: only through the proxy; default: true when the run has grants)";

CredentialNames check_org_document(const std::string& file, const toml::value& root, OrgConfig& org,
                                   std::vector<Diagnostic>& errors) {
    Checker c(file, errors);
    if (!root.is_table()) return CredentialNames{{}, false};
    c.unknown_keys(root, "",
                   {"engine", "rootfs", "capture", "sandbox", "budget", "prices", "gateway", "credentials", "grants", "mcp"},
                   Diagnostic::Form::unlisted_key);
    for (const auto& [k, vp] : in_file_order(root)) {
        const toml::value& v = *vp;
        if (k == "engine" && is_table(c, v, k)) {
            c.unknown_keys(v, "engine.", {"agent", "model", "chatgpt_account_id"}, Diagnostic::Form::unlisted_key);
            for (const auto& [ek, evp] : in_file_order(v)) {
                const std::string key = "engine." + ek;
                if (ek == "agent") {
                    org.engine.agent = agent_value(c, *evp, key);
                    org.engine.agent_where = file + ":" + std::to_string(line_of(*evp));
                } else if (ek == "model") {
                    if (auto m = model_value(c, *evp, key)) org.engine.model = *m;
                } else if (ek == "chatgpt_account_id") {
                    if (auto id = account_id_value(c, *evp, key)) org.engine.chatgpt_account_id = *id;
                }
            }
        } else if (k == "rootfs") {
            if (auto r = rootfs_value(c, v, k, org.dir)) org.rootfs = *r;
        } else if (k == "capture") {
            if (v.is_boolean()) org.capture = v.as_boolean();
            else c.wrong_type(v, k, std::string(kCaptureAllowed));
        } else if (k == "sandbox" && is_table(c, v, k)) {
            org.limits = sandbox_limits(c, v, "sandbox.");
        } else if (k == "budget") {
            org.budget = check_budget_table(v, c);
        } else if (k == "prices") {
            org.prices = check_prices_table(v, c);
        }
    }
    GatewaySectionsCheck gw = check_gateway_sections(with_default_listener(root), file);
    errors.insert(errors.end(), gw.errors.begin(), gw.errors.end());
    org.gateway = std::move(gw.config);
    // [mcp] after the credentials it may name; its rules, pins and caps
    // checked against org.toml's own servers.
    if (auto mcp = root.as_table().find("mcp"); mcp != root.as_table().end()) {
        org.tools = check_mcp_table(mcp->second, gw.credentials, c);
        check_tools(org.tools, "", "", errors);
    }
    return gw.credentials;
}

void check_worker_document(const std::string& file, const toml::value& root, const CredentialNames& org_credentials,
                           WorkerConfig& w, const std::string& org_dir, std::vector<Diagnostic>& errors) {
    Checker c(file, errors);
    if (!root.is_table()) return;
    c.unknown_keys(root, "",
                   {"agent", "model", "rootfs", "description", "review", "capture", "sandbox", "env", "grants", "channels",
                    "budget", "prices", "mcp"},
                   Diagnostic::Form::unlisted_key);
    for (const auto& [k, vp] : in_file_order(root)) {
        const toml::value& v = *vp;
        if (k == "agent") {
            if (v.is_string() && v.as_string().str == no_agent) {
                w.egress_only = true;
            } else if (v.is_string() && !parse_agent_kind(v.as_string().str)) {
                c.bad(v, k, in_quotes(v.as_string().str), std::string(worker_agent_allowed));
            } else {
                w.agent = agent_value(c, v, k);
            }
            w.agent_where = file + ":" + std::to_string(line_of(v));
        } else if (k == "model") {
            if (auto m = model_value(c, v, k)) w.model = *m;
        } else if (k == "rootfs") {
            if (auto r = rootfs_value(c, v, k, org_dir)) w.rootfs = *r;
        } else if (k == "description") {
            if (auto s = string_of(c, v, k)) w.description = *s;
        } else if (k == "review") {
            if (v.is_boolean()) w.review = v.as_boolean();
            else c.wrong_type(v, k, "a boolean (true: a --workspace is reviewed, as with --review)");
        } else if (k == "capture") {
            if (v.is_boolean()) w.capture = v.as_boolean();
            else c.wrong_type(v, k, std::string(kCaptureAllowed));
        } else if (k == "sandbox" && is_table(c, v, k)) {
            w.limits = sandbox_limits(c, v, "sandbox.");
        } else if (k == "env" && is_table(c, v, k)) {
            w.env = env_table(c, v);
        } else if (k == "channels" && is_table(c, v, k)) {
            w.channels = v;
            w.channels_where = file + ":" + std::to_string(line_of(v));
        } else if (k == "budget") {
            w.budget = check_budget_table(v, c);
        } else if (k == "prices") {
            w.prices = check_prices_table(v, c);
        } else if (k == "mcp") {
            w.tools = check_mcp_table(v, org_credentials, c);
        }
    }
    auto grants = root.as_table().find("grants");
    if (grants == root.as_table().end()) return;
    // The worker's [[grants]] use the gateway's grant syntax unchanged: parse
    // them with the gateway's parser, a grant's `credential` checked against
    // what org.toml defines. Checked even when org.toml has errors of its own,
    // so one `corral validate` shows every problem.
    w.grants = check_grants(grants->second, org_credentials, c);
    // Checked on the file itself, not on the parsed grants: a grant with other
    // problems (bad routes, say) is not among them, and this one must be
    // reported too.
    if (grants->second.is_array()) {
        std::size_t index = 0;
        for (const auto& raw : grants->second.as_array()) {
            if (raw.is_table() && raw.as_table().count("identities"))
                c.note(raw, "grants[" + std::to_string(index) + "].identities",
                       "not allowed in worker.toml, allowed: leave it out (a worker's grants apply to that worker "
                       "only)");
            ++index;
        }
    }
    for (auto& g : w.grants) g.identities = {w.name};
}

}  // namespace corral::config
