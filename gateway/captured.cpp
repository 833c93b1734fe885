// gateway/captured.cpp — a captured connection (docs/capture.md): a program
// in the box that ignores the proxy variables connected to the synthetic
// address its DNS stub gave a granted name; the run's listener accepted it
// and hands it here with the name and port the address stands for. It is
// served exactly as a CONNECT to name:port would be (the same grant, the
// same approval, address vetting, TLS interception and injection), after
// its first bytes are checked (first_flight.hpp): a ClientHello whose SNI is
// the name, or an HTTP request whose Host is. Every ledger line it makes
// carries "captured": true (Conn::captured).
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "gateway/approval_desk.hpp"
#include "gateway/connection.hpp"
#include "gateway/first_flight.hpp"
#include "gateway/modes.hpp"
#include "gateway/request_checks.hpp"
#include "gateway/request_reader.hpp"
#include "gateway/upstream.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

// The first bytes, read into c.buf (left there: the mode that serves the
// connection reads them first) until they tell what they are. `closed`:
// the box closed before sending a byte (nothing to record).
awaitable<FirstFlight> read_flight(Conn& c, bool& closed, bool& timed_out) {
    const std::size_t limit = std::min(kMaxFirstFlightBytes, c.buf.max_size());
    c.arm(c.limits().read_timeout);
    for (;;) {
        auto data = c.buf.data();
        FirstFlight f = read_first_flight({static_cast<const std::uint8_t*>(data.data()), data.size()});
        if (f.kind != FirstFlight::Kind::need_more) co_return f;
        if (c.buf.size() >= limit) {
            f.kind = FirstFlight::Kind::other;
            f.detail = "a TLS record longer than " + std::to_string(limit) + " bytes";
            co_return f;
        }
        auto [ec, n] = co_await c.client.async_read_some(
            c.buf.prepare(std::min<std::size_t>(8192, limit - c.buf.size())), nothrow);
        if (ec || n == 0) {
            closed = c.buf.size() == 0 && !c.timed_out;
            timed_out = c.timed_out;
            co_return f;
        }
        c.buf.commit(n);
    }
}

// A refusal on a captured connection: a plain HTTP client can read an
// answer; any other (a TLS client, an unknown protocol) cannot, so it gets
// its ledger line (status 0: nothing was answered) and the connection closes.
awaitable<void> refuse_captured(Conn& c, LedgerEntry e, const Refusal& r, Clock::time_point started, bool http) {
    if (http) {
        co_await refuse(c, c.client, e, r, started);
        co_return;
    }
    e.decision = Decision::refuse;
    e.reason = r.reason;
    e.status = 0;
    e.duration_ms = ms_since(started);
    record(c, e);
}

// An HTTP first flight: its head read and parsed (into `pr`), its target
// and Host checked against the name; the origin-form path in `path`.
awaitable<std::optional<Refusal>> read_captured_request(Conn& c, const Authority& target, ParsedRequest& pr,
                                                        std::string& path, LedgerEntry& e) {
    HeadResult h = co_await read_head(c, c.client, true);
    if (h.closed) co_return Refusal{std::string(reason::bad_request), "the request head did not come"};
    if (h.refusal) co_return h.refusal;
    parse_request_head(c, h.length, pr);
    if (pr.parser) {
        e.method = std::string(pr.parser->get().method_string());
        e.path = std::string(pr.parser->get().target().substr(0, 256));
    }
    if (pr.refusal) co_return pr.refusal;
    auto checked = check_captured_request(pr.parser->get(), target);
    if (auto* refused = std::get_if<Refusal>(&checked)) co_return *refused;
    path = std::get<std::string>(checked);
    e.path = path.substr(0, 256);
    co_return std::nullopt;
}

// The checks before anything is resolved or dialled, in handle()'s order
// (first_request.cpp): the caps, the ledger, the first flight, the grant and
// its mode, a person's approval, then resolution and vetting, the budget.
awaitable<std::optional<Refusal>> decide_captured(Conn& c, const Authority& target, const FirstFlight& f, Target& t,
                                                  LedgerEntry& e, ParsedRequest& pr, std::string& path) {
    std::optional<Refusal> refusal = choose_grant(c, target, t);
    if (t.grant) e.mode = std::string(to_string(t.grant->mode));
    if (!refusal) refusal = check_first_flight(f, target.host, t.grant->mode);
    if (!refusal && f.kind == FirstFlight::Kind::http) refusal = co_await read_captured_request(c, target, pr, path, e);
    if (!refusal && t.grant->approval) {
        const std::string method = e.method;
        const std::string asked_path = f.kind == FirstFlight::Kind::http ? path : std::string();
        refusal = co_await hold_for_approval(c, t, method, asked_path);
    }
    if (!refusal) refusal = co_await resolve_target(c, t);
    bool counted = t.grant && (f.kind == FirstFlight::Kind::http || t.grant->mode == config::GrantMode::tunnel);
    if (!refusal && counted && !c.gw.admit(c.id_text))
        refusal = Refusal{std::string(reason::budget_exhausted), "request budget of " + c.id_text + " is spent"};
    co_return refusal;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"  // as handle() in first_request.cpp
#endif
awaitable<void> handle_captured(std::shared_ptr<Conn> cp, std::optional<Authority> target) {
    Conn& c = *cp;
    c.captured = true;
    const auto started = Clock::now();
    LedgerEntry e;
    e.method = "CONNECT";  // what the connection stands for; an HTTP flight's method replaces it
    if (!target) {
        const Refusal r{std::string(reason::captured_unmapped), "its local address stands for no name"};
        co_await refuse_captured(c, e, r, started, false);
        co_return;
    }
    e.host = target->host.text(), e.port = target->port;
    std::optional<Refusal> refusal = check_connection_caps(c.limits(), c.id_text, c.identity_open, c.gw.active.load());
    if (!refusal && !c.gw.ledger.healthy())
        refusal = Refusal{std::string(reason::ledger_unwritable), "the ledger cannot be written: " + c.gw.ledger.failure()};
    FirstFlight f;
    if (!refusal) {
        bool closed = false, timed_out = false;
        f = co_await read_flight(c, closed, timed_out);
        if (closed) co_return;
        if (timed_out) refusal = Refusal{std::string(reason::timeout), "no first message within read_timeout"};
    }
    Target t{target->host};
    ParsedRequest pr;
    std::string path;
    if (!refusal) refusal = co_await decide_captured(c, *target, f, t, e, pr, path);
    const bool http = f.kind == FirstFlight::Kind::http;
    if (refusal) {
        co_await refuse_captured(c, e, *refusal, started, http);
        co_return;
    }
    if (http) {
        co_await serve_plain(cp, std::move(t), pr, std::move(path), started);
    } else if (t.grant->mode == config::GrantMode::tunnel) {
        co_await serve_tunnel(cp, std::move(t), started);
    } else {
        if (const std::optional<Refusal> no_leaf = take_server_leaf(c, t.host)) {
            co_await refuse_captured(c, e, *no_leaf, started, false);
            co_return;
        }
        co_await serve_inject(cp, std::move(t));
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace

awaitable<void> serve_captured_connection(Gateway::Internals& gw, ClientSocket s, Identity id,
                                          std::optional<Authority> target) {
    auto c = std::make_shared<Conn>(gw, std::move(s), std::move(id));
    co_await run_watched(c, handle_captured(c, std::move(target)));
}

}  // namespace corral::gateway
