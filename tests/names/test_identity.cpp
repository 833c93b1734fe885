// names/identity: worker names, "worker/run" identities and the globs grants scope them with.
#include <doctest/doctest.h>

#include "names/identity.hpp"

namespace {
// The check's problem as text, "" when the name is fine.
std::string worker_name_text(std::string_view name) {
    auto bad = corral::names::check_worker_name(name);
    return bad ? bad->problem : std::string();
}
}  // namespace

using namespace corral::names;

TEST_CASE("an identity is two parts of [A-Za-z0-9._-] around exactly one '/'") {
    auto id = parse_identity("ci-7.a_b/20260101T000000Z-abc123");
    REQUIRE(id);
    CHECK(id->worker == "ci-7.a_b");
    CHECK(id->run_id == "20260101T000000Z-abc123");
    CHECK(id->str() == "ci-7.a_b/20260101T000000Z-abc123");
    for (const char* bad : {"", "/", "w/", "/r", "w", "w/r/x", "w r/1", "w/r\n", "w*/r", "wörker/r", "w/r:1"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_identity(bad));
    }
    CHECK(is_identity_part("a.B-9_"));
    CHECK_FALSE(is_identity_part(""));
    CHECK_FALSE(is_identity_part("a/b"));
}

TEST_CASE("worker names: 1-64 identity characters, starting with a letter or digit") {
    CHECK(worker_name_text("a.b_c-9") == "");
    CHECK(worker_name_text("9lives") == "");
    CHECK(worker_name_text("") == "empty name");
    CHECK(worker_name_text(std::string(64, 'a')) == "");
    CHECK(worker_name_text(std::string(65, 'a')) == "longer than 64 characters");
    CHECK(worker_name_text(".hidden") == "must start with a letter or digit");
    CHECK(worker_name_text("-x") == "must start with a letter or digit");
    CHECK(worker_name_text("a/b") == "contains '/'; allowed: letters, digits, '.', '_', '-'");
    CHECK(worker_name_text("a*") == "contains '*'; allowed: letters, digits, '.', '_', '-'");
    // Every valid worker name is an identity part (it is the part before '/').
    for (const char* w : {"a", "a.b_c-9", "9lives"}) CHECK(is_identity_part(w));
}

TEST_CASE("identity patterns: a glob on the worker, or on worker/run when it has a '/'") {
    for (const char* ok : {"worker-a", "ci-*", "w?", "[ab]x", "[!a]x", "w/*", "*/run-1", "*"}) {
        CAPTURE(ok);
        CHECK(is_identity_pattern(ok));
    }
    for (const char* bad : {"", "a/b/c", "a b", "a,b", "a\\b", "a{b}"}) {
        CAPTURE(bad);
        CHECK_FALSE(is_identity_pattern(bad));
    }
    const Identity a{"worker-a", "run-1"};
    CHECK(identity_pattern_matches("worker-a", a));
    CHECK(identity_pattern_matches("worker-*", a));
    CHECK_FALSE(identity_pattern_matches("worker", a));      // a worker glob is on the whole name
    CHECK_FALSE(identity_pattern_matches("worker-a/run-1x", a));
    CHECK(identity_pattern_matches("worker-a/run-1", a));
    CHECK(identity_pattern_matches("*/run-?", a));
    CHECK_FALSE(identity_pattern_matches("run-1", a));       // no '/': the worker, not the run
}

TEST_CASE("a pattern may match a worker's runs when its worker part matches the worker") {
    CHECK(identity_pattern_may_match_worker("ci-*", "ci-7"));
    CHECK(identity_pattern_may_match_worker("ci-7/run-*", "ci-7"));
    CHECK(identity_pattern_may_match_worker("*/run-1", "anyone"));
    CHECK_FALSE(identity_pattern_may_match_worker("ci-8/run-*", "ci-7"));
    CHECK_FALSE(identity_pattern_may_match_worker("ci", "ci-7"));
    // Consistent with matching: whatever an identity matches, its worker may.
    const Identity id{"ci-7", "r1"};
    for (const char* p : {"ci-*", "ci-7/r1", "*/r?", "c?-7/*"})
        if (identity_pattern_matches(p, id)) CHECK(identity_pattern_may_match_worker(p, id.worker));
}
