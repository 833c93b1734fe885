// tools/cmd_runs.cpp — day-2 operations on the state dir's runs:
//   corral ps [--json] [-a]            the runs (running ones unless -a)
//   corral logs [-f] ID                a run's stdout and stderr logs
//   corral stop ID [--grace D]         a graceful stop, then the verified teardown
//   corral inspect ID                  run.json, with the run's live state
// Every one takes --state-dir DIR (default: CORRAL_STATE_DIR, /var/lib/corral).
// Runs are found by run/run_index.hpp; a stop goes to the run's supervisor,
// which does what it does for SIGTERM (docs/operations.md "Stopping a run").
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fd.hpp"
#include "cli/runs_args.hpp"
#include "base/parse.hpp"
#include "base/shell_words.hpp"
#include "base/terminal_text.hpp"
#include "base/sys_error.hpp"
#include "run/request.hpp"
#include "run/run_index.hpp"
#include "run/state_dir.hpp"
#include "supervisor/run_record.hpp"
#include "tools/commands.hpp"
#include "tools/session_client.hpp"

namespace corral::cli {

namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int kExitUsage = 2;
constexpr int kExitNotRunning = 1;


// The front of every command on one run (logs, stop, inspect): its options,
// --help, exactly one ID, the run that ID names; then `body`. Bad usage ends
// the command with one "corral CMD: ..." line and exit 2; an ID that names no
// run (or several) throws UsageError from find_run, which main reports (125).
int on_one_run(const char* cmd, int argc, char** argv, int (*body)(const RunsArgs&, const run::RunEntry&)) {
    RunsArgs a;
    try {
        a = parse_runs_args(cmd, argc, argv);
        if (a.help) return std::fputs(runs_help(cmd).c_str(), stdout), 0;
        if (a.positional.size() != 1)
            throw UsageError(std::string("expected one run id (`corral ") + cmd + " ID`), got " +
                             std::to_string(a.positional.size()) + "; `corral ps` lists the running ones");
    } catch (const UsageError& e) {
        std::fprintf(stderr, "corral %s: %s\n", cmd, e.what());
        return kExitUsage;
    }
    a.state_dir = run::require_private_state_dir("--state-dir", a.state_dir);
    return body(a, run::find_run(a.state_dir, a.positional.front()));
}

// A record's time ("2026-12-02T02:45:12.345Z"); nullopt if not that form.
std::optional<std::chrono::system_clock::time_point> parse_time(const json& value) {
    if (!value.is_string()) return std::nullopt;
    return supervisor::parse_rfc3339_ms(value.get<std::string>());
}

// How long it has run (running) or ran (finished), in ms; nullopt if unknown.
std::optional<std::int64_t> uptime_ms(const run::RunEntry& e) {
    if (!e.record) return std::nullopt;
    if (e.state != "running" && (*e.record)["duration_ms"].is_number()) return (*e.record)["duration_ms"].get<std::int64_t>();
    auto start = parse_time((*e.record)["started_at"]);
    if (!start || e.state != "running") return std::nullopt;
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now() - *start).count();
}

std::string human_duration(std::optional<std::int64_t> ms) {
    if (!ms) return "-";
    std::int64_t s = *ms / 1000;
    char buf[32];
    if (s < 60) std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
    else if (s < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
    else std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600), static_cast<long long>(s / 60 % 60));
    return buf;
}

std::string text_or_dash(const json& record, const char* key) {
    const auto& v = record[key];
    return v.is_string() && !v.get<std::string>().empty() ? v.get<std::string>() : "-";
}

std::string command_line(const json& record) {
    if (record.value("kind", std::string()) == "session") {
        const json& name = record.contains("session") ? record["session"].value("name", json(nullptr)) : json(nullptr);
        return name.is_string() ? "(session " + name.get<std::string>() + ")" : "(session)";
    }
    std::vector<std::string> argv;
    if (record["argv"].is_array())
        for (const auto& a : record["argv"]) argv.push_back(a.is_string() ? a.get<std::string>() : "?");
    return argv.empty() ? "-" : shell_words(argv);
}

