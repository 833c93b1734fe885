// run/run_journal.cpp — see run_journal.hpp.
#include "run/run_journal.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "journal/covered_files.hpp"
#include "run/run_index.hpp"

namespace corral::run {

nlohmann::json admission_payload(const supervisor::RunRecord& record, const supervisor::SandboxSpec& spec) {
    using nlohmann::json;
    json run = supervisor::to_json(record);
    json env_names = json::array();
    for (const auto& kv : spec.image_env) env_names.push_back(kv.first);
    for (const auto& kv : spec.env) env_names.push_back(kv.first);
    json limits = run["limits"];
    limits.erase("cpus");
    limits["cpus_milli"] = record.limits.cpus ? json(static_cast<std::int64_t>(std::llround(*record.limits.cpus * 1000)))
                                              : json(nullptr);
    // Not the UID/GID: the sandbox leases them after this record is written
    // (the "started" record has them).
    json out{{"id", record.id},         {"argv", record.argv},        {"hostname", record.hostname},
             {"rootfs", record.rootfs}, {"limits", limits},           {"env_names", env_names},
             {"workspace", run["workspace"]}, {"started_at", run["started_at"]}};
    for (const char* f : {"kind", "worker", "identity", "agent", "cli_version", "grants", "binds", "image", "session"})
        if (run.contains(f)) out[f] = run[f];
    return out;
}

nlohmann::json terminal_payload(const supervisor::RunRecord& record, const std::string& run_dir,
                                const std::string& stdout_log_name) {
    using nlohmann::json;
    json run = supervisor::to_json(record);
    json steps = json::array();
    for (const auto& s : record.teardown.steps) steps.push_back({{"step", s.step}, {"ok", s.ok}});
    return {{"id", record.id},
            {"exit_code", run["exit_code"]},
            {"signal", run["signal"]},
            {"deadline_hit", record.deadline_hit},
            {"outcome", record.outcome ? std::string(supervisor::outcome_name(*record.outcome)) : std::string()},
            {"status", record.status},
            {"teardown", record.teardown.verdict()},
            {"teardown_steps", steps},
            {"output",
             {{"stdout", {{"bytes", record.stdout_bytes}, {"logged", record.stdout_logged}, {"log", stdout_log_name},
                          {"log_sha256", journal::file_sha256(run_dir + "/" + stdout_log_name)}}},
              {"stderr", {{"bytes", record.stderr_bytes}, {"logged", record.stderr_logged}, {"log", "stderr.log"},
                          {"log_sha256", journal::file_sha256(run_dir + "/stderr.log")}}}}},
            {"peak_memory_bytes", run["peak_memory_bytes"]},
            {"peak_pids", run["peak_pids"]},
            {"oom_killed", record.oom_killed},
            {"pids_limit_hits", record.pids_limit_hits},
            {"cpu_usec", run["cpu_usec"]},
            {"ended_at", run["ended_at"]},
            {"attested", record.extra.value("attested", json(nullptr))}};
}

std::unique_ptr<journal::SharedJournal> open_run_journal(const std::string& state_dir, const std::string& run_dir) {
    journal::SigningKey key = journal::SigningKey::load_or_create(state_dir);
    return std::make_unique<journal::SharedJournal>(
        journal::JournalWriter::create(run_dir + "/" + kJournalFile, key, journal::shared_writer_options()));
}

std::vector<std::string> recover_lost_runs(const std::string& state_dir) {
    std::vector<std::string> out;
    std::optional<journal::SigningKey> key;
    for (const auto& e : unended_runs(state_dir)) {
        if (e.state != "lost") continue;
        std::string path = e.run_dir + "/" + kJournalFile;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0 || journal::ends_with_terminal_record(path)) {
            // Never opened (lost before), or ended by an earlier start.
            mark_run_ended(state_dir, e.id);
            continue;
        }
        try {
            if (!key) key = journal::SigningKey::load_or_create(state_dir);
            if (journal::append_recovered(path, *key, "supervisor lost",
                                          {{"id", e.id}, {"found_by", "corral run"}}))
                out.push_back("run " + e.id + " was lost (its supervisor is gone): recovered record added to " + path);
            mark_run_ended(state_dir, e.id);
        } catch (const std::exception& ex) {
            out.push_back("run " + e.id + " was lost; its journal " + path + " could not be ended: " + ex.what());
        }
    }
    return out;
}

}  // namespace corral::run
