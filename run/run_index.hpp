// run/run_index.hpp — the state dir's runs: each run's id made its own at
// start, and found again later by `corral ps`, `logs`, `stop` and `inspect`.
//
// STATE_DIR/runs/ID is every run's entry: the run dir itself, or, for a run
// given --run-dir elsewhere, a symlink to that dir. Creating the entry
// (mkdir or symlink, both fail if the name exists) is what reserves the id,
// so two concurrent runs can never share one even if their ids were drawn
// alike. Ids begin with their start time (UTC, milliseconds), so the names
// sort by start.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace corral::run {

struct ReservedRun {
    std::string id;
    std::string run_dir;  // its real path
};

// Draws ids from `make_id` until one is free and reserves it: with no
// `given_run_dir`, STATE_DIR/runs/ID is made (root's, 0700) and is the run
// dir; with one (a real path already checked by the caller), a symlink
// STATE_DIR/runs/ID -> given_run_dir. Throws SysError / UsageError.
ReservedRun reserve_run(const std::string& state_dir, const std::optional<std::string>& given_run_dir,
                        const std::function<std::string()>& make_id);

// A run as the state dir knows it.
struct RunEntry {
    std::string id;
    std::string run_dir;
    std::optional<nlohmann::json> record;  // run.json; nullopt while not yet written or unreadable
    // "running" (its supervisor is alive), "finished", "lost" (the record
    // says running but its supervisor is gone: killed, or the host rebooted),
    // "starting" (no run.json yet; its supervisor may be about to write it),
    // "unreadable" (run.json is not a JSON object), "removed" (a --run-dir
    // deleted since: list_runs leaves those out).
    std::string state;
};

// STATE_DIR/live/ID marks a run that has not ended: reserve_run makes it,
// mark_run_ended removes it once the run's final run.json is written. The
// start-time recovery of lost runs reads these few entries, not every run
// the state dir ever had.
void mark_run_ended(const std::string& state_dir, const std::string& id) noexcept;
// The runs still marked live, newest first, each as read now. A marked run
// that is finished or gone has its mark removed here.
std::vector<RunEntry> unended_runs(const std::string& state_dir);

// The state a record shows, its supervisor's liveness taken into account.
std::string live_state(const nlohmann::json& record);

// Every run of the state dir, newest first. A missing state dir or runs dir
// is an empty list.
std::vector<RunEntry> list_runs(const std::string& state_dir);

// The ids of the running runs (live_state "running") whose run.json says
// they run on image `image_name` ("rootfs": "image:NAME"), newest first.
std::vector<std::string> running_runs_on_image(const std::string& state_dir, const std::string& image_name);

// The run a handle names, in this order: the run whose id it is; the only
// one whose id starts with it (at least 4 characters); the only one whose id
// contains it (at least 4 characters; "corral-" before it is dropped, so the
// box's hostname `corral-3f9a1c` and its random part `3f9a1c` both work); the
// running session of that name. Throws UsageError naming the state dir when
// none or several match.
RunEntry find_run(const std::string& state_dir, const std::string& id);

// A session's --name from its run.json ("" for a run or an unnamed session).
std::string session_name_of(const nlohmann::json& record);

// The entry of run `id`, read again (state and record as now).
RunEntry read_run(const std::string& state_dir, const std::string& id);

// The run whose dir `dir` is: the id ID of STATE_DIR/runs/ID when that entry
// is `dir` or links to it (a --run-dir elsewhere), nullopt when no entry is;
// the entry `likely` is looked at first. What `corral journal verify` holds a
// journal's run id against, so a journal copied into another run's dir is
// named. Throws SysError when `dir` or the runs dir cannot be read.
std::optional<std::string> run_id_of_dir(const std::string& state_dir, const std::string& dir,
                                         const std::string& likely = "");

}  // namespace corral::run
