// oci/runtime/container_dir.hpp — one container's record under the
// runtime's --root (docs/oci-runtime.md "Lifecycle"):
//
//   ROOT/                 root's, 0700 (made on first use)
//   ROOT/ID/record.json   the spec's state and corral's run, replaced whole
//   ROOT/ID/control.sock  the box's supervisor: start, kill (while it lives)
//
// The id is claimed by mkdir (two creates of one id: one wins). Whoever
// reads the record asks whether its supervisor still lives (pid and start
// time): a record that says created or running with its supervisor gone is
// a stopped container whose teardown was not seen.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/fd.hpp"
#include "oci/state.hpp"

namespace corral::oci {

struct ContainerRecord {
    ContainerState state;               // what `state` prints
    std::string run_id;                 // corral's run (run.json, the journal: STATE/runs/RUN_ID)
    std::string run_dir;
    pid_t supervisor = 0;               // the box's supervisor: the --pid-file's and the state's pid
    unsigned long long supervisor_start = 0;  // its start time (/proc/PID/stat), against pid reuse
    std::optional<int> exit_status;     // once stopped: corral's exit status for the run
    std::string teardown_problem;       // once stopped: why the teardown was not verified ("" = verified)
    std::string created;                // when create ran, RFC 3339 UTC ("" in a record older than the field)
};

class ContainerDir {
public:
    // ROOT checked (or made) root's and 0700, then ROOT/ID made; throws
    // UsageError "container ID exists" when it does.
    static ContainerDir claim(const std::string& root, const std::string& id);
    // ROOT/ID as it is; throws UsageError "container ID does not exist".
    static ContainerDir open(const std::string& root, const std::string& id);
    // Every container under ROOT (`list`), by id; [] when ROOT does not exist.
    static std::vector<ContainerDir> all(const std::string& root);
    const std::string& id() const { return id_; }

    const std::string& path() const { return path_; }
    // The control socket's path as bind(2) and connect(2) take it: through
    // /proc/self/fd/N of `dir_fd` (open_dir), since ROOT/ID/control.sock
    // with a long --root and an engine's 64-character id passes
    // sun_path's 108 bytes.
    static std::string control_socket_via(int dir_fd) { return "/proc/self/fd/" + std::to_string(dir_fd) + "/control.sock"; }
    // ROOT/ID, O_PATH: for control_socket_via.
    Fd open_dir() const;
    void write(const ContainerRecord& record) const;
    // Throws UsageError when the record is missing (a create that died
    // before writing it) or unreadable.
    ContainerRecord read() const;
    // The record and the directory.
    void remove() const;

private:
    explicit ContainerDir(std::string path, std::string id) : path_(std::move(path)), id_(std::move(id)) {}
    std::string path_, id_;
};

// The start time of process `pid` (/proc/PID/stat's 22nd field), or 0 when
// it does not exist.
unsigned long long process_start_time(pid_t pid);

// --pid-file: `pid` in decimal, replaced whole (an engine reads it once the
// command has exited).
void write_pid_file(const std::string& path, pid_t pid);

// Whether the record's supervisor still runs (same pid, same start time).
bool supervisor_alive(const ContainerRecord& record);

// The status as the engines must see it: a record whose supervisor is gone
// before it wrote "stopped" is stopped.
ContainerStatus effective_status(const ContainerRecord& record);

// ROOT/ID of a container that is created or running (what kill and ps
// ask its supervisor about); throws UsageError "container ID is not
// running (stopped)" otherwise.
ContainerDir open_live_container(const std::string& root, const std::string& id);

}  // namespace corral::oci
