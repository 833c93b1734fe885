#include "gateway/gateway.hpp"

#include <nlohmann/json.hpp>

#include <ifaddrs.h>

#include <cstdlib>
#include <netinet/in.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "base/log.hpp"
#include "gateway/internals.hpp"
#include "gateway/response_scrub.hpp"

namespace corral::gateway {

namespace asio = boost::asio;

namespace {

// The host's own interface addresses: a public one among DNS answers would
// let a box reach services bound on the host itself.
std::vector<asio::ip::address> interface_addresses() {
    std::vector<asio::ip::address> out;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return out;
    for (ifaddrs* i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr) continue;
        if (i->ifa_addr->sa_family == AF_INET) {
            auto* sin = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
            out.push_back(asio::ip::address_v4(ntohl(sin->sin_addr.s_addr)));
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            auto* sin6 = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
            asio::ip::address_v6::bytes_type b;
            std::memcpy(b.data(), sin6->sin6_addr.s6_addr, 16);
            out.push_back(asio::ip::address_v6(b, sin6->sin6_scope_id));
        }
    }
    ::freeifaddrs(list);
    return out;
}

}  // namespace

std::unique_ptr<UpstreamConn> UpstreamPool::take(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto now = std::chrono::steady_clock::now();
    auto [first, last] = idle_.equal_range(key);
    std::unique_ptr<UpstreamConn> found;
    for (auto it = first; it != last;) {
        if (now - it->second->idle_since > kMaxIdleTime) {
            it = idle_.erase(it);
        } else if (!found) {
            found = std::move(it->second);
            it = idle_.erase(it);
        } else {
            ++it;
        }
    }
    return found;
}

void UpstreamPool::put(std::unique_ptr<UpstreamConn> c) {
    c->idle_since = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    if (idle_.count(c->key) >= kMaxIdlePerKey) return;
    if (idle_.size() >= kMaxIdle) idle_.erase(idle_.begin());
    std::string key = c->key;
    idle_.emplace(std::move(key), std::move(c));
}

void UpstreamPool::clear() {
    std::multimap<std::string, std::unique_ptr<UpstreamConn>> closing;
    {
        std::lock_guard lock(mutex_);
        closing.swap(idle_);
    }
    // Destroyed here, outside the lock: each closes its socket.
}

std::unique_ptr<char[]> BufferPool::acquire() {
    {
        std::lock_guard lock(mutex_);
        if (!free_.empty()) {
            auto b = std::move(free_.back());
            free_.pop_back();
            return b;
        }
    }
    return std::unique_ptr<char[]>(new char[kSize]);
}

void BufferPool::release(std::unique_ptr<char[]> b) {
    std::lock_guard lock(mutex_);
    if (free_.size() < 64) free_.push_back(std::move(b));
}

bool Gateway::Internals::admit(const std::string& identity) {
    std::lock_guard lock(budget_mutex_);
    auto& n = admitted_[identity];
    if (cfg.gateway.limits.requests_per_identity != 0 && n >= cfg.gateway.limits.requests_per_identity)
        return false;
    ++n;
    return true;
}

std::uint64_t Gateway::Internals::admitted(const std::string& identity) const {
    std::lock_guard lock(budget_mutex_);
    auto it = admitted_.find(identity);
    return it == admitted_.end() ? 0 : it->second;
}

std::uint64_t Gateway::Internals::open_connection(const std::string& identity) {
    std::lock_guard lock(open_mutex_);
    return ++open_[identity];
}

void Gateway::Internals::close_connection(const std::string& identity) {
    std::lock_guard lock(open_mutex_);
    auto it = open_.find(identity);
    if (it == open_.end()) return;
    if (--it->second == 0) open_.erase(it);
}

