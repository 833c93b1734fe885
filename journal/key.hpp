// journal/key.hpp — the journal's Ed25519 signing key.
//
// One key per state dir, created like the CA's key (gateway/ca.hpp):
//   <state_dir>/journal/             mode 0700, root's
//   <state_dir>/journal/signing.key  mode 0600, PEM PKCS#8 (private)
//   <state_dir>/journal/signing.pub  mode 0644, PEM SubjectPublicKeyInfo
// The operator keeps a copy of signing.pub somewhere the host cannot rewrite
// (`corral key show`): a verifier that reads the public key from the same
// host it checks proves only that someone with root there signed it.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace corral::journal {

struct KeyFiles {
    std::string dir;
    std::string key_path;
    std::string pub_path;
};
KeyFiles key_files(const std::string& state_dir);

class PublicKey {
public:
    // Throws UsageError naming `what` if `pem` is not an Ed25519 public key
    // (a private key's PEM is refused too: the verifier needs no secret).
    static PublicKey from_pem(std::string_view pem, const std::string& what);
    static PublicKey from_file(const std::string& path);
    // True iff `signature` (64 bytes) is this key's Ed25519 signature of `message`.
    bool verify(std::string_view message, std::string_view signature) const;
    std::string pem() const;
    // "ed25519:" + the first 16 hex digits of SHA-256 of the raw 32-byte key:
    // a name to compare by eye, recorded in each journal's first record.
    std::string fingerprint() const;

private:
    std::array<unsigned char, 32> raw_{};  // RFC 8032's public key
    friend class SigningKey;
};

class SigningKey {
public:
    // Loads <state_dir>/journal/signing.key, creating the key pair when
    // neither file exists (serialised with flock, as the CA). Refuses
    // (UsageError naming the path) a key not owned by the effective UID or
    // readable by group/other, a directory open to others, only one of the
    // two files, or a public file that does not match the private key.
    static SigningKey load_or_create(const std::string& state_dir, bool* created = nullptr);
    // A fresh key only in memory (tests, benchmarks).
    static SigningKey generate();

    // The 64-byte Ed25519 signature of `message` (libsodium's
    // crypto_sign_detached: Ed25519 hashes the message itself).
    std::string sign(std::string_view message) const;
    const PublicKey& public_key() const { return public_; }

    SigningKey(const SigningKey&) = default;
    SigningKey& operator=(const SigningKey&) = default;
    ~SigningKey();

private:
    SigningKey() = default;
    std::array<unsigned char, 64> secret_{};  // libsodium's form: the 32-byte seed, then the public key
    PublicKey public_;
};

// Standard base64 with padding (the "sig" field), via libsodium.
std::string base64_encode(std::string_view bytes);
// Throws UsageError unless `text` is canonical padded base64 of some bytes.
std::string base64_decode(std::string_view text);

}  // namespace corral::journal
