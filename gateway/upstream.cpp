#include "gateway/upstream.hpp"

#include <openssl/x509.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>

#include "gateway/grants.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

// Answers for `name`: the hosts table first, then the system resolver (run
// by Asio off the event loop). An address literal is its own answer.
awaitable<std::vector<asio::ip::address>> resolve(Conn& c, const std::string& name, bool is_ip) {
    std::vector<asio::ip::address> out;
    if (is_ip) {
        boost::system::error_code ec;
        auto a = asio::ip::make_address(name, ec);
        if (!ec) out.push_back(a);
        co_return out;
    }
    if (auto it = c.gw.hosts.find(name); it != c.gw.hosts.end()) co_return it->second;
    asio::ip::tcp::resolver resolver(c.client_socket().get_executor());
    auto [ec, results] = co_await resolver.async_resolve(name, "", nothrow);
    if (!ec)
        for (const auto& r : results) out.push_back(r.endpoint().address());
    co_return out;
}

void set_nodelay(asio::ip::tcp::socket& s) {
    boost::system::error_code ec;
    s.set_option(asio::ip::tcp::no_delay(true), ec);
}

}  // namespace

std::optional<Refusal> choose_grant(Conn& c, const Authority& a, Target& t) {
    t.host = a.host;
    t.port = a.port;
    t.grant = find_grant(c.gw.cfg, c.id, a.host, a.port);
    if (!t.grant && c.gw.cfg.gateway.ask_unlisted) {
        c.asked_grant = std::make_unique<config::Grant>(asked_grant(a.host, a.port));
        t.grant = c.asked_grant.get();
    }
    if (!t.grant)
        return Refusal{std::string(reason::not_granted),
                       a.host.text() + ":" + std::to_string(a.port) + " is not granted to " + c.id_text};
    return std::nullopt;
}

awaitable<std::optional<Refusal>> resolve_target(Conn& c, Target& t) {
    std::string dial_host = t.host.text();
    bool dial_is_ip = t.host.is_ip_literal();
    t.dial_port = t.port;
    if (t.grant->connect_host) {  // normalised when the grant was loaded
        dial_host = t.grant->connect_host->text();
        dial_is_ip = t.grant->connect_host->is_ip_literal();
        t.dial_port = t.grant->connect_port;
    }
    c.arm(c.limits().read_timeout);
    auto answers = co_await resolve(c, dial_host, dial_is_ip);
    AddressDecision d = vet_addresses(*t.grant, t.dial_port, answers, c.gw.self());
    if (!d.allowed)
        co_return Refusal{d.reason, d.reason == reason::dns_failure ? "no address for " + dial_host
                                                                    : dial_host + " resolves to a refused address",
                          Phase::upstream};
    t.addresses = std::move(d.usable);
    co_return std::nullopt;
}

awaitable<bool> dial(Conn& c, asio::ip::tcp::socket& s, const Target& t) {
    c.upstream = &s;
    c.arm(c.limits().read_timeout);
    for (const auto& addr : t.addresses) {
        boost::system::error_code ec;
        s.close(ec);
        auto [cec] = co_await s.async_connect(asio::ip::tcp::endpoint(addr, t.dial_port), nothrow);
        if (!cec) {
            set_nodelay(s);
            co_return true;
        }
        if (c.timed_out) break;
    }
    co_return false;
}

Refusal dial_refusal(const Conn& c, const Target& t) {
    return {std::string(c.timed_out ? reason::timeout : reason::upstream_connect),
            "cannot connect to " + t.host.text() + ":" + std::to_string(t.port), Phase::upstream};
}

std::string pool_key(const Target& t, const std::string& ca_file) {
    std::string key = t.host.text() + "|" + std::to_string(t.port) + "|" + std::to_string(t.dial_port);
    for (const auto& a : t.addresses) key += "|" + a.to_string();
    return key + "|" + ca_file;
}

const std::string& trust_store(const Conn& c, const Target& t) {
    return t.grant->upstream_ca_file.empty() ? c.gw.cfg.gateway.upstream_ca_file : t.grant->upstream_ca_file;
}

std::string loop_pool_key(Conn& c, const Target& t) {
    auto& loop = asio::query(c.client_socket().get_executor(), asio::execution::context);
    return pool_key(t, trust_store(c, t)) + "|loop" + std::to_string(reinterpret_cast<std::uintptr_t>(&loop));
}

awaitable<std::unique_ptr<UpstreamConn>> open_upstream(Conn& c, const Target& t, std::optional<Refusal>& refusal) {
    auto ctx = c.gw.client_tls.get(trust_store(c, t));
    auto up = std::make_unique<UpstreamConn>(c.client_socket().get_executor(), *ctx);
    up->key = loop_pool_key(c, t);  // the key take() looks for
    // On failure `up` is gone with this frame: the watchdog must not see it.
    if (!co_await dial(c, up->stream.next_layer(), t)) {
        refusal = dial_refusal(c, t);
        c.upstream = nullptr;
        co_return nullptr;
    }
    if (!set_upstream_identity(up->stream.native_handle(), t.host.text(), t.host.is_ip_literal())) {
        refusal = Refusal{std::string(reason::upstream_tls), "cannot set the upstream's expected name", Phase::upstream};
        c.upstream = nullptr;
        co_return nullptr;
    }
    c.arm(c.limits().read_timeout);
    auto [ec] = co_await up->stream.async_handshake(asio::ssl::stream_base::client, nothrow);
    if (ec) {
        long verify = SSL_get_verify_result(up->stream.native_handle());
        refusal = Refusal{std::string(c.timed_out ? reason::timeout : reason::upstream_tls),
                          "TLS to " + t.host.text() + " failed: " +
                              (verify != X509_V_OK ? std::string(X509_verify_cert_error_string(verify)) : ec.message()),
                          Phase::upstream};
        c.upstream = nullptr;
        co_return nullptr;
    }
    co_return up;
}

// Anything an idle connection did send (a late or unsolicited response, a
// close_notify) would be read as the answer to the next request, which may be
// another identity's: such a connection is dropped, not reused. One ioctl.
bool upstream_is_quiet(UpstreamConn& up) {
    boost::system::error_code ec;
    return up.buf.size() == 0 && SSL_pending(up.stream.native_handle()) == 0 &&
           up.stream.next_layer().available(ec) == 0 && !ec;
}

}  // namespace corral::gateway
