#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "base/sha256.hpp"

using corral::Sha256;
using corral::sha256_hex;

// FIPS 180-2's examples: the digests any SHA-256 must give.
TEST_CASE("sha256_hex gives the standard digests in lowercase hex") {
    CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(sha256_hex(std::string("a\0b", 3)) != sha256_hex("ab"));  // every byte counts, NULs too
}

TEST_CASE("Sha256 fed in pieces gives the digest of the whole") {
    const std::string million(1'000'000, 'a');
    Sha256 d;
    for (std::size_t at = 0; at < million.size(); at += 4099)
        d.update(million.data() + at, std::min<std::size_t>(4099, million.size() - at));
    const std::string piecewise = d.finish_hex();
    CHECK(piecewise == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    CHECK(piecewise == sha256_hex(million));
    Sha256 none;
    CHECK(none.finish_hex() == sha256_hex(""));
}

TEST_CASE("small and bulk inputs give the same digests whichever library computes them") {
    // Below kSmallHashBytes libsodium computes it, above OpenSSL: the FIPS
    // 180-2 million-'a' digest from both, and either side of the threshold.
    const std::string million(1'000'000, 'a');
    Sha256 small(million.size()), bulk;
    small.update(million.data(), million.size());
    bulk.update(million.data(), million.size());
    CHECK(small.finish_hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    CHECK(bulk.finish_hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    for (std::uint64_t size : {corral::kSmallHashBytes - 1, corral::kSmallHashBytes, corral::kSmallHashBytes + 1}) {
        const std::string data(size, 'x');
        Sha256 hinted(size), unhinted;
        hinted.update(data.data(), data.size());
        unhinted.update(data.data(), data.size());
        CHECK(hinted.finish_hex() == unhinted.finish_hex());
    }
}

TEST_CASE("after sha256_prefer_openssl, small inputs give the same digests (computed by OpenSSL)") {
    // Computed before the switch (libsodium for these sizes), then after it.
    std::vector<std::string> inputs = {"", "abc", std::string(200, 'y'), std::string(22000, 'z')};
    std::vector<std::string> before;
    for (const auto& in : inputs) before.push_back(sha256_hex(in));
    corral::sha256_prefer_openssl();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        CHECK(sha256_hex(inputs[i]) == before[i]);
        Sha256 pieces(inputs[i].size());
        pieces.update(inputs[i].data(), inputs[i].size() / 2);
        pieces.update(inputs[i].data() + inputs[i].size() / 2, inputs[i].size() - inputs[i].size() / 2);
        CHECK(pieces.finish_hex() == before[i]);
    }
    CHECK(before[1] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
