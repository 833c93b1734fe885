// journal/key.cpp — Ed25519 through OpenSSL's EVP interface (no hand-written crypto).
#include "journal/key.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "base/atomic_file.hpp"
#include "base/fd.hpp"
#include "base/regular_file.hpp"
#include "base/sha256.hpp"
#include "base/sys_error.hpp"

namespace corral::journal {

namespace {

std::string openssl_errors() {
    std::string out;
    unsigned long e;
    while ((e = ERR_get_error()) != 0) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        out += (out.empty() ? "" : "; ") + std::string(buf);
    }
    return out.empty() ? "no OpenSSL error queued" : out;
}

[[noreturn]] void throw_openssl(const std::string& call) {
    throw std::runtime_error(call + ": " + openssl_errors());
}

std::shared_ptr<EVP_PKEY> own(EVP_PKEY* key) { return {key, EVP_PKEY_free}; }

struct BioFree {
    void operator()(BIO* b) const noexcept { BIO_free_all(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

std::string pem_of(EVP_PKEY* key, bool private_part) {
    BioPtr bio(BIO_new(BIO_s_mem()));
    if (!bio) throw_openssl("BIO_new");
    int ok = private_part ? PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)
                          : PEM_write_bio_PUBKEY(bio.get(), key);
    if (!ok) throw_openssl(private_part ? "PEM_write_bio_PrivateKey" : "PEM_write_bio_PUBKEY");
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(n));
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

// Ed25519 keys are read from their ASN.1 (SubjectPublicKeyInfo, PKCS#8:
// RFC 8410) and made with EVP_PKEY_new_raw_*_key: OpenSSL 3's
// PEM_read_bio_PUBKEY and PEM_read_bio_PrivateKey go through its decoder
// framework, ~1.7 ms for the pair here against ~0.3 ms this way, and every
// run loads the key at its start.
std::shared_ptr<EVP_PKEY> parse_public(std::string_view pem, const std::string& what) {
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    if (!bio) throw_openssl("BIO_new_mem_buf");
    std::unique_ptr<X509_PUBKEY, void (*)(X509_PUBKEY*)> spki(PEM_read_bio_X509_PUBKEY(bio.get(), nullptr, nullptr, nullptr),
                                                             X509_PUBKEY_free);
    ASN1_OBJECT* algorithm = nullptr;
    const unsigned char* raw = nullptr;
    int raw_len = 0;
    if (!spki || X509_PUBKEY_get0_param(&algorithm, &raw, &raw_len, nullptr, spki.get()) != 1) {
        ERR_clear_error();
        throw UsageError(what + ": not a PEM public key (expected -----BEGIN PUBLIC KEY-----, as corral key show prints)");
    }
    if (OBJ_obj2nid(algorithm) != NID_ED25519)
        throw UsageError(what + ": not an Ed25519 public key (corral journals are signed with Ed25519)");
    auto key = own(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, raw, static_cast<std::size_t>(raw_len)));
    if (!key) {
        ERR_clear_error();
        throw UsageError(what + ": not an Ed25519 public key (its key is " + std::to_string(raw_len) + " bytes, not 32)");
    }
    return key;
}

// The private key of a PEM PKCS#8 Ed25519 key, or nothing if `pem` is not one.
std::shared_ptr<EVP_PKEY> parse_private(std::string_view pem) {
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    if (!bio) throw_openssl("BIO_new_mem_buf");
    std::unique_ptr<PKCS8_PRIV_KEY_INFO, void (*)(PKCS8_PRIV_KEY_INFO*)> p8(
        PEM_read_bio_PKCS8_PRIV_KEY_INFO(bio.get(), nullptr, nullptr, nullptr), PKCS8_PRIV_KEY_INFO_free);
    const ASN1_OBJECT* algorithm = nullptr;
    const unsigned char* inner = nullptr;
    int inner_len = 0;
    if (!p8 || PKCS8_pkey_get0(&algorithm, &inner, &inner_len, nullptr, p8.get()) != 1 ||
        OBJ_obj2nid(algorithm) != NID_ED25519) {
        ERR_clear_error();
        return nullptr;
    }
    // RFC 8410: the private key is itself an OCTET STRING of 32 bytes.
    std::unique_ptr<ASN1_OCTET_STRING, void (*)(ASN1_OCTET_STRING*)> seed(
        d2i_ASN1_OCTET_STRING(nullptr, &inner, inner_len), ASN1_OCTET_STRING_free);
    std::shared_ptr<EVP_PKEY> key;
    if (seed) key = own(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, ASN1_STRING_get0_data(seed.get()),
                                                     static_cast<std::size_t>(ASN1_STRING_length(seed.get()))));
    if (seed) OPENSSL_cleanse(seed->data, static_cast<std::size_t>(seed->length));
    if (!key) ERR_clear_error();
    return key;
}

std::string raw_public(EVP_PKEY* key) {
    unsigned char raw[32];
    std::size_t len = sizeof raw;
    if (EVP_PKEY_get_raw_public_key(key, raw, &len) != 1) throw_openssl("EVP_PKEY_get_raw_public_key");
    return std::string(reinterpret_cast<const char*>(raw), len);
}

}  // namespace

