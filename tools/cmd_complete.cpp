// `corral __complete KIND [ARG]`: the words the bash completion offers for an
// argument whose values live on disk (run ids, session names, images,
// workers), one per line. Not a subcommand a person types (no --help, not in
// `corral help`): the generated completion (tools/gen_docs.cpp) calls it.
//
// Fast and safe at every TAB: it reads directory names and the few live
// runs' records only (never every run.json, never a socket or a daemon);
// prints only words of [A-Za-z0-9._-] (bash's compgen -W expands its word
// list, so a name holding `$(` must never reach it); any failure (not root,
// no state dir) prints nothing and exits 0, like a completion with no match.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "image/store.hpp"
#include "names/run_id.hpp"
#include "run/request.hpp"
#include "run/run_index.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

namespace fs = std::filesystem;

// Newest runs first, at most this many: a TAB must answer at once.
constexpr std::size_t kMaxRunIds = 200;

bool safe_word(std::string_view w) {
    return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == '-';
    });
}

void print_words(const std::vector<std::string>& words) {
    for (const auto& w : words)
        if (safe_word(w)) std::printf("%s\n", w.c_str());
}

// The live sessions' names (and ids): the state dir's live marks only.
std::vector<std::string> session_words(const std::string& state_dir) {
    std::vector<std::string> out;
    for (const auto& e : run::unended_runs(state_dir)) {
        if (!e.record || e.state != "running") continue;
        const std::string name = run::session_name_of(*e.record);
        if (name.empty() && !e.record->contains("session")) continue;
        if (!name.empty()) out.push_back(name);
        out.push_back(e.id);
    }
    return out;
}

// Every run's id, newest first (the directory names; no record is read), and the live sessions' names.
std::vector<std::string> run_words(const std::string& state_dir) {
    std::vector<std::string> ids;
    std::error_code ec;
    for (const auto& d : fs::directory_iterator(state_dir + "/runs", ec))
        if (const std::string id = d.path().filename().string(); names::is_run_id(id)) ids.push_back(id);
    std::sort(ids.rbegin(), ids.rend());
    if (ids.size() > kMaxRunIds) ids.resize(kMaxRunIds);
    for (auto& n : session_words(state_dir)) ids.push_back(std::move(n));
    return ids;
}

std::vector<std::string> image_words(const std::string& state_dir) {
    std::vector<std::string> out;
    for (const auto& i : image::ImageStore(state_dir).list()) out.push_back(i.name);
    return out;
}

// ORG/workers/NAME/worker.toml's NAMEs (no TOML is parsed).
std::vector<std::string> worker_words(const std::string& org_dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& d : fs::directory_iterator(org_dir + "/workers", ec))
        if (fs::is_regular_file(d.path() / "worker.toml", ec)) out.push_back(d.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

int cmd_complete(int argc, char** argv) {
    const std::string_view kind = argc >= 2 ? argv[1] : "";
    const std::string arg = argc >= 3 ? argv[2] : "";
    try {
        const std::string state_dir = arg.empty() ? run::default_state_dir() : arg;
        if (kind == "runs") print_words(run_words(state_dir));
        else if (kind == "sessions") print_words(session_words(state_dir));
        else if (kind == "images") print_words(image_words(state_dir));
        else if (kind == "workers" && !arg.empty()) print_words(worker_words(arg));
    } catch (const std::exception&) {
        // Nothing to offer: a completion never prints an error into the line being typed.
    }
    return 0;
}

}  // namespace corral::cli
