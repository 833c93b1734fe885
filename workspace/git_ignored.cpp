#include "workspace/git_ignored.hpp"

#include <unistd.h>

#include <set>

#include "workspace/child_process.hpp"

namespace corral::workspace {

std::string mark_ignored(std::vector<Change>& changes, const ReviewRecord& record) {
    if (changes.empty()) return "";
    if (access("/usr/bin/git", X_OK) != 0) return "ignored files not flagged: /usr/bin/git is missing";
    ChildRun run;
    // core.fsmonitor and hooks never run for check-ignore; said anyway, so no
    // configuration of the repository can make this start a program.
    run.argv = {"/usr/bin/git", "-C", record.workspace, "-c", "core.fsmonitor=false", "check-ignore", "-z", "--stdin"};
    for (const auto& c : changes)
        if (!c.git_internal) run.stdin_data += c.path + '\0';  // git will not answer for its own directory
    run.uid = record.owner_uid;
    run.gid = record.owner_gid;
    const ChildResult r = run_child(run);
    if (r.status == 1) return "";  // nothing ignored
    if (r.status != 0) return "ignored files not flagged: git check-ignore exited " + std::to_string(r.status) +
                              " (is " + record.workspace + " a git repository its owner can read?)";
    std::set<std::string> ignored;
    for (std::size_t at = 0; at < r.out.size();) {
        const std::size_t end = r.out.find('\0', at);
        ignored.insert(r.out.substr(at, end - at));
        if (end == std::string::npos) break;
        at = end + 1;
    }
    for (auto& c : changes) c.ignored = ignored.count(c.path) > 0;
    return "";
}

}  // namespace corral::workspace
