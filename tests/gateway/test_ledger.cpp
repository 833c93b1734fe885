#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "gateway/ledger.hpp"
#include "tests/support/temp_dir.hpp"

using namespace corral::gateway;

namespace {

LedgerEntry sample() {
    LedgerEntry e;
    e.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'796'016'579'123));
    e.identity = "worker-a/run-1";
    e.mode = "inject";
    e.method = "POST";
    e.host = "api.anthropic.com";
    e.port = 443;
    e.path = "/v1/messages";
    e.decision = Decision::allow;
    e.reason = "";
    e.status = 200;
    e.bytes_up = 1234;
    e.bytes_down = 56789;
    e.duration_ms = 321;
    e.credential = "anthropic";
    return e;
}

std::string read_all(const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

}  // namespace

TEST_CASE("a ledger line is one JSON object with every field, in order") {
    auto line = format_ledger_line(sample());
    REQUIRE(line.back() == '\n');
    CHECK(std::count(line.begin(), line.end(), '\n') == 1);
    CHECK(line ==
          "{\"time\":\"2026-11-30T05:29:39.123Z\",\"identity\":\"worker-a/run-1\",\"mode\":\"inject\",\"method\":"
          "\"POST\",\"host\":\"api.anthropic.com\",\"port\":443,\"path\":\"/v1/messages\",\"decision\":\"allow\","
          "\"reason\":\"\",\"status\":200,\"bytes_up\":1234,\"bytes_down\":56789,\"duration_ms\":321,"
          "\"credential\":\"anthropic\"}\n");
    auto j = nlohmann::json::parse(line);
    CHECK(j.size() == 14);
    CHECK(j["decision"] == "allow");
}

TEST_CASE("a session's line names its role right after the identity, on both formatting paths") {
    auto e = sample();
    e.role = "service";
    auto line = format_ledger_line(e);
    CHECK(line.find("\"identity\":\"worker-a/run-1\",\"role\":\"service\",\"mode\":") != std::string::npos);
    CHECK(nlohmann::json::parse(line).size() == 15);
    // A string that needs escaping takes the general (JSON tree) path: the same key order.
    e.path = "/v1/messages?q=\"x\"";
    auto general = format_ledger_line(e);
    CHECK(general.find("\"identity\":\"worker-a/run-1\",\"role\":\"service\",\"mode\":") != std::string::npos);
    CHECK(nlohmann::json::parse(general)["role"] == "service");
    // A run's line has no role key at all.
    CHECK(format_ledger_line(sample()).find("\"role\"") == std::string::npos);
}

TEST_CASE("refusals and hostile strings stay one valid JSON line") {
    auto e = sample();
    e.decision = Decision::refuse;
    e.reason = "not_granted";
    e.status = 403;
    e.host = "evil\"host\n{\"decision\":\"allow\"}";
    e.path = std::string("/x\r\n\x01\x7f") + "\xff\xfe" + "/\xe2\x82";  // control bytes and invalid UTF-8
    auto line = format_ledger_line(e);
    CHECK(std::count(line.begin(), line.end(), '\n') == 1);
    auto j = nlohmann::json::parse(line);
    CHECK(j["decision"] == "refuse");
    CHECK(j["reason"] == "not_granted");
    CHECK(j["status"] == 403);
    CHECK(j["host"] == "evil\"host\n{\"decision\":\"allow\"}");
}

TEST_CASE("a line holds nothing a terminal acts on: C1, DEL and bidi characters become JSON escapes") {
    auto e = sample();
    e.host = "h\xc2\x9b" "2J\x9d";                     // U+009B (CSI) and a raw 0x9d
    e.path = "/\x7f\xe2\x80\xae" "caf\xc3\xa9";        // DEL, U+202E (RLO), and a letter kept as it is
    auto line = format_ledger_line(e);
    for (char raw : {'\x7f', '\x9b', '\x9d'}) CHECK(line.find(raw) == std::string::npos);
    CHECK(line.find("\xe2\x80\xae") == std::string::npos);
    CHECK(line.find("\"host\":\"h\\u009b2J\xef\xbf\xbd\"") != std::string::npos);  // 0x9d: U+FFFD
    auto j = nlohmann::json::parse(line);  // valid JSON and UTF-8, the same values
    CHECK(j["host"] == "h\xc2\x9b" "2J\xef\xbf\xbd");
    CHECK(j["path"] == e.path);
}

