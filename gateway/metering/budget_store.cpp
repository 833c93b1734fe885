#include "gateway/metering/budget_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/atomic_file.hpp"
#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral::gateway::metering {

namespace {

nlohmann::ordered_json amount_json(const Amount& a) {
    nlohmann::ordered_json j;
    j["requests"] = a.requests;
    j["input_tokens"] = a.input_tokens;
    j["output_tokens"] = a.output_tokens;
    j["usd_micros"] = a.usd_micros;
    return j;
}

nlohmann::ordered_json limits_json(const Budget& b) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    if (b.requests) j["requests"] = *b.requests;
    if (b.input_tokens) j["input_tokens"] = *b.input_tokens;
    if (b.output_tokens) j["output_tokens"] = *b.output_tokens;
    if (b.total_tokens) j["total_tokens"] = *b.total_tokens;
    if (b.usd_micros) j["usd_micros"] = *b.usd_micros;
    return j;
}

std::string now_utc() {
    std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace

std::string stored_budget_json(const std::string& worker, const AccountState& state, const Budget& limits) {
    nlohmann::ordered_json j;
    j["worker"] = worker;
    j["spent"] = amount_json(state.spent);
    j["exhausted"] = state.exhausted;
    j["updated"] = now_utc();
    if (limits.requests || limits.input_tokens || limits.output_tokens || limits.total_tokens || limits.usd_micros) {
        j["limits"] = limits_json(limits);
        j["remaining"] = limits_json(state.remaining);
    }
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string BudgetStore::path_of(const std::string& worker) const { return dir_ + "/" + worker + ".json"; }

StoredBudget BudgetStore::load(const std::string& worker) const {
    const std::string path = path_of(worker);
    std::optional<std::string> text;
    try {
        text = read_whole_file({path, 1u << 20});
    } catch (const SysError& e) {
        throw UsageError("budget of worker " + worker + ": cannot read " + path + ": " + errno_text(e.error()));
    } catch (const UsageError& e) {
        throw UsageError("budget of worker " + worker + ": " + e.what() + ", allowed: the file corral wrote (fix or "
                         "remove it with `corral budget reset`)");
    }
    if (!text) return {};
    auto j = nlohmann::json::parse(*text, nullptr, false);
    auto count = [&](const char* k) -> std::uint64_t {
        const auto* spent = j.is_object() && j.contains("spent") ? &j["spent"] : nullptr;
        if (!spent || !spent->is_object() || !spent->contains(k) || !(*spent)[k].is_number_unsigned())
            throw UsageError("budget of worker " + worker + ": " + path + ": 'spent." + k +
                             "' missing or not an unsigned integer, allowed: the file corral wrote (fix or remove "
                             "it with `corral budget reset`)");
        return (*spent)[k].get<std::uint64_t>();
    };
    StoredBudget b;
    b.spent.requests = count("requests");
    b.spent.input_tokens = count("input_tokens");
    b.spent.output_tokens = count("output_tokens");
    b.spent.usd_micros = count("usd_micros");
    if (j.contains("exhausted") && j["exhausted"].is_string()) b.exhausted = j["exhausted"].get<std::string>();
    return b;
}

void BudgetStore::save(const std::string& worker, const AccountState& state) {
    std::lock_guard lock(mu_);
    if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) throw SysError("mkdir", dir_, errno);
    // content_synced, not durable: this runs once per settled request, and a
    // directory fsync each time would double its cost; a crash can at worst
    // lose the last rename, never leave a torn file.
    write_file_atomically(atomic_target(path_of(worker), 0600, Durability::content_synced),
                          stored_budget_json(worker, state, {}) + "\n");
}

std::string BudgetStore::tool_calls_path_of(const std::string& worker) const {
    return dir_ + "/tool_calls/" + worker + ".json";
}

std::uint64_t BudgetStore::load_tool_calls(const std::string& worker) const {
    const std::string path = tool_calls_path_of(worker);
    const std::string fix = ", allowed: the file corral wrote (fix it, or remove it while the daemon is stopped: the "
                            "worker's tool calls then count from 0)";
    std::optional<std::string> text;
    try {
        text = read_whole_file({path, 1u << 20});
    } catch (const SysError& e) {
        throw UsageError("tool-call budget of worker " + worker + ": cannot read " + path + ": " + errno_text(e.error()));
    } catch (const UsageError& e) {
        throw UsageError("tool-call budget of worker " + worker + ": " + e.what() + fix);
    }
    if (!text) return 0;
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("tool_calls") || !j["tool_calls"].is_number_unsigned() ||
        j.value("worker", "") != worker)
        throw UsageError("tool-call budget of worker " + worker + ": " + path +
                         ": 'tool_calls' missing or not an unsigned integer, or 'worker' not " + worker + fix);
    return j["tool_calls"].get<std::uint64_t>();
}

void BudgetStore::save_tool_calls(const std::string& worker, std::uint64_t used) {
    std::lock_guard lock(mu_);
    const std::string dir = dir_ + "/tool_calls";
    for (const std::string& d : {dir_, dir})
        if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) throw SysError("mkdir", d, errno);
    nlohmann::ordered_json j;
    j["worker"] = worker;
    j["tool_calls"] = used;
    j["updated"] = now_utc();
    // content_synced, as save(): once per forwarded call.
    write_file_atomically(atomic_target(tool_calls_path_of(worker), 0600, Durability::content_synced),
                          j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace corral::gateway::metering
