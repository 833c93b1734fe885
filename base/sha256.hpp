// base/sha256.hpp — SHA-256 digests as lowercase hex, the form content
// addresses are written in ("sha256:<64 hex digits>": image layers and
// configs, the journal's chain and log digests, the digests run.json and
// tests compare).
//
// Two libraries compute it, chosen here by how much is hashed, never by the
// caller: libsodium for small inputs (no library-wide start-up; OpenSSL's
// first use costs a run ~2 ms of configuration and provider loading), OpenSSL
// for bulk (its SHA-NI/AVX2 code is ~4x faster: 34 against 150 ms for 64 MiB
// here), and for everything in a process that has started OpenSSL anyway
// (sha256_prefer_openssl: the gateway, whose start-up cost is paid). The
// digest is the same either way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

namespace corral {

// Up to this many bytes are hashed with libsodium (docs/benchmarks.md).
inline constexpr std::uint64_t kSmallHashBytes = 1 << 20;

// From now on every digest of this process goes through OpenSSL: called by a
// process that has started OpenSSL for its own work (the gateway's TLS), where
// libsodium's portable code would only be slower (a tools/list answer's digest
// was 12 % of corral's CPU for it; docs/benchmarks.md). Thread-safe.
void sha256_prefer_openssl();

// The 64 lowercase hex digits of SHA-256(data).
std::string sha256_hex(std::string_view data);

// A digest fed piecewise, for data read in chunks (an archive as it streams,
// a log file). `expected_bytes`: how much will be fed, when known (a file's
// size); unknown is bulk. Throws std::runtime_error if the library cannot
// make a SHA-256 context.
class Sha256 {
public:
    explicit Sha256(std::uint64_t expected_bytes = std::numeric_limits<std::uint64_t>::max());
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(const void* data, std::size_t size);
    // The 64 lowercase hex digits of everything given to update(); ends the digest.
    std::string finish_hex();

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace corral
