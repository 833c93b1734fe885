// [[mcp.rules]], [mcp.pins], [mcp.budget]: every refused input as one
// Diagnostic naming FILE:LINE, the key and what is allowed, and
// mcp::validate_rules' problems surfacing at load (org.toml's policy and each
// worker's merged one), never a silent no-op.
#include <doctest/doctest.h>

#include <string>

#include "config/org_config.hpp"
#include "tests/config/org_fixture.hpp"

using namespace corral;
using test::errors_of;
using test::OrgDir;

namespace {

bool rules_has(const std::string& all, const std::string& needle) { return all.find(needle) != std::string::npos; }

// Lines 1-2: one stdio server, "files".
const std::string kFiles = "[mcp.servers.files]\ncommand = [\"/bin/files\"]\n";

std::string rule(const std::string& body) { return "[[mcp.rules]]\nserver = \"files\"\ntool = \"read_file\"\n" + body; }

}  // namespace

TEST_CASE("[[mcp.rules]]: refused rules and constraints") {
    OrgDir d;
    const std::string org = d.file("org.toml");
    auto errors = [&](const std::string& text) {
        d.org(kFiles + text);
        return errors_of(d);
    };
    const std::string kinds = "allowed: exactly one of exact | one_of | glob | regex | min and/or max (with "
                              "integer) | path_under\n";
    SUBCASE("a bad action, a missing one, an unknown key") {
        auto e = errors(rule("action = \"permit\"\n") + "[[mcp.rules]]\nserver = \"files\"\ntool = \"x\"\nwhy = 1\n");
        CHECK(rules_has(e, org + ":6: key 'mcp.rules[0].action': got \"permit\", allowed: allow | deny | approval\n"));
        CHECK(rules_has(e, org + ":7: key 'mcp.rules[1].action' is missing, allowed: allow | deny | approval\n"));
        CHECK(rules_has(e, org + ":10: unknown key 'mcp.rules[1].why', allowed: action | approval_timeout | server | tool | when\n"));
    }
    SUBCASE("approval_timeout: only beside action = \"approval\", whole seconds from 1s to 60m") {
        auto e = errors(rule("action = \"allow\"\napproval_timeout = \"30s\"\n") +
                        rule("action = \"approval\"\napproval_timeout = \"2h\"\n"));
        CHECK(rules_has(e, org + ":7: key 'mcp.rules[0].approval_timeout': got \"30s\", allowed: only with action = "
                           "\"approval\"\n"));
        CHECK(rules_has(e, org + ":12: key 'mcp.rules[1].approval_timeout': got \"2h\", allowed: a duration of whole "
                           "seconds from 1s to 60m, such as \"90s\", \"5m\"\n"));
    }
    SUBCASE("a rule naming a server org.toml does not define") {
        auto e = errors("[[mcp.rules]]\nserver = \"fiels\"\ntool = \"*\"\naction = \"allow\"\n");
        CHECK(rules_has(e, org + ":3: key 'mcp.rules': unknown server \"fiels\" (this worker has: files)\n"));
    }
    SUBCASE("a tool glob that can match no tool name") {
        auto e = errors("[[mcp.rules]]\nserver = \"files\"\ntool = \"read file\"\naction = \"allow\"\n");
        CHECK(rules_has(e, org + ":5: key 'mcp.rules[0].tool': got \"read file\", allowed: a glob over tool names: 1..128 "
                           "of A-Z a-z 0-9 _ . - and the wildcards * ?\n"));
    }
    SUBCASE("a constraint with no kind, or two") {
        auto e = errors(rule("action = \"allow\"\nwhen = [ { pointer = \"/p\" },\n"
                             "  { pointer = \"/q\", glob = \"*\", regex = \".*\" } ]\n"));
        CHECK(rules_has(e, org + ":7: key 'mcp.rules[0].when[0]': no kind of constraint, " + kinds));
        CHECK(rules_has(e, org + ":8: key 'mcp.rules[0].when[1]': the kinds glob and regex, " + kinds));
    }
    SUBCASE("integer without a range, exact with a date, a missing pointer") {
        auto e = errors(rule("action = \"allow\"\nwhen = [ { pointer = \"/p\", glob = \"*\", integer = true },\n"
                             "  { pointer = \"/d\", exact = 1979-05-27 }, { glob = \"x\" } ]\n"));
        CHECK(rules_has(e, org + ":7: key 'mcp.rules[0].when[0].integer': got true, allowed: only with min and/or max (a "
                           "number range)\n"));
        CHECK(rules_has(e, org + ":8: key 'mcp.rules[0].when[1].exact': got a date/time, allowed: a string, number, "
                           "boolean, array or table (no dates, no inf or nan)\n"));
        CHECK(rules_has(e, org + ":8: key 'mcp.rules[0].when[2].pointer' is missing"));
    }
    SUBCASE("validate_rules: a bad regex, pointer, empty one_of, min above max, an unnormalised root") {
        auto e = errors(rule("action = \"allow\"\nwhen = [ { pointer = \"/q\", regex = \"(a\" },\n"
                             "  { pointer = \"path\", glob = \"*\" },\n"
                             "  { pointer = \"/m\", one_of = [] },\n"
                             "  { pointer = \"/n\", min = 10, max = 1 },\n"
                             "  { pointer = \"/r\", path_under = \"/workspace/../etc\" } ]\n"));
        CHECK(rules_has(e, org + ":7: key 'mcp.rules[0].when[0]': /q: "));
        CHECK(rules_has(e, org + ":8: key 'mcp.rules[0].when[1]': path: \"path\" is not a JSON pointer (\"/name\", "
                           "\"/a/b\")\n"));
        CHECK(rules_has(e, org + ":9: key 'mcp.rules[0].when[2]': /m: an empty list of allowed values never matches\n"));
        CHECK(rules_has(e, org + ":10: key 'mcp.rules[0].when[3]': /n: range min is above max, so it never matches\n"));
        CHECK(rules_has(e, org + ":11: key 'mcp.rules[0].when[4]': /r: root \"/workspace/../etc\" must be an absolute "
                           "normalised path\n"));
    }
}

