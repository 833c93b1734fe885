// tools/cmd_approvals.cpp — `corral approvals`, `corral approve ID`, `corral
// deny ID`: the requests waiting for a person, in every decider of a state
// dir (the runs' embedded gateways, a gateway daemon: each listens on
// STATE_DIR/approvals/*.sock, approval/protocol.hpp), and the decisions.
// What a box asked is printed through terminal_text: a path the box chose
// must not drive the operator's terminal.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "approval/protocol.hpp"
#include "base/sys_error.hpp"
#include "base/terminal_text.hpp"
#include "cli/approvals_args.hpp"
#include "run/bridge.hpp"
#include "run/state_dir.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

using nlohmann::json;
constexpr auto kApprovalAskTimeout = std::chrono::seconds(5);

struct ApprovalDecider {
    std::string socket;
    json answer;  // its list answer
};

// Every control socket of the state dir. Throws UsageError when the
// directory cannot be read (not root: approvals are root's).
std::vector<std::string> control_sockets(const std::string& state_dir) {
    const std::string dir = approval::control_dir(state_dir);
    std::vector<std::string> out;
    DIR* d = ::opendir(dir.c_str());
    if (!d) {
        if (errno == ENOENT) return out;
        throw UsageError("cannot read " + dir + ": " + errno_text(errno) +
                         (::geteuid() != 0 ? " (approvals are root's: run this as root)" : ""));
    }
    while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name.size() > 5 && name.ends_with(".sock")) out.push_back(dir + "/" + name);
    }
    ::closedir(d);
    return out;
}

// Asks every decider for its pending requests; a socket nobody serves (a
// run that ended without removing it) is skipped.
std::vector<ApprovalDecider> list_pending(const std::string& state_dir) {
    std::vector<ApprovalDecider> out;
    for (const auto& socket : control_sockets(state_dir)) {
        auto answer = run::ask_daemon(socket, approval::list_request(), kApprovalAskTimeout);
        if (!answer) continue;
        json j = json::parse(*answer, nullptr, false);
        if (j.is_object() && j.contains("pending") && j["pending"].is_array()) out.push_back({socket, std::move(j)});
    }
    return out;
}

std::string seconds_left(const std::string& deadline_utc) {
    // The deadline is UTC with milliseconds; the table shows seconds left.
    std::tm tm{};
    int ms = 0;
    if (std::sscanf(deadline_utc.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
        return deadline_utc;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    const auto at = std::chrono::system_clock::from_time_t(::timegm(&tm)) + std::chrono::milliseconds(ms);
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(at - std::chrono::system_clock::now()).count();
    return std::to_string(left < 0 ? 0 : left) + "s";
}

std::string what_is_asked(const json& e) {
    if (e.value("kind", "") == "tool")
        return "tool " + e.value("server", "") + "/" + e.value("tool", "") + " " + e.value("arguments", "");
    return e.value("method", "") + " " + e.value("host", "") + ":" + std::to_string(e.value("port", 0)) +
           e.value("path", "");
}

void print_approval(const json& e, bool as_json) {
    if (as_json) {
        std::printf("%s\n", terminal_json(e.dump(-1, ' ', false, json::error_handler_t::replace)).c_str());
        return;
    }
    std::printf("%-22s %-40s %-10s %s\n", terminal_text(e.value("id", "")).c_str(),
                terminal_text(e.value("identity", "")).c_str(), seconds_left(e.value("deadline", "")).c_str(),
                terminal_text(what_is_asked(e)).c_str());
}

int list_approvals(const ApprovalsArgs& a) {
    std::vector<std::string> seen;
    bool header = false;
    for (;;) {
        for (const auto& d : list_pending(a.state_dir))
            for (const auto& e : d.answer["pending"]) {
                const std::string id = e.value("id", "");
                if (std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
                seen.push_back(id);
                if (!a.as_json && !header) {
                    std::printf("%-22s %-40s %-10s %s\n", "ID", "IDENTITY", "EXPIRES", "ASKS");
                    header = true;
                }
                print_approval(e, a.as_json);
            }
        std::fflush(stdout);
        if (!a.follow) return 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
}

int decide_approval(const char* command, const ApprovalsArgs& a, bool approve) {
    for (const auto& d : list_pending(a.state_dir))
        for (const auto& e : d.answer["pending"]) {
            if (e.value("id", "") != a.id) continue;
            auto answer = run::ask_daemon(d.socket, approval::decide_request(a.id, approve, a.reason, a.always),
                                          kApprovalAskTimeout);
            json j = answer ? json::parse(*answer, nullptr, false) : json();
            if (!j.is_object()) {
                std::fprintf(stderr, "corral %s: %s did not answer (%s)\n", command, d.socket.c_str(),
                             answer ? "not a JSON object" : answer.problem().c_str());
                return 125;
            }
            if (!j.value("ok", false)) {
                std::fprintf(stderr, "corral %s: %s\n", command, terminal_text(j.value("error", "refused")).c_str());
                return 1;
            }
            const json& entry = j["entry"];
            std::printf("%s %s: %s%s\n", terminal_text(a.id).c_str(), entry.value("state", "").c_str(),
                        terminal_text(what_is_asked(entry)).c_str(),
                        entry.value("always", false) ? " (granted for the rest of the run)" : "");
            return 0;
        }
    std::fprintf(stderr,
                 "corral %s: no request %s is waiting in %s (it was decided, expired, or its run ended; "
                 "`corral approvals` lists the waiting ones)\n",
                 command, terminal_text(a.id).c_str(), a.state_dir.c_str());
    return 1;
}

int approvals_command(const char* command, int argc, char** argv) {
    ApprovalsArgs a;
    try {
        a = parse_approvals_args(command, argc, argv);
        if (a.help) {
            std::fputs(approvals_help(command).c_str(), stdout);
            return 0;
        }
        a.state_dir = run::require_private_state_dir("--state-dir", a.state_dir);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "corral %s: %s\n", command, e.what());
        return 2;
    }
    try {
        if (std::string_view(command) == "approvals") return list_approvals(a);
        return decide_approval(command, a, std::string_view(command) == "approve");
    } catch (const UsageError& e) {
        std::fprintf(stderr, "corral %s: %s\n", command, e.what());
        return 125;
    }
}

}  // namespace

int cmd_approvals(int argc, char** argv) { return approvals_command("approvals", argc, argv); }
int cmd_approve(int argc, char** argv) { return approvals_command("approve", argc, argv); }
int cmd_deny(int argc, char** argv) { return approvals_command("deny", argc, argv); }

}  // namespace corral::cli
