// tests/gateway_e2e/model_upstream.hpp — the stand-in model API
// (model_upstream.js) and what the metering and policy cases do with it: an
// inject grant on it, POST a body through a daemon, read the metered ledger
// lines and the daemon's model totals.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/gateway_e2e/fixture.hpp"
#include "tests/support/ledger.hpp"
#include "tests/support/process.hpp"

namespace corral::test::gw {

using nlohmann::json;

// The stand-in model API, one per test case (its counters start at zero).
struct ModelUpstream {
    std::unique_ptr<Background> proc;
    int main = 0, control = 0;

    ModelUpstream() {
        RunOptions env;
        env.env["CORRAL_SOURCE_ROOT"] = source_root();
        proc = std::make_unique<Background>(
            std::vector<std::string>{"node", source_root() + "/tests/gateway_e2e/model_upstream.js", world().dir}, env);
        if (!proc->wait_for_stdout("\n", std::chrono::seconds(20))) throw std::runtime_error("model_upstream.js did not start");
        auto line = proc->drain_stdout();
        auto ports = json::parse(line.substr(line.find('{')));
        main = ports.at("main").get<int>();
        control = ports.at("control").get<int>();
    }
    json stats(const std::string& path = "/stats") const {
        auto r = run({"curl", "-sS", "--max-time", "5", "--noproxy", "*",
                      "http://127.0.0.1:" + std::to_string(control) + path});
        return json::parse(r.out, nullptr, false);
    }
};

// An inject grant for upstream.test on the stand-in, then `more` (budget, prices).
inline std::string grant_for(const ModelUpstream& m, const std::string& more) {
    return "[[grants]]\nhost = \"upstream.test\"\nport = " + std::to_string(m.main) +
           "\nmode = \"inject\"\nallow_private = true\n" + more;
}

inline const char* kPrices = R"(
[prices."claude-test"]
input = 3.0
output = 15.0
cache_write = 3.75
cache_read = 0.30
source = "stand-in price list"
date = "2026-11-30"
[prices."gpt-test"]
input = 1.25
output = 10.0
cache_write = 0
cache_read = 0.125
source = "stand-in price list"
date = "2026-11-30"
)";

inline std::string url(const ModelUpstream& m, const std::string& path) {
    return "https://upstream.test:" + std::to_string(m.main) + path;
}

// POST `body` (JSON) to `path` through the daemon: {status, body, headers}.
struct Answer {
    int status = 0;
    std::string body, headers;
};
inline Answer post(const OwnDaemon& d, const ModelUpstream& m, const std::string& path, const json& body) {
    auto r = d.curl_args({"-D", "-", "-H", "content-type: application/json", "--data-binary", body.dump(), url(m, path)});
    Answer a;
    auto at = r.out.rfind("\nstatus=");
    if (at != std::string::npos) a.status = std::atoi(r.out.c_str() + at + 8);
    // The last head before the body: curl prints the proxy's CONNECT answer first.
    auto split = r.out.rfind("\r\n\r\n", at);
    a.headers = split == std::string::npos ? "" : r.out.substr(0, split);
    a.body = split == std::string::npos ? r.out : r.out.substr(split + 4, at == std::string::npos ? std::string::npos : at - split - 4);
    return a;
}

inline json anthropic_body(bool stream, const std::string& variant = "", int max_tokens = 100) {
    json b = {{"model", "claude-test"}, {"max_tokens", max_tokens}, {"stream", stream},
              {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
    if (!variant.empty()) b["metadata"] = {{"standin", variant}};
    return b;
}

// The ledger lines that carry metering, in order.
// The ledger's metered lines once `ready` holds for them (or after 5 s): a
// line reaches the ledger a moment after its exchange ends.
inline std::vector<json> metered_lines(const OwnDaemon& d, const LedgerLinesReady& ready) {
    return wait_for_ledger_lines(d.ledger, [](const json& l) { return l.contains("metering"); }, ready);
}

// The daemon's model totals once at least `settled` requests are settled.
// A response is settled when its exchange ends, a moment after the client
// has the last byte: waiting for the number, bounded, not for the key.
inline json model_counts(const OwnDaemon& d, std::uint64_t settled = 0) {
    json c;
    for (int i = 0; i < 250; ++i) {
        c = d.counts();
        if (c.is_object() && c.contains("model") && c["model"].value("requests", 0ull) >= settled) return c["model"];
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return c.is_object() && c.contains("model") ? c["model"] : c;
}

}  // namespace corral::test::gw
