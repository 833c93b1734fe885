// names/run_id.hpp — what a run id looks like, the one rule for everything
// that makes a path, a cgroup name or a sentinel from one: the run index
// (STATE_DIR/runs/<id>), the cgroups (<hierarchy>/corral/<id>) and the agent
// profiles (corral-sentinel-<id>).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace corral::names {

// The longest run id accepted: a file name (NAME_MAX 255) with room to spare
// for a suffix such as ".lock".
inline constexpr std::size_t max_run_id_length = 200;

// The form supervisor::make_run_id draws: YYYYMMDDTHHMMSSmmmZ-xxxxxx, its
// start (UTC, milliseconds) and 24 random bits as lowercase hex. Also the
// form corral drew before the milliseconds were added (YYYYMMDDTHHMMSSZ-xxxxxx):
// run dirs of that age are still in state dirs.
bool is_drawn_run_id(std::string_view id);

// A name read as a run id: 1 to max_run_id_length characters of [A-Za-z0-9._-],
// not starting with '.' (so never ".", "..", a hidden file or a path).
// Wider than is_drawn_run_id because ids are read that corral did not draw
// in today's form: run dirs and cgroups left by older builds, the fixed ids
// `corral doctor` and `corral validate` build agent profiles with, and the
// cgroups of tests. Any non-empty prefix of a run id is one too, which the
// prefix lookup of `corral ps`/`stop`/`inspect` relies on.
bool is_run_id(std::string_view id);

// Throws UsageError "<where>: run id "<id>" contains ...; expected ..." unless
// is_run_id(id) (no "<where>: " when where is empty); the message names the
// offending character.
void require_run_id(std::string_view id, std::string_view where);

}  // namespace corral::names
