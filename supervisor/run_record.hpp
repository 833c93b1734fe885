// supervisor/run_record.hpp — run.json: what ran, as whom, how it ended, and
// whether teardown proved that nothing survived.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "supervisor/outcome.hpp"

#include "supervisor/cgroup.hpp"

namespace corral::supervisor {

struct TeardownStep {
    std::string step;    // e.g. "kill_init", "reap_init", "pid_namespace_gone", "cgroup_empty", "cgroup_removed", "uid_sweep"
    bool ok = false;
    std::string detail;  // what was seen ("3 processes of uid 1900000000 left: 123 124 125")
};

struct TeardownReport {
    std::vector<TeardownStep> steps;
    std::vector<std::string> problems;  // one line per thing that survived or failed
    // Lines for the user that are not the teardown's verdict (the terminal's
    // settings not restored, the cgroup's usage unreadable, and whatever the
    // launch had still to say when a failed launch tore the box down): the
    // caller prints them once with its own prefix. Not part of run.json's teardown.
    std::vector<std::string> notes;
    // "clean" iff no problem was recorded and every step is ok.
    bool clean() const;
    std::string verdict() const { return clean() ? "clean" : "failed"; }
};

// Who is writing the record: a run is live while this process is (the pid
// alone could have been reused; its start time and the boot say it is the same).
struct SupervisorProcess {
    pid_t pid = 0;
    std::uint64_t start_ticks = 0;  // /proc/PID/stat field 22
    std::string boot_id;            // /proc/sys/kernel/random/boot_id
};
// This process, as a later reader can tell it from a reused PID. Throws SysError if /proc cannot be read.
SupervisorProcess this_supervisor();
// Whether the process `who` names is still running.
bool supervisor_alive(const SupervisorProcess& who);

// How a stop was asked for and what it took (graceful stops: SIGTERM to the
// command, SIGKILL to the box after the grace).
struct StopRecord {
    std::string cause;          // "deadline" | "signal" | "corral stop"
    std::optional<int> signal;  // the signal corral got (cause "signal" / "corral stop")
    std::chrono::milliseconds grace{0};
    bool killed = false;        // the grace ran out (or was 0), or a second signal came: SIGKILL ended the box
    std::optional<int> second_signal;  // the signal that killed the box before the grace ran out
};

struct RunRecord {
    std::string id;
    // "running" from the moment the run dir exists (written at start), then
    // "finished" once corral knows how the run ended. A "running" record whose
    // supervisor is gone is a lost run (readers say so: run/run_index.hpp).
    std::string state = "running";
    SupervisorProcess supervisor;
    std::vector<std::string> argv;
    uid_t uid = 0;
    gid_t gid = 0;
    std::string hostname;
    std::string rootfs;                          // "host" or the image directory
    std::optional<std::string> workspace;        // null when none was given
    // How the workspace was bound: with its owner shown as the agent (an
    // idmapped mount), or as is because its file system cannot be ID-mapped.
    // run.json "workspace_binding": {"idmapped": [...], "unmapped": [...]}; null without a workspace.
    std::vector<std::string> idmapped_binds;
    std::vector<std::string> unmapped_binds;
    std::chrono::system_clock::time_point started_at{};
    std::chrono::system_clock::time_point ended_at{};
    std::optional<int> exit_code;                // null when killed by a signal / never started
    std::optional<int> signal;                   // null unless killed by a signal
    bool deadline_hit = false;
    CgroupLimits limits;
    std::optional<std::chrono::milliseconds> timeout;
    std::optional<std::uint64_t> peak_memory_bytes;
    std::optional<std::uint64_t> peak_pids;
    bool oom_killed = false;                     // extra field "oom_killed" (not in the contract's list)
    std::uint64_t pids_limit_hits = 0;           // forks refused at the pids limit
    std::optional<std::uint64_t> cpu_usec;       // user + system CPU time of the whole box
    std::optional<StopRecord> stop;              // null unless the run was stopped
    // Who decided corral's exit status ("command" or "corral") and how the run
    // ended (docs/run-record.md "outcome"): a 125 from the command and
    // corral's own 125 differ here.
    std::optional<Outcome> outcome;  // none while running
    // run.json "output": {"stdout": {"bytes", "logged"}, "stderr": {...}, "log_limit_bytes"};
    // logged < bytes when --log-limit cut the log (the stream got everything).
    std::uint64_t stdout_bytes = 0, stdout_logged = 0, stderr_bytes = 0, stderr_logged = 0;
    std::uint64_t log_limit_bytes = 0;
    // The reader of corral's stdout/stderr went away (a closed pipe): the box's
    // side of that stream was closed too, so the command got EPIPE/SIGPIPE.
    bool stdout_reader_gone = false, stderr_reader_gone = false;
    TeardownReport teardown;
    int status = 0;                              // corral's own exit status
    std::vector<std::string> messages;           // what corral said about the run on stderr (why it failed)
    // Added by the layers above the sandbox (agent kind, CLI version, gateway
    // counts: run/prepare.hpp run_record_fields); merged into run.json's top level.
    nlohmann::json extra = nlohmann::json::object();
};

// The contract's run.json shape (docs/run-record.md); absent optionals are
// JSON null; ended_at and duration_ms (ended_at - started_at in whole
// milliseconds) are null while the state is "running".
nlohmann::json to_json(const RunRecord& record);

// visible: atomic rename only; after a crash or power loss the record of a run
//   that ended in the last seconds may be missing or empty (never truncated JSON).
// durable: also fdatasync the file before and fsync the directory after the
//   rename (`corral run --sync-record`); costs two journal commits.
enum class RecordSync { visible, durable };

// Writes <run_dir>/run.json atomically: a temporary file in run_dir (mode 0600),
// rename over run.json (+ the syncs of RecordSync::durable). Throws SysError.
void write_run_record(const std::string& run_dir, const RunRecord& record, RecordSync sync = RecordSync::visible);
// The same for any record of the run dir (a session's execs/N/exec.json): DIR/NAME, atomically.
void write_record_file(const std::string& dir, const std::string& name, const nlohmann::json& value,
                       RecordSync sync = RecordSync::visible);

// "2026-11-30T05:31:07.123Z"
std::string format_rfc3339_ms(std::chrono::system_clock::time_point t);
// The time format_rfc3339_ms wrote; nullopt for any other text.
std::optional<std::chrono::system_clock::time_point> parse_rfc3339_ms(std::string_view text);

}  // namespace corral::supervisor
