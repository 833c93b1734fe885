#include "config/org_config.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <regex>
#include <sstream>

#include "base/parse.hpp"
#include "config/toml_text.hpp"
#include "names/box_environment.hpp"
#include "names/identity.hpp"

namespace corral::config {

namespace fs = std::filesystem;

std::string_view to_string(AgentKind k) {
    switch (k) {
    case AgentKind::pi: return "pi";
    case AgentKind::claude: return "claude";
    case AgentKind::codex: return "codex";
    }
    return "?";
}

std::optional<AgentKind> parse_agent_kind(std::string_view text) {
    if (text == "pi") return AgentKind::pi;
    if (text == "claude") return AgentKind::claude;
    if (text == "codex") return AgentKind::codex;
    return std::nullopt;
}

std::string Diagnostic::text() const {
    if (file.empty()) return message;
    std::string s = file;
    if (line > 0) s += ":" + std::to_string(line);
    s += ": ";
    if (!key.empty()) s += "key '" + key + "': ";
    s += message;
    return s;
}

SandboxLimits overlay_limits(const SandboxLimits& base, const SandboxLimits& over) {
    SandboxLimits r = base;
    if (over.memory_bytes) r.memory_bytes = over.memory_bytes;
    if (over.pids) r.pids = over.pids;
    if (over.cpus) r.cpus = over.cpus;
    if (over.timeout) r.timeout = over.timeout;
    if (over.tmp_bytes) r.tmp_bytes = over.tmp_bytes;
    return r;
}

bool grant_applies_to_worker(const Grant& g, const std::string& worker) {
    if (g.identities.empty()) return true;
    for (const auto& pattern : g.identities)
        if (names::identity_pattern_may_match_worker(pattern, worker)) return true;
    return false;
}

namespace {

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

std::size_t line_of(const toml::value& v) { return v.location().line(); }

std::string where(const std::string& file, const toml::value& v) {
    return file + ":" + std::to_string(line_of(v));
}

// Table entries in file order, so diagnostics come out in the order a reader meets them.
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

// Collects diagnostics for one file.
struct FileChecker {
    std::string file;
    std::vector<Diagnostic>& errors;

    void error(std::size_t line, std::string key, std::string message) {
        errors.push_back({file, line, std::move(key), std::move(message)});
    }
    void error(const toml::value& v, std::string key, std::string message) {
        error(line_of(v), std::move(key), std::move(message));
    }

    // Unknown keys are errors at every level.
    void only_keys(const toml::value& table, const std::string& prefix,
                   const std::vector<std::string>& allowed) {
        for (const auto& [k, v] : in_file_order(table)) {
            if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
                error(*v, prefix + k, "unknown key, allowed: " + join(allowed, " | "));
        }
    }

    bool is_table(const toml::value& v, const std::string& key) {
        if (v.is_table()) return true;
        error(v, key, std::string("got ") + type_name(v) + ", expected a table");
        return false;
    }

