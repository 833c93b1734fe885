#include "run/capture_service.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstring>
#include <variant>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "capture/dns_message.hpp"
#include "gateway/grants.hpp"
#include "gateway/refusal.hpp"
#include "run/egress.hpp"

namespace corral::run {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;

// The stub's reason codes are the gateway's, from its one refusal table.
static_assert(capture::dns_reason::malformed == gateway::reason::dns_malformed);
static_assert(capture::dns_reason::not_supported == gateway::reason::dns_not_supported);
static_assert(capture::resolve_reason::exhausted == gateway::reason::synthetic_addresses_exhausted);
static_assert(capture::resolve_reason::not_granted == gateway::reason::not_granted);
static_assert(capture::resolve_reason::bad_host == gateway::reason::bad_host);
static_assert(capture::resolve_reason::numeric_host == gateway::reason::numeric_host);

namespace {

constexpr auto capture_nothrow = asio::as_tuple(asio::use_awaitable);

// The name and port an accepted socket's local address stands for.
std::optional<names::Authority> captured_target(const tcp::socket& s, const capture::SyntheticAddresses& map) {
    boost::system::error_code ec;
    auto local = s.local_endpoint(ec);
    if (ec) return std::nullopt;
    const names::HostName* name = nullptr;
    if (local.address().is_v4()) {
        auto b = local.address().to_v4().to_bytes();
        name = map.name_of(b);
    } else {
        auto b = local.address().to_v6().to_bytes();
        name = map.name_of(b);
    }
    if (name == nullptr) return std::nullopt;
    return names::Authority{*name, local.port()};
}

// One captured connection: mapped back to its name while the map is at
// hand (this runs on the loop's thread before its first suspension), then
// the gateway's, as a session's role when the box is a session's.
asio::awaitable<void> serve_captured_socket(tcp::socket s, const CaptureEndpoint* endpoint, gateway::Identity id,
                                            const capture::SyntheticAddresses* map,
                                            std::shared_ptr<const ConnectionRoles> roles) {
    std::optional<names::Authority> target = captured_target(s, *map);
    if (roles) {
        auto role = roles->role_of(s);
        if (!role) {
            log::warn("capture: closed a connection of " + id.str() + " unserved: " + role.problem());
            co_return;
        }
        id.role = *role;
    }
    co_await endpoint->serve(std::move(s), std::move(id), std::move(target));
}

std::string qtype_text(std::uint16_t t) {
    if (t == capture::kTypeA) return "A";
    if (t == capture::kTypeAAAA) return "AAAA";
    return t == 0 ? "" : "TYPE" + std::to_string(t);
}

// Binds and listens on one captured address (made in the box's namespace).
void listen_captured(const Fd& s, int family, const capture::SyntheticAddress& a, std::uint16_t port) {
    int one = 1;
    int rc;
    char text[INET6_ADDRSTRLEN] = {};
    if (family == AF_INET) {
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(port);
        std::memcpy(&sa.sin_addr, a.v4.data(), 4);
        ::inet_ntop(AF_INET, a.v4.data(), text, sizeof text);
        rc = ::bind(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    } else {
        // A v6 address under a `local` route is not an interface address:
        // binding it needs IPV6_FREEBIND (docs/capture.md, verified).
        if (::setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0)
            throw SysError("setsockopt", "IPV6_V6ONLY", errno);
        if (::setsockopt(s.get(), IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof one) != 0)
            throw SysError("setsockopt", "IPV6_FREEBIND", errno);
        sockaddr_in6 sa{};
        sa.sin6_family = AF_INET6;
        sa.sin6_port = htons(port);
        std::memcpy(&sa.sin6_addr, a.v6.data(), 16);
        ::inet_ntop(AF_INET6, a.v6.data(), text, sizeof text);
        rc = ::bind(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    }
    const std::string where = std::string(text) + " port " + std::to_string(port);
    if (rc != 0) throw SysError("bind", where + " in the sandbox's network namespace", errno);
    if (::listen(s.get(), 128) != 0) throw SysError("listen", where, errno);
}

}  // namespace

struct CaptureService::Stub {
    explicit Stub(asio::io_context& ioc) : sock(ioc) {}
    udp::socket sock;
};

CaptureEndpoint embedded_capture(gateway::Gateway& gw) {
    CaptureEndpoint e;
    e.granted_ports = [g = &gw](const gateway::Identity& id, const names::HostName& h) {
        return gateway::capture_ports(g->config(), id, h, g->approvals().always_ports(id.str(), h.text()));
    };
    e.serve = [g = &gw](tcp::socket s, gateway::Identity id, std::optional<names::Authority> target) {
        return g->serve_captured(std::move(s), std::move(id), std::move(target));
    };
    e.record = [g = &gw](const gateway::LedgerEntry& entry) { g->ledger().append(entry); };
    return e;
}

CaptureService::CaptureService(asio::io_context& ioc, CaptureEndpoint endpoint, gateway::Identity id,
                               std::string hostname, Fd netns, Fd dns4, Fd dns6,
                               std::shared_ptr<const ConnectionRoles> roles)
    : ioc_(ioc), endpoint_(std::move(endpoint)), id_(std::move(id)), sockets_(std::move(netns)) {
    ctx_.hostname = std::move(hostname);
    ctx_.ipv6 = dns6.valid();
    ctx_.granted = [e = &endpoint_, ident = id_](const names::HostName& h) { return !e->granted_ports(ident, h).empty(); };
    auto adopt = [&](Fd fd, udp protocol) {
        if (!fd.valid()) return;
        // The only queue: the socket's own buffer, kept small.
        int bytes = 64 * 1024;
        ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
        auto stub = std::make_shared<Stub>(ioc_);
        stub->sock.assign(protocol, fd.release());
        stub->sock.non_blocking(true);
        stubs_.push_back(std::move(stub));
    };
    adopt(std::move(dns4), udp::v4());
    adopt(std::move(dns6), udp::v6());
    const CaptureEndpoint* e = &endpoint_;
    const capture::SyntheticAddresses* map = &addresses_;
    captured_ = std::make_unique<Bridge>(ioc_, BridgeListeners{}, [e, ident = id_, map, roles](tcp::socket s) {
        return serve_captured_socket(std::move(s), e, ident, map, roles);
    });
}

// Destroyed once the loop has stopped (Egress::after_loop): closed here, not
// posted to a loop that will not run again.
CaptureService::~CaptureService() {
    boost::system::error_code ec;
    for (auto& stub : stubs_) stub->sock.close(ec);
}

void CaptureService::start() {
    captured_->start();
    // A member coroutine, not a capturing lambda (its captures would die with
    // the lambda): the sockets live in stubs_ as long as this object.
    for (auto& stub : stubs_) asio::co_spawn(ioc_, serve_dns(stub->sock), asio::detached);
}

void CaptureService::stop() {
    if (captured_) captured_->stop();
    for (auto& stub : stubs_)
        asio::post(ioc_, [stub] {
            boost::system::error_code ec;
            stub->sock.close(ec);
        });
}

asio::awaitable<void> CaptureService::serve_dns(udp::socket& sock) {
    // One byte over the largest query: a longer datagram arrives cut and is
    // refused as too long, never read past.
    std::array<std::uint8_t, capture::kMaxQueryBytes + 1> buf{};
    udp::endpoint from;
    for (;;) {
        auto [ec, n] = co_await sock.async_receive_from(asio::buffer(buf), from, capture_nothrow);
        if (ec == asio::error::operation_aborted || !sock.is_open()) co_return;
        if (ec) continue;  // an ICMP error of an earlier reply: nothing to answer
        if (!take_query_token()) {
            ++dropped_;
            const auto now = std::chrono::steady_clock::now();
            if (now - dropped_said_ >= std::chrono::seconds(1)) {
                dropped_said_ = now;
                capture::Resolution r;
                r.reason = gateway::reason::dns_rate_limited;
                ledger_refusal(r, true);
            }
            continue;
        }
        std::vector<std::uint8_t> reply = answer(buf.data(), n);
        boost::system::error_code sec;
        if (!reply.empty()) sock.send_to(asio::buffer(reply), from, 0, sec);  // non-blocking: never waits
    }
}

bool CaptureService::take_query_token() {
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - refilled_).count();
    refilled_ = now;
    query_tokens_ = std::min<double>(kDnsQueriesPerSecond, query_tokens_ + elapsed * kDnsQueriesPerSecond);
    line_tokens_ = std::min<double>(kDnsLedgerLinesPerSecond, line_tokens_ + elapsed * kDnsLedgerLinesPerSecond);
    if (query_tokens_ < 1) return false;
    query_tokens_ -= 1;
    return true;
}

std::vector<std::uint8_t> CaptureService::answer(const std::uint8_t* data, std::size_t size) {
    capture::Resolution r = capture::resolve({data, size}, ctx_, addresses_);
    const bool address_type = r.qtype == capture::kTypeA || r.qtype == capture::kTypeAAAA;
    if (r.reason.empty() && address_type) {
        auto host = names::normalize_host(r.name);
        std::string problem;
        if (host.host && addresses_.find(*host.host) &&
            !ensure_listeners(*host.host, r.qtype == capture::kTypeA ? AF_INET : AF_INET6, problem)) {
            // No listener, no address: a connect to it would be refused anyway.
            auto parsed = capture::parse_query({data, size});
            if (auto* q = std::get_if<capture::DnsQuery>(&parsed))
                r.reply = capture::reply_without_answer(*q, capture::Rcode::refused);
            r.reason = capture::resolve_reason::exhausted;
            r.detail = problem;
        }
    }
    ledger_refusal(r);
    return std::move(r.reply);
}

bool CaptureService::ensure_listeners(const names::HostName& name, int family, std::string& problem) {
    if (family == AF_INET6 && !ctx_.ipv6) return true;
    const auto address = addresses_.find(name);
    if (!address) return true;
    // Asked at every query: a port granted since (--always) gets its listener
    // now; the ones made stay until the run ends.
    std::set<std::uint16_t>& made = listening_[{name.text(), family}];
    std::vector<std::uint16_t> ports;
    for (std::uint16_t p : endpoint_.granted_ports(id_, name))
        if (!made.count(p)) ports.push_back(p);
    if (ports.empty()) return true;  // nothing new to listen for (or a grant gone since)
    if (listeners_made_ + ports.size() > kMaxCapturedListeners) {
        problem = "the run holds " + std::to_string(listeners_made_) + " captured listeners, its limit is " +
                  std::to_string(kMaxCapturedListeners);
        return false;
    }
    try {
        std::vector<Fd> socks = sockets_.make(family, SOCK_STREAM, ports.size());
        for (std::size_t i = 0; i < ports.size(); ++i) listen_captured(socks[i], family, *address, ports[i]);
        for (auto& s : socks) captured_->add_listener(std::move(s), family == AF_INET ? tcp::v4() : tcp::v6());
    } catch (const std::exception& e) {
        problem = e.what();
        log::warn("capture: no listener for " + name.text() + ": " + problem);
        return false;
    }
    listeners_made_ += ports.size();
    made.insert(ports.begin(), ports.end());
    return true;
}

void CaptureService::ledger_refusal(const capture::Resolution& r, bool rate_line) {
    if (r.reason.empty()) return;
    const auto now = std::chrono::steady_clock::now();
    if (!rate_line) {
        // Each (reason, name) once per kDnsLineRepeat, and a bucket over all:
        // a program retrying one name, or a flood of names, is a few lines.
        const std::string key = std::string(r.reason) + " " + r.name;
        auto it = said_.find(key);
        if (it != said_.end() && now - it->second < kDnsLineRepeat) return;
        if (line_tokens_ < 1) return;
        line_tokens_ -= 1;
        if (said_.size() >= 4096) said_.clear();
        said_[key] = now;
    }
    endpoint_.record(gateway::dns_refusal_entry(id_.str(), qtype_text(r.qtype), r.name, r.reason));
}

}  // namespace corral::run