TEST_CASE("registered secrets are redacted from every string field") {
    const std::string secret = "sk-ant-api03-TOPSECRET";
    auto e = sample();
    e.identity = "w/" + secret;
    e.mode = secret;
    e.method = secret;
    e.host = secret + ".example.com";
    e.path = "/v1/messages?key=" + secret + "&again=" + secret;
    e.reason = "upstream said " + secret;
    e.credential = secret;
    auto line = format_ledger_line(e, {secret, ""});
    CHECK(line.find(secret) == std::string::npos);
    CHECK(line.find("TOPSECRET") == std::string::npos);
    auto j = nlohmann::json::parse(line);
    CHECK(j["path"] == "/v1/messages?key=[redacted]&again=[redacted]");
    CHECK(j["host"] == "[redacted].example.com");
    // A secret with characters JSON escapes is still gone.
    const std::string odd = "a\"b\\c";
    auto e2 = sample();
    e2.path = "/" + odd;
    CHECK(format_ledger_line(e2, {odd}).find("a\\\"b\\\\c") == std::string::npos);
}

TEST_CASE("status_for_reason covers every code") {
    CHECK(status_for_reason("") == 200);
    CHECK(status_for_reason(reason::not_granted) == 403);
    CHECK(status_for_reason(reason::tcp_peer_not_root) == 403);
    CHECK(status_for_reason(reason::session_role_unknown) == 403);
    CHECK(status_for_reason(reason::smuggling) == 400);
    CHECK(status_for_reason(reason::body_too_large) == 413);
    CHECK(status_for_reason(reason::headers_too_large) == 431);
    CHECK(status_for_reason(reason::budget_exhausted) == 429);
    CHECK(status_for_reason(reason::upstream_tls) == 502);
    CHECK(status_for_reason(reason::ledger_unwritable) == 503);
    CHECK(status_for_reason(reason::unsupported_method) == 405);
    CHECK(status_for_reason(reason::non_canonical_path) == 400);
    CHECK(status_for_reason(reason::trailers_refused) == 400);
    CHECK(status_for_reason("made_up") == 500);
}

TEST_CASE("Ledger appends lines (mode 0600), counts per identity, redacts registered secrets") {
    corral::test::TempDir d("corral-ledger");
    auto path = (d / "ledger.jsonl");
    Ledger l(path);
    REQUIRE(l.healthy());
    CHECK(l.failure().empty());
    l.register_secret("REAL-SECRET-XYZ");
    auto e = sample();
    e.path = "/leak/REAL-SECRET-XYZ";
    l.append(e);
    e.decision = Decision::refuse;
    e.reason = "route_denied";
    l.append(e);
    e.identity = "other/run";
    l.append(e);
    l.sync();
    CHECK(l.healthy());
    CHECK(l.requests("worker-a/run-1") == 2);
    CHECK(l.refusals("worker-a/run-1") == 1);
    CHECK(l.refusals("other/run") == 1);
    CHECK(l.requests("nobody/x") == 0);
    auto text = read_all(path);
    CHECK(std::count(text.begin(), text.end(), '\n') == 3);
    CHECK(text.find("REAL-SECRET-XYZ") == std::string::npos);
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    // Appends to an existing file keep what was there.
    Ledger again(path);
    again.append(sample());
    text = read_all(path);
    CHECK(std::count(text.begin(), text.end(), '\n') == 4);
}

TEST_CASE("Ledger from many threads: whole lines, none lost") {
    corral::test::TempDir d("corral-ledger");
    auto path = (d / "ledger.jsonl");
    Ledger l(path);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&l, t] {
            for (int i = 0; i < 500; ++i) {
                auto e = sample();
                e.identity = "w" + std::to_string(t) + "/r";
                e.path = "/" + std::string(200, static_cast<char>('a' + t));
                l.append(e);
            }
        });
    for (auto& th : threads) th.join();
    std::ifstream f(path);
    std::string line;
    int n = 0;
    while (std::getline(f, line)) {
        auto j = nlohmann::json::parse(line);
        CHECK(j["path"].get<std::string>().size() == 201);
        ++n;
    }
    CHECK(n == 2000);
    CHECK(l.requests("w3/r") == 500);
}

