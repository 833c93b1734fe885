// CA creation, key file protection, leaf minting and the per-host TLS context cache.
#include <doctest/doctest.h>

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/sys_error.hpp"
#include "gateway/ca.hpp"
#include "gateway/host.hpp"
#include "gateway/tls.hpp"

using namespace corral::gateway;

namespace {

HostName name(const char* raw) {
    auto h = normalize_host(raw);
    REQUIRE(h.host);
    return *h.host;
}

}  // namespace
namespace fs = std::filesystem;

namespace {

struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/corral-ca-test.XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    ~TempDir() { fs::remove_all(path); }
};

unsigned mode_of(const std::string& p) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

bool verifies_against(X509* leaf, X509* ca, const char* host) {
    X509_STORE* store = X509_STORE_new();
    X509_STORE_add_cert(store, ca);
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, leaf, nullptr);
    X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx), host, 0);
    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
    bool ok = X509_verify_cert(ctx) == 1;
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    return ok;
}

}  // namespace

TEST_CASE("the CA is created once with a root-only key and a world-readable certificate") {
    TempDir dir;
    auto ca = CertificateAuthority::load_or_create(dir.path + "/state");
    CHECK(ca.created());
    auto files = ca_files(dir.path + "/state");
    CHECK(mode_of(files.key_path) == 0600);
    CHECK(mode_of(files.cert_path) == 0644);
    CHECK(ca.certificate_pem().find("BEGIN CERTIFICATE") != std::string::npos);
    // The CA is a CA: basicConstraints CA:TRUE, keyCertSign, ECDSA P-256.
    X509* cert = ca.certificate();
    CHECK(X509_check_ca(cert) >= 1);
    EVP_PKEY* pub = X509_get0_pubkey(cert);
    REQUIRE(pub != nullptr);
    CHECK(EVP_PKEY_get_base_id(pub) == EVP_PKEY_EC);
    char curve[64] = {};
    size_t len = 0;
    EVP_PKEY_get_utf8_string_param(pub, "group", curve, sizeof curve, &len);
    CHECK(std::string(curve) == "prime256v1");

    auto again = CertificateAuthority::load_or_create(dir.path + "/state");
    CHECK_FALSE(again.created());
    CHECK(again.certificate_pem() == ca.certificate_pem());
}

TEST_CASE("a CA key readable by group or other is refused") {
    TempDir dir;
    (void)CertificateAuthority::load_or_create(dir.path);
    auto files = ca_files(dir.path);
    REQUIRE(::chmod(files.key_path.c_str(), 0640) == 0);
    CHECK_THROWS_AS(CertificateAuthority::load_or_create(dir.path), corral::UsageError);
    REQUIRE(::chmod(files.key_path.c_str(), 0400) == 0);
    CHECK_NOTHROW(CertificateAuthority::load_or_create(dir.path));
}

TEST_CASE("half a CA (certificate without key) is refused, not silently replaced") {
    TempDir dir;
    (void)CertificateAuthority::load_or_create(dir.path);
    auto files = ca_files(dir.path);
    fs::remove(files.key_path);
    CHECK_THROWS_AS(CertificateAuthority::load_or_create(dir.path), corral::UsageError);
}

TEST_CASE("a certificate that does not match the key is refused") {
    TempDir a, b;
    (void)CertificateAuthority::load_or_create(a.path);
    (void)CertificateAuthority::load_or_create(b.path);
    fs::copy_file(ca_files(b.path).cert_path, ca_files(a.path).cert_path, fs::copy_options::overwrite_existing);
    CHECK_THROWS_AS(CertificateAuthority::load_or_create(a.path), corral::UsageError);
}

