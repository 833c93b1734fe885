// tools/bench/journal-sign.cpp — what a journal record costs, to choose
// between signing every record and signing checkpoints (docs/journal.md "Cost").
// Not a test: prints medians of per-record microseconds.
//   journal-sign DIR   (DIR: where the journal files go; the run dir's file system)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "base/sha256.hpp"
#include "journal/canonical.hpp"
#include "journal/journal.hpp"

using namespace corral::journal;
using Clock = std::chrono::steady_clock;

namespace {

// The median over `rounds` of the per-iteration microseconds of `body` run `n` times.
double median_us(int rounds, int n, const std::function<void(int)>& body) {
    std::vector<double> per;
    for (int r = 0; r < rounds; ++r) {
        auto t0 = Clock::now();
        for (int i = 0; i < n; ++i) body(i);
        per.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n);
    }
    std::sort(per.begin(), per.end());
    return per[per.size() / 2];
}

// A gateway decision's size: a ledger line's fields.
nlohmann::json decision(int i) {
    return {{"host", "api.anthropic.com"}, {"port", 443}, {"method", "POST"}, {"path", "/v1/messages"},
            {"status", 200}, {"bytes_up", 1234 + i}, {"bytes_down", 56789}, {"worker", "claude"},
            {"decision", "inject"}, {"ms", 812}};
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: journal-sign DIR\n");
        return 2;
    }
    std::string dir = argv[1];
    SigningKey key = SigningKey::generate();
    std::string sink;
    double canon = median_us(5, 2000, [&](int i) { sink = canonical_json(decision(i)); });
    double hash = median_us(5, 2000, [&](int i) { sink = corral::sha256_hex(canonical_json(decision(i))); });
    double sign = median_us(5, 2000, [&](int i) { sink = key.sign(canonical_json(decision(i))); });
    std::string msg = canonical_json(decision(0)), sig = key.sign(msg);
    double verify = median_us(5, 2000, [&](int) { (void)key.public_key().verify(msg, sig); });
    int file = 0;
    auto fresh = [&](WriterOptions o) {
        std::string path = dir + "/journal-bench-" + std::to_string(::getpid()) + "-" + std::to_string(file++);
        ::unlink(path.c_str());
        auto w = JournalWriter::create(path, key, o);
        ::unlink(path.c_str());  // the fd keeps it; nothing left behind
        return w;
    };
    WriterOptions group;
    group.group_delay = std::chrono::hours(1);
    group.group_records = 64;
    double appended_group = 0, appended_durable = 0;
    {
        auto w = fresh(group);
        appended_group = median_us(5, 2000, [&](int i) { w.append("decision", decision(i), Commit::group); });
    }
    {
        auto w = fresh(WriterOptions{});
        appended_durable = median_us(5, 100, [&](int i) { w.append("decision", decision(i), Commit::durable); });
    }
    // What a run pays: load the state dir's key, create its journal, the
    // admission and terminal records each fdatasynced (corral run's path).
    std::string state = dir + "/journal-bench-state-" + std::to_string(::getpid());
    (void)SigningKey::load_or_create(state);
    double run_journal = median_us(5, 20, [&](int i) {
        SigningKey k = SigningKey::load_or_create(state);
        std::string path = state + "/run-" + std::to_string(file++) + "-" + std::to_string(i) + ".jsonl";
        auto w = JournalWriter::create(path, k);
        w.append(kTypeAdmission, decision(i), Commit::durable);
        w.append(kTypeTerminal, decision(i), Commit::durable);
        ::unlink(path.c_str());
    });
    std::system(("rm -rf '" + state + "'").c_str());
    std::printf("per record, median of 5 rounds (us):\n");
    std::printf("  canonical JSON only          %8.2f\n", canon);
    std::printf("  + SHA-256 (the chain)        %8.2f\n", hash);
    std::printf("  + Ed25519 sign               %8.2f\n", sign);
    std::printf("  Ed25519 verify               %8.2f\n", verify);
    std::printf("  append, group commit (64)    %8.2f\n", appended_group);
    std::printf("  append, fdatasync each       %8.2f\n", appended_durable);
    std::printf("a run's journal (key load, create, admission + terminal durable): %.0f us\n", run_journal);
    return sink.empty();
}