TEST_CASE("Ledger fails closed: an unopenable path is unhealthy with a reason, append never throws") {
    corral::test::TempDir d("corral-ledger");
    auto path = (d / "missing-dir/ledger.jsonl");
    Ledger l(path);
    CHECK_FALSE(l.healthy());
    CHECK(l.failure() == "open(" + path + "): No such file or directory");
    CHECK_NOTHROW(l.append(sample()));
    CHECK_NOTHROW(l.sync());
    CHECK(l.requests("worker-a/run-1") == 1);  // still counted
    CHECK_FALSE(l.healthy());
}

TEST_CASE("Ledger fails closed: a write error (full device) makes it unhealthy for good") {
    if (::access("/dev/full", W_OK) != 0) {
        MESSAGE("skipped: /dev/full not writable here");
        return;
    }
    Ledger l("/dev/full");
    REQUIRE(l.healthy());
    l.append(sample());
    CHECK_FALSE(l.healthy());
    CHECK(l.failure() == "write(/dev/full): No space left on device");
    l.append(sample());
    CHECK(l.failure() == "write(/dev/full): No space left on device");
}

TEST_CASE("the direct formatter and the JSON library write the same line") {
    // format_ledger_line builds plain entries by hand; entries with bytes JSON
    // must escape go through nlohmann. Both must give the documented line.
    auto e = sample();
    for (int status : {0, 200, 403, 599}) {
        for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{7}, std::uint64_t{18446744073709551615ull}}) {
            e.status = status;
            e.bytes_up = n, e.bytes_down = n / 3, e.duration_ms = n / 7;
            e.port = static_cast<std::uint16_t>(n);
            e.decision = status >= 400 ? Decision::refuse : Decision::allow;
            auto line = format_ledger_line(e);
            nlohmann::ordered_json j = nlohmann::ordered_json::parse(line);
            CHECK(line == j.dump() + "\n");
        }
    }
    e.mode = "", e.reason = "", e.credential = "", e.path = "";
    auto line = format_ledger_line(e);
    CHECK(line == nlohmann::ordered_json::parse(line).dump() + "\n");
    // One byte that needs escaping anywhere takes the general path, same shape.
    e.path = "/a\"b";
    line = format_ledger_line(e);
    CHECK(nlohmann::json::parse(line)["path"] == "/a\"b");
    CHECK(line == nlohmann::ordered_json::parse(line).dump() + "\n");
    // The refusal-cap lines' extra key, last, on both paths.
    e.refusals = 20000;
    line = format_ledger_line(e);
    CHECK(line.find(",\"credential\":\"\",\"refusals\":20000}\n") != std::string::npos);
    CHECK(line == nlohmann::ordered_json::parse(line).dump() + "\n");
    e.path = "/plain";
    line = format_ledger_line(e);
    CHECK(line.find(",\"credential\":\"\",\"refusals\":20000}\n") != std::string::npos);
    CHECK(line == nlohmann::ordered_json::parse(line).dump() + "\n");
}

