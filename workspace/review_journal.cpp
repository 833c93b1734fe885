#include "workspace/review_journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "base/fd.hpp"
#include "base/terminal_text.hpp"

namespace corral::workspace {

namespace {

nlohmann::json recorded_paths(const std::vector<std::string>& paths) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& p : paths) out.push_back(terminal_text(p));
    return out;
}

}  // namespace

nlohmann::json invoker() {
    nlohmann::json login = nullptr;
    // (uid_t)-1 is the kernel's "never set" (a daemon, a container without audit).
    try {
        if (auto text = read_whole_file(WholeFileRead{"/proc/self/loginuid", 64, AT_FDCWD, true})) {
            const unsigned long long id = std::stoull(*text);
            if (id != static_cast<uid_t>(-1)) login = id;
        }
    } catch (const std::exception&) {
        // Not readable, or not a number: no login UID to tell.
    }
    return {{"uid", getuid()}, {"euid", geteuid()}, {"loginuid", login}};
}

nlohmann::json apply_payload(const ReviewRecord& record, const ApplyFacts& facts) {
    nlohmann::json refused = nlohmann::json::array();
    for (const auto& r : facts.refused) refused.push_back({{"path", terminal_text(r.first)}, {"why", terminal_text(r.second)}});
    return {{"workspace", terminal_text(record.workspace)},
            {"diff_digest", facts.diff_digest},
            {"expect", facts.expect ? nlohmann::json(*facts.expect) : nlohmann::json(nullptr)},
            {"only", recorded_paths(facts.only)},
            {"applied", recorded_paths(facts.applied)},
            {"refused", refused},
            {"written_as", {{"uid", record.owner_uid}, {"gid", record.owner_gid}}},
            {"by", invoker()}};
}

nlohmann::json discard_payload(const ReviewRecord& record, const std::optional<std::string>& diff_digest,
                               std::size_t changes, const std::string& diff_error) {
    nlohmann::json out = {{"workspace", terminal_text(record.workspace)},
                          {"diff_digest", diff_digest ? nlohmann::json(*diff_digest) : nlohmann::json(nullptr)},
                          {"changes", changes},
                          {"by", invoker()}};
    if (!diff_error.empty()) out["diff_error"] = terminal_text(diff_error);
    return out;
}

}  // namespace corral::workspace
