#include "supervisor/run_record.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include "base/atomic_file.hpp"
#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral::supervisor {
namespace {

template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// A /proc file's text ("" when it cannot be read: the process is gone).
std::string read_small_file(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return {};
    std::string text;
    char buf[1024];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || text.size() > 8192) break;
        text.append(buf, static_cast<std::size_t>(n));
    }
    return text;
}

// Whose status corral exited with, per outcome (docs/run-record.md).
const char* status_from(const std::optional<Outcome>& outcome) {
    if (!outcome) return nullptr;  // still running
    return outcome_row(*outcome).status_is_commands ? "command" : "corral";
}

std::string first_line_of(const std::string& path) {
    std::string text = read_small_file(path);
    if (auto nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
    return text;
}

// Field 22 of /proc/PID/stat: after the ")" that ends the command name (which
// may itself hold spaces and parentheses), the 20th field.
std::optional<std::uint64_t> start_ticks_of(pid_t pid) {
    std::string stat = read_small_file("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::size_t pos = close + 1;
    for (int field = 3; field <= 22; ++field) {
        while (pos < stat.size() && stat[pos] == ' ') ++pos;
        std::size_t end = stat.find(' ', pos);
        if (end == std::string::npos) end = stat.size();
        if (field == 22) {
            std::uint64_t v = 0;
            if (end == pos) return std::nullopt;
            for (std::size_t i = pos; i < end; ++i) {
                if (stat[i] < '0' || stat[i] > '9') return std::nullopt;
                v = v * 10 + static_cast<std::uint64_t>(stat[i] - '0');
            }
            return v;
        }
        pos = end;
    }
    return std::nullopt;
}

}  // namespace

SupervisorProcess this_supervisor() {
    SupervisorProcess who;
    who.pid = ::getpid();
    auto ticks = start_ticks_of(who.pid);
    if (!ticks) throw SysError("read", "/proc/self/stat (start time)", EINVAL);
    who.start_ticks = *ticks;
    who.boot_id = first_line_of("/proc/sys/kernel/random/boot_id");
    return who;
}

bool supervisor_alive(const SupervisorProcess& who) {
    if (who.pid <= 0) return false;
    if (first_line_of("/proc/sys/kernel/random/boot_id") != who.boot_id) return false;
    // A killed supervisor whose parent has not reaped it yet (a session's
    // supervisor is an orphan, and not every PID 1 reaps) is a zombie: dead.
    const std::string stat = read_small_file("/proc/" + std::to_string(who.pid) + "/stat");
    if (auto close = stat.rfind(')'); close != std::string::npos && close + 2 < stat.size() &&
                                      (stat[close + 2] == 'Z' || stat[close + 2] == 'X'))
        return false;
    auto ticks = start_ticks_of(who.pid);
    return ticks && *ticks == who.start_ticks;
}

bool TeardownReport::clean() const {
    return problems.empty() && std::all_of(steps.begin(), steps.end(), [](const TeardownStep& s) { return s.ok; });
}

std::optional<std::chrono::system_clock::time_point> parse_rfc3339_ms(std::string_view text) {
    std::tm tm{};
    int ms = 0;
    char z = 0;
    const std::string s(text);
    if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                    &tm.tm_min, &tm.tm_sec, &ms, &z) != 8 ||
        z != 'Z' || s.size() != 24)
        return std::nullopt;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return std::chrono::system_clock::from_time_t(::timegm(&tm)) + std::chrono::milliseconds(ms);
}

std::string format_rfc3339_ms(std::chrono::system_clock::time_point t) {
    using namespace std::chrono;
    auto ms_total = duration_cast<milliseconds>(t.time_since_epoch()).count();
    // Floor division so times before the epoch still render correctly.
    auto secs = ms_total / 1000;
    auto ms = ms_total % 1000;
    if (ms < 0) {
        ms += 1000;
        secs -= 1;
    }
    std::time_t tt = static_cast<std::time_t>(secs);
    std::tm utc{};
    ::gmtime_r(&tt, &utc);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                  utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(ms));
    return buf;
}