TEST_CASE("a metered line: the direct formatter writes what the JSON library writes") {
    auto e = sample();
    MeteredLine m;
    m.api = "anthropic_messages";
    m.model = "claude-sonnet-4-5";
    m.usage_state = "reported";
    m.usage = {{"input_tokens", 12}, {"output_tokens", 345}, {"cache_read_input_tokens", 0}};
    m.cost_state = "computed";
    m.price_source = "builtin";
    m.price_date = "2026-11-01";
    m.remaining = {{"requests", 199}, {"usd_micros", 4999000}};
    e.metered = m;
    // usd as a double: whole, fractional, tiny, large
    for (std::uint64_t micros : {0ull, 1ull, 10ull, 1500ull, 1000000ull, 2500000ull, 123456789ull, 1000000000000ull}) {
        e.metered->usd_micros = micros;
        auto line = format_ledger_line(e);
        CHECK(line == nlohmann::ordered_json::parse(line).dump() + "\n");
        CHECK(nlohmann::json::parse(line)["metering"]["cost"]["usd_micros"] == micros);
    }
    // every optional member present
    e.metered->usage_state = "unavailable";
    e.metered->usage_reason = "usage lacks output_tokens";
    e.metered->cost_state = "unavailable";
    e.metered->cost_reason = "no price";
    e.metered->worker_remaining = {{"usd_micros", 1}};
    e.metered->over_reservation = true;
    e.metered->overspent = {{"output_tokens", 9}};
    e.metered->worker_overspent = {{"output_tokens", 3}};
    e.metered->limit = "requests";
    auto line = format_ledger_line(e);
    CHECK(line == nlohmann::ordered_json::parse(line).dump() + "\n");
    auto j = nlohmann::json::parse(line)["metering"];
    CHECK(j["usage"]["reason"] == "usage lacks output_tokens");
    CHECK(j["over_reservation"] == true);
    CHECK(j["worker_overspent"]["output_tokens"] == 3);
    CHECK(j["limit"] == "requests");
    // A refusal's metering object: api and limit only.
    MeteredLine refused;
    refused.api = "openai_responses";
    refused.limit = "model_policy";
    e.metered = refused;
    line = format_ledger_line(e);
    CHECK(line.find(",\"metering\":{\"api\":\"openai_responses\",\"limit\":\"model_policy\"}}\n") != std::string::npos);
    CHECK(line == nlohmann::ordered_json::parse(line).dump() + "\n");
}

TEST_CASE("an MCP tool line: the direct formatter writes what the JSON library writes, on both paths") {
    auto e = sample();
    ToolLine t;
    t.phase = "decision";
    t.server = "local";
    t.method = "tools/call";
    t.tool = "echo";
    t.arguments_digest = "sha256:" + std::string(64, 'a');
    t.rule = "allow-echo";
    e.tool = t;
    auto line = format_ledger_line(e);
    CHECK(line.find(",\"tool\":{\"phase\":\"decision\",\"server\":\"local\",\"method\":\"tools/call\",\"tool\":\"echo\","
                    "\"arguments_digest\":\"sha256:") != std::string::npos);
    CHECK(line == nlohmann::ordered_json::parse(line).dump() + "\n");
    // An outcome: result_bytes even when 0, every optional member present.
    e.tool->phase = "outcome";
    for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{22095}}) {
        e.tool->result_bytes = n;
        e.tool->error = "-32602 bad arguments";
        e.tool->result_digest = "sha256:" + std::string(64, 'b');
        e.tool->digest = "sha256:c", e.tool->trusted_digest = "sha256:d";
        e.tool->arguments = "{\"text\":1}";   // logged arguments hold quotes: the JSON library's path
        e.tool->result = "r";
        const std::string general = format_ledger_line(e);
        CHECK(general == nlohmann::ordered_json::parse(general).dump() + "\n");
        CHECK(nlohmann::json::parse(general)["tool"]["arguments"] == "{\"text\":1}");
        e.tool->arguments = "plain";
        const std::string plain = format_ledger_line(e);
        CHECK(plain == nlohmann::ordered_json::parse(plain).dump() + "\n");
        CHECK(nlohmann::json::parse(plain)["tool"]["result_bytes"] == n);
    }
    // A secret in a tool field is redacted on either path.
    e.tool->tool = "echo-sk-secret-123";
    line = format_ledger_line(e, {"sk-secret-123"});
    CHECK(line.find("sk-secret-123") == std::string::npos);
    CHECK(nlohmann::json::parse(line)["tool"]["tool"] == "echo-[redacted]");
}

