// `corral doctor` through the real binary: one well-formed line per feature, every
// feature the issue lists is probed, and the exit status agrees with the lines.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.hpp"

using corral::test::corral_bin;
using corral::test::run;

namespace {
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}
}  // namespace

TEST_CASE("corral doctor prints one ok/FAIL line per feature and exits 0 iff all are ok") {
    auto r = run({corral_bin(), "doctor"});
    REQUIRE_FALSE(r.timed_out);
    auto lines = lines_of(r.out);
    REQUIRE(lines.size() >= 18);
    bool any_fail = false;
    for (const auto& line : lines) {
        bool ok = line.rfind("ok   ", 0) == 0;
        bool fail = line.rfind("FAIL ", 0) == 0;
        bool warn = line.rfind("warn ", 0) == 0;  // not required: never changes the exit status
        CHECK_MESSAGE((ok || fail || warn), line);
        CHECK_MESSAGE(line.find(": ") != std::string::npos, line);
        if (fail) any_fail = true;
        if (fail || warn) CHECK_MESSAGE(line.find(" — ") != std::string::npos, "a FAIL/warn line must say what to do: " << line);
    }
    CHECK(r.exit_code == (any_fail ? 1 : 0));
    for (const char* feature : {"running as root", "pid namespace", "mount namespace", "network namespace",
                                "ipc namespace", "uts namespace", "cgroup namespace", "clone3", "pidfd",
                                "no_new_privs", "seccomp filter", "overlayfs", "device nodes", "netlink", "cgroup v2",
                                "cgroup memory controller", "cgroup pids controller", "cgroup cpu controller",
                                "cgroup limits", "idmapped mounts", "state dir", "agent CLI pi", "agent CLI claude",
                                "agent CLI codex"}) {
        bool found = false;
        for (const auto& line : lines)
            if (line.find(std::string(" ") + feature + ": ") == 4) found = true;
        CHECK_MESSAGE(found, "no line for " << feature);
    }
    if (corral::test::running_as_root()) {
        // Everything is present on the machines corral's CI runs on.
        MESSAGE(r.out);
        CHECK(r.exit_code == 0);
    }
}