nlohmann::json to_json(const RunRecord& r) {
    using nlohmann::json;
    json steps = json::array();
    for (const auto& s : r.teardown.steps) steps.push_back({{"step", s.step}, {"ok", s.ok}, {"detail", s.detail}});
    auto duration = std::chrono::duration_cast<std::chrono::milliseconds>(r.ended_at - r.started_at).count();
    std::optional<std::int64_t> timeout_ms;
    if (r.timeout) timeout_ms = r.timeout->count();
    const bool running = r.state == "running";
    json stop = nullptr;
    if (r.stop)
        stop = {{"cause", r.stop->cause},
                {"signal", r.stop->signal ? json(std::string("SIG") + sigabbrev_np(*r.stop->signal)) : json(nullptr)},
                {"grace_ms", r.stop->grace.count()},
                {"killed", r.stop->killed},
                {"second_signal", r.stop->second_signal
                                      ? json(std::string("SIG") + sigabbrev_np(*r.stop->second_signal))
                                      : json(nullptr)}};
    const char* from = status_from(r.outcome);
    json out{
        {"id", r.id},
        {"state", r.state},
        {"supervisor", {{"pid", r.supervisor.pid}, {"start_ticks", r.supervisor.start_ticks}, {"boot_id", r.supervisor.boot_id}}},
        {"argv", r.argv},
        {"uid", r.uid},
        {"gid", r.gid},
        {"hostname", r.hostname},
        {"rootfs", r.rootfs},
        {"workspace", or_null(r.workspace)},
        {"workspace_binding", r.workspace ? json{{"idmapped", r.idmapped_binds}, {"unmapped", r.unmapped_binds}} : json()},
        {"started_at", format_rfc3339_ms(r.started_at)},
        {"ended_at", running ? json(nullptr) : json(format_rfc3339_ms(r.ended_at))},
        {"duration_ms", running ? json(nullptr) : json(duration)},
        {"exit_code", or_null(r.exit_code)},
        {"signal", or_null(r.signal)},
        {"deadline_hit", r.deadline_hit},
        {"limits",
         {{"memory_bytes", or_null(r.limits.memory_bytes)},
          {"pids", or_null(r.limits.pids)},
          {"cpus", or_null(r.limits.cpus)},
          {"timeout_ms", or_null(timeout_ms)}}},
        {"peak_memory_bytes", or_null(r.peak_memory_bytes)},
        {"peak_pids", or_null(r.peak_pids)},
        {"oom_killed", r.oom_killed},
        {"pids_limit_hits", r.pids_limit_hits},
        {"cpu_usec", or_null(r.cpu_usec)},
        {"stop", stop},
        {"output",
         {{"stdout", {{"bytes", r.stdout_bytes}, {"logged", r.stdout_logged}, {"reader_gone", r.stdout_reader_gone}}},
          {"stderr", {{"bytes", r.stderr_bytes}, {"logged", r.stderr_logged}, {"reader_gone", r.stderr_reader_gone}}},
          {"log_limit_bytes", r.log_limit_bytes}}},
        {"teardown", {{"verdict", r.teardown.verdict()}, {"problems", r.teardown.problems}, {"steps", steps}}},
        {"status", running ? json(nullptr) : json(r.status)},
        {"outcome", running ? json(nullptr) : json(r.outcome ? std::string(outcome_name(*r.outcome)) : std::string())},
        {"status_from", from ? json(from) : json(nullptr)},
        {"messages", r.messages},
    };
    if (r.extra.is_object())
        for (const auto& [k, v] : r.extra.items())
            if (!out.contains(k)) out[k] = v;
    return out;
}

void write_record_file(const std::string& dir, const std::string& name, const nlohmann::json& value, RecordSync sync) {
    // Invalid UTF-8 in argv must not abort the record: replace it rather than throw.
    std::string text = value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    // Durability is opt-in (docs/architecture.md "run.json durability"): the
    // two journal commits cost more than the rest of a run together. Atomic
    // either way: a reader sees no file or a complete one.
    write_file_atomically({dir, name, 0600, sync == RecordSync::durable ? Durability::durable : Durability::visible},
                          text);
}

void write_run_record(const std::string& run_dir, const RunRecord& record, RecordSync sync) {
    write_record_file(run_dir, "run.json", to_json(record), sync);
}

}  // namespace corral::supervisor