// How a finished run ended, for `ps -a`: its outcome and corral's status
// ("exited 3", "deadline 124"); "-" while it runs or when it has no record.
std::string end_of(const run::RunEntry& e) {
    if (!e.record || e.state != "finished") return "-";
    const json& r = *e.record;
    std::string out = r.value("outcome", std::string("?"));
    if (r["status"].is_number_integer()) out += " " + std::to_string(r["status"].get<int>());
    return out;
}

// "3m10s ago" from run.json's ended_at; "-" for a run that has not ended.
std::string ended_ago(const run::RunEntry& e) {
    if (!e.record || e.state != "finished") return "-";
    auto ended = parse_time((*e.record)["ended_at"]);
    if (!ended) return "-";
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now() - *ended);
    return human_duration(std::max<std::int64_t>(0, ms.count())) + " ago";
}

json entry_json(const run::RunEntry& e) {
    const json rec = e.record.value_or(json::object());
    return {{"id", e.id},
            {"kind", rec.value("kind", std::string("run"))},
            {"run_dir", e.run_dir},
            {"state", e.state},
            {"worker", rec.value("worker", json(nullptr))},
            {"agent", rec.value("agent", json(nullptr))},
            {"started_at", rec.value("started_at", json(nullptr))},
            {"uptime_ms", uptime_ms(e) ? json(*uptime_ms(e)) : json(nullptr)},
            {"argv", rec.value("argv", json::array())},
            {"status", rec.value("status", json(nullptr))},
            {"outcome", rec.value("outcome", json(nullptr))},
            // run.json's tool-call counts (null: no MCP servers), as of its last write.
            {"tools", rec.value("tools", json(nullptr))}};
}

bool is_live(const std::string& state) { return state == "running" || state == "starting"; }

// The stdout log's name: an agent run keeps stdout.jsonl, any other stdout.log.
std::string stdout_log_of(const run::RunEntry& e) {
    return ::access((e.run_dir + "/stdout.jsonl").c_str(), F_OK) == 0 ? e.run_dir + "/stdout.jsonl"
                                                                       : e.run_dir + "/stdout.log";
}

// Copies what `fd` has beyond `offset` to `out`; true if it copied anything.
bool copy_new_bytes(int fd, off_t& offset, int out) {
    if (fd < 0) return false;
    char buf[65536];
    bool any = false;
    for (;;) {
        ssize_t n = ::pread(fd, buf, sizeof buf, offset);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return any;
        write_all(out, buf, static_cast<std::size_t>(n), out == 1 ? "stdout" : "stderr");
        offset += n;
        any = true;
    }
}

// Which exec's output a stream showed last (0: none yet): a session's logs
// mark each change, so interleaved execs (-f) stay told apart.
struct LastShown {
    int out = 0, err = 0;
};

// One command's two logs, read from where the last look ended. They appear
// when the command starts: opened once they exist. A session's exec's output
// comes after a header line naming it (`header`, "" for a run's logs), on
// each stream before its first bytes and again after another exec's.
struct LogFiles {
    std::string out_path, err_path;
    int exec = 0;
    std::string header;
    Fd out, err;
    off_t out_at = 0, err_at = 0;

