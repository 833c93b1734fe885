// base/sha256.cpp — see sha256.hpp: libsodium for small inputs, OpenSSL's
// EVP for bulk.
#include "base/sha256.hpp"

#include <openssl/evp.h>
#include <sodium.h>

#include <atomic>
#include <stdexcept>
#include <variant>

namespace corral {

namespace {

std::string lower_hex(const unsigned char* p, unsigned n) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * n);
    for (unsigned i = 0; i < n; ++i) {
        out += digits[p[i] >> 4];
        out += digits[p[i] & 15];
    }
    return out;
}

// Set by sha256_prefer_openssl: every digest goes through OpenSSL from then on.
std::atomic<bool> prefer_openssl{false};

// sodium_init is idempotent and thread-safe; it fails only without a
// source of randomness, which hashing does not need, but its CPU feature
// detection picks the fast code paths.
void start_sodium() {
    if (sodium_init() < 0) throw std::runtime_error("SHA-256 unavailable (libsodium's sodium_init failed)");
}

}  // namespace

// Named, not anonymous: Sha256::State (external linkage) holds one.
namespace sha256_detail {
struct EvpCtxFree {
    void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
};
using EvpCtx = std::unique_ptr<EVP_MD_CTX, EvpCtxFree>;
}  // namespace sha256_detail

struct Sha256::State {
    std::variant<crypto_hash_sha256_state, sha256_detail::EvpCtx> impl;
};

void sha256_prefer_openssl() { prefer_openssl.store(true, std::memory_order_relaxed); }

Sha256::Sha256(std::uint64_t expected_bytes) : state_(std::make_unique<State>()) {
    if (expected_bytes <= kSmallHashBytes && !prefer_openssl.load(std::memory_order_relaxed)) {
        start_sodium();
        auto& s = state_->impl.emplace<crypto_hash_sha256_state>();
        crypto_hash_sha256_init(&s);
        return;
    }
    sha256_detail::EvpCtx ctx(EVP_MD_CTX_new());
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("SHA-256 unavailable (OpenSSL EVP_DigestInit_ex failed)");
    state_->impl = std::move(ctx);
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, std::size_t size) {
    if (auto* s = std::get_if<crypto_hash_sha256_state>(&state_->impl)) {
        crypto_hash_sha256_update(s, static_cast<const unsigned char*>(data), size);
        return;
    }
    if (EVP_DigestUpdate(std::get<sha256_detail::EvpCtx>(state_->impl).get(), data, size) != 1)
        throw std::runtime_error("SHA-256: EVP_DigestUpdate failed");
}

std::string Sha256::finish_hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    if (auto* s = std::get_if<crypto_hash_sha256_state>(&state_->impl)) {
        crypto_hash_sha256_final(s, md);
        return lower_hex(md, crypto_hash_sha256_BYTES);
    }
    unsigned len = 0;
    if (EVP_DigestFinal_ex(std::get<sha256_detail::EvpCtx>(state_->impl).get(), md, &len) != 1)
        throw std::runtime_error("SHA-256: EVP_DigestFinal_ex failed");
    return lower_hex(md, len);
}

std::string sha256_hex(std::string_view data) {
    Sha256 d(data.size());
    d.update(data.data(), data.size());
    return d.finish_hex();
}

}  // namespace corral
