// journal/covered_files.cpp — see covered_files.hpp.
#include "journal/covered_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/fd.hpp"
#include "base/sha256.hpp"
#include "base/sys_error.hpp"
#include "journal/journal.hpp"

namespace corral::journal {

nlohmann::json file_sha256(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd.valid()) return nullptr;
    struct stat st {};
    check_sys(::fstat(fd.get(), &st), "fstat", path);
    if (!S_ISREG(st.st_mode)) return nullptr;
    Sha256 sha(static_cast<std::uint64_t>(st.st_size));  // a small log needs no OpenSSL start-up
    char buf[64 * 1024];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        check_sys(n, "read", path);
        if (n == 0) break;
        sha.update(buf, static_cast<std::size_t>(n));
    }
    return "sha256:" + sha.finish_hex();
}

namespace {

bool plain_file_name(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

// The two logs of `output` ({"stdout": {"log_sha256", "log"?}, "stderr": ...}),
// in `dir` ("" or "execs/N/"). A record without "log" names (journals
// written before the names were recorded; every exec_end) has the logs at
// their fixed names; a run's stdout log was then stdout.jsonl for an agent
// run, so that is its second path.
Problem collect_logs(const nlohmann::json& output, const std::string& dir, const CoveredFile& base, bool stdout_either,
                     std::vector<CoveredFile>& out) {
    for (const char* stream : {"stdout", "stderr"}) {
        if (!output.contains(stream) || !output[stream].is_object() || !output[stream].contains("log_sha256")) continue;
        const nlohmann::json& s = output[stream];
        const nlohmann::json& digest = s["log_sha256"];
        if (!digest.is_null() && !(digest.is_string() && digest.get<std::string>().rfind("sha256:", 0) == 0))
            return Failed{std::string("output.") + stream + ".log_sha256 is neither \"sha256:<hex>\" nor null"};
        CoveredFile f = base;
        f.sha256 = digest;
        if (s.contains("log")) {
            if (!s["log"].is_string() || !plain_file_name(s["log"].get<std::string>()))
                return Failed{std::string("output.") + stream + ".log is not a plain file name"};
            f.path = dir + s["log"].get<std::string>();
        } else {
            f.path = dir + stream + ".log";
            if (stdout_either && std::string_view(stream) == "stdout") f.or_path = dir + "stdout.jsonl";
        }
        out.push_back(std::move(f));
    }
    return std::nullopt;
}

}  // namespace

Problem collect_covered_files(const nlohmann::json& record, std::vector<CoveredFile>& out) {
    const std::string type = record["type"].get<std::string>();
    const nlohmann::json& payload = record["payload"];
    if (!payload.contains("output")) return std::nullopt;
    if (!payload["output"].is_object()) return Failed{"output is not an object"};
    CoveredFile base;
    base.seq = record["seq"].get<std::uint64_t>();
    if (type == kTypeTerminal) {
        base.record = type;
        return collect_logs(payload["output"], "", base, true, out);
    }
    if (type == kTypeExecEnd) {
        if (!payload.contains("exec") || !payload["exec"].is_number_unsigned() || payload["exec"].get<std::uint64_t>() == 0)
            return Failed{"an exec_end whose exec is not a positive integer"};
        const std::string n = std::to_string(payload["exec"].get<std::uint64_t>());
        base.record = type + " of exec " + n;
        return collect_logs(payload["output"], "execs/" + n + "/", base, false, out);
    }
    return std::nullopt;
}

namespace {

bool exists(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) return true;
    if (errno != ENOENT && errno != ENOTDIR) throw SysError("lstat", path, errno);
    return false;
}

// Why `f` is not as its record says, or "".
std::string check_one(const CoveredFile& f, const std::string& run_dir) {
    const std::string at = run_dir + f.path;
    const std::string says = "record " + std::to_string(f.seq) + " (" + f.record + ") says ";
    bool here = exists(at);
    const bool other_here = !f.or_path.empty() && exists(run_dir + f.or_path);
    if (here && other_here)
        return at + " and " + run_dir + f.or_path + " are both there; " + says + "one log (" + f.sha256.dump() +
               "): one was added";
    const std::string path = here || !other_here ? at : run_dir + f.or_path;
    here = here || other_here;
    if (f.sha256.is_null())
        return here ? path + " is there; " + says + "there was none when it was written: it was added after" : "";
    if (!here) return path + " is missing; " + says + f.sha256.get<std::string>() + ": it was removed or renamed";
    const nlohmann::json actual = file_sha256(path);
    if (actual == f.sha256) return "";
    return path + ": its SHA-256 is " + (actual.is_null() ? std::string("none (not a regular file)") : actual.get<std::string>()) +
           "; " + says + f.sha256.get<std::string>() + ": it was changed after the record was written";
}

}  // namespace

std::optional<std::string> check_covered_files(const std::vector<CoveredFile>& files, const std::string& run_dir,
                                               std::size_t* checked) {
    const std::string dir = run_dir.empty() || run_dir.back() == '/' ? run_dir : run_dir + "/";
    for (const auto& f : files) {
        std::string why = check_one(f, dir);
        if (!why.empty()) return why;
        if (checked) ++*checked;
    }
    return std::nullopt;
}

}  // namespace corral::journal
