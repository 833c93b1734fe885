// journal/key.cpp — Ed25519 through libsodium (no hand-written crypto).
//
// libsodium rather than OpenSSL: every run loads the key and signs at its
// start, and OpenSSL's first use in a process costs ~2 ms of configuration
// and provider loading against ~0.2 ms for sodium_init (docs/benchmarks.md).
// The files keep their standard form (PEM PKCS#8 and SubjectPublicKeyInfo,
// RFC 8410), which for Ed25519 is a fixed DER prefix and the 32 raw bytes:
// that framing is all this file reads and writes itself.
#include "journal/key.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "base/atomic_file.hpp"
#include "base/bounded_lock.hpp"
#include "base/fd.hpp"
#include "base/regular_file.hpp"
#include "base/sha256.hpp"
#include "base/sys_error.hpp"

namespace corral::journal {

namespace {

// RFC 8410's DER for Ed25519, before the 32 key bytes: PKCS#8 v1
// PrivateKeyInfo {version 0, id-Ed25519, OCTET STRING {OCTET STRING seed}}
// and SubjectPublicKeyInfo {id-Ed25519, BIT STRING key}. OpenSSL and
// `openssl genpkey -algorithm ed25519` write exactly these.
constexpr unsigned char kPrivatePrefix[] = {0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06,
                                            0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20};
constexpr unsigned char kPublicPrefix[] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b,
                                           0x65, 0x70, 0x03, 0x21, 0x00};

void start_sodium() {
    if (sodium_init() < 0) throw std::runtime_error("journal key: libsodium's sodium_init failed (no randomness source?)");
}

std::string decode_base64(std::string_view text, const char* ignore) {
    std::string out(text.size() / 4 * 3 + 3, '\0');
    std::size_t n = 0;
    const char* end = nullptr;
    if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(), text.size(), ignore,
                          &n, &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
        end != text.data() + text.size())
        throw UsageError("not base64");
    out.resize(n);
    return out;
}

// The DER between "-----BEGIN LABEL-----" and "-----END LABEL-----", or
// nothing when `pem` has no such block or its body is not base64.
std::optional<std::string> der_of_pem(std::string_view pem, std::string_view label) {
    const std::string begin = "-----BEGIN " + std::string(label) + "-----";
    const std::string end = "-----END " + std::string(label) + "-----";
    const auto b = pem.find(begin);
    if (b == std::string_view::npos) return std::nullopt;
    const auto body = b + begin.size();
    const auto e = pem.find(end, body);
    if (e == std::string_view::npos) return std::nullopt;
    try {
        return decode_base64(pem.substr(body, e - body), " \t\r\n");
    } catch (const UsageError&) {
        return std::nullopt;
    }
}

// PEM as OpenSSL writes it: base64 in lines of 64.
std::string pem_of(std::string_view der, std::string_view label) {
    const std::string b64 = base64_encode(der);
    std::string out = "-----BEGIN " + std::string(label) + "-----\n";
    for (std::size_t i = 0; i < b64.size(); i += 64) out += b64.substr(i, 64) + "\n";
    return out + "-----END " + std::string(label) + "-----\n";
}

template <std::size_t N>
std::string with_prefix(const unsigned char (&prefix)[N], const unsigned char* key) {
    std::string der(reinterpret_cast<const char*>(prefix), N);
    der.append(reinterpret_cast<const char*>(key), 32);
    return der;
}

template <std::size_t N>
bool has_prefix(const std::string& der, const unsigned char (&prefix)[N]) {
    return der.size() == N + 32 && std::memcmp(der.data(), prefix, N) == 0;
}

std::string mode_text(mode_t mode) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
    return buf;
}

// Owned by us and closed to group and other: else someone else could read
// the key or swap the files under us.
void require_private(const std::string& path, const struct stat& st, const char* what) {
    if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
        throw UsageError(path + ": " + what + " must be owned by uid " + std::to_string(::geteuid()) +
                         " and closed to group and other; found uid " + std::to_string(st.st_uid) + " mode " +
                         mode_text(st.st_mode));
}

std::optional<std::string> read_small(const std::string& path) {
    return read_regular_file(RegularFileRead{.what = "journal key", .path = path, .max_bytes = 64u << 10});
}

// The 32-byte seed of a PEM PKCS#8 Ed25519 key, or nothing if `pem` is not one.
std::optional<std::string> private_seed(std::string_view pem) {
    auto der = der_of_pem(pem, "PRIVATE KEY");
    std::optional<std::string> seed;
    if (der && has_prefix(*der, kPrivatePrefix)) seed = der->substr(sizeof kPrivatePrefix);
    if (der) sodium_memzero(der->data(), der->size());
    return seed;
}

}  // namespace

KeyFiles key_files(const std::string& state_dir) {
    std::string dir = state_dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    dir += "/journal";
    return KeyFiles{dir, dir + "/signing.key", dir + "/signing.pub"};
}

PublicKey PublicKey::from_pem(std::string_view pem, const std::string& what) {
    auto der = der_of_pem(pem, "PUBLIC KEY");
    if (!der)
        throw UsageError(what + ": not a PEM public key (expected -----BEGIN PUBLIC KEY-----, as corral key show prints)");
    if (!has_prefix(*der, kPublicPrefix))
        throw UsageError(what + ": not an Ed25519 public key (corral journals are signed with Ed25519)");
    PublicKey k;
    std::memcpy(k.raw_.data(), der->data() + sizeof kPublicPrefix, k.raw_.size());
    return k;
}