// Skipped (doctest counts it) without root, or without setpriv (util-linux).
TEST_CASE("without CAP_MKNOD corral doctor names the device-node check and what to do" *
          doctest::skip(!corral::test::running_as_root() || !corral::test::have_program("setpriv"))) {
    // Root without CAP_MKNOD, as in a container's default capability set.
    auto r = run({"setpriv", "--bounding-set", "-mknod", "--inh-caps", "-mknod", corral_bin(), "doctor"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    bool named = false;
    for (const auto& line : lines_of(r.out))
        if (line.rfind("FAIL device nodes: ", 0) == 0 && line.find("mknod") != std::string::npos &&
            line.find("CAP_MKNOD") != std::string::npos)
            named = true;
    CHECK(named);
}

TEST_CASE("corral doctor --help explains it; an unknown argument is a usage error") {
    auto help = run({corral_bin(), "doctor", "--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("usage: corral doctor") == 0);
    auto bad = run({corral_bin(), "doctor", "--bogus"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("--bogus") != std::string::npos);
    CHECK(lines_of(bad.err).size() == 1);
}

namespace {
std::string temp_dir(mode_t mode) {
    char tmpl[] = "/tmp/corral-doctor-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    REQUIRE(chmod(tmpl, mode) == 0);
    return tmpl;
}
}  // namespace

TEST_CASE("corral doctor --json: one object with every check the text prints, the same exit status") {
    auto text = run({corral_bin(), "doctor"});
    auto j = run({corral_bin(), "doctor", "--json"});
    REQUIRE_FALSE(j.timed_out);
    CHECK(j.exit_code == text.exit_code);
    auto doc = nlohmann::json::parse(j.out);  // stdout holds only the object
    CHECK(doc["exit_status"] == j.exit_code);
    CHECK(doc["ok"] == (j.exit_code == 0));
    const auto text_lines = lines_of(text.out);
    REQUIRE(doc["checks"].size() == text_lines.size());
    for (std::size_t i = 0; i < text_lines.size(); ++i) {
        const auto& c = doc["checks"][i];
        for (const char* field : {"name", "status", "detail", "remedy", "required"}) CHECK_MESSAGE(c.contains(field), field);
        const std::string status = c["status"];
        CHECK((status == "ok" || status == "fail" || status == "warn"));
        // The same check, in the same order, as the text line names it.
        CHECK_MESSAGE(text_lines[i].find(" " + c["name"].get<std::string>() + ": ") == 4, text_lines[i]);
    }
}

TEST_CASE("corral doctor checks the state dir: missing is fine, writable by others is a FAIL (exit 1)" *
          doctest::skip(!corral::test::running_as_root())) {
    const std::string base = temp_dir(0755);
    auto missing = run({corral_bin(), "doctor", "--json", "--state-dir", base + "/not-yet"});
    auto find = [](const nlohmann::json& doc, const std::string& name) {
        for (const auto& c : doc["checks"])
            if (c["name"] == name) return c;
        return nlohmann::json();
    };
    auto m = find(nlohmann::json::parse(missing.out), "state dir");
    CHECK(m["status"] == "ok");
    CHECK(m["detail"].get<std::string>().find("does not exist yet") != std::string::npos);
    const std::string open_dir = base + "/open";
    REQUIRE(mkdir(open_dir.c_str(), 0777) == 0);
    REQUIRE(chmod(open_dir.c_str(), 0777) == 0);
    auto bad = run({corral_bin(), "doctor", "--state-dir", open_dir});
    CHECK(bad.exit_code == 1);
    CHECK(bad.out.find("FAIL state dir: " + open_dir + " has mode 0777: writable by others than root") != std::string::npos);
    // The ID-mapped probe ran in it and left nothing behind.
    CHECK(bad.out.find("idmapped mounts: ") != std::string::npos);
    CHECK(std::filesystem::is_empty(open_dir));
    std::filesystem::remove_all(base);
}

TEST_CASE("corral doctor --gateway: a live `corral gateway` answers; a socket nobody serves is a FAIL" *
          doctest::skip(!corral::test::running_as_root())) {
    const std::string dir = temp_dir(0700);
    REQUIRE(run({corral_bin(), "ca", "init", "--state-dir", dir}).exit_code == 0);
    corral::test::write_file(dir + "/gateway.toml", "[gateway]\nlisten_unix = \"" + dir + "/gw.sock\"\nstate_dir = \"" +
                                                        dir + "\"\nledger = \"" + dir + "/ledger.jsonl\"\n");
    auto nobody = run({corral_bin(), "doctor", "--gateway", "unix:" + dir + "/gw.sock"});
    CHECK(nobody.exit_code == 1);
    CHECK(nobody.out.find("FAIL gateway daemon: unix:" + dir + "/gw.sock (--gateway): ") != std::string::npos);
    {
        corral::test::Background daemon({corral_bin(), "gateway", "--config", dir + "/gateway.toml"});
        REQUIRE(daemon.wait_for_stdout("listening", std::chrono::seconds(10)));
        auto live = run({corral_bin(), "doctor", "--json", "--gateway", "unix:" + dir + "/gw.sock"});
        auto doc = nlohmann::json::parse(live.out);
        const auto& last = doc["checks"].back();
        CHECK(last["name"] == "gateway daemon");
        CHECK(last["status"] == "ok");
        CHECK(last["detail"].get<std::string>().find("answers") != std::string::npos);
    }
    auto bad = run({corral_bin(), "doctor", "--gateway", "tcp:1"});
    CHECK(bad.exit_code == 2);
    std::filesystem::remove_all(dir);
}

TEST_CASE("the journal key: `corral key init` makes it, `key show` and `corral doctor` print the same public key") {
    const std::string dir = temp_dir(0700);
    auto none = run({corral_bin(), "doctor", "--json", "--state-dir", dir});
    auto before = nlohmann::json::parse(none.out);
    CHECK(before["journal_public_key"].is_null());  // doctor only reads: no key made
    CHECK_FALSE(std::filesystem::exists(dir + "/journal/signing.pub"));

    auto init = run({corral_bin(), "key", "init", "--state-dir", dir});
    INFO(init.out << init.err);
    REQUIRE(init.exit_code == 0);
    CHECK(init.out.rfind("-----BEGIN PUBLIC KEY-----\n", 0) == 0);
    auto show = run({corral_bin(), "key", "show", "--state-dir", dir});
    CHECK(show.exit_code == 0);
    CHECK(show.out == init.out);
    CHECK(show.err.find("ed25519:") != std::string::npos);  // the fingerprint, on stderr
    std::ifstream pub(dir + "/journal/signing.pub");
    std::stringstream pub_text;
    pub_text << pub.rdbuf();
    CHECK(pub_text.str() == show.out);

    auto doc = nlohmann::json::parse(run({corral_bin(), "doctor", "--json", "--state-dir", dir}).out);
    CHECK(doc["journal_public_key"] == show.out);
    bool line = false;
    for (const auto& c : doc["checks"])
        line |= c["name"] == "journal key" && c["status"] == "ok";
    CHECK(line);
    std::filesystem::remove_all(dir);
}

TEST_CASE("corral ca init without --state-dir uses $CORRAL_STATE_DIR, the state dir a run's gateway keeps its CA in") {
    const std::string dir = temp_dir(0700);
    corral::test::RunOptions o;
    o.env["CORRAL_STATE_DIR"] = dir;
    auto init = run({corral_bin(), "ca", "init"}, o);
    INFO(init.out << init.err);
    REQUIRE(init.exit_code == 0);
    CHECK(init.out == dir + "/ca/ca.crt\n");
    CHECK(std::filesystem::exists(dir + "/ca/ca.key"));
    auto again = run({corral_bin(), "ca", "init", "--state-dir", dir}, o);
    CHECK(again.out == init.out);
    CHECK(again.err.find("kept the existing CA") != std::string::npos);
    std::filesystem::remove_all(dir);
}