TEST_CASE("[[mcp.rules]] of a worker: checked against the servers it has (org.toml's and its own)") {
    OrgDir d;
    d.org(kFiles);
    d.worker("ok", "[mcp.servers.mine]\nurl = \"https://mine.example.com/\"\n"
                   "[[mcp.rules]]\nserver = \"mine\"\ntool = \"*\"\naction = \"allow\"\n"
                   "[[mcp.rules]]\nserver = \"files\"\ntool = \"*\"\naction = \"deny\"\n");
    d.worker("other", "[[mcp.rules]]\nserver = \"mine\"\ntool = \"*\"\naction = \"allow\"\n");
    auto check = config::check_org(d.str());
    REQUIRE(check.errors.size() == 1);  // "ok" has mine; "other" does not
    CHECK(check.errors[0].text() == d.file("workers/other/worker.toml") +
                                        ":1: key 'mcp.rules': unknown server \"mine\" (this worker has: files)");
    CHECK(check.errors[0].worker == "other");
    CHECK(check.errors[0].line == 1);

    SUBCASE("org.toml's wrong rule is reported once, not again for each worker") {
        d.org(kFiles + "[[mcp.rules]]\nserver = \"mine\"\ntool = \"*\"\naction = \"allow\"\n");
        d.worker("other", "");
        auto again = config::check_org(d.str());
        REQUIRE(again.errors.size() == 1);
        CHECK(again.errors[0].text() == d.file("org.toml") + ":3: key 'mcp.rules': unknown server \"mine\" (this "
                                                             "worker has: files)");
        CHECK(again.errors[0].worker.empty());
    }
}