TEST_CASE("leaves are ECDSA P-256, name the host in the SAN, chain to the CA and are short-lived") {
    TempDir dir;
    auto ca = CertificateAuthority::load_or_create(dir.path);
    auto leaf = ca.mint_leaf("api.example.com");
    X509* x = leaf->cert.get();
    CHECK(verifies_against(x, ca.certificate(), "api.example.com"));
    CHECK_FALSE(verifies_against(x, ca.certificate(), "evil.example.com"));
    CHECK(X509_check_host(x, "api.example.com", 0, 0, nullptr) == 1);
    CHECK(X509_check_ca(x) == 0);
    CHECK(EVP_PKEY_get_base_id(leaf->key.get()) == EVP_PKEY_EC);
    CHECK(X509_check_private_key(x, leaf->key.get()) == 1);
    CHECK(X509_check_private_key(x, nullptr) == 0);
    ERR_clear_error();
    // The leaf's key is its own, never the CA's.
    CHECK(EVP_PKEY_eq(leaf->key.get(), X509_get0_pubkey(ca.certificate())) != 1);
    // Valid now, not before an hour ago, at most kLeafLifetime ahead.
    CHECK(X509_cmp_current_time(X509_get0_notBefore(x)) < 0);
    CHECK(X509_cmp_current_time(X509_get0_notAfter(x)) > 0);
    auto now = std::chrono::system_clock::now();
    CHECK(leaf->not_after <= now + CertificateAuthority::kLeafLifetime + std::chrono::minutes(1));
    CHECK(leaf->not_after >= now + CertificateAuthority::kLeafLifetime - std::chrono::minutes(1));

    auto ip_leaf = ca.mint_leaf("127.0.0.1");
    CHECK(X509_check_ip_asc(ip_leaf->cert.get(), "127.0.0.1", 0) == 1);
    CHECK(verifies_against(ip_leaf->cert.get(), ca.certificate(), nullptr));
}

TEST_CASE("leaf minting refuses host text that could smuggle a second SAN") {
    TempDir dir;
    auto ca = CertificateAuthority::load_or_create(dir.path);
    CHECK_THROWS_AS(ca.mint_leaf("a.example.com,DNS:evil.com"), corral::UsageError);
    CHECK_THROWS_AS(ca.mint_leaf("A.example.com"), corral::UsageError);
    CHECK_THROWS_AS(ca.mint_leaf(""), corral::UsageError);
}

TEST_CASE("every host normalize_host accepts can be minted ('_' included)") {
    // A name that passes normalize_host and the grant check but cannot be
    // minted used to get "200 Connection Established", then a silent close.
    TempDir dir;
    auto ca = CertificateAuthority::load_or_create(dir.path);
    for (const char* raw : {"a_b.wild.test", "_dmarc.example.com", "API.Example.COM.", "xn--bcher-kva.example",
                            "a-b.c-d.test", "localhost", "127.0.0.1", "[::1]", "[2001:DB8::1]"}) {
        CAPTURE(raw);
        auto h = normalize_host(raw);
        REQUIRE(h.host);
        std::shared_ptr<const LeafCertificate> leaf;
        CHECK_NOTHROW(leaf = ca.mint_leaf(h.host->text()));
        if (leaf && !h.host->is_ip_literal()) CHECK(X509_check_host(leaf->cert.get(), h.host->text().c_str(), 0, 0, nullptr) == 1);
    }
}

TEST_CASE("server TLS contexts are cached per host and evicted least recently used") {
    TempDir dir;
    auto ca = CertificateAuthority::load_or_create(dir.path);
    ServerTlsCache cache(ca, 2);
    auto a1 = cache.get(name("a.example.com"));
    auto a2 = cache.get(name("a.example.com"));
    CHECK(a1 == a2);
    CHECK(cache.minted() == 1);
    auto b = cache.get(name("b.example.com"));
    CHECK(b != a1);
    CHECK(b->host.text() == "b.example.com");
    CHECK(X509_check_host(b->leaf->cert.get(), "b.example.com", 0, 0, nullptr) == 1);
    CHECK(cache.minted() == 2);
    (void)cache.get(name("a.example.com"));  // a is now the most recent
    (void)cache.get(name("c.example.com"));  // evicts b
    CHECK(cache.size() == 2);
    CHECK(cache.minted() == 3);
    CHECK(cache.get(name("a.example.com")) == a1);
    CHECK(cache.minted() == 3);
    CHECK(cache.get(name("b.example.com")) != b);
    CHECK(cache.minted() == 4);
}