    // Copies what is new to stdout and stderr; true if there was any.
    bool copy_new(LastShown& last) {
        if (!out.valid()) out = Fd(::open(out_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!err.valid()) err = Fd(::open(err_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        bool any = copy_marked(out.get(), out_at, 1, last.out);
        return copy_marked(err.get(), err_at, 2, last.err) || any;
    }

private:
    bool copy_marked(int fd, off_t& offset, int to, int& last) {
        if (header.empty() || last == exec || fd < 0) return copy_new_bytes(fd, offset, to);
        struct stat st {};
        if (::fstat(fd, &st) != 0 || st.st_size <= offset) return false;  // nothing new: no header
        write_all(to, header.data(), header.size(), to == 1 ? "stdout" : "stderr");
        last = exec;
        return copy_new_bytes(fd, offset, to);
    }
};

// "==> exec N (ROLE): CMD <==": the exec record of the session's journal
// (written before its command starts; execs/N/exec.json only at its end),
// the command quoted as a shell would take it; a prompt by its size.
std::map<int, std::string> exec_headers(const std::string& run_dir) {
    std::map<int, std::string> out;
    std::ifstream journal(run_dir + "/journal.jsonl");
    for (std::string line; std::getline(journal, line);) {
        const json record = json::parse(line, nullptr, false);
        if (!record.is_object() || record.value("type", "") != "exec" || !record["payload"].is_object()) continue;
        const json& p = record["payload"];
        if (!p.contains("exec") || !p["exec"].is_number_integer()) continue;
        std::string what = "?";
        if (p.contains("argv") && p["argv"].is_array() && !p["argv"].empty()) {
            std::vector<std::string> argv;
            for (const auto& a : p["argv"]) argv.push_back(a.is_string() ? a.get<std::string>() : a.dump());
            what = shell_words(argv);
        } else if (p.contains("prompt_bytes")) {
            what = "--prompt (" + p["prompt_bytes"].dump() + " bytes)";
        }
        out[p["exec"].get<int>()] = "==> exec " + std::to_string(p["exec"].get<int>()) + " (" +
                                    terminal_text(p.value("role", "?")) + "): " + terminal_text(what) + " <==\n";
    }
    return out;
}

// A run's logs, or each exec's of a session (execs/1, execs/2, ...: the ones
// that exist now are added to `logs`).
void add_log_files(const run::RunEntry& entry, std::vector<LogFiles>& logs) {
    if (!is_session(entry)) {
        if (logs.empty()) logs.push_back({stdout_log_of(entry), entry.run_dir + "/stderr.log"});
        return;
    }
    std::map<int, std::string> headers;
    for (;;) {
        const int n = static_cast<int>(logs.size()) + 1;
        const std::string dir = entry.run_dir + "/execs/" + std::to_string(n);
        if (::access(dir.c_str(), F_OK) != 0) return;
        if (!headers.count(n)) headers = exec_headers(entry.run_dir);
        const std::string header = headers.count(n) ? headers[n] : "==> exec " + std::to_string(n) + " <==\n";
        logs.push_back({dir + "/stdout.log", dir + "/stderr.log", n, header});
    }
}

// `corral logs`: the logs so far; with -f, until the run has ended. A
// session's are its execs', in exec order (with -f, each exec's new output
// as it comes, execs started later included).
int print_logs(const RunsArgs& a, const run::RunEntry& entry) {
    std::vector<LogFiles> logs;
    LastShown last;
    for (;;) {
        const bool live = is_live(run::read_run(a.state_dir, entry.id).state);
        add_log_files(entry, logs);
        bool any = false;
        for (auto& l : logs) any = l.copy_new(last) || any;
        if (!a.follow || (!live && !any)) break;
        if (!any) std::this_thread::sleep_for(100ms);
    }
    return 0;
}

// `corral inspect`: run.json with the live state.
int print_inspect(const RunsArgs&, const run::RunEntry& entry) {
    json out = entry.record.value_or(json::object());
    out["state"] = entry.state;
    out["run_dir"] = entry.run_dir;
    std::printf("%s\n", terminal_json(out.dump(2, ' ', false, json::error_handler_t::replace)).c_str());
    return 0;
}

// `corral stop`: SIGTERM (with the grace) to the supervisor, then its final record.
int stop_run(const RunsArgs& a, const run::RunEntry& entry) {
    if (entry.state != "running") {
        std::fprintf(stderr, "corral stop: run %s is not running (state %s)\n", entry.id.c_str(), entry.state.c_str());
        return kExitNotRunning;
    }
    const json& sup = (*entry.record)["supervisor"];
    supervisor::SupervisorProcess who{sup.value("pid", 0), sup.value("start_ticks", std::uint64_t{0}),
                                       sup.value("boot_id", std::string())};
    // The pidfd pins the process; checked again after it is open, the pid
    // cannot have been reused for another process in between.
    Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, who.pid, 0)));
    if (!pidfd.valid() || !supervisor::supervisor_alive(who)) {
        std::fprintf(stderr, "corral stop: run %s is not running (its supervisor is gone)\n", entry.id.c_str());
        return kExitNotRunning;
    }
    siginfo_t info{};
    info.si_signo = SIGTERM;
    info.si_code = SI_QUEUE;  // carries the grace; a plain SIGTERM leaves the run's own
    info.si_pid = ::getpid();
    info.si_uid = ::getuid();
    info.si_value.sival_int = a.grace ? static_cast<int>(a.grace->count()) : -1;
    if (::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGTERM, &info, 0) != 0)
        throw SysError("pidfd_send_signal", "supervisor of run " + entry.id, errno);
    std::fprintf(stderr, "corral stop: stopping run %s (SIGTERM to CMD, SIGKILL after %s)\n", entry.id.c_str(),
                 a.grace ? format_duration(*a.grace).c_str() : "the run's grace");
    // Until its supervisor has written the final record (or is gone without).
    for (;;) {
        run::RunEntry now = run::read_run(a.state_dir, entry.id);
        if (now.state != "running") {
            if (now.state == "finished" && now.record) {
                std::fprintf(stderr, "corral stop: run %s: %s, teardown %s\n", entry.id.c_str(),
                             now.record->value("outcome", std::string("?")).c_str(),
                             (*now.record)["teardown"].value("verdict", std::string("?")).c_str());
                return 0;
            }
            std::fprintf(stderr, "corral stop: run %s: its supervisor ended without a final record (state %s)\n",
                         entry.id.c_str(), now.state.c_str());
            return 125;
        }
        std::this_thread::sleep_for(50ms);
    }
}

}  // namespace

