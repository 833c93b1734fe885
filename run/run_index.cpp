#include "run/run_index.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "base/fd.hpp"
#include "base/sys_error.hpp"
#include "names/rootfs_source.hpp"
#include "names/run_id.hpp"
#include "rootfs/host_paths.hpp"
#include "supervisor/run_record.hpp"

namespace corral::run {

namespace {

constexpr int kMaxIdDraws = 16;
constexpr std::size_t kMinPrefix = 4;

std::string runs_dir_of(const std::string& state_dir) { return state_dir + "/runs"; }
std::string live_dir_of(const std::string& state_dir) { return state_dir + "/live"; }

std::optional<nlohmann::json> read_record_file(const std::string& path, bool* exists) {
    std::optional<std::string> text;
    try {
        // run.json holds the argv and messages: a few KiB; past 16 MiB it is not corral's.
        text = read_whole_file({path, 16u << 20});
    } catch (const std::exception&) {
        *exists = true;  // there, but unreadable: reported as a run without a record
        return std::nullopt;
    }
    *exists = text.has_value();
    if (!text) return std::nullopt;
    auto parsed = nlohmann::json::parse(*text, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
    return parsed;
}

RunEntry entry_for(const std::string& state_dir, const std::string& id) {
    RunEntry e;
    e.id = id;
    const std::string link = runs_dir_of(state_dir) + "/" + id;
    char target[4096];
    ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    e.run_dir = n > 0 ? std::string(target, static_cast<std::size_t>(n)) : link;
    bool exists = false;
    e.record = read_record_file(e.run_dir + "/run.json", &exists);
    struct stat st {};
    if (e.record) e.state = live_state(*e.record);
    else if (exists) e.state = "unreadable";
    else e.state = ::stat(e.run_dir.c_str(), &st) == 0 ? "starting" : "removed";
    return e;
}

std::vector<std::string> run_ids(const std::string& state_dir) {
    std::vector<std::string> ids;
    DIR* d = ::opendir(runs_dir_of(state_dir).c_str());
    if (!d) {
        if (errno == ENOENT) return ids;
        throw SysError("opendir", runs_dir_of(state_dir), errno);
    }
    while (dirent* ent = ::readdir(d))
        if (names::is_run_id(ent->d_name)) ids.emplace_back(ent->d_name);
    ::closedir(d);
    std::sort(ids.begin(), ids.end(), std::greater<>());
    return ids;
}

}  // namespace

ReservedRun reserve_run(const std::string& state_dir, const std::optional<std::string>& given_run_dir,
                        const std::function<std::string()>& make_id) {
    rootfs::RootOnlyDir runs = rootfs::open_root_only_dir("--state-dir", runs_dir_of(state_dir), 0700);
    for (int draw = 0; draw < kMaxIdDraws; ++draw) {
        ReservedRun r;
        r.id = make_id();
        const int rc = given_run_dir ? ::symlinkat(given_run_dir->c_str(), runs.fd.get(), r.id.c_str())
                                     : ::mkdirat(runs.fd.get(), r.id.c_str(), 0700);
        if (rc == 0) {
            r.run_dir = given_run_dir ? *given_run_dir : runs.real_path + "/" + r.id;
            if (!given_run_dir && ::fchmodat(runs.fd.get(), r.id.c_str(), 0700, 0) != 0)
                throw SysError("chmod", r.run_dir, errno);  // the umask must not loosen it
            rootfs::RootOnlyDir live = rootfs::open_root_only_dir("--state-dir", live_dir_of(state_dir), 0700);
            Fd mark(::openat(live.fd.get(), r.id.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
            if (!mark.valid()) throw SysError("open", live.real_path + "/" + r.id, errno);
            return r;
        }
        if (errno != EEXIST) throw SysError(given_run_dir ? "symlink" : "mkdir", runs.real_path + "/" + r.id, errno);
    }
    throw UsageError("--state-dir " + state_dir + ": no free run id after " + std::to_string(kMaxIdDraws) +
                     " draws (is something creating entries in " + runs.real_path + "?)");
}

std::string live_state(const nlohmann::json& record) {
    const std::string state = record.value("state", std::string());
    if (state != "running") return state.empty() ? "finished" : state;  // records older than "state" are final
    supervisor::SupervisorProcess who;
    if (const auto s = record.find("supervisor"); s != record.end() && s->is_object()) {
        who.pid = s->value("pid", 0);
        who.start_ticks = s->value("start_ticks", std::uint64_t{0});
        who.boot_id = s->value("boot_id", std::string());
    }
    return supervisor::supervisor_alive(who) ? "running" : "lost";
}

void mark_run_ended(const std::string& state_dir, const std::string& id) noexcept {
    ::unlink((live_dir_of(state_dir) + "/" + id).c_str());
}

std::vector<RunEntry> unended_runs(const std::string& state_dir) {
    std::vector<std::string> ids;
    DIR* d = ::opendir(live_dir_of(state_dir).c_str());
    if (!d) {
        if (errno == ENOENT) return {};
        throw SysError("opendir", live_dir_of(state_dir), errno);
    }
    while (dirent* ent = ::readdir(d))
        if (names::is_run_id(ent->d_name)) ids.emplace_back(ent->d_name);
    ::closedir(d);
    std::sort(ids.begin(), ids.end(), std::greater<>());
    std::vector<RunEntry> out;
    for (const auto& id : ids) {
        RunEntry e = entry_for(state_dir, id);
        if (e.state == "running" || e.state == "starting" || e.state == "lost") out.push_back(std::move(e));
        else mark_run_ended(state_dir, id);  // finished (its supervisor died after run.json), removed, unreadable
    }
    return out;
}

std::vector<RunEntry> list_runs(const std::string& state_dir) {
    std::vector<RunEntry> out;
    for (const auto& id : run_ids(state_dir)) {
        RunEntry e = entry_for(state_dir, id);
        if (e.state != "removed") out.push_back(std::move(e));  // a --run-dir someone deleted since
    }
    return out;
}

std::vector<std::string> running_runs_on_image(const std::string& state_dir, const std::string& image_name) {
    std::vector<std::string> ids;
    for (const auto& e : list_runs(state_dir)) {
        if (e.state != "running") continue;
        const auto rootfs = e.record->find("rootfs");
        if (rootfs != e.record->end() && rootfs->is_string() && rootfs->get<std::string>() == names::to_string(names::ImageRootfs{image_name}))
            ids.push_back(e.id);
    }
    return ids;
}

RunEntry read_run(const std::string& state_dir, const std::string& id) { return entry_for(state_dir, id); }

std::optional<std::string> run_id_of_dir(const std::string& state_dir, const std::string& dir,
                                         const std::string& likely) {
    struct stat want {};
    check_sys(::stat(dir.c_str(), &want), "stat", dir);
    // The same directory by device and inode: a path written another way
    // (relative, through a link, a bind mount) is still that dir.
    auto is_dir_of = [&](const std::string& id) {
        struct stat st {};
        return ::stat((runs_dir_of(state_dir) + "/" + id).c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
               st.st_dev == want.st_dev && st.st_ino == want.st_ino;
    };
    if (names::is_run_id(likely) && is_dir_of(likely)) return likely;  // one stat, not one per run
    for (const auto& id : run_ids(state_dir))
        if (is_dir_of(id)) return id;
    return std::nullopt;
}

std::string session_name_of(const nlohmann::json& record) {
    if (record.contains("session") && record["session"].is_object() && record["session"]["name"].is_string())
        return record["session"]["name"].get<std::string>();
    return {};
}

namespace {

[[noreturn]] void throw_ambiguous(const std::string& state_dir, const std::string& id,
                                  const std::vector<std::string>& matches, const char* how) {
    throw UsageError("run id \"" + id + "\" is ambiguous in " + runs_dir_of(state_dir) + ": " +
                     std::to_string(matches.size()) + " runs " + how + " it (" + matches[0] + ", " + matches[1] +
                     (matches.size() > 2 ? ", ..." : "") + "); give more of it");
}

std::optional<RunEntry> running_session_named(const std::string& state_dir, const std::string& name) {
    for (auto& e : list_runs(state_dir))
        if (e.record && e.state == "running" && session_name_of(*e.record) == name) return std::move(e);
    return std::nullopt;
}

}  // namespace

RunEntry find_run(const std::string& state_dir, const std::string& id) {
    names::require_run_id(id, "");
    // "corral-3f9a1c" is what the box's hostname shows of the id.
    const std::string part = id.starts_with("corral-") ? id.substr(7) : id;
    std::vector<std::string> prefixed, containing;
    for (const auto& candidate : run_ids(state_dir)) {
        if (candidate == id) return entry_for(state_dir, id);
        if (id.size() >= kMinPrefix && candidate.compare(0, id.size(), id) == 0) prefixed.push_back(candidate);
        else if (part.size() >= kMinPrefix && candidate.find(part) != std::string::npos) containing.push_back(candidate);
    }
    if (prefixed.size() == 1) return entry_for(state_dir, prefixed.front());
    if (prefixed.size() > 1) throw_ambiguous(state_dir, id, prefixed, "start with");
    if (containing.size() == 1) return entry_for(state_dir, containing.front());
    if (containing.size() > 1) throw_ambiguous(state_dir, id, containing, "contain");
    if (auto session = running_session_named(state_dir, id)) return std::move(*session);
    throw UsageError("no run \"" + id + "\" in " + runs_dir_of(state_dir) +
                     " (`corral ps -a` lists them; --state-dir picks another state dir)");
}

}  // namespace corral::run
