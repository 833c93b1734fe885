#include "supervisor/run_record.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <string>

#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral::supervisor {
namespace {

template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

void write_all(int fd, const std::string& data, const std::string& path) {
    std::size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw SysError("write", path, errno);
        done += static_cast<std::size_t>(n);
    }
}

}  // namespace

bool TeardownReport::clean() const {
    return problems.empty() && std::all_of(steps.begin(), steps.end(), [](const TeardownStep& s) { return s.ok; });
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
    json out{
        {"id", r.id},
        {"argv", r.argv},
        {"uid", r.uid},
        {"gid", r.gid},
        {"hostname", r.hostname},
        {"rootfs", r.rootfs},
        {"workspace", or_null(r.workspace)},
        {"workspace_binding", r.workspace ? json{{"idmapped", r.idmapped_binds}, {"unmapped", r.unmapped_binds}} : json()},
        {"started_at", format_rfc3339_ms(r.started_at)},
        {"ended_at", format_rfc3339_ms(r.ended_at)},
        {"duration_ms", duration},
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
        {"output",
         {{"stdout", {{"bytes", r.stdout_bytes}, {"logged", r.stdout_logged}}},
          {"stderr", {{"bytes", r.stderr_bytes}, {"logged", r.stderr_logged}}},
          {"log_limit_bytes", r.log_limit_bytes}}},
        {"teardown", {{"verdict", r.teardown.verdict()}, {"problems", r.teardown.problems}, {"steps", steps}}},
        {"status", r.status},
        {"messages", r.messages},
    };
    if (r.extra.is_object())
        for (const auto& [k, v] : r.extra.items())
            if (!out.contains(k)) out[k] = v;
    return out;
}

void write_run_record(const std::string& run_dir, const RunRecord& record, RecordSync sync) {
    // Invalid UTF-8 in argv must not abort the record: replace it rather than throw.
    std::string text = to_json(record).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::string final_path = run_dir + "/run.json";
    std::string tmp_path = run_dir + "/.run.json.tmp";
    {
        Fd fd(::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (!fd.valid()) throw SysError("open", tmp_path, errno);
        write_all(fd.get(), text, tmp_path);
        // Durability is opt-in (docs/architecture.md "run.json durability"):
        // the two journal commits cost more than the rest of a run together.
        if (sync == RecordSync::durable && ::fdatasync(fd.get()) != 0) throw SysError("fdatasync", tmp_path, errno);
    }
    // Atomic either way: a reader sees no run.json or a complete one.
    if (::rename(tmp_path.c_str(), final_path.c_str()) != 0) {
        int err = errno;
        ::unlink(tmp_path.c_str());
        throw SysError("rename", tmp_path + " -> " + final_path, err);
    }
    if (sync != RecordSync::durable) return;
    // The rename is durable only once the directory entry is.
    Fd dir(::open(run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) throw SysError("open", run_dir, errno);
    if (::fsync(dir.get()) != 0) throw SysError("fsync", run_dir, errno);
}

}  // namespace corral::supervisor
