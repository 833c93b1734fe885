// run/mcp_pin_store.hpp — the tool pins that outlive a run: per worker,
// <state_dir>/mcp/<worker>/pins.json (dir 0700, file 0600, root's), what
// each "server/tool" is trusted as, since when and by which run, and the
// new digest a later run saw when it quarantined the tool.
//
// A run loads it at prepare (pins trusted in an earlier run hold; the
// configuration's [mcp.pins] outrank it) and merges what it saw back at its
// end under the store's lock, so concurrent runs of one worker keep each
// other's entries: the store's trusted digest wins, a different digest a run
// saw becomes a quarantine. `corral mcp trust` accepts a quarantined digest.
// docs/tools.md "Pinning".
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/tool_pin.hpp"

namespace corral::run {

// One "server/tool" of the store.
struct PinRecord {
    std::string trusted;         // "sha256:<64 hex>"
    std::string first_seen;      // RFC 3339 UTC, when it was first trusted
    std::string run;             // the run id that first saw it ("" = the operator's trust)
    std::string quarantined;     // the different digest seen since; "" = none
    std::string quarantined_at;  // when that was recorded
    std::string quarantined_run; // by which run
};
using PinRecords = std::map<std::string, PinRecord>;  // by "server/tool"

// The file's text (one JSON object, keys sorted, one line).
std::string pin_records_text(const PinRecords& records);
// Parses the file's text strictly: unknown or missing members, a duplicate
// key, a digest not "sha256:<64 lowercase hex>" or a key not "SERVER/TOOL"
// throw UsageError naming `path` and what is wrong.
PinRecords parse_pin_records(std::string_view text, const std::string& path);

// What a run's PinBook saw, merged into the store's records (the store's
// trusted digest wins): a tool new to the store is added as its run trusted
// it (quarantined too when the run saw it change); a known one seen with a
// different digest is quarantined with that digest; seen with the trusted
// one, its quarantine is lifted. Entries never seen and those whose key is
// in `config_pins` (the configuration decides them) are left out. Returns
// whether anything changed.
bool merge_sights(PinRecords& records, const std::vector<mcp::PinEntry>& seen,
                  const std::map<std::string, std::string>& config_pins, const std::string& run_id,
                  const std::string& now);

// The current time as the store writes it.
std::string pin_store_now();

// How long a run's end or `corral mcp trust` waits for another holder of a
// store's lock (each holds it for one read and one write).
inline constexpr std::chrono::seconds kPinStoreLockBound{10};

class PinStore {
public:
    // `dir` is the worker's store directory, already checked (open_pin_store_dir).
    explicit PinStore(std::string dir);
    const std::string& path() const { return path_; }
    // The records (none when there is no file yet). Throws UsageError
    // (malformed, not a regular file, over 4 MiB) or SysError naming the file.
    PinRecords read() const;
    // Under the store's lock (waiting at most `bound`): reads the records,
    // lets `change` edit them and writes them back (durably) when it returns
    // true. Throws what read() throws, SysError for the lock or the write.
    void update(const std::function<bool(PinRecords&)>& change,
                std::chrono::milliseconds bound = kPinStoreLockBound);

private:
    std::string dir_, path_;
};

// <state_dir>/mcp/<worker>: `state_dir` must already be checked
// (make_private_dir / require_private_state_dir). With `create`, made (0700)
// where missing; then both levels must be root's real directories that no
// one else can write. Without `create`, "" when it does not exist. Throws
// UsageError naming `option`, the path and what is wrong.
std::string open_pin_store_dir(const std::string& option, const std::string& state_dir, const std::string& worker,
                               bool create);

// "server/tool" split at its first '/'.
std::pair<std::string, std::string> split_pin_key(const std::string& key);

}  // namespace corral::run
