// tests/support/ledger.hpp — reading a gateway ledger (JSON lines) from a
// test, and waiting for a line that is on its way.
//
// A live ledger's line reaches its file a moment after its exchange ends
// (up to ~10 ms: the journal takes it first, docs/gateway.md), so a test that
// checks a line right after a response waits for it, bounded, here.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace corral::test {

// Every line of the ledger at `path` that is a JSON object, in order; a
// missing file is no lines, a torn last line is skipped.
std::vector<nlohmann::json> read_ledger(const std::string& path);

using LedgerLineFilter = std::function<bool(const nlohmann::json&)>;
using LedgerLinesReady = std::function<bool(const std::vector<nlohmann::json>&)>;

// Ready once there are at least `n` lines.
LedgerLinesReady at_least(std::size_t n);

// The ledger's lines that `wanted` keeps, read again every 20 ms until
// `ready` accepts them or `timeout` has passed (then: what there was).
std::vector<nlohmann::json> wait_for_ledger_lines(const std::string& path, const LedgerLineFilter& wanted,
                                                  const LedgerLinesReady& ready = at_least(1),
                                                  std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace corral::test