int cmd_ps(int argc, char** argv) {
    RunsArgs a;
    try {
        a = parse_runs_args("ps", argc, argv);
        if (!a.help && !a.positional.empty())
            throw UsageError("takes no arguments, got \"" + a.positional.front() + "\"");
    } catch (const UsageError& e) {
        std::fprintf(stderr, "corral ps: %s\n", e.what());
        return kExitUsage;
    }
    if (a.help) return std::fputs(runs_help("ps").c_str(), stdout), 0;
    a.state_dir = run::require_private_state_dir("--state-dir", a.state_dir);
    std::vector<run::RunEntry> runs;
    for (auto& e : run::list_runs(a.state_dir))
        if (a.all || is_live(e.state)) runs.push_back(std::move(e));
    if (a.json_out) {
        json out = json::array();
        for (const auto& e : runs) out.push_back(entry_json(e));
        std::printf("%s\n", terminal_json(out.dump(2, ' ', false, json::error_handler_t::replace)).c_str());
        return 0;
    }
    if (!a.all) {
        std::printf("%-27s %-16s %-8s %-9s %-8s %s\n", "ID", "WORKER", "AGENT", "STATE", "UPTIME", "COMMAND");
        for (const auto& e : runs) {
            const json rec = e.record.value_or(json::object());
            std::printf("%-27s %-16s %-8s %-9s %-8s %s\n", e.id.c_str(), terminal_text(text_or_dash(rec, "worker")).c_str(),
                        terminal_text(text_or_dash(rec, "agent")).c_str(), e.state.c_str(),
                        human_duration(uptime_ms(e)).c_str(), terminal_text(command_line(rec)).c_str());
        }
        return 0;
    }
    // Every run: how the finished ones ended, and when.
    std::printf("%-27s %-16s %-8s %-9s %-19s %-12s %-8s %s\n", "ID", "WORKER", "AGENT", "STATE", "OUTCOME", "ENDED", "UPTIME",
                "COMMAND");
    for (const auto& e : runs) {
        const json rec = e.record.value_or(json::object());
        std::printf("%-27s %-16s %-8s %-9s %-19s %-12s %-8s %s\n", e.id.c_str(),
                    terminal_text(text_or_dash(rec, "worker")).c_str(), terminal_text(text_or_dash(rec, "agent")).c_str(),
                    e.state.c_str(), terminal_text(end_of(e)).c_str(), ended_ago(e).c_str(),
                    human_duration(uptime_ms(e)).c_str(), terminal_text(command_line(rec)).c_str());
    }
    return 0;
}

int cmd_logs(int argc, char** argv) { return on_one_run("logs", argc, argv, print_logs); }

int cmd_inspect(int argc, char** argv) { return on_one_run("inspect", argc, argv, print_inspect); }

int cmd_stop(int argc, char** argv) { return on_one_run("stop", argc, argv, stop_run); }

}  // namespace corral::cli
