// workspace/change and the diff's digest: what a review calls a change, its
// flags, and a digest that moves with every difference a review shows. Pure:
// no root, no files.
#include <doctest/doctest.h>

#include "workspace/apply.hpp"
#include "workspace/change.hpp"
#include "workspace/renames.hpp"
#include "workspace/report.hpp"

namespace corral::workspace {
namespace {

constexpr std::int64_t kSec = 1'000'000'000;
constexpr std::int64_t kFence = 1000 * kSec;  // 1000 s after the epoch, in ns

Node file(const std::string& sha, mode_t mode = 0644, std::uint64_t size = 4) {
    Node n;
    n.type = NodeType::regular;
    n.mode = mode;
    n.uid = 41001;
    n.gid = 41002;
    n.size = size;
    n.sha256 = sha;
    n.ctime_sec = 990;
    return n;
}

Node link_to(const std::string& target) {
    Node n = file("");
    n.type = NodeType::symlink;
    n.size = 0;
    n.target = target;
    return n;
}

TEST_CASE("added, deleted, modified and type changes are told apart; an unchanged file is no change") {
    auto added = classify("new.txt", std::nullopt, file("aa"), kFence);
    REQUIRE(added);
    CHECK(added->kind == ChangeKind::added);
    auto deleted = classify("old.txt", file("aa"), std::nullopt, kFence);
    REQUIRE(deleted);
    CHECK(deleted->kind == ChangeKind::deleted);
    auto modified = classify("a.txt", file("aa"), file("bb"), kFence);
    REQUIRE(modified);
    CHECK(modified->kind == ChangeKind::modified);
    CHECK(modified->content);
    CHECK_FALSE(modified->mode);
    auto typed = classify("x", file("aa"), link_to("/etc/passwd"), kFence);
    REQUIRE(typed);
    CHECK(typed->kind == ChangeKind::type_changed);
    // Copied up but left as it was (opened for writing, touched): nothing to review.
    CHECK_FALSE(classify("a.txt", file("aa"), file("aa"), kFence));
    CHECK_FALSE(classify("nothing", std::nullopt, std::nullopt, kFence));
}

TEST_CASE("the flags: exec bit, mode, owner, link text, xattrs, .git, special files, hard links") {
    auto chmodded = classify("run.sh", file("aa", 0644), file("aa", 0755), kFence);
    REQUIRE(chmodded);
    CHECK(chmodded->mode);
    CHECK(chmodded->exec_bit);
    CHECK_FALSE(chmodded->content);
    auto new_exec = classify("tool", std::nullopt, file("aa", 0755), kFence);
    REQUIRE(new_exec);
    CHECK(new_exec->exec_bit);
    auto group_only = classify("g", file("aa", 0644), file("aa", 0664), kFence);
    REQUIRE(group_only);
    CHECK_FALSE(group_only->exec_bit);
    Node other_owner = file("aa");
    other_owner.uid = 0;
    CHECK(classify("o", file("aa"), other_owner, kFence)->owner);
    auto retarget = classify("l", link_to("a"), link_to("/etc/passwd"), kFence);
    REQUIRE(retarget);
    CHECK(retarget->target);
    Node tagged = file("aa");
    tagged.xattrs["user.x"] = "1";
    CHECK(classify("t", file("aa"), tagged, kFence)->xattrs);
    CHECK(classify(".git/hooks/pre-commit", std::nullopt, file("aa", 0755), kFence)->git_internal);
    CHECK(classify("vendor/lib/.git/config", std::nullopt, file("aa"), kFence)->git_internal);
    CHECK_FALSE(classify("docs/.github/x", std::nullopt, file("aa"), kFence)->git_internal);
    CHECK_FALSE(classify(".gitignore", std::nullopt, file("aa"), kFence)->git_internal);
    Node fifo = file("");
    fifo.type = NodeType::fifo;
    CHECK(classify("p", std::nullopt, fifo, kFence)->special);
    Node linked = file("aa");
    linked.nlink = 2;
    CHECK(classify("h", std::nullopt, linked, kFence)->hard_link);
}

TEST_CASE("a host copy changed at or after the fence is host-changed; before it is not") {
    Node host = file("aa");
    host.ctime_sec = 1000;  // whole seconds: the fence's own second counts (second-granular file systems)
    CHECK(classify("a", host, file("bb"), kFence + kSec / 2)->host_changed);
    CHECK(classify("a", host, std::nullopt, kFence)->host_changed);
    host.ctime_sec = 999;
    CHECK_FALSE(classify("a", host, file("bb"), kFence)->host_changed);
    // Finer stamps: from kFenceMarginNs before the fence on.
    CHECK(changed_since(1000, 1, kFence));
    CHECK(changed_since(999, kSec - kFenceMarginNs, kFence));
    CHECK_FALSE(changed_since(999, kSec - kFenceMarginNs - 1, kFence));
    CHECK_FALSE(changed_since(999, 500'000'000, kFence));
    CHECK_FALSE(classify("a", std::nullopt, file("bb"), kFence)->host_changed);
}

TEST_CASE("the diff's digest moves with every difference a review shows, and only with those") {
    auto changes = [](Node after) {
        std::vector<Change> v;
        v.push_back(*classify("a.txt", file("aa"), after, kFence));
        v.push_back(*classify("gone", file("cc"), std::nullopt, kFence));
        return v;
    };
    const std::string base = diff_digest(changes(file("bb")));
    CHECK(base.starts_with("sha256:"));
    CHECK(base.size() == 7 + 64);
    CHECK(diff_digest(changes(file("bb"))) == base);
    CHECK(diff_digest(changes(file("bc"))) != base);
    CHECK(diff_digest(changes(file("bb", 0755))) != base);
    Node owned = file("bb");
    owned.gid = 7;
    CHECK(diff_digest(changes(owned)) != base);
    Node xattr = file("bb");
    xattr.xattrs["user.k"] = "v";
    CHECK(diff_digest(changes(xattr)) != base);
    // A deletion is part of it: dropping one changes the digest.
    auto fewer = changes(file("bb"));
    fewer.pop_back();
    CHECK(diff_digest(fewer) != base);
    // Link text cannot forge a field boundary.
    CHECK(node_signature(link_to("a xattr=1:b")) != node_signature(link_to("a")));
}

TEST_CASE("a path is selected by itself or an ancestor, never by a prefix of its name") {
    CHECK(selected("src/a.c", {}));
    CHECK(selected("src/a.c", {"src"}));
    CHECK(selected("src", {"src"}));
    CHECK_FALSE(selected("srcx/a.c", {"src"}));
    CHECK_FALSE(selected("a.c", {"src"}));
}

TEST_CASE("--only takes the paths named, what is below them, and the new directories above them") {
    Node dir = file("");
    dir.type = NodeType::directory;
    dir.size = 0;
    std::vector<Change> all = {*classify("a.txt", file("aa"), file("bb"), kFence),
                               *classify("new", std::nullopt, dir, kFence),
                               *classify("new/deep", std::nullopt, dir, kFence),
                               *classify("new/deep/f", std::nullopt, file("aa"), kFence),
                               *classify("new/other", std::nullopt, file("aa"), kFence)};
    CHECK(changes_to_apply(all, {}).size() == all.size());
    std::vector<std::string> picked;
    for (const auto& c : changes_to_apply(all, {"new/deep/f"})) picked.push_back(c.path);
    CHECK(picked == std::vector<std::string>{"new", "new/deep", "new/deep/f"});
    picked.clear();
    for (const auto& c : changes_to_apply(all, {"new"})) picked.push_back(c.path);
    CHECK(picked == std::vector<std::string>{"new", "new/deep", "new/deep/f", "new/other"});
    CHECK(changes_to_apply(all, {"a"}).empty());
}

}  // namespace
}  // namespace corral::workspace