namespace {
// Only inject grants terminate TLS with a minted leaf. With none, the CA is
// loaded the first time someone asks for it (a daemon's start, a sandbox's
// trust store) instead of on every `corral run`.
bool needs_ca_at_start(const config::GatewayConfig& cfg) {
    for (const auto& g : cfg.grants)
        if (g.mode == config::GrantMode::inject) return true;
    return false;
}

// Runs `read` (which reads a file a config key named) and, if it throws, says
// which key in which file named that file: the config parser only checks the
// path's form, so "FILE:LINE: key '...'" is known here and nowhere later.
template <class Read>
auto with_origin(const std::string& where, Read read) {
    try {
        return read();
    } catch (const std::exception& e) {
        if (where.empty()) throw;
        throw config::ConfigError(where + ": " + e.what());
    }
}
}  // namespace

Gateway::Gateway(config::GatewayConfig cfg, std::map<std::string, std::string> secrets)
    : cfg_(std::move(cfg)),
      secrets_(std::move(secrets)),
      ca_(needs_ca_at_start(cfg_) ? CertificateAuthority::load_or_create(cfg_.gateway.state_dir)
                                  : CertificateAuthority::deferred(cfg_.gateway.state_dir)),
      ledger_(cfg_.gateway.ledger, cfg_.gateway.limits.ledger_refusals_per_identity) {
    for (const auto& [name, secret] : secrets_) ledger_.register_secret(secret);
    internals_ = std::make_unique<Internals>(cfg_, secrets_, ledger_, ca_, active_);
    if (const char* off = std::getenv("CORRAL_GATEWAY_UNSAFE_NO_SCRUB"); off && std::string_view(off) == "1") {
        internals_->scrub_responses = false;
        log::warn("gateway: CORRAL_GATEWAY_UNSAFE_NO_SCRUB=1: responses are NOT scrubbed of injected credentials "
                  "(benchmarks only)");
    }
    if (!cfg_.gateway.hosts_file.empty())
        internals_->hosts = with_origin(cfg_.gateway.hosts_file_where, [&] { return load_hosts_file(cfg_.gateway.hosts_file); });
    // Fail at start, not at the first request, if a trust store an inject
    // grant will use is unusable. Only inject grants dial upstream TLS: with
    // none, no store is loaded (parsing the system bundle costs ~40 ms of
    // every `corral run` start; a grant added later loads its store lazily).
    for (const auto& g : cfg_.grants) {
        if (g.mode != config::GrantMode::inject) continue;
        bool own = !g.upstream_ca_file.empty();
        with_origin(own ? g.upstream_ca_file_where : cfg_.gateway.upstream_ca_file_where,
                    [&] { return internals_->client_tls.get(own ? g.upstream_ca_file : cfg_.gateway.upstream_ca_file); });
    }
    if (!ledger_.healthy()) log::error("ledger unusable, refusing every request: " + ledger_.failure());
}

Gateway::~Gateway() = default;

void Gateway::close_idle_upstreams() { internals_->pool.clear(); }

ApprovalDesk& Gateway::approvals() { return internals_->approvals; }

void Gateway::begin_drain() { internals_->draining.store(true, std::memory_order_relaxed); }

void Gateway::install_secrets(std::map<std::string, std::string> secrets) {
    for (const auto& [name, secret] : secrets) ledger_.register_secret(secret);
    secrets_ = std::move(secrets);  // the same map object Internals refers to
    internals_->forget_scrub_patterns();
}

std::shared_ptr<const ScrubPatterns> Gateway::Internals::scrub_patterns(const config::CredentialSpec& granted,
                                                                        const std::string& secret) {
    std::string key = granted.name;
    for (const auto& [name, tmpl] : granted.headers) key.append("\n").append(name).append("\n").append(tmpl);
    std::lock_guard<std::mutex> lock(scrub_mutex_);
    auto& p = scrub_patterns_[key];
    if (!p) p = patterns_for_credential(granted, secret);
    return p;
}

void Gateway::Internals::forget_scrub_patterns() {
    std::lock_guard<std::mutex> lock(scrub_mutex_);
    scrub_patterns_.clear();
}

