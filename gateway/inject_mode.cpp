#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include <optional>

#include "base/log.hpp"
#include "gateway/exchange.hpp"
#include "gateway/grants.hpp"
#include "gateway/headers.hpp"
#include "gateway/model_traffic.hpp"
#include "gateway/modes.hpp"
#include "gateway/request_checks.hpp"
#include "gateway/response_scrub.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;

namespace {

// The credential an inject grant puts on each request, with the grant's own
// headers (credential_for_grant); none when the grant names none or its
// secret is not installed.
struct Injection {
    config::CredentialSpec spec;
    const std::string* secret = nullptr;
    const config::CredentialSpec* credential() const { return secret ? &spec : nullptr; }
};

Injection injection_for(const Conn& c, const config::Grant& grant) {
    Injection inj;
    if (grant.credential.empty()) return inj;
    auto ci = c.gw.cfg.credentials.find(grant.credential);
    auto si = c.gw.secrets.find(grant.credential);
    if (ci != c.gw.cfg.credentials.end() && si != c.gw.secrets.end()) {
        inj.spec = config::credential_for_grant(ci->second, grant);
        inj.secret = &si->second;
    }
    return inj;
}

// The box's TLS session, terminated with the CONNECT host's leaf. Bytes the
// client sent right behind its CONNECT are the start of its ClientHello. A
// failed handshake has no channel to answer on: only its ledger line.
awaitable<bool> accept_client_tls(Conn& c, const Target& t) {
    c.client_tls = std::make_unique<ClientTls>(std::move(c.client), c.server_tls->ctx);
    ClientTls& tls = *c.client_tls;
    c.arm(c.limits().read_timeout);
    auto [hec, used] = co_await tls.async_handshake(asio::ssl::stream_base::server, c.buf.data(), nothrow);
    if (!hec) {
        c.buf.consume(used);
        co_return true;
    }
    LedgerEntry e;
    e.mode = "inject", e.method = "CONNECT", e.host = t.host.text(), e.port = t.port;
    e.decision = Decision::refuse;
    e.reason = sni_refused(tls.native_handle()) ? std::string(reason::sni_mismatch)
                   : std::string(c.timed_out ? reason::timeout : reason::client_tls);
    record(c, e);
    co_return false;
}

// The ledger line's path: a copy of the request's, cut to keep lines short.
// A decision never reads it (CheckedTunnelRequest has the whole path).
constexpr std::size_t kLedgerPathChars = 256;

// A refused request's target, for its ledger line: canonical when it can be
// made so, else as sent.
std::string ledger_path_of_target(std::string_view raw_target) {
    auto canonical = canonical_route_path(raw_target);
    const auto* path = std::get_if<std::string_view>(&canonical);
    return std::string((path ? *path : raw_target).substr(0, kLedgerPathChars));
}

// One request read and checked (filled in place: the parser cannot move),
// its body not yet read. Head checks come
// first: a refused request's body is never read.
struct TunnelRequest {
    bool closed = false;
    ParsedRequest pr;
    std::optional<Refusal> refusal;
    CheckedTunnelRequest checked;  // once no refusal: what the decisions read
};

awaitable<void> read_tunnel_request(Conn& c, const Target& t, LedgerEntry& e, TunnelRequest& r) {
    HeadResult h = co_await read_head(c, *c.client_tls, false);
    if (h.closed) {
        r.closed = true;
        co_return;
    }
    if (h.refusal) {
        r.refusal = std::move(h.refusal);
        co_return;
    }
    if (!c.gw.ledger.healthy()) {
        r.refusal = Refusal{std::string(reason::ledger_unwritable),
                            "the ledger cannot be written: " + c.gw.ledger.failure()};
        co_return;
    }
    parse_request_head(c, h.length, r.pr);
    if (r.pr.parser) {
        // Also for a head refused at its Content-Length (the request line is
        // parsed by then): the ledger line names what was refused.
        e.method = std::string(r.pr.parser->get().method_string());
        if (r.pr.refusal) e.path = ledger_path_of_target(r.pr.parser->get().target());
    }
    if (r.pr.refusal) {
        r.refusal = std::move(r.pr.refusal);
        co_return;
    }
    auto checked = check_tunnel_request(r.pr.parser->get(), t.host, t.port, *t.grant);
    if (auto* refused = std::get_if<Refusal>(&checked)) {
        r.refusal = std::move(*refused);
        e.path = ledger_path_of_target(r.pr.parser->get().target());
        co_return;
    }
    r.checked = std::move(std::get<CheckedTunnelRequest>(checked));
    e.path = r.checked.path.substr(0, kLedgerPathChars);  // the ledger copies the decision's path
    if (!r.refusal && !c.gw.admit(c.id_text))
        r.refusal = Refusal{std::string(reason::budget_exhausted), "request budget of " + c.id_text + " is spent"};
    co_return;
}

// The body, after a 100 Continue when the box waits for one.
awaitable<std::optional<Refusal>> read_tunnel_body(Conn& c, RequestParser& p) {
    if (p.is_done()) co_return std::nullopt;
    auto& req = p.get();
    if (auto ex = req.find(http::field::expect); ex != req.end() && iequals(ex->value(), "100-continue"))
        co_await asio::async_write(*c.client_tls, asio::buffer("HTTP/1.1 100 Continue\r\n\r\n", 25), nothrow);
    co_return co_await read_body(c, *c.client_tls, p);
}

// One exchange on this tunnel's upstream connection: the one kept from the
// last request, one from the pool, or a new one; a reused connection that
// fails before answering anything (a stale keep-alive) is retried once on a
// fresh one.
awaitable<Exchange> forward(Conn& c, const Target& t, const std::string& key, std::unique_ptr<UpstreamConn>& up,
                            const OutgoingRequest& out) {
    Exchange x;
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (!up) up = c.gw.pool.take(key);
        if (up && !upstream_is_quiet(*up)) up.reset();
        bool reused = up != nullptr;
        if (!up) {
            std::optional<Refusal> refusal;
            up = co_await open_upstream(c, t, refusal);
            if (!up) {
                x.reason = refusal->reason, x.detail = refusal->detail;
                break;
            }
        }
        c.upstream = &up->stream.next_layer();
        x = co_await exchange(c, *c.client_tls, up->stream, up->buf, out);
        if (x.reason.empty() || !(reused && x.nothing_received)) break;
        up.reset();
        c.upstream = nullptr;
    }
    co_return x;
}