TEST_CASE("a metered line with a byte to escape, a secret or a repeated name takes the JSON library's path") {
    auto e = sample();
    MeteredLine m;
    m.api = "anthropic_messages";
    m.model = "claude\"x";
    m.usage_state = "reported";
    m.usage = {{"input_tokens", 1}};
    e.metered = m;
    auto line = format_ledger_line(e);
    CHECK(nlohmann::json::parse(line)["metering"]["model"] == "claude\"x");
    CHECK(line == nlohmann::ordered_json::parse(line).dump() + "\n");
    // A secret in the model name is redacted whichever path writes it.
    e.metered->model = "model-sk-secret-123";
    line = format_ledger_line(e, {"sk-secret-123"});
    CHECK(line.find("sk-secret-123") == std::string::npos);
    CHECK(nlohmann::json::parse(line)["metering"]["model"] == "model-[redacted]");
    // A count named like a fixed member, or twice: the JSON tree keeps the last,
    // and the line is still one object with distinct names.
    e.metered->model = "m";
    e.metered->usage = {{"input_tokens", 1}, {"input_tokens", 2}, {"state", 3}};
    line = format_ledger_line(e);
    auto usage = nlohmann::ordered_json::parse(line)["metering"]["usage"];
    CHECK(usage.size() == 2);
    CHECK(usage["input_tokens"] == 2);
    CHECK(usage["state"] == 3);
}

TEST_CASE("batched appends: nothing written before flush, then one write for the batch; sync flushes") {
    corral::test::TempDir d("corral-ledger");
    auto path = (d / "ledger.jsonl");
    Ledger l(path);
    CHECK(l.append_batched(sample()));        // starts a batch: the caller must flush
    CHECK_FALSE(l.append_batched(sample()));  // joins it
    CHECK(l.requests("worker-a/run-1") == 2);
    CHECK(read_all(path).empty());
    CHECK_FALSE(l.flush());
    auto text = read_all(path);
    CHECK(std::count(text.begin(), text.end(), '\n') == 2);
    CHECK(l.append_batched(sample()));  // the next line starts a new batch
    l.sync();
    text = read_all(path);
    CHECK(std::count(text.begin(), text.end(), '\n') == 3);
    {
        Ledger closing(path);
        closing.append_batched(sample());
    }  // the destructor flushes
    text = read_all(path);
    CHECK(std::count(text.begin(), text.end(), '\n') == 4);
}

TEST_CASE("batched appends fail closed: the flush that fails says so once, later batches are refused") {
    if (::access("/dev/full", W_OK) != 0) {
        MESSAGE("skipped: /dev/full not writable here");
        return;
    }
    Ledger l("/dev/full");
    CHECK(l.append_batched(sample()));
    CHECK(l.healthy());
    CHECK(l.flush());  // this call made it fail
    CHECK_FALSE(l.healthy());
    CHECK(l.failure() == "write(/dev/full): No space left on device");
    CHECK_FALSE(l.append_batched(sample()));  // nothing to flush any more
    CHECK_FALSE(l.flush());
    CHECK(l.requests("worker-a/run-1") == 2);  // still counted
}

TEST_CASE("a mirrored ledger: each batch goes to the mirror first, from the journal thread, whole lines in order; a throwing mirror fails it closed") {
    corral::test::TempDir d("corral-ledger");
    auto path = (d / "ledger.jsonl");
    Ledger l(path);
    std::string mirrored;
    std::size_t file_size_at_mirror = 0;
    std::thread::id mirror_thread;
    int batches = 0;
    l.mirror_to([&](std::string_view lines) {
        file_size_at_mirror = read_all(path).size();
        mirrored += lines;
        mirror_thread = std::this_thread::get_id();
        ++batches;
    });
    l.append_batched(sample());
    l.append_batched(sample());
    l.flush();
    l.append(sample());  // unbatched appends go through it too
    l.sync();            // waits for the journal thread
    CHECK(file_size_at_mirror == 0);  // the mirror had the lines before the file
    CHECK(mirrored == read_all(path));
    CHECK(std::count(mirrored.begin(), mirrored.end(), '\n') == 3);
    CHECK(mirror_thread != std::this_thread::get_id());  // not on the request path
    CHECK(batches == 1);  // the flushes of one batch delay share one mirror call
    l.append(sample());
    l.sync();
    CHECK(mirrored == read_all(path));
    CHECK(batches == 2);

    const auto failing_path = (d / "failing.jsonl");
    Ledger failing(failing_path);
    failing.mirror_to([](std::string_view) { throw std::runtime_error("write(journal.jsonl): No space left on device"); });
    failing.append_batched(sample());
    failing.append_batched(sample());
    CHECK_FALSE(failing.flush());  // queued: the failure comes from the journal thread
    failing.sync();
    CHECK_FALSE(failing.healthy());
    CHECK(failing.failure() == "journal: write(journal.jsonl): No space left on device");
    CHECK(failing.lines_lost() == 2);
    CHECK(read_all(failing_path).empty());  // nothing the journal lacks
    failing.append(sample());               // refused by the caller (unhealthy), counted lost
    CHECK(failing.lines_lost() == 3);
}

