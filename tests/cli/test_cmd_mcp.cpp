// `corral mcp ls|trust` as the operator runs them (the corral binary): a
// worker's servers and its pins store shown, a quarantined tool's new digest
// accepted, everything else refused with its reason and exit status, and a
// store or state dir that cannot be trusted refused before it is read. Root
// only (the state dir must be root's): exits 77 otherwise.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.hpp"

namespace corral::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kA = "sha256:" + std::string(64, 'a');
const std::string kB = "sha256:" + std::string(64, 'b');
const std::string kC = "sha256:" + std::string(64, 'c');

// An organisation with worker w1 (server `tools`, tools/pinned pinned in
// worker.toml) and w2 (no MCP servers), its state dir root-only, under /run.
struct McpOrg {
    fs::path root;
    std::string org, state, store;
    McpOrg() {
        char tmpl[] = "/run/corral-test-mcp-XXXXXX";
        root = ::mkdtemp(tmpl);
        ::chmod(root.c_str(), 0700);
        org = (root / "org").string();
        state = (root / "state").string();
        store = state + "/mcp/w1/pins.json";
        fs::create_directories(org + "/workers/w1");
        fs::create_directories(org + "/workers/w2");
        write_file(org + "/org.toml", "[gateway]\nstate_dir = \"" + state + "\"\n");
        write_file(org + "/workers/w1/worker.toml",
                   "agent = \"none\"\n"
                   "[mcp.servers.tools]\nurl = \"https://mcp.test.invalid/mcp\"\n"
                   "[[mcp.rules]]\nserver = \"tools\"\ntool = \"*\"\naction = \"allow\"\n"
                   "[mcp.pins]\n\"tools/pinned\" = \"" + kC + "\"\n");
        write_file(org + "/workers/w2/worker.toml", "agent = \"none\"\n");
    }
    ~McpOrg() { fs::remove_all(root); }
    Result mcp(std::vector<std::string> args) const {
        std::vector<std::string> argv = {corral_bin(), "mcp"};
        argv.insert(argv.end(), args.begin(), args.end());
        argv.insert(argv.end(), {"--config", org});
        return run(argv, RunOptions{std::chrono::seconds(30)});
    }
    void write_store(const std::string& text) const {
        fs::create_directories(state + "/mcp/w1");
        for (const auto& d : {state, state + "/mcp", state + "/mcp/w1"}) ::chmod(d.c_str(), 0700);
        write_file(store, text, 0600);
    }
    json ls_json() const {
        Result r = mcp({"ls", "--json"});
        REQUIRE_MESSAGE(r.exit_code == 0, r.err);
        return json::parse(r.out);
    }
};

json tool_in(const json& doc, const std::string& worker, const std::string& server, const std::string& tool) {
    for (const auto& w : doc["workers"])
        for (const auto& s : w["servers"])
            for (const auto& t : s["tools"])
                if (w["name"] == worker && s["name"] == server && t["name"] == tool) return t;
    return nullptr;
}

std::string store_text(const std::string& quarantined_digest) {
    return "{\"version\":1,\"tools\":{"
           "\"tools/echo\":{\"trusted\":\"" + kA + "\",\"first_seen\":\"T1\",\"run\":\"R1\"},"
           "\"tools/drifting\":{\"trusted\":\"" + kA + "\",\"first_seen\":\"T1\",\"run\":\"R1\","
           "\"quarantined\":{\"digest\":\"" + quarantined_digest + "\",\"at\":\"T2\",\"run\":\"R2\"}},"
           "\"gone/old\":{\"trusted\":\"" + kA + "\",\"first_seen\":\"T0\",\"run\":\"R0\"}}}";
}

TEST_CASE("corral mcp ls: the servers, the configuration's pins, and the store's tools with their quarantines") {
    McpOrg o;
    Result empty = o.mcp({"ls"});
    CHECK_MESSAGE(empty.exit_code == 0, empty.err);
    CHECK(empty.out.find("worker w1 (pins: none kept yet)") != std::string::npos);
    CHECK(empty.out.find("server tools  http  https://mcp.test.invalid/mcp  (" + o.org + "/workers/w1/worker.toml:") !=
          std::string::npos);
    CHECK(empty.out.find("worker w2 (pins: none kept yet)\n  no MCP servers") != std::string::npos);
    CHECK_FALSE(fs::exists(o.state + "/mcp"));  // ls creates nothing

    o.write_store(store_text(kB));
    json doc = o.ls_json();
    CHECK(doc["workers"][0]["store"] == o.store);
    json pinned = tool_in(doc, "w1", "tools", "pinned");
    CHECK(pinned["source"] == "config");
    CHECK(pinned["trusted"] == kC);
    json drifting = tool_in(doc, "w1", "tools", "drifting");
    CHECK(drifting["source"] == "store");
    CHECK(drifting["trusted"] == kA);
    CHECK(drifting["quarantined"]["digest"] == kB);
    CHECK(tool_in(doc, "w1", "tools", "echo")["quarantined"].is_null());
    CHECK(tool_in(doc, "w1", "gone", "old")["trusted"] == kA);  // a server no longer configured
    Result table = o.mcp({"ls", "--worker", "w1"});
    CHECK(table.exit_code == 0);
    CHECK(table.out.find("QUARANTINED: new " + kB + " seen T2") != std::string::npos);
    CHECK(table.out.find("pinned in ") != std::string::npos);
    CHECK(table.out.find("worker w2") == std::string::npos);
    CHECK(table.out.find("server gone  not configured") != std::string::npos);
}