    std::optional<std::string> string_of(const toml::value& v, const std::string& key) {
        if (v.is_string()) return v.as_string().str;
        error(v, key, std::string("got ") + type_name(v) + ", expected a string");
        return std::nullopt;
    }
};

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

// Sizes: "2GiB" or an integer number of bytes.
std::optional<std::uint64_t> size_value(FileChecker& c, const toml::value& v, const std::string& key) {
    if (v.is_integer()) {
        if (v.as_integer() > 0) return static_cast<std::uint64_t>(v.as_integer());
        c.error(v, key, "got " + std::to_string(v.as_integer()) + ", allowed: a positive size like 512MiB or 2G, or bytes");
        return std::nullopt;
    }
    if (!v.is_string()) {
        c.error(v, key, std::string("got ") + type_name(v) + ", allowed: a size string like \"512MiB\" or an integer of bytes");
        return std::nullopt;
    }
    try {
        auto n = parse_size(v.as_string().str);
        if (n == 0) {
            c.error(v, key, "got \"0\", allowed: a positive size like 512MiB");
            return std::nullopt;
        }
        return n;
    } catch (const UsageError& e) {
        c.error(v, key, e.what());
        return std::nullopt;
    }
}

SandboxLimits sandbox_limits(FileChecker& c, const toml::value& table, const std::string& prefix) {
    SandboxLimits l;
    c.only_keys(table, prefix, {"memory", "pids", "cpus", "timeout", "tmp_size"});
    for (const auto& [k, vp] : in_file_order(table)) {
        const toml::value& v = *vp;
        const std::string key = prefix + k;
        if (k == "memory") {
            l.memory_bytes = size_value(c, v, key);
        } else if (k == "tmp_size") {
            l.tmp_bytes = size_value(c, v, key);
        } else if (k == "pids") {
            if (v.is_integer() && v.as_integer() > 0)
                l.pids = static_cast<std::uint64_t>(v.as_integer());
            else
                c.error(v, key, std::string("got ") + (v.is_integer() ? std::to_string(v.as_integer()) : type_name(v)) +
                                    ", allowed: a positive integer (maximum number of processes)");
        } else if (k == "cpus") {
            double d = v.is_floating() ? v.as_floating() : v.is_integer() ? static_cast<double>(v.as_integer()) : -1;
            if ((v.is_floating() || v.is_integer()) && d > 0 && std::isfinite(d)) {
                l.cpus = d;
            } else {
                std::string got = type_name(v);
                if (v.is_integer()) got = std::to_string(v.as_integer());
                else if (v.is_floating()) got = toml::format(v);
                c.error(v, key, "got " + got + ", allowed: a positive number of CPUs like 1.5");
            }
        } else if (k == "timeout") {
            if (v.is_integer() && v.as_integer() > 0) {
                l.timeout = std::chrono::seconds(v.as_integer());
            } else if (v.is_string()) {
                try {
                    auto d = parse_duration(v.as_string().str);
                    if (d.count() > 0) l.timeout = d;
                    else c.error(v, key, "got \"" + v.as_string().str + "\", allowed: a positive duration like 30m");
                } catch (const UsageError& e) {
                    c.error(v, key, e.what());
                }
            } else {
                // An integer here is not positive: say which one, not "an integer".
                c.error(v, key, "got " + (v.is_integer() ? std::to_string(v.as_integer()) : std::string(type_name(v))) +
                                    ", allowed: a positive duration like \"30m\" or a positive integer of seconds");
            }
        }
    }
    return l;
}

// An enum: a wrong value and a wrong type get the same answer, naming the allowed values.
std::optional<AgentKind> agent_value(FileChecker& c, const toml::value& v, const std::string& key) {
    const std::string allowed = ", allowed: " + std::string(agent_kinds_allowed);
    if (!v.is_string()) {
        c.error(v, key, std::string("got ") + type_name(v) + allowed);
        return std::nullopt;
    }
    auto k = parse_agent_kind(v.as_string().str);
    if (!k) c.error(v, key, "got " + in_quotes(v.as_string().str) + allowed);
    return k;
}

// Names go onto the CLI's command line: no leading '-', no spaces.
std::optional<std::string> model_value(FileChecker& c, const toml::value& v, const std::string& key) {
    auto s = c.string_of(v, key);
    if (!s) return std::nullopt;
    static const std::regex ok("[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}");
    if (!std::regex_match(*s, ok)) {
        c.error(v, key, "got " + in_quotes(*s) + ", allowed: a model name of letters, digits and . _ : / @ - (not starting with '-')");
        return std::nullopt;
    }
    return s;
}

// "host", or a directory (relative paths are relative to the org directory).
std::optional<std::string> rootfs_value(FileChecker& c, const toml::value& v, const std::string& key,
                                        const std::string& org_dir) {
    if (!v.is_string()) {
        c.error(v, key, std::string("got ") + type_name(v) +
                            ", allowed: \"host\" | a directory path holding the image's root (absolute, or relative to "
                            "the organisation directory)");
        return std::nullopt;
    }
    auto s = std::optional<std::string>(v.as_string().str);
    if (*s == "host") return s;
    if (s->empty()) {
        c.error(v, key, "got \"\", allowed: \"host\" or a directory holding the image's root");
        return std::nullopt;
    }
    fs::path p = fs::path(*s).is_absolute() ? fs::path(*s) : fs::path(org_dir) / *s;
    p = p.lexically_normal();
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        c.error(v, key, "got " + in_quotes(*s) + ": " + p.string() +
                            " is not a directory, allowed: \"host\" or a directory holding the image's root");
        return std::nullopt;
    }
    return p.string();
}

std::map<std::string, std::string> env_table(FileChecker& c, const toml::value& table) {
    std::map<std::string, std::string> env;
    static const std::regex name_ok("[A-Za-z_][A-Za-z0-9_]*");
    for (const auto& [k, vp] : in_file_order(table)) {
        const std::string key = "env." + k;
        if (!std::regex_match(k, name_ok)) {
            c.error(*vp, key, "not a variable name, allowed: [A-Za-z_][A-Za-z0-9_]*");
            continue;
        }
        if (names::is_reserved_env(k)) {
            c.error(*vp, key, "set by corral itself (proxy, CA, agent home, credentials or telemetry), allowed: any other variable");
            continue;
        }
        auto s = c.string_of(*vp, key);
        if (!s) continue;
        if (s->find('\0') != std::string::npos) {
            c.error(*vp, key, "contains a NUL byte");
            continue;
        }
        env[k] = *s;
    }
    return env;
}

// The document, or its one problem as a Diagnostic (config/toml_text.hpp).
std::optional<toml::value> document_or_error(TomlDocument doc, const std::string& file,
                                             std::vector<Diagnostic>& errors) {
    if (!doc.root) errors.push_back({file, doc.line, "", doc.problem});
    return std::move(doc.root);
}

std::optional<toml::value> parse_file(const std::string& file, std::vector<Diagnostic>& errors) {
    return document_or_error(parse_toml_file(file), file, errors);
}

std::optional<toml::value> parse_text(std::string_view text, const std::string& file, std::vector<Diagnostic>& errors) {
    return document_or_error(parse_toml_text(text, file), file, errors);
}

// The gateway parser's lines are already "FILE:LINE: key '...': ...".
void add_gateway_errors(const std::vector<std::string>& lines, std::vector<Diagnostic>& errors) {
    for (const auto& line : lines) {
        Diagnostic d;
        d.message = line;
        errors.push_back(std::move(d));
    }
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

// Returns the credential names org.toml writes: the workers' grants are
// checked against them (also when org.toml's own sections have errors).
CredentialNames parse_org_file(const std::string& file, const toml::value& root, OrgConfig& org,
                               std::vector<Diagnostic>& errors) {
    FileChecker c{file, errors};
    if (!root.is_table()) return CredentialNames{{}, false};
    c.only_keys(root, "", {"engine", "rootfs", "sandbox", "budget", "prices", "gateway", "credentials", "grants"});
    for (const auto& [k, vp] : in_file_order(root)) {
        const toml::value& v = *vp;
        if (k == "engine" && c.is_table(v, k)) {
            c.only_keys(v, "engine.", {"agent", "model", "chatgpt_account_id"});
            for (const auto& [ek, evp] : in_file_order(v)) {
                const std::string key = "engine." + ek;
                if (ek == "agent") {
                    org.engine.agent = agent_value(c, *evp, key);
                    org.engine.agent_where = where(file, *evp);
                } else if (ek == "model") {
                    if (auto m = model_value(c, *evp, key)) org.engine.model = *m;
                } else if (ek == "chatgpt_account_id") {
                    auto s = c.string_of(*evp, key);
                    static const std::regex ok("[A-Za-z0-9_-]{1,128}");
                    if (s && std::regex_match(*s, ok)) org.engine.chatgpt_account_id = *s;
                    else if (s) c.error(*evp, key, "got " + in_quotes(*s) + ", allowed: an account id of letters, digits, '-', '_'");
                }
            }
        } else if (k == "rootfs") {
            if (auto r = rootfs_value(c, v, k, org.dir)) org.rootfs = *r;
        } else if (k == "sandbox" && c.is_table(v, k)) {
            org.limits = sandbox_limits(c, v, "sandbox.");
        } else if (k == "budget" || k == "prices") {
            std::vector<std::string> lines;
            if (k == "budget") org.budget = check_budget_table(v, file, lines);
            else org.prices = check_prices_table(v, file, lines);
            add_gateway_errors(lines, errors);
        }
    }
    GatewaySectionsCheck gw = check_gateway_sections(with_default_listener(root), file);
    add_gateway_errors(gw.errors, errors);
    org.gateway = std::move(gw.config);
    return gw.credentials;
}

void parse_worker_file(const std::string& file, const toml::value& root, const CredentialNames& org_credentials,
                       WorkerConfig& w, const std::string& org_dir, std::vector<Diagnostic>& errors) {
    FileChecker c{file, errors};
    if (!root.is_table()) return;
    c.only_keys(root, "", {"agent", "model", "rootfs", "description", "sandbox", "env", "grants", "channels", "budget",
                           "prices"});
    for (const auto& [k, vp] : in_file_order(root)) {
        const toml::value& v = *vp;
        if (k == "agent") {
            w.agent = agent_value(c, v, k);
            w.agent_where = where(file, v);
        } else if (k == "model") {
            if (auto m = model_value(c, v, k)) w.model = *m;
        } else if (k == "rootfs") {
            if (auto r = rootfs_value(c, v, k, org_dir)) w.rootfs = *r;
        } else if (k == "description") {
            if (auto s = c.string_of(v, k)) w.description = *s;
        } else if (k == "sandbox" && c.is_table(v, k)) {
            w.limits = sandbox_limits(c, v, "sandbox.");
        } else if (k == "env" && c.is_table(v, k)) {
            w.env = env_table(c, v);
        } else if (k == "channels" && c.is_table(v, k)) {
            w.channels = v;
            w.channels_where = where(file, v);
        } else if (k == "budget" || k == "prices") {
            std::vector<std::string> lines;
            if (k == "budget") w.budget = check_budget_table(v, file, lines);
            else w.prices = check_prices_table(v, file, lines);
            add_gateway_errors(lines, errors);
        }
    }
    auto grants = root.as_table().find("grants");
    if (grants == root.as_table().end()) return;
    // The worker's [[grants]] use the gateway's grant syntax unchanged: parse
    // them with the gateway's parser, a grant's `credential` checked against
    // what org.toml defines. Checked even when org.toml has errors of its own,
    // so one `corral validate` shows every problem.
    std::vector<std::string> grant_errors;
    w.grants = check_grants(grants->second, file, org_credentials, grant_errors);
    add_gateway_errors(grant_errors, errors);
    // Checked on the file itself, not on the parsed grants: a grant with other
    // problems (bad routes, say) is not among them, and this one must be
    // reported too.
    if (grants->second.is_array()) {
        std::size_t index = 0;
        for (const auto& raw : grants->second.as_array()) {
            if (raw.is_table() && raw.as_table().count("identities"))
                errors.push_back({file, line_of(raw), "grants[" + std::to_string(index) + "].identities",
                                  "not allowed in worker.toml, allowed: leave it out (a worker's grants apply to "
                                  "that worker only)"});
            ++index;
        }
    }
    for (auto& g : w.grants) g.identities = {w.name};
}

}  // namespace

OrgCheck check_org(const std::string& dir) {
    OrgCheck out;
    OrgConfig& org = out.org;
    org.dir = fs::path(dir).lexically_normal().string();
    if (org.dir.size() > 1 && org.dir.back() == '/') org.dir.pop_back();
    org.org_file = (fs::path(org.dir) / "org.toml").string();

    struct stat st {};
    if (::stat(org.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        out.errors.push_back({org.dir, 0, "", "not a directory, allowed: an organisation directory holding org.toml and workers/"});
        return out;
    }
    if (::stat(org.org_file.c_str(), &st) != 0) {
        out.errors.push_back({org.org_file, 0, "", "missing: every organisation directory needs an org.toml (it may be empty)"});
        return out;
    }
    // An org.toml that cannot be read still lets every worker be checked
    // (their grants' credential names then go unchecked).
    auto org_root = parse_file(org.org_file, out.errors);
    CredentialNames org_credentials{{}, false};
    if (org_root) org_credentials = parse_org_file(org.org_file, *org_root, org, out.errors);

    fs::path workers_dir = fs::path(org.dir) / "workers";
    std::error_code ec;
    if (fs::exists(workers_dir, ec)) {
        if (!fs::is_directory(workers_dir, ec)) {
            out.errors.push_back({workers_dir.string(), 0, "", "not a directory, allowed: a directory with one sub-directory per worker"});
        } else {
            std::vector<fs::path> entries;
            for (const auto& e : fs::directory_iterator(workers_dir, ec)) entries.push_back(e.path());
            if (ec) out.errors.push_back({workers_dir.string(), 0, "", "cannot list: " + ec.message()});
            std::sort(entries.begin(), entries.end());
            for (const auto& p : entries) {
                std::string name = p.filename().string();
                if (auto why = names::worker_name_problem(name); !why.empty()) {
                    out.errors.push_back({p.string(), 0, "", "invalid worker name " + in_quotes(name) + ": " + why});
                    continue;
                }
                if (!fs::is_directory(p, ec)) {
                    out.errors.push_back({p.string(), 0, "", "not a directory, allowed: workers/NAME/worker.toml"});
                    continue;
                }
                std::string file = (p / "worker.toml").string();
                if (!fs::exists(file, ec)) {
                    out.errors.push_back({file, 0, "", "missing: a worker directory needs a worker.toml (it may be empty)"});
                    continue;
                }
                auto root = parse_file(file, out.errors);
                if (!root) continue;
                WorkerConfig w;
                w.name = name;
                w.file = file;
                parse_worker_file(file, *root, org_credentials, w, org.dir, out.errors);
                org.workers.emplace(name, std::move(w));
            }
        }
    }

    // A USD budget needs the price of the model the worker asks for: checked
    // once the organisation's and the worker's budgets and prices are known.
    for (const auto& [name, w] : org.workers) {
        const std::string& model = w.model.empty() ? org.engine.model : w.model;
        auto m = resolve_metering(org.budget, org.prices, w.budget, w.prices);
        if (auto why = usd_budget_problem(m, model); !why.empty()) {
            const bool own = w.budget.run.usd_micros || w.budget.worker.usd_micros;
            out.errors.push_back({own ? w.file : org.org_file, 0, "budget.usd", "worker '" + name + "': " + why, name});
        }
    }

    // Warnings need the resolved agent, so they come after everything is read.
    for (const auto& [name, w] : org.workers) {
        AgentKind agent = w.agent.value_or(org.engine.agent.value_or(AgentKind::pi));
        if (w.channels && agent != AgentKind::pi) {
            // Exactly the sentence operators were promised; the worker is in
            // the file name and in Diagnostic::worker, its agent in
            // `corral validate`'s "agent:" line right above the warning.
            Diagnostic d{w.file, line_of(*w.channels), "channels", std::string(channels_warning), name};
            out.warnings.push_back(d);
        }
        auto openai = org.gateway.credentials.find("openai");
        if (agent == AgentKind::codex && openai != org.gateway.credentials.end() &&
            openai->second.kind == CredentialKind::oauth_token && org.engine.chatgpt_account_id.empty()) {
            out.warnings.push_back({org.org_file, 0, "engine.chatgpt_account_id",
                                    "worker '" + name + "' runs codex in ChatGPT mode without the account id; "
                                    "the real chatgpt.com only routes the real (non-secret) account id, set it here",
                                    name});
        }
    }
    org.warnings = out.warnings;
    return out;
}

CredentialNames check_org_toml(std::string_view text, const std::string& file, OrgConfig& org,
                               std::vector<Diagnostic>& errors) {
    auto root = parse_text(text, file, errors);
    if (!root) return CredentialNames{{}, false};
    return parse_org_file(file, *root, org, errors);
}

void check_worker_toml(std::string_view text, const std::string& file, const CredentialNames& org_credentials,
                       const std::string& org_dir, WorkerConfig& w, std::vector<Diagnostic>& errors) {
    if (auto root = parse_text(text, file, errors)) parse_worker_file(file, *root, org_credentials, w, org_dir, errors);
}

OrgConfig load_org(const std::string& dir) {
    OrgCheck c = check_org(dir);
    if (!c.errors.empty()) {
        std::string msg;
        for (const auto& d : c.errors)
            msg += (msg.empty() ? "" : "\n") + d.text();
        throw ConfigError(msg);
    }
    return std::move(c.org);
}

ResolvedWorker resolve_worker(const OrgConfig& org, const std::string& name) {
    auto it = org.workers.find(name);
    if (it == org.workers.end()) {
        std::vector<std::string> known;
        for (const auto& [n, w] : org.workers) known.push_back(n);
        throw UsageError("no worker " + in_quotes(name) + " in " + org.dir + "/workers, allowed: " +
                         (known.empty() ? std::string("(none defined)") : join(known, " | ")));
    }
    const WorkerConfig& w = it->second;
    ResolvedWorker r;
    r.name = name;
    if (w.agent) {
        r.agent = *w.agent;
        r.agent_source = w.agent_where;
    } else if (org.engine.agent) {
        r.agent = *org.engine.agent;
        r.agent_source = org.engine.agent_where + " [engine]";
    } else {
        r.agent = AgentKind::pi;
        r.agent_source = "built-in default";
    }
    r.model = w.model.empty() ? org.engine.model : w.model;
    r.chatgpt_account_id = org.engine.chatgpt_account_id;
    r.rootfs = w.rootfs.empty() ? org.rootfs : w.rootfs;
    r.limits = overlay_limits(org.limits, w.limits);
    for (const auto& g : org.gateway.grants)
        if (grant_applies_to_worker(g, name)) r.grants.push_back(g);
    r.grants.insert(r.grants.end(), w.grants.begin(), w.grants.end());
    r.env = w.env;
    r.metering = resolve_metering(org.budget, org.prices, w.budget, w.prices);
    r.has_channels = w.channels.has_value();
    for (const auto& d : org.warnings)
        if (d.worker == name) r.warnings.push_back(d);
    return r;
}

CredentialStatus credential_status(const GatewayConfig& gw, const std::string& name) {
    CredentialStatus s;
    auto it = gw.credentials.find(name);
    if (it == gw.credentials.end()) {
        s.problem = "not defined in org.toml";
        return s;
    }
    s.defined = true;
    s.kind = it->second.kind;
    s.source = it->second.env.empty() ? "file " + it->second.file : "env " + it->second.env;
    // Same rules as the gateway itself, so "available" here means the gateway
    // will accept it; the secret read is dropped at once.
    GatewayConfig one;
    one.credentials.emplace(name, it->second);
    try {
        auto secrets = load_credential_secrets(one);
        s.available = secrets.count(name) == 1;
        for (auto& [n, secret] : secrets) explicit_bzero(secret.data(), secret.size());
        if (!s.available) s.problem = "no secret read";
    } catch (const std::exception& e) {
        s.problem = e.what();
    }
    if (!s.available) {
        const auto& c = it->second;
        const std::string euid = std::to_string(::geteuid());
        if (!c.env.empty())
            s.fix = "set " + c.env + " to the secret (non-empty, no spaces) in the environment corral runs in, "
                    "or use file = \"/etc/corral/" + name + ".key\" instead (owned by uid " + euid +
                    ", mode 0600)";
        else
            s.fix = "put the secret alone in " + c.file + ", a regular file (not a symlink) owned by uid " + euid +
                    " (the user corral runs as) with mode 0600 or 0400: chown " + euid + " " + c.file +
                    " && chmod 600 " + c.file;
    }
    return s;
}

}  // namespace corral::config