PublicKey PublicKey::from_file(const std::string& path) {
    auto text = read_small(path);
    if (!text) throw UsageError(path + ": no such file (the journal's public key, PEM)");
    return from_pem(*text, path);
}

bool PublicKey::verify(std::string_view message, std::string_view signature) const {
    if (signature.size() != crypto_sign_BYTES) return false;
    start_sodium();
    return crypto_sign_verify_detached(reinterpret_cast<const unsigned char*>(signature.data()),
                                       reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                                       raw_.data()) == 0;
}

std::string PublicKey::pem() const { return pem_of(with_prefix(kPublicPrefix, raw_.data()), "PUBLIC KEY"); }

std::string PublicKey::fingerprint() const {
    return "ed25519:" + sha256_hex(std::string_view(reinterpret_cast<const char*>(raw_.data()), raw_.size())).substr(0, 16);
}

SigningKey::~SigningKey() { sodium_memzero(secret_.data(), secret_.size()); }

SigningKey SigningKey::generate() {
    start_sodium();
    SigningKey k;
    crypto_sign_keypair(k.public_.raw_.data(), k.secret_.data());
    return k;
}

SigningKey SigningKey::load_or_create(const std::string& state_dir, bool* created) {
    if (state_dir.empty()) throw UsageError("journal key: the state dir is empty");
    KeyFiles files = key_files(state_dir);
    // The state dir as the CA makes it (0755 on the way); the key's own dir 0700.
    for (std::size_t pos = 1; pos < state_dir.size();) {
        pos = std::min(state_dir.find('/', pos), state_dir.size());
        std::string prefix = state_dir.substr(0, pos);
        if (::mkdir(prefix.c_str(), 0755) < 0 && errno != EEXIST) throw SysError("mkdir", prefix, errno);
        ++pos;
    }
    if (::mkdir(files.dir.c_str(), 0700) < 0 && errno != EEXIST) throw SysError("mkdir", files.dir, errno);
    struct stat dst {};
    check_sys(::lstat(files.dir.c_str(), &dst), "lstat", files.dir);
    if (!S_ISDIR(dst.st_mode)) throw UsageError(files.dir + ": not a directory (the journal key's directory)");
    require_private(files.dir, dst, "the journal key's directory");

    std::string lock_path = files.dir + "/.lock";
    Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!lock.valid()) throw SysError("open", lock_path, errno);
    lock_within(lock.get(), lock_path, LockKind::exclusive);  // held by another start only while it makes the key

    auto key_pem = read_small(files.key_path);
    auto pub_pem = read_small(files.pub_path);
    if (created) *created = false;
    if (!key_pem && !pub_pem) {
        SigningKey fresh = generate();
        // Private first: a crash between the two leaves "key without .pub",
        // refused below, never a public file naming a key that is not there.
        std::string der = with_prefix(kPrivatePrefix, fresh.secret_.data());  // the seed: libsodium's first 32 bytes
        std::string pem = pem_of(der, "PRIVATE KEY");
        sodium_memzero(der.data(), der.size());
        write_file_atomically(atomic_target(files.key_path, 0600, Durability::durable), pem);
        sodium_memzero(pem.data(), pem.size());
        write_file_atomically(atomic_target(files.pub_path, 0644, Durability::durable), fresh.public_.pem());
        if (created) *created = true;
        return fresh;
    }
    if (!key_pem || !pub_pem)
        throw UsageError("journal key in " + files.dir + " is incomplete: " + (key_pem ? files.pub_path : files.key_path) +
                         " is missing; restore it, or remove the directory to make a new key (journals signed "
                         "with the old key then verify only with its public key)");
    struct stat kst {};
    check_sys(::lstat(files.key_path.c_str(), &kst), "lstat", files.key_path);
    require_private(files.key_path, kst, "the journal signing key");

    auto seed = private_seed(*key_pem);
    sodium_memzero(key_pem->data(), key_pem->size());
    if (!seed) throw UsageError(files.key_path + ": not a PEM Ed25519 private key (PKCS#8, as corral key init writes it)");
    start_sodium();
    SigningKey k;
    std::array<unsigned char, 32> derived{};
    crypto_sign_seed_keypair(derived.data(), k.secret_.data(), reinterpret_cast<const unsigned char*>(seed->data()));
    sodium_memzero(seed->data(), seed->size());
    k.public_ = PublicKey::from_pem(*pub_pem, files.pub_path);
    if (derived != k.public_.raw_) throw UsageError(files.pub_path + " does not match " + files.key_path);
    return k;
}

std::string SigningKey::sign(std::string_view message) const {
    unsigned char sig[crypto_sign_BYTES];
    crypto_sign_detached(sig, nullptr, reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                         secret_.data());
    return std::string(reinterpret_cast<const char*>(sig), sizeof sig);
}

std::string base64_encode(std::string_view bytes) {
    std::string out(sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
    sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                      sodium_base64_VARIANT_ORIGINAL);
    out.resize(out.size() - 1);  // the terminating NUL
    return out;
}

std::string base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) throw UsageError("not base64: length " + std::to_string(text.size()) + " is not a multiple of 4");
    std::string out = decode_base64(text, nullptr);
    // Only one text per byte string: a re-encoding must give the same text.
    if (base64_encode(out) != text) throw UsageError("not canonical base64");
    return out;
}

}  // namespace corral::journal