TEST_CASE("corral mcp trust: only the quarantined digest is accepted, unless --force; the configuration's pins stay") {
    McpOrg o;
    o.write_store(store_text(kB));
    Result wrong = o.mcp({"trust", "tools/drifting", kC});
    CHECK(wrong.exit_code == 1);
    CHECK(wrong.err == "corral mcp: worker w1: tools/drifting was quarantined with the new digest " + kB + ", not " +
                           kC + " (--force trusts " + kC + " anyway)\n");
    Result not_q = o.mcp({"trust", "tools/echo", kA});
    CHECK(not_q.exit_code == 1);
    CHECK(not_q.err.find("tools/echo is not quarantined; it is trusted as " + kA + " already") != std::string::npos);
    Result unseen = o.mcp({"trust", "tools/never", kA});
    CHECK(unseen.exit_code == 1);
    CHECK(unseen.err.find("no run has seen tools/never yet") != std::string::npos);
    Result pinned = o.mcp({"trust", "tools/pinned", kA});
    CHECK(pinned.exit_code == 1);
    CHECK(pinned.err.find("tools/pinned is pinned in the configuration (" + o.org + "/workers/w1/worker.toml:") !=
          std::string::npos);

    Result ok = o.mcp({"trust", "tools/drifting", kB});
    CHECK_MESSAGE(ok.exit_code == 0, ok.err);
    CHECK(ok.out.find("worker w1: tools/drifting trusted as " + kB) != std::string::npos);
    json drifting = tool_in(o.ls_json(), "w1", "tools", "drifting");
    CHECK(drifting["trusted"] == kB);
    CHECK(drifting["quarantined"].is_null());
    CHECK(drifting["first_seen"] == "T2");  // when the quarantine saw it
    CHECK(drifting["run"] == "R2");
    struct stat st {};
    REQUIRE(::stat(o.store.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);

    CHECK(o.mcp({"trust", "--all-quarantined"}).out == "nothing is quarantined\n");
    Result forced = o.mcp({"trust", "--force", "--worker", "w1", "tools/new", kC});
    CHECK_MESSAGE(forced.exit_code == 0, forced.err);
    CHECK(tool_in(o.ls_json(), "w1", "tools", "new")["trusted"] == kC);
}

TEST_CASE("corral mcp trust --all-quarantined: each quarantined tool accepted with the digest its quarantine saw") {
    McpOrg o;
    o.write_store(store_text(kB));
    Result all = o.mcp({"trust", "--all-quarantined", "--worker", "w1"});
    CHECK_MESSAGE(all.exit_code == 0, all.err);
    CHECK(all.out == "worker w1: tools/drifting trusted as " + kB + " (was " + kA + ")\n");
    json doc = o.ls_json();
    CHECK(tool_in(doc, "w1", "tools", "drifting")["trusted"] == kB);
    CHECK(tool_in(doc, "w1", "tools", "drifting")["quarantined"].is_null());
    CHECK(tool_in(doc, "w1", "tools", "echo")["trusted"] == kA);
}

TEST_CASE("corral mcp: bad usage is exit 2; a store or state dir that cannot be trusted is refused (125)") {
    McpOrg o;
    CHECK(o.mcp({"ls", "--worker", "nobody"}).exit_code == 2);
    Result no_server = o.mcp({"trust", "other/t", kA});
    CHECK(no_server.exit_code == 2);
    CHECK(no_server.err.find("no worker has an MCP server other") != std::string::npos);
    CHECK(o.mcp({"trust", "--worker", "w2", "tools/echo", kA}).exit_code == 2);
    CHECK(o.mcp({"frob"}).exit_code == 2);

    o.write_store("{\"version\":1,\"tools\":{\"tools/echo\":{\"trusted\":\"" + kA + "\"}}}");
    Result bad = o.mcp({"ls"});
    CHECK(bad.exit_code == 125);
    CHECK(bad.err.find(o.store + ": tools.\"tools/echo\": \"first_seen\" missing or not a string") != std::string::npos);
    Result bad_trust = o.mcp({"trust", "tools/echo", kA});
    CHECK(bad_trust.exit_code == 125);

    o.write_store(store_text(kB));
    ::chmod((o.state + "/mcp/w1").c_str(), 0770);
    Result open_dir = o.mcp({"ls"});
    CHECK(open_dir.exit_code == 125);
    CHECK(open_dir.err.find("writable by group or others") != std::string::npos);
    ::chmod((o.state + "/mcp/w1").c_str(), 0700);
    ::chmod(o.state.c_str(), 0770);
    Result open_state = o.mcp({"trust", "tools/drifting", kB});
    CHECK(open_state.exit_code == 125);
    CHECK(open_state.err.find(o.state) != std::string::npos);
}

}  // namespace
}  // namespace corral::test

int main(int argc, char** argv) {
    if (::geteuid() != 0) {
        std::printf("SKIP: needs root (the state dir must be root's)\n");
        return 77;
    }
    doctest::Context ctx(argc, argv);
    return ctx.run();
}
