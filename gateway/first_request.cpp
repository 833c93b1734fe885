// gateway/first_request.cpp — one client connection from accept to its first
// request's decision: the caps, the forward-proxy request, the grant and
// address decisions, then the mode that serves the rest (modes.hpp).
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "gateway/approval_desk.hpp"
#include "gateway/connection.hpp"
#include "gateway/modes.hpp"
#include "gateway/request_checks.hpp"
#include "gateway/request_reader.hpp"
#include "gateway/upstream.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::awaitable;

namespace {

// The first request's way out, in an order that asks nothing of the world
// before it must: the grant (under --ask an unlisted host asks a person
// instead of being refused), its mode, a person's approval where the grant
// asks for one (a tunnel's or inject connection's CONNECT is approved once
// for the connection; docs/approvals.md), and only then the name resolved
// and its addresses vetted: nothing is resolved or dialled for a request a
// person has not approved.
awaitable<std::optional<Refusal>> decide_way_out(Conn& c, const ProxyRequest& preq, const std::string& method,
                                                 Target& t, LedgerEntry& e) {
    std::optional<Refusal> refusal = choose_grant(c, *preq.authority, t);
    if (t.grant) e.mode = std::string(to_string(t.grant->mode));
    if (!refusal) refusal = check_grant_mode(preq.connect, *t.grant);
    if (!refusal && t.grant->approval) {
        // A named path: GCC 12 destroys a temporary in a co_await's full-expression twice.
        const std::string asked_path = preq.connect ? std::string() : preq.path;
        refusal = co_await hold_for_approval(c, t, method, asked_path);
    }
    if (!refusal) refusal = co_await resolve_target(c, t);
    co_return refusal;
}

// The first request on a connection: what is the client asking for?
// GCC 12 reports the delete of this coroutine's frame (Asio's recycling frame
// allocator) as mismatched with its allocation: a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
awaitable<void> handle(std::shared_ptr<Conn> cp) {
    Conn& c = *cp;
    auto started = Clock::now();
    LedgerEntry e;
    std::optional<Refusal> refusal =
        check_connection_caps(c.limits(), c.id_text, c.identity_open, c.gw.active.load());
    ParsedRequest pr;
    if (!refusal) {
        HeadResult h = co_await read_head(c, c.client, true);
        if (h.closed) co_return;
        refusal = std::move(h.refusal);
        if (!refusal && !c.gw.ledger.healthy())
            refusal = Refusal{std::string(reason::ledger_unwritable),
                              "the ledger cannot be written: " + c.gw.ledger.failure()};
        if (!refusal) {
            parse_request_head(c, h.length, pr);
            if (pr.parser) e.method = std::string(pr.parser->get().method_string());
            if (pr.refusal) {
                // The request line is parsed even when a header was refused: name the target.
                if (pr.parser) name_refused_target(pr.parser->get().target(), e.host, e.path);
                refusal = std::move(pr.refusal);
            }
        }
    }
    if (refusal) {
        co_await refuse(c, c.client, e, *refusal, started);
        co_return;
    }

    ProxyRequest preq = check_proxy_request(pr.parser->get());
    e.host = preq.host;
    e.port = preq.authority ? preq.authority->port : 0;
    e.path = preq.path.substr(0, 256);
    if (preq.refusal) {
        co_await refuse(c, c.client, e, *preq.refusal, started);
        co_return;
    }
    Target t{preq.authority->host};
    const std::string method = e.method;
    refusal = co_await decide_way_out(c, preq, method, t, e);
    // A plain request and a tunnel each count against the budget here; an
    // inject tunnel counts each request inside it.
    bool counted = t.grant && (!preq.connect || t.grant->mode == config::GrantMode::tunnel);
    if (!refusal && counted && !c.gw.admit(c.id_text))
        refusal = Refusal{std::string(reason::budget_exhausted), "request budget of " + c.id_text + " is spent"};
    if (refusal) {
        co_await refuse(c, c.client, e, *refusal, started);
        co_return;
    }
    if (!preq.connect) {
        co_await serve_plain(cp, std::move(t), pr, std::move(preq.path), started);
    } else if (t.grant->mode == config::GrantMode::tunnel) {
        co_await serve_tunnel(cp, std::move(t), started);
    } else {
        // The leaf first: once the 200 is out, a failure could only be a
        // silent close. Before it, it is a refusal the box can read.
        if (const std::optional<Refusal> no_leaf = take_server_leaf(c, t.host)) {
            co_await refuse(c, c.client, e, *no_leaf, started);
            co_return;
        }
        static const char kEstablished[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
        if (auto [ec, n] = co_await asio::async_write(c.client, asio::buffer(kEstablished, sizeof kEstablished - 1), nothrow); ec)
            co_return;
        co_await serve_inject(cp, std::move(t));
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// Refused by whoever accepted the connection: nothing of it has been read,
// so a request may be arriving as the answer goes out; the drain is what
// keeps that request from turning the answer into a reset.
awaitable<void> answer_refusal(std::shared_ptr<Conn> cp, std::string code, std::string detail) {
    Conn& c = *cp;
    // Named, not temporaries: GCC 12 destroys a temporary in a co_await's
    // full-expression twice.
    const LedgerEntry e;
    const Refusal r{std::move(code), std::move(detail)};
    co_await refuse(c, c.client, e, r, Clock::now());
    if (!c.lingered) co_await drain_before_close(c);
}

}  // namespace

awaitable<void> serve_connection(Gateway::Internals& gw, ClientSocket s, Identity id) {
    auto c = std::make_shared<Conn>(gw, std::move(s), std::move(id));
    co_await run_watched(c, handle(c));
}

awaitable<void> refuse_connection(Gateway::Internals& gw, ClientSocket s, Identity id, std::string code,
                                  std::string detail) {
    auto c = std::make_shared<Conn>(gw, std::move(s), std::move(id));
    co_await run_watched(c, answer_refusal(c, std::move(code), std::move(detail)));
}

}  // namespace corral::gateway