KeyFiles key_files(const std::string& state_dir) {
    std::string dir = state_dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    dir += "/journal";
    return KeyFiles{dir, dir + "/signing.key", dir + "/signing.pub"};
}

PublicKey PublicKey::from_pem(std::string_view pem, const std::string& what) {
    PublicKey k;
    k.key_ = parse_public(pem, what);
    return k;
}

PublicKey PublicKey::from_file(const std::string& path) {
    auto text = read_small(path);
    if (!text) throw UsageError(path + ": no such file (the journal's public key, PEM)");
    return from_pem(*text, path);
}

bool PublicKey::verify(std::string_view message, std::string_view signature) const {
    if (!key_ || signature.size() != 64) return false;
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!ctx) throw_openssl("EVP_MD_CTX_new");
    if (EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1)
        throw_openssl("EVP_DigestVerifyInit(Ed25519)");
    int rc = EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                              reinterpret_cast<const unsigned char*>(message.data()), message.size());
    ERR_clear_error();  // a bad signature queues an error; it is an answer, not a failure
    return rc == 1;
}

std::string PublicKey::pem() const { return pem_of(key_.get(), false); }

std::string PublicKey::fingerprint() const { return "ed25519:" + sha256_hex(raw_public(key_.get())).substr(0, 16); }

SigningKey SigningKey::generate() {
    std::unique_ptr<EVP_PKEY_CTX, void (*)(EVP_PKEY_CTX*)> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr),
                                                               EVP_PKEY_CTX_free);
    if (!ctx) throw_openssl("EVP_PKEY_CTX_new_id(Ed25519)");
    EVP_PKEY* raw = nullptr;
    if (EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw) != 1)
        throw_openssl("EVP_PKEY_keygen(Ed25519)");
    SigningKey k;
    k.key_ = own(raw);
    k.public_.key_ = parse_public(pem_of(raw, false), "generated key");
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
    while (::flock(lock.get(), LOCK_EX) < 0)
        if (errno != EINTR) throw SysError("flock", lock_path, errno);

    auto key_pem = read_small(files.key_path);
    auto pub_pem = read_small(files.pub_path);
    if (created) *created = false;
    if (!key_pem && !pub_pem) {
        SigningKey fresh = generate();
        // Private first: a crash between the two leaves "key without .pub",
        // refused below, never a public file naming a key that is not there.
        write_file_atomically(atomic_target(files.key_path, 0600, Durability::durable), pem_of(fresh.key_.get(), true));
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

    auto key = parse_private(*key_pem);
    OPENSSL_cleanse(key_pem->data(), key_pem->size());
    if (!key) throw UsageError(files.key_path + ": not a PEM Ed25519 private key (PKCS#8, as corral key init writes it)");
    SigningKey k;
    k.key_ = key;
    k.public_.key_ = parse_public(*pub_pem, files.pub_path);
    if (raw_public(k.key_.get()) != raw_public(k.public_.key_.get()))
        throw UsageError(files.pub_path + " does not match " + files.key_path);
    return k;
}

std::string SigningKey::sign(std::string_view message) const {
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!ctx) throw_openssl("EVP_MD_CTX_new");
    if (EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1)
        throw_openssl("EVP_DigestSignInit(Ed25519)");
    unsigned char sig[64];
    std::size_t len = sizeof sig;
    if (EVP_DigestSign(ctx.get(), sig, &len, reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1)
        throw_openssl("EVP_DigestSign(Ed25519)");
    return std::string(reinterpret_cast<const char*>(sig), len);
}

std::string base64_encode(std::string_view bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3), '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

std::string base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) throw UsageError("not base64: length " + std::to_string(text.size()) + " is not a multiple of 4");
    std::string out(text.size() / 4 * 3, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
    if (n < 0) throw UsageError("not base64");
    // EVP_DecodeBlock counts the padding as zero bytes: drop them.
    std::size_t pad = 0;
    if (!text.empty() && text.back() == '=') ++pad;
    if (text.size() > 1 && text[text.size() - 2] == '=') ++pad;
    out.resize(static_cast<std::size_t>(n) - pad);
    // Only one text per byte string: a re-encoding must give the same text.
    if (base64_encode(out) != text) throw UsageError("not canonical base64");
    return out;
}

}  // namespace corral::journal