namespace corral::workspace {
namespace {

Node dir_node() {
    Node n = file("", 0755, 0);
    n.type = NodeType::directory;
    return n;
}

// The changes, sorted by path as collect_changes gives them, renames marked.
std::vector<Change> marked(std::vector<Change> changes) {
    std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) { return a.path < b.path; });
    mark_renames(changes);
    return changes;
}

Change gone(const std::string& path, const Node& n) { return *classify(path, n, std::nullopt, kFence); }
Change made(const std::string& path, const Node& n) { return *classify(path, std::nullopt, n, kFence); }

const Change& at(const std::vector<Change>& changes, const std::string& path) {
    for (const auto& c : changes)
        if (c.path == path) return c;
    throw std::runtime_error("no change " + path);
}

}  // namespace

TEST_CASE("renames: a deleted and an added file of one content pair up, one to one, the same base name first") {
    auto changes = marked({gone("a/x.txt", file("11", 0644, 10)), gone("b/y.txt", file("11", 0644, 10)),
                           made("c/y.txt", file("11", 0644, 10)), made("c/z.txt", file("11", 0644, 10)),
                           made("c/w.txt", file("11", 0644, 10)), gone("e.txt", file("", 0644, 0)),
                           made("f.txt", file("", 0644, 0)), gone("g.txt", file("22", 0644, 3)),
                           made("h.txt", file("23", 0644, 3))});
    // Path order: c/w.txt takes a/x.txt, c/y.txt the one of its own base name; c/z.txt none left.
    CHECK(at(changes, "c/y.txt").renamed_from == "b/y.txt");
    CHECK(at(changes, "b/y.txt").renamed_to == "c/y.txt");
    CHECK(at(changes, "c/w.txt").renamed_from == "a/x.txt");
    CHECK(at(changes, "c/z.txt").renamed_from.empty());
    // Empty files are all alike (not a rename); another content is not one.
    CHECK(at(changes, "f.txt").renamed_from.empty());
    CHECK(at(changes, "h.txt").renamed_from.empty());
    CHECK(at(changes, "g.txt").renamed_to.empty());
    // Words only: still a deletion and an addition, and the digest is the one without the words.
    CHECK(at(changes, "b/y.txt").kind == ChangeKind::deleted);
    auto plain = changes;
    for (auto& c : plain) c.renamed_from.clear(), c.renamed_to.clear();
    CHECK(diff_digest(plain) == diff_digest(changes));
    CHECK(change_stat_line(at(changes, "c/y.txt")) == "A  c/y.txt  (renamed from b/y.txt)\n");
}

