#include "gateway/tls.hpp"

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <strings.h>

#include <stdexcept>

#include "base/sha256.hpp"

namespace corral::gateway {

namespace {

constexpr unsigned char kAlpnHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

// SNI must name the CONNECT host: a client that tunnels to A and then asks
// for B's certificate is trying to make us inject A's credential toward B.
// The SNI is normalised with the rule the CONNECT host was (case, trailing
// dot), so the two compare as one name.
bool sni_acceptable(const char* name, const names::HostName& host) {
    // Clients send no SNI for address literals (RFC 6066 forbids it).
    if (name == nullptr) return host.is_ip_literal();
    auto sni = names::normalize_host(name);
    return sni.host && *sni.host == host;
}

// The SSL ex_data slot check_sni marks a refused handshake in: only a
// ClientHello that was read and named another host (or none) is an SNI
// mismatch; a client that sent nothing, or no TLS at all, never reached it.
int sni_refused_index() {
    static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return index;
}

int check_sni(SSL* ssl, int* alert, void* arg) {
    const auto* tls = static_cast<const ServerTls*>(arg);
    if (sni_acceptable(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name), tls->host)) return SSL_TLSEXT_ERR_OK;
    static char refused;
    SSL_set_ex_data(ssl, sni_refused_index(), &refused);
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

// ALPN: we speak HTTP/1.1 only; a client that offers h2 and http/1.1 gets
// http/1.1, a client without http/1.1 gets no ALPN answer.
int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                  unsigned int inlen, void*) {
    unsigned char* selected = nullptr;
    if (SSL_select_next_proto(&selected, outlen, kAlpnHttp11, sizeof kAlpnHttp11, in, inlen) ==
        OPENSSL_NPN_NEGOTIATED) {
        *out = selected;
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

}  // namespace

std::shared_ptr<ServerTls> ServerTlsCache::build(const names::HostName& host) {
    auto tls = std::make_shared<ServerTls>(host);
    tls->leaf = ca_.mint_leaf(host.text());
    SSL_CTX* ctx = tls->ctx.native_handle();
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_use_certificate(ctx, tls->leaf->cert.get()) != 1 ||
        SSL_CTX_use_PrivateKey(ctx, tls->leaf->key.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1)
        throw std::runtime_error("server TLS context for " + host.text() + ": " + openssl_errors());
    // Send the CA too so clients that only trust it can build the chain.
    if (X509* ca_cert = ca_.certificate(); SSL_CTX_add1_chain_cert(ctx, ca_cert) != 1)
        throw std::runtime_error("server TLS chain for " + host.text() + ": " + openssl_errors());
    SSL_CTX_set_tlsext_servername_callback(ctx, check_sni);
    SSL_CTX_set_tlsext_servername_arg(ctx, tls.get());
    SSL_CTX_set_alpn_select_cb(ctx, select_http11, nullptr);
    static const unsigned char kSessionContext[] = "corral-gateway";
    SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    return tls;
}

std::shared_ptr<ServerTls> ServerTlsCache::get(const names::HostName& name) {
    const std::string& host = name.text();
    std::lock_guard lock(mutex_);
    auto now = std::chrono::system_clock::now();
    if (auto it = entries_.find(host); it != entries_.end()) {
        if (it->second.tls->leaf->not_after - now > std::chrono::hours(24)) {
            lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
            return it->second.tls;
        }
        lru_.erase(it->second.lru_pos);
        entries_.erase(it);
    }
    auto tls = build(name);
    ++minted_;
    lru_.push_front(host);
    entries_[host] = Entry{tls, lru_.begin()};
    while (entries_.size() > capacity_) {
        entries_.erase(lru_.back());
        lru_.pop_back();
    }
    return tls;
}

std::size_t ServerTlsCache::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

std::uint64_t ServerTlsCache::minted() const {
    std::lock_guard lock(mutex_);
    return minted_;
}

bool sni_refused(SSL* ssl) { return SSL_get_ex_data(ssl, sni_refused_index()) != nullptr; }

std::shared_ptr<boost::asio::ssl::context> ClientTlsCache::get(const std::string& ca_file) {
    std::lock_guard lock(mutex_);
    if (auto it = contexts_.find(ca_file); it != contexts_.end()) return it->second;
    auto ctx = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_client);
    sha256_prefer_openssl();  // OpenSSL is started for TLS now: its SHA-256 is the faster one (base/sha256.hpp)
    SSL_CTX* native = ctx->native_handle();
    SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    SSL_CTX_set_options(native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    ctx->set_verify_mode(boost::asio::ssl::verify_peer);
    boost::system::error_code ec;
    if (ca_file.empty())
        ctx->set_default_verify_paths(ec);
    else
        ctx->load_verify_file(ca_file, ec);
    if (ec)
        throw std::runtime_error("upstream trust store " + (ca_file.empty() ? std::string("(system)") : ca_file) +
                                 ": " + ec.message());
    SSL_CTX_set_alpn_protos(native, kAlpnHttp11, sizeof kAlpnHttp11);
    contexts_.emplace(ca_file, ctx);
    return ctx;
}

bool set_upstream_identity(SSL* ssl, const std::string& host, bool is_ip_literal) {
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (is_ip_literal) return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1;
    return SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 && SSL_set1_host(ssl, host.c_str()) == 1;
}

}  // namespace corral::gateway
