#include "base/sha256.hpp"

#include <openssl/evp.h>

#include <stdexcept>

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

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
        EVP_MD_CTX_free(ctx_);
        throw std::runtime_error("SHA-256 unavailable (OpenSSL EVP_DigestInit_ex failed)");
    }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(const void* data, std::size_t size) {
    if (EVP_DigestUpdate(ctx_, data, size) != 1) throw std::runtime_error("SHA-256: EVP_DigestUpdate failed");
}

std::string Sha256::finish_hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (EVP_DigestFinal_ex(ctx_, md, &len) != 1) throw std::runtime_error("SHA-256: EVP_DigestFinal_ex failed");
    return lower_hex(md, len);
}

std::string sha256_hex(std::string_view data) {
    Sha256 d;
    d.update(data.data(), data.size());
    return d.finish_hex();
}

}  // namespace corral