TEST_CASE("[mcp.pins] and [mcp.budget]: refused keys, digests and zero budgets") {
    OrgDir d;
    const std::string org = d.file("org.toml");
    auto errors = [&](const std::string& text) {
        d.org(kFiles + text);
        return errors_of(d);
    };
    SUBCASE("pins") {
        auto e = errors("[mcp.pins]\n\"files\" = \"sha256:" + std::string(64, 'a') + "\"\n"
                        "\"files/read_file\" = \"sha256:abc\"\n"
                        "\"files/write_file\" = \"sha256:" + std::string(64, 'A') + "\"\n"
                        "\"other/read_file\" = \"sha256:" + std::string(64, 'a') + "\"\n");
        const std::string key_allowed = "allowed: \"SERVER/TOOL\" (a server name, '/', a tool name of 1..128 of "
                                        "A-Z a-z 0-9 _ . -)\n";
        CHECK(rules_has(e, org + ":4: key 'mcp.pins.\"files\"': got the key \"files\", " + key_allowed));
        const std::string digest_allowed =
            ", allowed: \"sha256:\" and 64 lowercase hex digits (a digest corral mcp ls shows)\n";
        CHECK(rules_has(e, org + ":5: key 'mcp.pins.\"files/read_file\"': got \"sha256:abc\"" + digest_allowed));
        CHECK(rules_has(e, org + ":6: key 'mcp.pins.\"files/write_file\"': got \"sha256:" + std::string(64, 'A') + "\"" +
                         digest_allowed));
        CHECK(rules_has(e, org + ":7: key 'mcp.pins.\"other/read_file\"': got a tool of server \"other\", allowed: a tool "
                           "of a server org.toml defines: files\n"));
    }
    SUBCASE("budgets: zero, negative, unknown keys, per-tool keys") {
        auto e = errors("[mcp.budget]\ntool_calls_per_run = 0\ntool_calls_per_worker = -1\ncalls = 3\n"
                        "per_tool = { \"files/write_file\" = 0, \"files\" = 3, \"nope/x\" = 2 }\n");
        CHECK(rules_has(e, org + ":4: key 'mcp.budget.tool_calls_per_run': got 0, allowed: an integer 1..9007199254740992\n"));
        CHECK(rules_has(e, org + ":5: key 'mcp.budget.tool_calls_per_worker': got -1, allowed: an integer "
                           "1..9007199254740992\n"));
        CHECK(rules_has(e, org + ":6: unknown key 'mcp.budget.calls', allowed: per_tool | tool_calls_per_run | "
                           "tool_calls_per_worker\n"));
        CHECK(rules_has(e, org + ":7: key 'mcp.budget.per_tool.\"files/write_file\"': got 0, allowed: an integer "
                           "1..9007199254740992\n"));
        CHECK(rules_has(e, org + ":7: key 'mcp.budget.per_tool.\"files\"': got the key \"files\""));
        CHECK(rules_has(e, org + ":7: key 'mcp.budget.per_tool.\"nope/x\"': got a tool of server \"nope\", allowed: a "
                           "tool of a server org.toml defines: files\n"));
    }
    SUBCASE("a worker's pin for a server it has from org.toml is fine; one it lacks is not") {
        d.org(kFiles);
        d.worker("w", "[mcp.pins]\n\"files/read\" = \"sha256:" + std::string(64, '0') + "\"\n"
                      "\"gone/read\" = \"sha256:" + std::string(64, '0') + "\"\n");
        auto check = config::check_org(d.str());
        REQUIRE(check.errors.size() == 1);
        CHECK(check.errors[0].text() == d.file("workers/w/worker.toml") +
                                            ":3: key 'mcp.pins.\"gone/read\"': got a tool of server \"gone\", "
                                            "allowed: a tool of a server the worker has: files");
    }
}

TEST_CASE("[[mcp.rules]]: an empty tool glob, and a bad glob beside another problem, are reported") {
    OrgDir d;
    d.org(kFiles + "[[mcp.rules]]\nserver = \"files\"\ntool = \"\"\naction = \"allow\"\n"
                   "[[mcp.rules]]\nserver = \"files\"\ntool = \"a b\"\naction = \"permit\"\n");
    auto e = errors_of(d);
    const std::string allowed = "allowed: a glob over tool names: 1..128 of A-Z a-z 0-9 _ . - and the wildcards * ?\n";
    CHECK(rules_has(e, d.file("org.toml") + ":5: key 'mcp.rules[0].tool': got \"\", " + allowed));
    CHECK(rules_has(e, d.file("org.toml") + ":9: key 'mcp.rules[1].tool': got \"a b\", " + allowed));
    CHECK(rules_has(e, d.file("org.toml") + ":10: key 'mcp.rules[1].action': got \"permit\""));
}

TEST_CASE("[[mcp.rules]]: a regex longer than 1024 bytes is refused before it is compiled") {
    OrgDir d;
    // 20000 nested groups would overflow the stack in std::regex's compiler.
    const std::string deep = std::string(20000, '(') + "a" + std::string(20000, ')');
    d.org(kFiles + "[[mcp.rules]]\nserver = \"files\"\ntool = \"t\"\naction = \"allow\"\n"
                   "when = [ { pointer = \"/q\", regex = \"" + deep + "\" } ]\n");
    auto e = errors_of(d);
    CHECK(rules_has(e, d.file("org.toml") + ":7: key 'mcp.rules[0].when[0].regex': got \"((((("));
    CHECK(rules_has(e, "\", allowed: an ECMAScript regex of at most 1024 bytes\n"));
}
