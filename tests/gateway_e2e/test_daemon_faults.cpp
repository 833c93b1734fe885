// `corral gateway` under faults, each with a daemon of its own (the world's
// upstream, curl through listen_tcp): SIGHUP reopening a rotated ledger, a
// ledger that hits ENOSPC and is mended, SIGTERM letting a live stream
// finish, and the grace cutting one that does not.
#include <doctest/doctest.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/gateway_e2e/fixture.hpp"
#include "tests/support/process.hpp"

namespace fs = std::filesystem;
using namespace corral::test;
using namespace corral::test::gw;

namespace {

std::size_t lines_in(const std::string& path) {
    std::ifstream in(path);
    std::size_t n = 0;
    for (std::string l; std::getline(in, l);) n += !l.empty();
    return n;
}

bool ends_with_status(const Result& r, const std::string& status) {
    return r.out.find("\nstatus=" + status + "\n") != std::string::npos;
}

// A tmpfs of a few pages mounted for the test (root), detached at the end.
struct TinyFilesystem {
    std::string dir;
    explicit TinyFilesystem(std::string d) : dir(std::move(d)) {
        fs::create_directories(dir);
        if (::mount("corral-test", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0700") != 0)
            throw std::runtime_error("mount tmpfs on " + dir + ": " + std::strerror(errno));
    }
    ~TinyFilesystem() { ::umount2(dir.c_str(), MNT_DETACH); }
    // Writes until the filesystem is full.
    void fill(const std::string& name) const {
        std::ofstream f(dir + "/" + name, std::ios::binary);
        std::string block(4096, 'f');
        for (int i = 0; i < 64 && f.write(block.data(), static_cast<std::streamsize>(block.size())); ++i) f.flush();
    }
};

// curl streaming the upstream's /sse through `d` into DIR/stream.out; null
// unless its first event came through (the upstream holds the second until
// /release on its control port).
std::unique_ptr<Background> open_sse_stream(const OwnDaemon& d) {
    RunOptions o;
    o.env["NO_PROXY"] = "";
    auto stream = std::make_unique<Background>(
        std::vector<std::string>{"sh", "-c",
                                 "curl -sS -N --max-time 30 --proxy http://127.0.0.1:" + std::to_string(d.port) +
                                     " --cacert " + d.ca + " " + d.url("/sse") + " > " + d.dir + "/stream.out 2>&1"},
        o);
    for (int i = 0; i < 250; ++i) {
        if (read_file(d.dir + "/stream.out").find("data: 1") != std::string::npos) return stream;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return nullptr;
}

}  // namespace

TEST_CASE("daemon faults: SIGHUP reopens a rotated ledger; the lines after it land in the new file") {
    OwnDaemon d("hup", "", "10s");
    REQUIRE(ends_with_status(d.curl("/before-rotation"), "200"));
    // The line is written when the exchange ends; the batch goes out in the loop turn.
    for (int i = 0; i < 100 && lines_in(d.ledger) < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::size_t per_request = lines_in(d.ledger);  // the tunnel's line and the request's
    REQUIRE(per_request >= 1);
    fs::rename(d.ledger, d.ledger + ".1");  // what logrotate does
    d.proc->signal(SIGHUP);
    REQUIRE(d.stderr_says("gateway: SIGHUP, ledger " + d.ledger + " reopened"));
    REQUIRE(ends_with_status(d.curl("/after-rotation"), "200"));
    for (int i = 0; i < 100 && lines_in(d.ledger) < per_request; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(lines_in(d.ledger) == per_request);
    CHECK(read_file(d.ledger).find("/after-rotation") != std::string::npos);
    CHECK(lines_in(d.ledger + ".1") == per_request);
    CHECK(read_file(d.ledger + ".1").find("/before-rotation") != std::string::npos);
}

TEST_CASE("daemon faults: a full disk refuses requests and says so; SIGHUP after mending resumes") {
    TinyFilesystem tiny(world().dir + "/tiny");
    // An empty ledger on a full filesystem: its first line needs a page
    // there is no room for (tmpfs allocates whole pages).
    write_file(tiny.dir + "/ledger.jsonl", "", 0600);
    tiny.fill("filler");
    OwnDaemon d("enospc", tiny.dir + "/ledger.jsonl", "10s");
    // The first request is served (its line is what fails); every one after
    // that is refused before anything is dialled.
    (void)d.curl("/the-line-that-fails");
    REQUIRE(d.stderr_says("No space left on device"));
    // Refused at the CONNECT already: 503 ledger_unwritable.
    auto refused = d.curl("/refused");
    CHECK(refused.out.find("connect=503") != std::string::npos);
    auto counts = d.counts();
    REQUIRE(counts.is_object());
    CHECK(counts["ledger"].get<std::string>().find("No space left on device") != std::string::npos);
    // A run asked for now is refused before its box exists, naming the failure.
    auto run_now = run({corral_bin(), "run", "--gateway", "unix:" + d.socket, "--state-dir", d.dir + "/state", "--",
                        "true"});
    CHECK(run_now.exit_code == 125);
    CHECK(run_now.err.find("the daemon refuses every request: its ledger cannot be written") != std::string::npos);
    CHECK(run_now.err.find("No space left on device") != std::string::npos);
    // Counted, even the ones without a line: more than the one line written.
    CHECK(counts["requests"].get<std::uint64_t>() > lines_in(d.ledger));
    CHECK(counts["refusals"].get<std::uint64_t>() >= 1);

    fs::remove(tiny.dir + "/filler");
    d.proc->signal(SIGHUP);
    REQUIRE(d.stderr_says("writable again"));
    CHECK(d.stderr_says("lines were lost since"));
    CHECK(ends_with_status(d.curl("/after-mending"), "200"));
    for (int i = 0; i < 100 && read_file(d.ledger).find("/after-mending") == std::string::npos; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(read_file(d.ledger).find("/after-mending") != std::string::npos);
    CHECK(d.counts()["ledger"] == "ok");
}

TEST_CASE("daemon faults: SIGTERM stops accepting, lets a live stream finish, exits 0") {
    OwnDaemon d("term", "", "20s");
    auto stream = open_sse_stream(d);
    REQUIRE(stream);

    d.proc->signal(SIGTERM);
    REQUIRE(d.stderr_says("SIGTERM, no new connections; 1 open"));
    // No new connections: the listener is closed.
    auto late = d.curl("/too-late", std::chrono::seconds(10));
    CHECK(late.out.find("status=000") != std::string::npos);
    CHECK(d.proc->wait_exit(std::chrono::milliseconds(300)) == -1);  // still draining
    run({"curl", "-sS", "http://127.0.0.1:" + std::to_string(world().ports.at("control")) + "/release"});
    CHECK(stream->wait_exit(std::chrono::seconds(10)) == 0);
    CHECK(read_file(d.dir + "/stream.out").find("data: 2") != std::string::npos);
    CHECK(d.proc->wait_exit(std::chrono::seconds(10)) == 0);
    CHECK(read_file(d.err).find("still open") == std::string::npos);
    CHECK(!fs::exists(d.socket));
    CHECK(read_file(d.ledger).find("/sse") != std::string::npos);
}

TEST_CASE("daemon faults: the grace ends a stream that does not finish; the daemon still exits 0") {
    OwnDaemon d("grace", "", "300ms");
    auto stream = open_sse_stream(d);
    REQUIRE(stream);
    d.proc->signal(SIGTERM);
    CHECK(d.proc->wait_exit(std::chrono::seconds(10)) == 0);
    CHECK(read_file(d.err).find("1 connections still open after 300ms; closing them") != std::string::npos);
    // The client sees its connection end, not a hang.
    CHECK(stream->wait_exit(std::chrono::seconds(10)) != -1);
    CHECK(read_file(d.dir + "/stream.out").find("data: 2") == std::string::npos);
    // The upstream still holds that stream; let it go for the tests after this one.
    run({"curl", "-sS", "http://127.0.0.1:" + std::to_string(world().ports.at("control")) + "/release"});
}

TEST_CASE("daemon faults: a run is refused before its box exists when the daemon does not answer") {
    OwnDaemon d("absent", "", "1s");
    const std::vector<std::string> run_argv = {corral_bin(), "run", "--gateway", "unix:" + d.socket, "--state-dir",
                                               d.dir + "/state", "--", "true"};
    // Stopped (or wedged): the socket accepts, nobody answers.
    d.proc->signal(SIGSTOP);
    auto stopped = run(run_argv);
    d.proc->signal(SIGCONT);
    CHECK(stopped.exit_code == 125);
    CHECK(stopped.err.find("--gateway unix:" + d.socket + ": the daemon does not answer") != std::string::npos);
    CHECK(stopped.err.find("start it with `corral gateway") != std::string::npos);
    // Killed: the socket file is left behind, nothing listens on it.
    d.proc->kill_now();
    REQUIRE(fs::exists(d.socket));
    auto killed = run(run_argv);
    CHECK(killed.exit_code == 125);
    CHECK(killed.err.find("the daemon does not answer") != std::string::npos);
    CHECK(killed.err.find("Connection refused") != std::string::npos);
    // Neither got as far as a box: no sandbox was started (its line would say so).
    CHECK(stopped.err.find("sandbox") == std::string::npos);
    CHECK(killed.err.find("sandbox") == std::string::npos);
}

namespace {

// The daemon's journal files, oldest first (YYYY-MM-DD.N.jsonl: by day, then N).
std::vector<std::string> daemon_journals(const std::string& dir) {
    std::vector<std::pair<std::pair<std::string, int>, std::string>> found;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (name.size() < 18 || name.substr(name.size() - 6) != ".jsonl") continue;
        found.push_back({{name.substr(0, 10), std::stoi(name.substr(11))}, e.path().string()});
    }
    std::sort(found.begin(), found.end());
    std::vector<std::string> out;
    for (const auto& f : found) out.push_back(f.second);
    return out;
}

std::vector<nlohmann::json> journal_records(const std::string& path) {
    std::vector<nlohmann::json> out;
    for (const auto& l : lines(read_file(path))) out.push_back(nlohmann::json::parse(l));
    return out;
}

}  // namespace

TEST_CASE("the daemon's journal across restarts: a clean stop, a SIGKILL recovered by the next start, the ledger its decisions") {
    std::string journal_dir, key, ledger;
    {
        OwnDaemon d("journal", "", "5s");
        journal_dir = d.dir + "/state/journal/gateway";
        key = d.dir + "/state/journal/signing.pub";
        ledger = d.ledger;
        CHECK(ends_with_status(d.curl("/journal-1"), "200"));
        d.proc->signal(SIGTERM);
        CHECK(d.proc->wait_exit(std::chrono::seconds(10)) == 0);
    }
    {
        OwnDaemon d("journal", "", "5s");
        CHECK(ends_with_status(d.curl("/journal-2"), "200"));
        // The ledger line is written after its decision record: once it is
        // there, the journal has it too.
        for (int i = 0; i < 250 && read_file(ledger).find("/journal-2") == std::string::npos; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        REQUIRE(read_file(ledger).find("/journal-2") != std::string::npos);
        d.proc->signal(SIGKILL);
        d.proc->wait_exit(std::chrono::seconds(10));
    }
    auto files = daemon_journals(journal_dir);
    REQUIRE(files.size() == 2);
    auto killed = run({corral_bin(), "journal", "verify", files[1], "--key", key});
    INFO(killed.out << killed.err);
    CHECK(killed.exit_code == 1);  // incomplete until a daemon starts again

    OwnDaemon d("journal", "", "5s");
    CHECK(d.stderr_says("had no terminal record (its daemon was killed): recovered record added"));
    files = daemon_journals(journal_dir);
    REQUIRE(files.size() == 3);
    struct stat st {};
    REQUIRE(::stat(files[0].c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);

    std::vector<std::string> decided;
    for (std::size_t i = 0; i < 2; ++i) {
        auto v = run({corral_bin(), "journal", "verify", files[i], "--key", key});
        INFO(files[i] << ": " << v.out << v.err);
        CHECK(v.exit_code == 0);
        auto recs = journal_records(files[i]);
        REQUIRE(recs.size() >= 3);
        CHECK(recs.front()["type"] == "admission");
        CHECK(recs.front()["payload"]["kind"] == "gateway_daemon");
        CHECK(recs.front()["payload"]["grants"][0]["host"] == "upstream.test");
        for (const auto& r : recs)
            if (r["type"] == "decision")
                for (const auto& l : r["payload"]["ledger_lines"]) decided.push_back(l.get<std::string>());
        if (i == 0) {
            CHECK(recs.back()["type"] == "terminal");
            CHECK(recs.back()["payload"]["outcome"] == "stopped");
        } else {
            CHECK(recs.back()["type"] == "recovered");
            CHECK(recs.back()["payload"]["outcome"] == "lost");
            CHECK(recs.front()["payload"]["journal"]["previous"] == fs::path(files[0]).filename().string());
        }
    }
    // One trail: the ledger is the decisions of the daemon's journals, in order.
    CHECK(decided == lines(read_file(ledger)));
    REQUIRE(decided.size() == 2);
    CHECK(decided[0].find("/journal-1") != std::string::npos);
    CHECK(decided[1].find("/journal-2") != std::string::npos);
    auto running = run({corral_bin(), "journal", "verify", files[2], "--key", key});
    CHECK(running.exit_code == 1);
    // The directory as one chain: incomplete while the daemon runs.
    auto chain = run({corral_bin(), "journal", "verify", journal_dir, "--key", key});
    INFO(chain.out << chain.err);
    CHECK(chain.exit_code == 1);
    CHECK(chain.out.find("incomplete: 3 files") != std::string::npos);
    CHECK(chain.out.find("in one chain") != std::string::npos);
    d.proc->signal(SIGTERM);
    CHECK(d.proc->wait_exit(std::chrono::seconds(10)) == 0);
    CHECK(run({corral_bin(), "journal", "verify", files[2], "--key", key}).exit_code == 0);
    chain = run({corral_bin(), "journal", "verify", journal_dir, "--key", key});
    INFO(chain.out << chain.err);
    CHECK(chain.exit_code == 0);
    CHECK(chain.out.find("valid: 3 files") != std::string::npos);
    // Without --key: the key of the state dir the daemon's journal is in
    // (not the default state dir's), named with where it was read.
    for (const std::string& given : {journal_dir, files[0]}) {
        auto own = run({corral_bin(), "journal", "verify", given});
        INFO(own.out << own.err);
        CHECK(own.exit_code == 0);
        CHECK(own.out.find("(" + key + ", the state dir the journal is in)") != std::string::npos);
    }
    // The killed daemon's file taken out of the chain: named.
    const std::string copy = d.dir + "/journal-copy";
    fs::create_directory(copy);
    fs::copy_file(files[0], copy + "/" + fs::path(files[0]).filename().string());
    fs::copy_file(files[2], copy + "/" + fs::path(files[2]).filename().string());
    auto gap = run({corral_bin(), "journal", "verify", copy, "--key", key});
    INFO(gap.out << gap.err);
    CHECK(gap.exit_code == 3);
    CHECK(gap.out.find("as the file before it, not \"" + fs::path(files[0]).filename().string() + "\"") !=
          std::string::npos);
}
