// gateway/tls.hpp — the TLS contexts the gateway reuses across connections.
//
// Creating an SSL_CTX (and loading a trust store into it) costs far more than
// a handshake, so both sides are cached: one server context per CONNECT host
// (holding that host's minted leaf, its own session cache and an SNI check
// bound to the host) and one client context per trust store.
#pragma once

#include <boost/asio/ssl/context.hpp>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "gateway/ca.hpp"
#include "names/host.hpp"

namespace corral::gateway {

// Server side of an inject-mode tunnel for one CONNECT host.
struct ServerTls {
    explicit ServerTls(names::HostName h) : host(std::move(h)) {}
    names::HostName host;                 // the CONNECT host the SNI must name
    std::shared_ptr<const LeafCertificate> leaf;
    boost::asio::ssl::context ctx{boost::asio::ssl::context::tls_server};
};

// Thread-safe, bounded (least recently used evicted) cache of ServerTls per
// host. A leaf is re-minted when less than a day of validity is left.
class ServerTlsCache {
public:
    explicit ServerTlsCache(const CertificateAuthority& ca, std::size_t capacity = 1024)
        : ca_(ca), capacity_(capacity) {}
    std::shared_ptr<ServerTls> get(const names::HostName& host);
    std::size_t size() const;
    std::uint64_t minted() const;

private:
    std::shared_ptr<ServerTls> build(const names::HostName& host);
    const CertificateAuthority& ca_;
    std::size_t capacity_;
    mutable std::mutex mutex_;
    std::list<std::string> lru_;  // front = most recent
    struct Entry {
        std::shared_ptr<ServerTls> tls;
        std::list<std::string>::iterator lru_pos;
    };
    std::map<std::string, Entry> entries_;
    std::uint64_t minted_ = 0;
};

// After a failed server handshake: did the SNI check refuse the client's
// ClientHello (it named another host than the CONNECT host, or none for a
// name)? False when no ClientHello was read at all (nothing sent, not TLS):
// that is a timeout or a client_tls failure, not a mismatch.
bool sni_refused(SSL* ssl);

// Client contexts for upstream connections: full verification (chain against
// `ca_file` or the system store when empty, TLS >= 1.2, ALPN http/1.1 only).
class ClientTlsCache {
public:
    std::shared_ptr<boost::asio::ssl::context> get(const std::string& ca_file);

private:
    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<boost::asio::ssl::context>> contexts_;
};

// Per-connection client settings: SNI (names only) and the hostname (or IP)
// the certificate must carry. Returns false if OpenSSL refused them.
bool set_upstream_identity(SSL* ssl, const std::string& host, bool is_ip_literal);

}  // namespace corral::gateway
