// journal/covered_files.hpp — the files of a run dir whose SHA-256 a journal
// holds (the run's logs in its terminal record, each exec's logs in its
// exec_end record), and whether they still are what the journal says.
//
// One rule for the digest: the writer records file_sha256 of each log and the
// verifier compares file_sha256 of the same path, so the two cannot drift.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/checked.hpp"

#include <nlohmann/json.hpp>

namespace corral::journal {

// "sha256:<64 hex>" of the file's bytes, or null when it cannot be opened
// (there is none; a symlink: never followed) or is not a regular file (never
// blocked on: a FIFO is opened non-blocking and not read). Throws SysError
// for a read error.
nlohmann::json file_sha256(const std::string& path);

// One file a record vouches for.
struct CoveredFile {
    std::string path;     // relative to the run dir: "stdout.log", "execs/3/stderr.log"
    // A record that does not name its run's stdout log (written before the
    // name was recorded): it is `path` or this ("stdout.jsonl"), not both.
    std::string or_path;
    nlohmann::json sha256;  // "sha256:<hex>", or null: the file was not there when the record was written
    std::uint64_t seq = 0;  // the record's
    std::string record;   // the record, for messages: "terminal", "exec_end of exec 3"
};

// The files `record` (a verified journal record) holds the digest of,
// appended to `out`. The problem when it holds one in a form no writer makes
// (a digest not a string or null, an exec number that is not a positive
// integer, a log name that is not a plain file name).
Problem collect_covered_files(const nlohmann::json& record, std::vector<CoveredFile>& out);

// The first covered file of `run_dir` that is not what its record says
// (changed, removed, or there when the record said there was none), named with
// the record and both digests; nullopt when all are. *checked counts the files
// compared.
std::optional<std::string> check_covered_files(const std::vector<CoveredFile>& files, const std::string& run_dir,
                                               std::size_t* checked);

}  // namespace corral::journal