// An inject exchange's line, then one `secret_reflected` line when the
// scrubber masked anything (the response went on, masked), and, the first
// time an identity's upstream does so, a warning on stderr (later ones are in
// the ledger and counted in the run's record). The usual exchange, nothing
// reflected, has its entry moved into the ledger, not copied.
void record_exchange(Conn& c, LedgerEntry e, const ResponseScrub* scrub) {
    if (scrub == nullptr || scrub->matches() == 0) {
        record(c, std::move(e));
        return;
    }
    record(c, e);
    e.time = std::chrono::system_clock::now();
    e.decision = Decision::allow;
    e.reason = std::string(reason::secret_reflected);
    e.form = scrub_form_names(scrub->forms());
    e.matches = scrub->matches();
    bool first = c.gw.ledger.secrets_reflected(c.id_text) == 0;
    record(c, e);
    if (first)
        log::warn("gateway: " + c.id_text + ": the upstream " + e.host + " sent the injected credential '" +
                  e.credential + "' back (" + e.form + ") on " + e.method + " " + e.path +
                  "; masked before it reached the box (ledger: secret_reflected)");
}

// The end of the box's TLS session: close_notify both ways (bounded), unless
// a refusal already half-closed and drained the connection, or the box's side
// already ended without one.
awaitable<void> close_client_tls(Conn& c) {
    boost::system::error_code ec;
    if (!c.lingered && !c.client_gone) {
        c.arm(std::chrono::seconds(2));
        co_await c.client_tls->async_shutdown(nothrow);
    }
    c.client_tls->next_layer().close(ec);
}

}  // namespace

// GCC 12 reports the delete of this coroutine's frame (Asio's recycling frame
// allocator) as mismatched with its allocation: a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
awaitable<void> serve_inject(std::shared_ptr<Conn> cp, Target t) {
    Conn& c = *cp;
    if (!co_await accept_client_tls(c, t)) co_return;
    ClientTls& tls = *c.client_tls;
    const Injection inj = injection_for(c, *t.grant);
    const metering::ModelPolicy& policy = t.grant->policy;  // the config's value, decided on as parsed
    const std::string key = loop_pool_key(c, t);
    std::unique_ptr<UpstreamConn> up;

    for (;;) {
        auto started = Clock::now();
        LedgerEntry e;
        e.mode = "inject", e.host = t.host.text(), e.port = t.port;
        TunnelRequest r;
        co_await read_tunnel_request(c, t, e, r);
        if (r.closed) break;
        if (!r.refusal) r.refusal = co_await read_tunnel_body(c, *r.pr.parser);
        if (r.refusal) {
            // Nothing was forwarded, so no credential was injected.
            co_await refuse(c, tls, e, *r.refusal, started);
            break;
        }
        Request& req = r.pr.parser->get();
        bool websocket = is_websocket_upgrade(req);
        bool client_keep_alive = req.keep_alive();
        // A model request: its budget reserved before anything is forwarded.
        RouteDecision route = govern_route(c, req, *t.grant, policy, r.checked.path, websocket, e);
        std::optional<Refusal> refused = std::move(route.refusal);
        std::unique_ptr<ModelTraffic> model = std::move(route.model);
        if (model) refused = model->admit(req, policy, inj.credential() ? inj.spec.anthropic_beta : "", e);
        if (refused) {
            co_await refuse(c, tls, e, *refused, started);
            break;
        }
        e.credential = inj.credential() ? inj.spec.name : "";
        std::optional<ResponseScrub> scrub;
        if (inj.credential()) {
            rewrite_request_headers(static_cast<http::fields&>(req), inj.spec, *inj.secret);
            request_scannable_response(static_cast<http::fields&>(req));
            if (c.gw.scrub_responses) scrub.emplace(c.gw.scrub_patterns(inj.spec, *inj.secret));
        }
        const std::string head = request_head(req, req.target(), websocket, request_has_body(req) || req.body().size());
        const OutgoingRequest out{head, req.body(), req.method() == http::verb::head, websocket,
                                  scrub ? &*scrub : nullptr, model.get()};
        Exchange x = co_await forward(c, t, key, up, out);
        e.status = x.status, e.bytes_up = x.bytes_up, e.bytes_down = x.bytes_down;
        e.duration_ms = ms_since(started);
        if (model) model->finish(x, e);
        if (box_gets_refusal(x)) {
            // Nothing was forwarded to the client yet: answer with the refusal.
            const Refusal cut = refusal_of(x);
            co_await refuse(c, tls, e, cut, started);
            break;
        }
        e.reason = x.reason;
        record_exchange(c, std::move(e), scrub ? &*scrub : nullptr);
        if (!x.reason.empty() || x.status == 101) break;
        if (!(x.upstream_reusable && up)) up.reset();
        c.upstream = nullptr;
        if (!client_keep_alive || !x.client_reusable) break;
    }
    if (up && c.upstream == nullptr) c.gw.pool.put(std::move(up));  // hand the idle connection to other tunnels
    c.upstream = nullptr;
    co_await close_client_tls(c);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace corral::gateway
