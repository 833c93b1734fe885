// The organisation directory: finding and reading org.toml and every
// workers/NAME/worker.toml, the checks across files (a USD budget's price,
// the warnings), and load_org, where the diagnostics become a ConfigError.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "config/checker.hpp"
#include "config/mcp_config.hpp"
#include "config/org_config.hpp"
#include "config/org_schema.hpp"
#include "config/toml_text.hpp"
#include "names/identity.hpp"

namespace corral::config {
namespace {

namespace fs = std::filesystem;

// The document, or its one problem as a Diagnostic (config/toml_text.hpp).
std::optional<toml::value> document_or_error(TomlDocument doc, const std::string& file,
                                             std::vector<Diagnostic>& errors) {
    if (!doc.root) Checker(file, errors).note(doc.line, "", doc.problem);
    return std::move(doc.root);
}

std::optional<toml::value> parse_file(const std::string& file, std::vector<Diagnostic>& errors) {
    return document_or_error(parse_toml_file(file), file, errors);
}

std::optional<toml::value> parse_text(std::string_view text, const std::string& file, std::vector<Diagnostic>& errors) {
    return document_or_error(parse_toml_text(text, file), file, errors);
}

// A problem with a path as a whole (a missing file, a directory that is not one).
void path_problem(std::vector<Diagnostic>& errors, const std::string& path, std::string message) {
    Checker(path, errors).note(0, "", std::move(message));
}

}  // namespace

namespace {

// workers/NAME/worker.toml, each checked against the organisation's
// credentials, in name order; every problem names its path.
void check_workers(OrgCheck& out, const CredentialNames& org_credentials) {
    OrgConfig& org = out.org;
    fs::path workers_dir = fs::path(org.dir) / "workers";
    std::error_code ec;
    if (!fs::exists(workers_dir, ec)) return;
    if (!fs::is_directory(workers_dir, ec)) {
        path_problem(out.errors, workers_dir.string(), "not a directory, allowed: a directory with one sub-directory per worker");
        return;
    }
    std::vector<fs::path> entries;
    for (const auto& e : fs::directory_iterator(workers_dir, ec)) entries.push_back(e.path());
    if (ec) path_problem(out.errors, workers_dir.string(), "cannot list: " + ec.message());
    std::sort(entries.begin(), entries.end());
    for (const auto& p : entries) {
        std::string name = p.filename().string();
        if (auto bad = names::check_worker_name(name)) {
            path_problem(out.errors, p.string(), "invalid worker name \"" + name + "\": " + bad->problem);
            continue;
        }
        if (!fs::is_directory(p, ec)) {
            path_problem(out.errors, p.string(), "not a directory, allowed: workers/NAME/worker.toml");
            continue;
        }
        std::string file = (p / "worker.toml").string();
        if (!fs::exists(file, ec)) {
            path_problem(out.errors, file, "missing: a worker directory needs a worker.toml (it may be empty)");
            continue;
        }
        auto root = parse_file(file, out.errors);
        if (!root) continue;
        WorkerConfig w;
        w.name = name;
        w.file = file;
        check_worker_document(file, *root, org_credentials, w, org.dir, out.errors);
        org.workers.emplace(name, std::move(w));
    }
}

// A USD budget needs the price of the model the worker asks for: checked
// once the organisation's and the worker's budgets and prices are known.
void check_usd_budgets(OrgCheck& out) {
    const OrgConfig& org = out.org;
    for (const auto& [name, w] : org.workers) {
        const std::string& model = w.model.empty() ? org.engine.model : w.model;
        auto m = resolve_metering(org.budget, org.prices, w.budget, w.prices);
        if (auto bad = check_usd_budget(m, model)) {
            const bool own = w.budget.run.usd_micros || w.budget.worker.usd_micros;
            Checker(own ? w.file : org.org_file, out.errors).note(0, "budget.usd", "worker '" + name + "': " + bad->problem);
            out.errors.back().worker = name;
        }
    }
}

// Warnings need the resolved agent, so they come after everything is read.
void warn_about_agents(OrgCheck& out) {
    const OrgConfig& org = out.org;
    for (const auto& [name, w] : org.workers) {
        AgentKind agent = w.agent.value_or(org.engine.agent.value_or(AgentKind::pi));
        if (w.egress_only) continue;  // no agent: nothing below applies
        if (w.channels && agent != AgentKind::pi) {
            // Exactly the sentence operators were promised; the worker is in
            // the file name and in Diagnostic::worker, its agent in
            // `corral validate`'s "agent:" line right above the warning.
            Checker(w.file, out.warnings).note(*w.channels, "channels", std::string(channels_warning));
            out.warnings.back().worker = name;
        }
        auto openai = org.gateway.credentials.find("openai");
        if (agent == AgentKind::codex && openai != org.gateway.credentials.end() &&
            openai->second.kind == CredentialKind::oauth_token && org.engine.chatgpt_account_id.empty()) {
            Checker(org.org_file, out.warnings)
                .note(0, "engine.chatgpt_account_id",
                      "worker '" + name + "' runs codex in ChatGPT mode without the account id; the real chatgpt.com "
                      "only routes the real (non-secret) account id, set it here");
            out.warnings.back().worker = name;
        }
    }
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
        path_problem(out.errors, org.dir, "not a directory, allowed: an organisation directory holding org.toml and workers/");
        return out;
    }
    if (::stat(org.org_file.c_str(), &st) != 0) {
        path_problem(out.errors, org.org_file, "missing: every organisation directory needs an org.toml (it may be empty)");
        return out;
    }
    // An org.toml that cannot be read still lets every worker be checked
    // (their grants' credential names then go unchecked).
    auto org_root = parse_file(org.org_file, out.errors);
    CredentialNames org_credentials{{}, false};
    if (org_root) org_credentials = check_org_document(org.org_file, *org_root, org, out.errors);
    check_workers(out, org_credentials);
    // Each worker's [mcp] against the servers it has (org.toml's and its
    // own); not when org.toml could not be read (its servers are unknown).
    if (org_root)
        for (const auto& [name, w] : org.workers) {
            auto merged = merge_tools(org.tools, w.tools);
            check_tools(merged, name, w.file, out.errors);
        }
    check_usd_budgets(out);
    warn_about_agents(out);
    org.warnings = out.warnings;
    return out;
}

CredentialNames check_org_toml(std::string_view text, const std::string& file, OrgConfig& org,
                               std::vector<Diagnostic>& errors) {
    auto root = parse_text(text, file, errors);
    if (!root) return CredentialNames{{}, false};
    return check_org_document(file, *root, org, errors);
}

void check_worker_toml(std::string_view text, const std::string& file, const CredentialNames& org_credentials,
                       const std::string& org_dir, WorkerConfig& w, std::vector<Diagnostic>& errors) {
    if (auto root = parse_text(text, file, errors)) check_worker_document(file, *root, org_credentials, w, org_dir, errors);
}

OrgConfig load_org(const std::string& dir) {
    OrgCheck c = check_org(dir);
    throw_if_any(c.errors);
    return std::move(c.org);
}

}  // namespace corral::config
