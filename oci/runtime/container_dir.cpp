// oci/runtime/container_dir.cpp — ROOT/ID: claimed by mkdir, one record
// replaced atomically.
#include "oci/runtime/container_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/atomic_file.hpp"
#include "base/fd.hpp"
#include "base/parse.hpp"
#include "base/remove_tree.hpp"
#include "base/strict_json.hpp"
#include "base/sys_error.hpp"

namespace corral::oci {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxRecordBytes = 1u << 20;

// ROOT: root's and nobody else's, so that no one else can plant a record,
// a socket or a symlink where root's commands will look.
void check_or_make_root(const std::string& root) {
    if (root.empty() || root.front() != '/')
        throw UsageError("--root " + root + ": expected an absolute path");
    // Its parents as runc makes them (containerd's shim names
    // /run/containerd/runc/NAMESPACE, which need not exist yet).
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(root).parent_path(), ec);
    if (ec) throw UsageError("--root " + root + ": its parent directories: " + ec.message());
    if (::mkdir(root.c_str(), 0700) != 0 && errno != EEXIST) throw SysError("mkdir", "--root " + root, errno);
    struct stat st {};
    check_sys(::lstat(root.c_str(), &st), "lstat", "--root " + root);
    if (!S_ISDIR(st.st_mode)) throw UsageError("--root " + root + ": not a directory");
    if (st.st_uid != 0 || (st.st_mode & 077) != 0)
        throw UsageError("--root " + root + ": must be root's with mode 0700 (it holds the containers' control sockets)");
}

}  // namespace

ContainerDir ContainerDir::claim(const std::string& root, const std::string& id) {
    if (Problem bad = check_container_id(id)) throw UsageError("container id: " + bad->problem);
    check_or_make_root(root);
    std::string path = root + "/" + id;
    if (::mkdir(path.c_str(), 0700) != 0) {
        if (errno == EEXIST) throw UsageError("container " + id + " exists (in " + root + ")");
        throw SysError("mkdir", path, errno);
    }
    return ContainerDir(std::move(path), id);
}

ContainerDir ContainerDir::open(const std::string& root, const std::string& id) {
    if (Problem bad = check_container_id(id)) throw UsageError("container id: " + bad->problem);
    check_or_make_root(root);
    std::string path = root + "/" + id;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw UsageError("container " + id + " does not exist (in " + root + ")");
    return ContainerDir(std::move(path), id);
}

std::vector<ContainerDir> ContainerDir::all(const std::string& root) {
    std::vector<ContainerDir> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
        const std::string id = e.path().filename().string();
        if (check_container_id(id) == std::nullopt && e.is_directory(ec) && !e.is_symlink(ec))
            out.push_back(ContainerDir(e.path().string(), id));
    }
    std::sort(out.begin(), out.end(), [](const ContainerDir& a, const ContainerDir& b) { return a.id() < b.id(); });
    return out;
}

void ContainerDir::write(const ContainerRecord& r) const {
    json j{{"state", json::parse(state_json(r.state))},
           {"run_id", r.run_id},
           {"run_dir", r.run_dir},
           {"supervisor", r.supervisor},
           {"supervisor_start", r.supervisor_start},
           {"exit_status", r.exit_status ? json(*r.exit_status) : json(nullptr)},
           {"teardown_problem", r.teardown_problem},
           {"created", r.created}};
    write_file_atomically({path_, "record.json", 0600, Durability::visible}, j.dump(2) + "\n");
}

ContainerRecord ContainerDir::read() const {
    auto text = read_whole_file({path_ + "/record.json", kMaxRecordBytes, -100, true});
    if (!text) throw UsageError("container " + id_ + ": no record (its create did not finish)");
    const std::string where = path_ + "/record.json";
    try {
        json j = json::parse(*text);
        auto state = parse_state_json(j.at("state").dump());
        if (!state) throw UsageError(where + ": state." + state.problem());
        ContainerRecord r;
        r.state = *state;
        r.run_id = j.at("run_id").get<std::string>();
        r.run_dir = j.at("run_dir").get<std::string>();
        r.supervisor = j.at("supervisor").get<pid_t>();
        r.supervisor_start = j.at("supervisor_start").get<unsigned long long>();
        if (!j.at("exit_status").is_null()) r.exit_status = j.at("exit_status").get<int>();
        r.teardown_problem = j.at("teardown_problem").get<std::string>();
        r.created = j.value("created", std::string());
        return r;
    } catch (const json::exception& e) {
        throw UsageError(where + ": unreadable: " + e.what());
    }
}

Fd ContainerDir::open_dir() const {
    Fd fd(::open(path_.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) throw SysError("open", path_, errno);
    return fd;
}

void ContainerDir::remove() const { remove_tree_at(AT_FDCWD, path_); }

unsigned long long process_start_time(pid_t pid) {
    if (pid <= 0) return 0;
    auto text = read_whole_file({"/proc/" + std::to_string(pid) + "/stat", 4096});
    if (!text) return 0;
    // comm (field 2) may hold spaces and parentheses: count from the last ')'.
    auto close = text->rfind(')');
    if (close == std::string::npos) return 0;
    unsigned long long start = 0;
    int field = 2;
    for (std::size_t i = close + 1; i < text->size(); ++i) {
        if ((*text)[i] != ' ') continue;
        if (++field == 22) {
            start = std::strtoull(text->c_str() + i + 1, nullptr, 10);
            break;
        }
    }
    return start;
}

void write_pid_file(const std::string& path, pid_t pid) {
    std::filesystem::path p = std::filesystem::absolute(path);
    write_file_atomically({p.parent_path().string(), p.filename().string(), 0644, Durability::visible},
                          std::to_string(pid));
}

bool supervisor_alive(const ContainerRecord& r) {
    return r.supervisor > 0 && r.supervisor_start != 0 && process_start_time(r.supervisor) == r.supervisor_start;
}

ContainerStatus effective_status(const ContainerRecord& r) {
    if (r.state.status == ContainerStatus::stopped) return ContainerStatus::stopped;
    return supervisor_alive(r) ? r.state.status : ContainerStatus::stopped;
}

ContainerDir open_live_container(const std::string& root, const std::string& id) {
    ContainerDir dir = ContainerDir::open(root, id);
    const ContainerStatus s = effective_status(dir.read());
    if (s != ContainerStatus::created && s != ContainerStatus::running)
        throw UsageError("container " + id + " is not running (" + std::string(to_string(s)) + ")");
    return dir;
}

}  // namespace corral::oci
