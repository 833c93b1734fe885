// run/egress_refusals.cpp — the run's live refusal lines (docs/operations.md):
// the gateway's refusals polled while the box has traffic through corral,
// each first refusal of a host:port told to the operator and to a session's
// exec callers, and the activity that wakes the poll.
#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>

#include "run/egress.hpp"

namespace corral::run {

namespace {

// Polls after the box's last activity: a refusal is recorded as its
// exchange ends, which may be just after the connection's end was noted.
constexpr int kPollsAfterActivity = 2;
// The longest pause between two polls while connections stay open: 8 rounds of 250 ms.
constexpr int kMaxRoundsPerPoll = 8;

}  // namespace

void Egress::report_refusals() {
    const std::vector<gateway::RefusalNotice> notices = refusals_so_far();
    if (refusal_listeners_) refusal_listeners_->deliver(notices, grants_from());
    for (const auto& line : refusal_report_.new_lines(notices, grants_from()))
        if (refusal_sink_) refusal_sink_(line);
}

// Every 250 ms while the box's traffic through corral begins or ends, and
// twice after it last had some (a refusal is recorded as its exchange ends):
// soon enough that the operator reads the reason while the CLI is still
// retrying. While connections stay open and none begins or ends (a long
// model stream, a kept-alive connection), the pause between polls doubles
// up to 2 s: through a daemon each poll is a question to it, and 256 boxes
// each holding a stream asked it 1 024 times a second (docs/benchmarks.md,
// "Scale"). A box doing nothing through corral wakes no thread: polling
// every 250 ms regardless cost each idle supervisor 4 wakeups a second
// (docs/benchmarks.md "Idle supervisors", session 45).
void Egress::watch_refusals() {
    std::unique_lock lock(watch_mutex_);
    while (!watch_stop_) {
        watch_wake_.wait(lock, [this] { return watch_stop_ || polls_left_ > 0; });
        if (watch_stop_) break;
        watch_wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return watch_stop_; });
        if (watch_stop_) break;
        polls_left_ = traffic_open() ? kPollsAfterActivity : polls_left_ - 1;
        if (activity_since_poll_) rounds_per_poll_ = 1;
        if (++rounds_since_poll_ < rounds_per_poll_ && polls_left_ > 0) continue;
        rounds_since_poll_ = 0;
        rounds_per_poll_ = activity_since_poll_ ? 1 : std::min(rounds_per_poll_ * 2, kMaxRoundsPerPoll);
        activity_since_poll_ = false;
        lock.unlock();
        report_refusals();
        lock.lock();
    }
}

void Egress::note_activity() {
    std::lock_guard lock(watch_mutex_);
    if (polls_left_ == 0) watch_wake_.notify_one();
    polls_left_ = kPollsAfterActivity;
    activity_since_poll_ = true;
}

namespace {

// Connections noted as they begin and end (Egress::noted).
boost::asio::awaitable<void> noted_connection(boost::asio::ip::tcp::socket s, run::ConnectionHandler handler,
                                              std::function<void()> note) {
    note();
    co_await handler(std::move(s));
    note();
}

}  // namespace

run::ConnectionHandler Egress::noted(run::ConnectionHandler handler) {
    if (!handler) return handler;
    return [this, handler](boost::asio::ip::tcp::socket s) {
        return noted_connection(std::move(s), handler, [this] { note_activity(); });
    };
}

CaptureEndpoint Egress::noted(CaptureEndpoint endpoint) {
    auto serve = std::move(endpoint.serve);
    auto record = std::move(endpoint.record);
    endpoint.serve = [this, serve](boost::asio::ip::tcp::socket s, gateway::Identity id,
                                   std::optional<names::Authority> at) {
        return noted_connection(std::move(s), [serve, id, at](boost::asio::ip::tcp::socket c) { return serve(std::move(c), id, at); },
                                [this] { note_activity(); });
    };
    endpoint.record = [this, record](const gateway::LedgerEntry& entry) {
        if (record) record(entry);
        note_activity();
    };
    return endpoint;
}

}  // namespace corral::run