TEST_CASE("a mirrored ledger's destructor hands every queued line to the mirror, then to the file") {
    corral::test::TempDir d("corral-ledger");
    auto path = (d / "ledger.jsonl");
    std::string mirrored;
    {
        Ledger l(path);
        l.mirror_to([&](std::string_view lines) { mirrored += lines; });
        for (int i = 0; i < 5; ++i) l.append_batched(sample());
        l.flush();
        l.append_batched(sample());  // pending, not flushed
    }
    CHECK(std::count(mirrored.begin(), mirrored.end(), '\n') == 6);
    CHECK(mirrored == read_all(path));
}

TEST_CASE("Ledger refuses a file planted for it: a hard link to another file, or someone else's file") {
    corral::test::TempDir d("corral-ledger");
    const std::string other = (d / "other");
    const std::string path = (d / "ledger.jsonl");
    { std::ofstream(other) << ""; }
    REQUIRE(::link(other.c_str(), path.c_str()) == 0);  // appending would write into `other`
    {
        Ledger l(path);
        CHECK_FALSE(l.healthy());
        CHECK(l.failure().find("not a file of our own with one link") != std::string::npos);
    }
    std::filesystem::remove(path);
    if (::geteuid() == 0) {
        { std::ofstream(path) << ""; }
        REQUIRE(::chown(path.c_str(), 41001, 41001) == 0);
        Ledger l(path);
        CHECK_FALSE(l.healthy());
        CHECK(l.failure().find("not a file of our own") != std::string::npos);
    }
}

TEST_CASE("refusal lines are capped per identity: one cap line, then a count at 2N, 4N, ...; counters stay exact") {
    corral::test::TempDir d("corral-ledger");
    auto path = (d / "ledger.jsonl");
    const std::uint64_t cap = 3;
    Ledger l(path, cap);
    auto refusal = sample();
    refusal.decision = Decision::refuse, refusal.reason = "not_granted", refusal.status = 403;
    refusal.mode = "", refusal.method = "CONNECT", refusal.host = "127.0.0.1", refusal.port = 9, refusal.path = "";
    refusal.credential = "", refusal.bytes_up = refusal.bytes_down = refusal.duration_ms = 0;
    for (int i = 0; i < 100; ++i) l.append(refusal);
    // Allowed entries are always written, cap or not.
    l.append(sample());
    // Another identity has its own cap.
    auto other = refusal;
    other.identity = "worker-b/run-1";
    l.append(other);
    l.sync();
    CHECK(l.healthy());
    CHECK(l.refusals("worker-a/run-1") == 100);
    CHECK(l.requests("worker-a/run-1") == 101);
    CHECK(l.refusals("worker-b/run-1") == 1);

    std::vector<nlohmann::json> a_refusals, a_allowed, b_lines;
    std::ifstream f(path);
    for (std::string line; std::getline(f, line);) {
        auto j = nlohmann::json::parse(line);
        if (j["identity"] == "worker-b/run-1")
            b_lines.push_back(j);
        else if (j["decision"] == "refuse")
            a_refusals.push_back(j);
        else
            a_allowed.push_back(j);
    }
    CHECK(a_allowed.size() == 1);
    CHECK(b_lines.size() == 1);
    CHECK(b_lines.at(0)["reason"] == "not_granted");
    // 3 refusals written, the 4th writes the cap line, then counts at 6, 12, 24, 48, 96.
    REQUIRE(a_refusals.size() == 3 + 1 + 5);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(a_refusals[i]["reason"] == "not_granted");
        CHECK_FALSE(a_refusals[i].contains("refusals"));
    }
    CHECK(a_refusals[3]["reason"] == "ledger_refusal_cap_reached");
    CHECK(a_refusals[3]["refusals"] == 4);
    CHECK(a_refusals[3]["status"] == 0);
    CHECK(a_refusals[3]["host"] == "");
    const std::uint64_t counts[] = {6, 12, 24, 48, 96};
    for (std::size_t i = 0; i < 5; ++i) {
        CHECK(a_refusals[4 + i]["reason"] == "ledger_refusals_suppressed");
        CHECK(a_refusals[4 + i]["refusals"] == counts[i]);
    }
    CHECK(a_refusals[3].size() == 15);  // every usual key, then `refusals`
}