void Gateway::add_listening_endpoint(const asio::ip::tcp::endpoint& ep) { internals_->add_listening(ep); }

SelfAddresses Gateway::Internals::self() {
    std::lock_guard<std::mutex> lock(self_mutex_);
    auto now = std::chrono::steady_clock::now();
    if (!self_read_at_ || now - *self_read_at_ > std::chrono::seconds(1)) {
        self_.host_addresses = interface_addresses();
        self_read_at_ = now;
    }
    return self_;
}

void Gateway::Internals::add_listening(const asio::ip::tcp::endpoint& ep) {
    std::lock_guard<std::mutex> lock(self_mutex_);
    self_.listening.push_back(ep);
}

std::uint64_t Gateway::admitted(const std::string& identity) const { return internals_->admitted(identity); }

metering::MeterTotals Gateway::model_totals(const std::string& identity) const {
    return internals_->book.totals(identity);
}

std::string Gateway::worker_budget_answer(const std::string& worker, bool reset) {
    auto b = reset ? internals_->book.reset_worker_budget(worker) : internals_->book.worker_budget(worker);
    if (!b) return nlohmann::json{{"worker", worker}, {"budget", nullptr}}.dump() + "\n";
    auto j = nlohmann::json::parse(metering::stored_budget_json(worker, b->state, b->limits));
    j["file"] = b->file;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string Gateway::redact(std::string text) const {
    for (const auto& [name, secret] : secrets_)
        for (auto pos = secret.empty() ? std::string::npos : text.find(secret); pos != std::string::npos;
             pos = text.find(secret, pos))
            text.replace(pos, secret.size(), "[redacted]");
    return text;
}

std::size_t run_event_loop(asio::io_context& loop, std::string_view name, const Gateway* gw) {
    for (std::size_t survived = 0;; ++survived) {
        try {
            loop.run();
            return survived;
        } catch (const std::exception& e) {
            std::string what = gw ? gw->redact(e.what()) : std::string(e.what());
            log::error(std::string(name) + ": an exception escaped a handler and was dropped (" + what +
                       "); the loop goes on");
        } catch (...) {
            log::error(std::string(name) + ": an exception escaped a handler and was dropped; the loop goes on");
        }
    }
}

namespace {

// True when the socket's io_context was built with concurrency hint 1, the
// promise (which Asio itself relies on) that one thread runs it, as each of
// the daemon's per-thread loops is. Its handlers never run concurrently, so a
// per-connection strand would only add a lock and a queue hop to every
// completion.
bool runs_on_one_thread(const asio::any_io_executor& ex) {
    const auto* loop = ex.target<asio::io_context::executor_type>();
    return loop != nullptr && asio::use_service<asio::detail::scheduler>(loop->context()).concurrency_hint() == 1;
}

// The connection handlers take any stream socket; a TCP one keeps its family.
asio::generic::stream_protocol::socket as_generic(asio::ip::tcp::socket s) {
    boost::system::error_code ec;
    auto local = s.local_endpoint(ec);
    int family = (!ec && local.address().is_v6()) ? AF_INET6 : AF_INET;
    auto ex = s.get_executor();
    return asio::generic::stream_protocol::socket(ex, asio::generic::stream_protocol(family, IPPROTO_TCP), s.release());
}

}  // namespace

asio::awaitable<void> Gateway::serve(asio::generic::stream_protocol::socket s, Identity id) {
    try {
        if (runs_on_one_thread(s.get_executor())) {
            co_await serve_connection(*internals_, std::move(s), std::move(id));
        } else {
            auto strand = asio::make_strand(s.get_executor());
            co_await asio::co_spawn(strand, serve_connection(*internals_, std::move(s), std::move(id)),
                                    asio::use_awaitable);
        }
    } catch (const std::exception& e) {
        log::debug(std::string("gateway connection ended: ") + e.what());
    }
}

asio::awaitable<void> Gateway::serve_mcp(asio::ip::tcp::socket s, Identity id, std::shared_ptr<McpTools> tools) {
    co_await serve_mcp(as_generic(std::move(s)), std::move(id), std::move(tools));
}

asio::awaitable<void> Gateway::serve_mcp(asio::generic::stream_protocol::socket g, Identity id,
                                         std::shared_ptr<McpTools> tools) {
    try {
        if (runs_on_one_thread(g.get_executor())) {
            co_await serve_mcp_connection(*internals_, std::move(g), std::move(id), std::move(tools));
        } else {
            auto strand = asio::make_strand(g.get_executor());
            co_await asio::co_spawn(strand, serve_mcp_connection(*internals_, std::move(g), std::move(id), std::move(tools)),
                                    asio::use_awaitable);
        }
    } catch (const std::exception& e) {
        log::debug(std::string("gateway MCP connection ended: ") + e.what());
    }
}

asio::awaitable<void> Gateway::serve_captured(asio::ip::tcp::socket s, Identity id, std::optional<Authority> target) {
    co_await serve_captured(as_generic(std::move(s)), std::move(id), std::move(target));
}

asio::awaitable<void> Gateway::serve_captured(asio::local::stream_protocol::socket s, Identity id,
                                              std::optional<Authority> target) {
    auto ex = s.get_executor();
    asio::generic::stream_protocol::socket g(ex, asio::generic::stream_protocol(AF_UNIX, 0), s.release());
    co_await serve_captured(std::move(g), std::move(id), std::move(target));
}

asio::awaitable<void> Gateway::serve_captured(asio::generic::stream_protocol::socket g, Identity id,
                                              std::optional<Authority> target) {
    try {
        if (runs_on_one_thread(g.get_executor())) {
            co_await serve_captured_connection(*internals_, std::move(g), std::move(id), std::move(target));
        } else {
            auto strand = asio::make_strand(g.get_executor());
            co_await asio::co_spawn(
                strand, serve_captured_connection(*internals_, std::move(g), std::move(id), std::move(target)),
                asio::use_awaitable);
        }
    } catch (const std::exception& e) {
        log::debug(std::string("gateway captured connection ended: ") + e.what());
    }
}

asio::awaitable<void> Gateway::serve(asio::ip::tcp::socket s, Identity id) {
    co_await serve(as_generic(std::move(s)), std::move(id));
}

asio::awaitable<void> Gateway::refuse(asio::ip::tcp::socket s, Identity id, std::string code, std::string detail) {
    try {
        auto g = as_generic(std::move(s));
        if (runs_on_one_thread(g.get_executor())) {
            co_await refuse_connection(*internals_, std::move(g), std::move(id), std::move(code), std::move(detail));
        } else {
            auto strand = asio::make_strand(g.get_executor());
            co_await asio::co_spawn(
                strand, refuse_connection(*internals_, std::move(g), std::move(id), std::move(code), std::move(detail)),
                asio::use_awaitable);
        }
    } catch (const std::exception& e) {
        log::debug(std::string("gateway connection ended: ") + e.what());
    }
}

asio::awaitable<void> Gateway::serve_mcp(asio::local::stream_protocol::socket s, Identity id,
                                         std::shared_ptr<McpTools> tools) {
    auto ex = s.get_executor();
    asio::generic::stream_protocol::socket g(ex, asio::generic::stream_protocol(AF_UNIX, 0), s.release());
    co_await serve_mcp(std::move(g), std::move(id), std::move(tools));
}

asio::awaitable<void> Gateway::serve(asio::local::stream_protocol::socket s, Identity id) {
    auto ex = s.get_executor();
    asio::generic::stream_protocol::socket g(ex, asio::generic::stream_protocol(AF_UNIX, 0), s.release());
    co_await serve(std::move(g), std::move(id));
}

}  // namespace corral::gateway
