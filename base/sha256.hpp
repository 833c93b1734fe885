// base/sha256.hpp — SHA-256 digests as lowercase hex, the form content
// addresses are written in ("sha256:<64 hex digits>": image layers and
// configs, the digests run.json and tests compare).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of every includer

namespace corral {

// The 64 lowercase hex digits of SHA-256(data).
std::string sha256_hex(std::string_view data);

// A digest fed piecewise, for data read in chunks (an archive as it streams).
// Throws std::runtime_error if OpenSSL cannot make a SHA-256 context.
class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(const void* data, std::size_t size);
    // The 64 lowercase hex digits of everything given to update(); ends the digest.
    std::string finish_hex();

private:
    evp_md_ctx_st* ctx_;
};

}  // namespace corral