TEST_CASE("refusal cap 0 writes every refusal") {
    corral::test::TempDir d("corral-ledger");
    auto path = (d / "ledger.jsonl");
    Ledger l(path, 0);
    auto refusal = sample();
    refusal.decision = Decision::refuse, refusal.reason = "not_granted";
    for (int i = 0; i < 50; ++i) l.append(refusal);
    auto text = read_all(path);
    CHECK(std::count(text.begin(), text.end(), '\n') == 50);
    CHECK(text.find("ledger_refusal_cap_reached") == std::string::npos);
}

TEST_CASE("secret_reflected lines carry form and matches, and are counted apart from requests") {
    auto e = sample();
    e.reason = std::string(reason::secret_reflected);
    e.form = "literal,base64";
    e.matches = 3;
    auto line = format_ledger_line(e);
    CHECK(line.find(",\"credential\":\"anthropic\",\"form\":\"literal,base64\",\"matches\":3}\n") != std::string::npos);
    CHECK(line == nlohmann::ordered_json::parse(line).dump() + "\n");
    e.path = "/a\"b";  // the general path writes the same keys
    line = format_ledger_line(e);
    CHECK(line.find(",\"form\":\"literal,base64\",\"matches\":3}\n") != std::string::npos);

    corral::test::TempDir d("corral-ledger");
    Ledger l((d / "ledger.jsonl"));
    l.append(sample());
    l.append(e);
    l.append(e);
    CHECK(l.requests("worker-a/run-1") == 1);
    CHECK(l.refusals("worker-a/run-1") == 0);
    CHECK(l.secrets_reflected("worker-a/run-1") == 2);
    CHECK(l.secrets_reflected("other/run") == 0);
    auto text = read_all((d / "ledger.jsonl"));
    CHECK(std::count(text.begin(), text.end(), '\n') == 3);
}

TEST_CASE("Ledger keeps each identity's first refusal per host:port, bounded, counting the rest") {
    corral::test::TempDir d("corral-ledger");
    Ledger l((d / "ledger.jsonl"), 2);  // the line cap must not hide notices
    auto e = sample();
    e.decision = Decision::refuse;
    e.reason = "not_granted";
    e.status = 403;
    e.host = "a.example";
    e.port = 443;
    for (int i = 0; i < 5; ++i) l.append(e);
    e.host = "b.example";
    e.port = 8443;
    l.append(e);
    e.decision = Decision::allow;  // allowed requests are no notices
    e.reason.clear();
    e.host = "c.example";
    l.append(e);
    auto n = l.refusal_notices("worker-a/run-1");
    REQUIRE(n.size() == 2);
    CHECK(n[0].host == "a.example");
    CHECK(n[0].count == 5);
    CHECK(n[0].reason == "not_granted");
    CHECK(n[1].host == "b.example");
    CHECK(n[1].port == 8443);
    CHECK(l.refusal_notices("other/run").empty());
    // At most kRefusalNoticesPerIdentity host:ports are kept.
    e.decision = Decision::refuse;
    e.reason = "not_granted";
    for (std::size_t i = 0; i < kRefusalNoticesPerIdentity + 10; ++i) {
        e.host = "h" + std::to_string(i) + ".example";
        l.append(e);
    }
    CHECK(l.refusal_notices("worker-a/run-1").size() == kRefusalNoticesPerIdentity);
}