TEST_CASE("renames: a directory whose entries all moved, and nothing else, is a rename; one with more is not") {
    auto changes = marked({gone("ren", dir_node()), gone("ren/x.txt", file("11", 0644, 6)),
                           gone("ren/sub", dir_node()), gone("ren/sub/y", file("22", 0755, 2)),
                           made("ren2", dir_node()), made("ren2/x.txt", file("11", 0644, 6)),
                           made("ren2/sub", dir_node()), made("ren2/sub/y", file("22", 0755, 2)),
                           gone("old", dir_node()), gone("old/a", file("33", 0644, 1)),
                           made("new", dir_node()), made("new/a", file("33", 0644, 1)), made("new/b", file("44", 0644, 1))});
    CHECK(at(changes, "ren").renamed_to == "ren2");
    CHECK(at(changes, "ren2").renamed_from == "ren");
    CHECK(at(changes, "ren/sub").renamed_to == "ren2/sub");
    CHECK(at(changes, "ren2/sub/y").renamed_from == "ren/sub/y");
    // new/ holds one more entry: not old/ renamed, though its file still is.
    CHECK(at(changes, "old").renamed_to.empty());
    CHECK(at(changes, "new").renamed_from.empty());
    CHECK(at(changes, "new/a").renamed_from == "old/a");
}

}  // namespace corral::workspace
