#include "tests/support/ledger.hpp"

#include <fstream>
#include <thread>

namespace corral::test {

std::vector<nlohmann::json> read_ledger(const std::string& path) {
    std::vector<nlohmann::json> out;
    std::ifstream f(path);
    for (std::string line; std::getline(f, line);) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_object()) out.push_back(std::move(j));
    }
    return out;
}

LedgerLinesReady at_least(std::size_t n) {
    return [n](const std::vector<nlohmann::json>& lines) { return lines.size() >= n; };
}

std::vector<nlohmann::json> wait_for_ledger_lines(const std::string& path, const LedgerLineFilter& wanted,
                                                  const LedgerLinesReady& ready, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        std::vector<nlohmann::json> kept;
        for (auto& l : read_ledger(path))
            if (wanted(l)) kept.push_back(std::move(l));
        if (ready(kept) || std::chrono::steady_clock::now() >= deadline) return kept;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace corral::test
