// workspace/renames.cpp — see renames.hpp.
#include "workspace/renames.hpp"

#include <algorithm>
#include <map>
#include <string_view>

namespace corral::workspace {

namespace {

// A regular file whose content names it: not empty, hashed, one link.
bool telling_file(const std::optional<Node>& n) {
    return n && n->type == NodeType::regular && n->size > 0 && !n->sha256.empty();
}

std::string_view base_name(std::string_view path) {
    const auto slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The indices of the changes below `dir` (a contiguous run in path order:
// every path with the prefix "dir/" sorts together).
std::pair<std::size_t, std::size_t> below(const std::vector<Change>& changes, const std::string& dir) {
    const std::string prefix = dir + "/";
    auto first = std::lower_bound(changes.begin(), changes.end(), prefix,
                                  [](const Change& c, const std::string& p) { return c.path < p; });
    auto last = first;
    while (last != changes.end() && last->path.starts_with(prefix)) ++last;
    return {static_cast<std::size_t>(first - changes.begin()), static_cast<std::size_t>(last - changes.begin())};
}

// What a directory held, as the side that has it: each entry's path below
// it and its signature; empty when anything below it is not of `kind`.
std::string shape(const std::vector<Change>& changes, std::size_t at, ChangeKind kind) {
    const Change& dir = changes[at];
    const auto [first, last] = below(changes, dir.path);
    std::string out;
    for (std::size_t i = first; i < last; ++i) {
        const Change& c = changes[i];
        if (c.kind != kind || c.special || c.hard_link) return "";
        const auto& side = kind == ChangeKind::deleted ? c.before : c.after;
        out += c.path.substr(dir.path.size()) + "\n" + node_signature(side) + "\n";
    }
    return out;
}

bool is_dir(const Change& c, ChangeKind kind) {
    if (c.kind != kind) return false;
    const auto& side = kind == ChangeKind::deleted ? c.before : c.after;
    return side && side->type == NodeType::directory;
}

// A deleted directory and an added one with the same entries below them
// (and the same mode): every entry of the one is marked as moved to the
// other's. Outermost first (path order), so a nested one is taken with it.
void pair_directories(std::vector<Change>& changes) {
    std::multimap<std::string, std::size_t> added;  // shape → an added directory
    for (std::size_t i = 0; i < changes.size(); ++i)
        if (is_dir(changes[i], ChangeKind::added))
            if (auto s = shape(changes, i, ChangeKind::added); !s.empty())
                added.emplace(std::to_string(changes[i].after->mode) + "\n" + s, i);
    for (std::size_t i = 0; i < changes.size(); ++i) {
        if (!is_dir(changes[i], ChangeKind::deleted) || !changes[i].renamed_to.empty()) continue;
        const std::string s = shape(changes, i, ChangeKind::deleted);
        if (s.empty()) continue;
        const auto [lo, hi] = added.equal_range(std::to_string(changes[i].before->mode) + "\n" + s);
        const auto it = std::find_if(lo, hi, [&](const auto& kv) { return changes[kv.second].renamed_from.empty(); });
        if (it == hi) continue;
        const std::size_t a = it->second;
        const auto [df, dl] = below(changes, changes[i].path);
        const auto [af, al] = below(changes, changes[a].path);
        for (std::size_t k = 0; k < dl - df; ++k) {
            changes[df + k].renamed_to = changes[af + k].path;
            changes[af + k].renamed_from = changes[df + k].path;
        }
        changes[i].renamed_to = changes[a].path;
        changes[a].renamed_from = changes[i].path;
        added.erase(it);
    }
}

// The files left: a deleted one and an added one of the same size and
// digest, the same base name first, then path order.
void pair_files(std::vector<Change>& changes) {
    std::map<std::pair<std::uint64_t, std::string>, std::vector<std::size_t>> gone;
    for (std::size_t i = 0; i < changes.size(); ++i) {
        const Change& c = changes[i];
        if (c.kind == ChangeKind::deleted && c.renamed_to.empty() && telling_file(c.before))
            gone[{c.before->size, c.before->sha256}].push_back(i);
    }
    for (auto& c : changes) {
        if (c.kind != ChangeKind::added || !c.renamed_from.empty() || c.hard_link || !telling_file(c.after)) continue;
        auto it = gone.find({c.after->size, c.after->sha256});
        if (it == gone.end() || it->second.empty()) continue;
        auto& candidates = it->second;
        auto pick = std::find_if(candidates.begin(), candidates.end(),
                                 [&](std::size_t j) { return base_name(changes[j].path) == base_name(c.path); });
        if (pick == candidates.end()) pick = candidates.begin();
        Change& from = changes[*pick];
        candidates.erase(pick);
        from.renamed_to = c.path;
        c.renamed_from = from.path;
    }
}

}  // namespace

void mark_renames(std::vector<Change>& changes) {
    pair_directories(changes);
    pair_files(changes);
}

}  // namespace corral::workspace
