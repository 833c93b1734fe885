// run/mcp_pin_store.hpp: the tool pins a worker's runs keep — the file's
// text read strictly, what a run saw merged in (the store's trusted digest
// wins), updates under the store's lock from concurrent writers, and the
// store's directory checked root-only.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "base/sys_error.hpp"
#include "mcp/tool_pin.hpp"
#include "run/mcp_pin_store.hpp"

namespace corral::run {
namespace {

namespace fs = std::filesystem;

const std::string kDigestA = "sha256:" + std::string(64, 'a');
const std::string kDigestB = "sha256:" + std::string(64, 'b');
const std::string kDigestC = "sha256:" + std::string(64, 'c');

struct PinTempDir {
    fs::path path;
    PinTempDir() {
        char tmpl[] = "/tmp/corral-pin-store-XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    ~PinTempDir() { fs::remove_all(path); }
};

void write_pin_text(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string refusal_of(const std::string& text) {
    try {
        parse_pin_records(text, "/s/mcp/w1/pins.json");
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

TEST_CASE("pins store: the file's text reads back as written") {
    PinRecords r;
    r["tools/echo"] = PinRecord{kDigestA, "2026-12-06T05:00:00.000Z", "run-1", "", "", ""};
    r["tools/drifting"] = PinRecord{kDigestA, "2026-12-06T05:00:00.000Z", "run-1", kDigestB,
                                    "2026-12-06T06:00:00.000Z", "run-2"};
    const std::string text = pin_records_text(r);
    PinRecords back = parse_pin_records(text, "pins.json");
    REQUIRE(back.size() == 2);
    CHECK(back["tools/echo"].trusted == kDigestA);
    CHECK(back["tools/echo"].quarantined.empty());
    CHECK(back["tools/drifting"].quarantined == kDigestB);
    CHECK(back["tools/drifting"].quarantined_run == "run-2");
    CHECK(pin_records_text(back) == text);
    CHECK(parse_pin_records("{\"version\":1,\"tools\":{}}", "p").empty());
}

TEST_CASE("pins store: a file that is not the store's JSON is refused, naming the file and what is wrong") {
    const std::string good = "{\"trusted\":\"" + kDigestA + "\",\"first_seen\":\"t\",\"run\":\"r\"}";
    auto doc = [](const std::string& tools) { return "{\"version\":1,\"tools\":{" + tools + "}}"; };
    CHECK(refusal_of(doc("\"s/t\":" + good)) == "");
    std::string e = refusal_of("{\"version\":1,");
    CHECK(e.find("/s/mcp/w1/pins.json: not the MCP pins store's JSON") == 0);
    CHECK(e.find("remove it (every tool is then trusted again on its next first sight)") != std::string::npos);
    CHECK(refusal_of(doc("\"s/t\":" + good + ",\"s/t\":" + good)).find("twice") != std::string::npos);
    CHECK(refusal_of("{\"version\":2,\"tools\":{}}").find("version 2 is not one this corral reads") !=
          std::string::npos);
    CHECK(refusal_of("[]").find("expected {\"version\": 1") != std::string::npos);
    CHECK(refusal_of(doc("\"st\":" + good)).find("tools.\"st\": the key is not SERVER/TOOL") != std::string::npos);
    CHECK(refusal_of(doc("\"s/t\":{\"trusted\":\"sha256:AB\",\"first_seen\":\"t\",\"run\":\"r\"}"))
              .find("\"trusted\" is not \"sha256:<64 lowercase hex>\"") != std::string::npos);
    CHECK(refusal_of(doc("\"s/t\":{\"trusted\":\"" + kDigestA + "\",\"first_seen\":\"t\",\"run\":\"r\",\"x\":1}"))
              .find("unknown member \"x\"") != std::string::npos);
    CHECK(refusal_of(doc("\"s/t\":{\"trusted\":\"" + kDigestA + "\",\"run\":\"r\"}"))
              .find("\"first_seen\" missing or not a string") != std::string::npos);
    CHECK(refusal_of(doc("\"s/t\":{\"trusted\":\"" + kDigestA + "\",\"first_seen\":\"t\",\"run\":\"r\","
                         "\"quarantined\":{\"digest\":\"x\",\"at\":\"t\",\"run\":\"r\"}}"))
              .find("\"digest\" is not") != std::string::npos);
}

TEST_CASE("pins store: what a run saw is merged in; the store's trusted digest wins") {
    PinRecords r;
    r["s/known"] = PinRecord{kDigestA, "t0", "run-0", "", "", ""};
    std::vector<mcp::PinEntry> seen = {
        {"s", "fresh", kDigestC, kDigestC},   // first seen in this run
        {"s", "known", kDigestA, kDigestA},   // unchanged
        {"s", "unseen", kDigestB, ""},        // only pinned, never seen: nothing to keep
        {"s", "pinned", kDigestA, kDigestB},  // the configuration decides it
    };
    CHECK(merge_sights(r, seen, {{"s/pinned", kDigestA}}, "run-1", "t1"));
    CHECK(r.size() == 2);
    CHECK(r["s/fresh"].trusted == kDigestC);
    CHECK(r["s/fresh"].first_seen == "t1");
    CHECK(r["s/fresh"].run == "run-1");
    CHECK(r["s/fresh"].quarantined.empty());
    CHECK(r["s/known"].run == "run-0");
    CHECK_FALSE(merge_sights(r, seen, {{"s/pinned", kDigestA}}, "run-2", "t2"));  // nothing new

    // A later run sees s/known changed: quarantined with the new digest.
    CHECK(merge_sights(r, {{"s", "known", kDigestA, kDigestB}}, {}, "run-3", "t3"));
    CHECK(r["s/known"].trusted == kDigestA);
    CHECK(r["s/known"].quarantined == kDigestB);
    CHECK(r["s/known"].quarantined_at == "t3");
    CHECK(r["s/known"].quarantined_run == "run-3");
    CHECK_FALSE(merge_sights(r, {{"s", "known", kDigestA, kDigestB}}, {}, "run-4", "t4"));  // same quarantine
    CHECK(r["s/known"].quarantined_run == "run-3");

    // A concurrent run that trusted its own first sight of s/fresh with another
    // digest: the store's first sight holds, the run's becomes a quarantine.
    CHECK(merge_sights(r, {{"s", "fresh", kDigestB, kDigestB}}, {}, "run-5", "t5"));
    CHECK(r["s/fresh"].trusted == kDigestC);
    CHECK(r["s/fresh"].quarantined == kDigestB);

    // Seen with the trusted digest again: the quarantine is lifted.
    CHECK(merge_sights(r, {{"s", "known", kDigestA, kDigestA}}, {}, "run-6", "t6"));
    CHECK(r["s/known"].quarantined.empty());

    // A tool new to the store that changed within the run: trusted as first
    // seen, quarantined with the later digest.
    CHECK(merge_sights(r, {{"s", "rug", kDigestA, kDigestB}}, {}, "run-7", "t7"));
    CHECK(r["s/rug"].trusted == kDigestA);
    CHECK(r["s/rug"].quarantined == kDigestB);
}

TEST_CASE("pins store: a run's PinBook seeded from the store quarantines a tool whose digest changed since") {
    PinRecords r;
    r["s/t"] = PinRecord{kDigestA, "t0", "run-0", "", "", ""};
    mcp::PinBook book;
    for (const auto& [key, p] : r) {
        auto [server, tool] = split_pin_key(key);
        book.pin(server, tool, p.trusted);
    }
    CHECK(book.see("s", "t", kDigestB) == mcp::Sight::quarantined);
    CHECK(book.see("s", "new", kDigestC) == mcp::Sight::first_seen);
    CHECK(merge_sights(r, book.entries(), {}, "run-1", "t1"));
    CHECK(r["s/t"].quarantined == kDigestB);
    CHECK(r["s/new"].trusted == kDigestC);
}

TEST_CASE("pins store: updates read, change and write the file (0600); concurrent writers lose nothing") {
    PinTempDir d;
    PinStore store(d.path.string());
    CHECK(store.path() == (d.path / "pins.json").string());
    CHECK(store.read().empty());  // no file yet
    store.update([](PinRecords& r) {
        r["s/first"] = PinRecord{kDigestA, "t", "run", "", "", ""};
        return true;
    });
    struct stat st {};
    REQUIRE(::stat(store.path().c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(store.read().count("s/first") == 1);

    constexpr int kWriters = 4, kEach = 25;
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w)
        writers.emplace_back([&, w] {
            for (int i = 0; i < kEach; ++i)
                PinStore(d.path.string()).update([&](PinRecords& r) {
                    r["s/t" + std::to_string(w) + "_" + std::to_string(i)] = PinRecord{kDigestB, "t", "run", "", "", ""};
                    return true;
                });
        });
    for (auto& t : writers) t.join();
    CHECK(store.read().size() == 1 + kWriters * kEach);
}

TEST_CASE("pins store: a held lock is waited for only as long as the bound, then named") {
    PinTempDir d;
    const std::string lock_path = (d.path / ".lock").string();
    int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0);
    std::string what;
    try {
        PinStore(d.path.string()).update([](PinRecords&) { return true; }, std::chrono::milliseconds(200));
    } catch (const SysError& e) {
        what = e.what();
    }
    ::close(fd);
    CHECK(what.find(lock_path) != std::string::npos);
    CHECK_FALSE(fs::exists(d.path / "pins.json"));
}

TEST_CASE("pins store: a malformed file stops a read and an update, and is left as it was") {
    PinTempDir d;
    write_pin_text(d.path / "pins.json", "{\"version\":1,\"tools\":{\"s/t\":{}}}");
    PinStore store(d.path.string());
    CHECK_THROWS_WITH_AS(store.read(), doctest::Contains(((d.path / "pins.json").string() + ": tools.\"s/t\"").c_str()),
                         UsageError);
    CHECK_THROWS_AS(store.update([](PinRecords&) { return true; }), UsageError);
    std::ifstream in(d.path / "pins.json");
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "{\"version\":1,\"tools\":{\"s/t\":{}}}");
}

TEST_CASE("pins store: its directory is made root-only, and one anyone else can write is refused" *
          doctest::skip(::geteuid() != 0)) {
    char tmpl[] = "/run/corral-test-pins-XXXXXX";
    const fs::path state = ::mkdtemp(tmpl);
    ::chmod(state.c_str(), 0700);
    CHECK(open_pin_store_dir("--state-dir", state.string(), "w1", false) == "");  // nothing yet, nothing made
    CHECK_FALSE(fs::exists(state / "mcp"));
    const std::string dir = open_pin_store_dir("--state-dir", state.string(), "w1", true);
    CHECK(dir == (state / "mcp" / "w1").string());
    struct stat st {};
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    REQUIRE(::stat((state / "mcp").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    CHECK(open_pin_store_dir("--state-dir", state.string(), "w1", false) == dir);
    ::chmod(dir.c_str(), 0750);
    CHECK_THROWS_WITH_AS(open_pin_store_dir("--state-dir", state.string(), "w1", false),
                         doctest::Contains("must be root's alone (mode 0700)"), UsageError);
    fs::remove_all(state);
}

}  // namespace
}  // namespace corral::run
