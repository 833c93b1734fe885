#include "gateway/ca.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <mutex>
#include <string_view>

#include "base/atomic_file.hpp"
#include "base/bounded_lock.hpp"
#include "base/fd.hpp"
#include "base/sha256.hpp"
#include "base/sys_error.hpp"
#include "names/host.hpp"

namespace corral::gateway {

std::string openssl_errors() {
    std::string out;
    char buf[256];
    while (unsigned long e = ERR_get_error()) {
        ERR_error_string_n(e, buf, sizeof buf);
        if (!out.empty()) out += "; ";
        out += buf;
    }
    return out.empty() ? "unknown OpenSSL error" : out;
}

namespace {

[[noreturn]] void throw_openssl(std::string_view what) {
    throw std::runtime_error(std::string(what) + ": " + openssl_errors());
}

EvpPkeyPtr generate_p256_key() {
    EvpPkeyPtr key(EVP_EC_gen("P-256"));
    if (!key) throw_openssl("EVP_EC_gen(P-256)");
    return key;
}

void set_random_serial(X509* x) {
    std::unique_ptr<BIGNUM, OpenSslDeleter<BN_free>> bn(BN_new());
    // 127 bits keeps the DER integer positive and within RFC 5280's 20 octets.
    if (!bn || !BN_rand(bn.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) ||
        !BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(x)))
        throw_openssl("certificate serial");
}

void add_extension(X509* subject, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, subject, nullptr, nullptr, 0);
    X509ExtensionPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
    if (!ext || !X509_add_ext(subject, ext.get(), -1))
        throw_openssl(std::string("certificate extension ") + OBJ_nid2sn(nid) + "=" + value);
}

std::chrono::system_clock::time_point asn1_time_point(const ASN1_TIME* t) {
    std::tm tm{};
    if (!ASN1_TIME_to_tm(t, &tm)) throw_openssl("ASN1_TIME_to_tm");
    return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::string pem_of(X509* cert) {
    BioPtr bio(BIO_new(BIO_s_mem()));
    if (!bio || !PEM_write_bio_X509(bio.get(), cert)) throw_openssl("PEM_write_bio_X509");
    char* data = nullptr;
    long len = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(len));
}

std::string pem_of(EVP_PKEY* key) {
    BioPtr bio(BIO_new(BIO_s_mem()));
    if (!bio || !PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr))
        throw_openssl("PEM_write_bio_PrivateKey");
    char* data = nullptr;
    long len = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(len));
}

std::string read_file(const std::string& path, struct stat* st_out) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) throw SysError("open", path, errno);
    struct stat st {};
    check_sys(::fstat(fd.get(), &st), "fstat", path);
    if (st_out) *st_out = st;
    try {
        return read_to_end(fd.get(), path, 1u << 20);
    } catch (const UsageError&) {
        throw UsageError(path + ": larger than 1 MiB; not a PEM certificate or key");
    }
}

void make_dir(const std::string& path, mode_t mode) {
    if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) return;
    throw SysError("mkdir", path, errno);
}

void make_dirs(const std::string& path, mode_t mode) {
    for (std::size_t pos = 1; pos != std::string::npos;) {
        pos = path.find('/', pos);
        std::string prefix = path.substr(0, pos);
        if (!prefix.empty()) make_dir(prefix, mode);
        if (pos != std::string::npos) ++pos;
    }
}

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

X509NamePtr subject_with_cn(const std::string& cn) {
    X509NamePtr name(X509_NAME_new());
    auto add = [&](const char* field, const std::string& value) {
        if (!X509_NAME_add_entry_by_txt(name.get(), field, MBSTRING_UTF8,
                                        reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1, 0))
            throw_openssl(std::string("X509_NAME_add_entry_by_txt ") + field);
    };
    add("O", "corral");
    add("CN", cn.substr(0, 64));  // ub-common-name
    return name;
}

void create_ca_files(const CaFiles& files) {
    EvpPkeyPtr key = generate_p256_key();
    X509Ptr cert(X509_new());
    if (!cert) throw_openssl("X509_new");
    X509_set_version(cert.get(), X509_VERSION_3);
    set_random_serial(cert.get());
    char hostname[256] = "localhost";
    ::gethostname(hostname, sizeof hostname - 1);
    X509NamePtr name = subject_with_cn(std::string("corral CA ") + hostname);
    X509_set_subject_name(cert.get(), name.get());
    X509_set_issuer_name(cert.get(), name.get());
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
    X509_time_adj_ex(X509_getm_notAfter(cert.get()),
                     static_cast<int>(CertificateAuthority::kCaLifetime.count() / 24), 0, nullptr);
    if (!X509_set_pubkey(cert.get(), key.get())) throw_openssl("X509_set_pubkey");
    add_extension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
    add_extension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
    add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
    if (!X509_sign(cert.get(), key.get(), EVP_sha256())) throw_openssl("X509_sign(CA)");
    // Key first: a crash between the two renames leaves "key without cert",
    // which load refuses loudly instead of silently pairing mismatched halves.
    write_file_atomically(atomic_target(files.key_path, 0600, Durability::durable), pem_of(key.get()));
    write_file_atomically(atomic_target(files.cert_path, 0644, Durability::durable), pem_of(cert.get()));
}

}  // namespace

CaFiles ca_files(const std::string& state_dir) {
    std::string dir = state_dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    dir += "/ca";
    return CaFiles{dir, dir + "/ca.crt", dir + "/ca.key"};
}

CertificateAuthority CertificateAuthority::deferred(const std::string& state_dir) {
    if (state_dir.empty()) throw UsageError("gateway state_dir is empty: the CA needs a directory");
    CertificateAuthority ca;
    ca.state_dir_ = state_dir;
    ca.files_ = ca_files(state_dir);
    ca.loader_ = std::make_shared<Loader>();
    return ca;
}

CertificateAuthority CertificateAuthority::load_or_create(const std::string& state_dir) {
    CertificateAuthority ca = deferred(state_dir);
    (void)ca.material();
    return ca;
}

const CertificateAuthority::Material& CertificateAuthority::material() const {
    if (loader_->loaded.load(std::memory_order_acquire)) return loader_->material;
    std::lock_guard<std::mutex> lock(loader_->mutex);
    if (!loader_->loaded.load(std::memory_order_relaxed)) {
        loader_->material = load_material(state_dir_, files_);
        loader_->loaded.store(true, std::memory_order_release);
        // OpenSSL is started now (the CA's key, TLS to come): its SHA-256
        // costs this process nothing more and is the faster one.
        sha256_prefer_openssl();
    }
    return loader_->material;
}

CertificateAuthority::Material CertificateAuthority::load_material(const std::string& state_dir,
                                                                   const CaFiles& files) {
    Material ca;
    make_dirs(state_dir, 0755);
    make_dir(files.dir, 0755);

    std::string lock_path = files.dir + "/.lock";
    Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!lock.valid()) throw SysError("open", lock_path, errno);
    lock_within(lock.get(), lock_path, LockKind::exclusive);  // another start holds it only while it makes the CA

    bool have_cert = exists(files.cert_path), have_key = exists(files.key_path);
    if (!have_cert && !have_key) {
        create_ca_files(files);
        ca.created = true;
    } else if (have_cert != have_key) {
        throw UsageError("CA in " + files.dir + " is incomplete: " +
                         (have_cert ? files.key_path : files.cert_path) +
                         " is missing; restore it or remove the directory to create a new CA");
    }

    struct stat st {};
    std::string key_pem = read_file(files.key_path, &st);
    if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        throw UsageError(files.key_path + ": CA key must be owned by uid " + std::to_string(::geteuid()) +
                         " with mode 0600 or 0400; found uid " + std::to_string(st.st_uid) + " mode " + mode);
    }
    BioPtr kbio(BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())));
    ca.key.reset(PEM_read_bio_PrivateKey(kbio.get(), nullptr, nullptr, nullptr));
    OPENSSL_cleanse(key_pem.data(), key_pem.size());
    if (!ca.key) throw UsageError(files.key_path + ": not a PEM private key (" + openssl_errors() + ")");

    ca.pem = read_file(files.cert_path, nullptr);
    BioPtr cbio(BIO_new_mem_buf(ca.pem.data(), static_cast<int>(ca.pem.size())));
    ca.cert.reset(PEM_read_bio_X509(cbio.get(), nullptr, nullptr, nullptr));
    if (!ca.cert) throw UsageError(files.cert_path + ": not a PEM certificate (" + openssl_errors() + ")");
    if (X509_check_private_key(ca.cert.get(), ca.key.get()) != 1) {
        ERR_clear_error();
        throw UsageError(files.cert_path + " does not match " + files.key_path);
    }
    if (asn1_time_point(X509_get0_notAfter(ca.cert.get())) <= std::chrono::system_clock::now())
        throw UsageError(files.cert_path + ": CA certificate has expired; remove " + files.dir +
                         " to create a new one (sandbox images must then trust the new certificate)");
    return ca;
}

std::shared_ptr<const LeafCertificate> CertificateAuthority::mint_leaf(const std::string& host) const {
    // The host lands in an OpenSSL extension string where ',' would start a
    // second SAN: allow only the characters a normalised host can contain
    // (names::normalised_host_chars, '_' included: a name normalize_host
    // accepts must be mintable, or the box's CONNECT would be granted and then
    // fail in the handshake).
    if (host.empty() || host.size() > 253 || host.find_first_not_of(names::normalised_host_chars) != std::string::npos)
        throw UsageError("cannot mint a certificate for host \"" + host +
                         "\": expected a normalised lowercase name or address literal");
    const Material& ca = material();
    auto leaf = std::make_shared<LeafCertificate>();
    leaf->host = host;
    leaf->key = generate_p256_key();
    leaf->cert.reset(X509_new());
    X509* x = leaf->cert.get();
    if (!x) throw_openssl("X509_new");
    X509_set_version(x, X509_VERSION_3);
    set_random_serial(x);
    X509NamePtr name = subject_with_cn(host);
    X509_set_subject_name(x, name.get());
    X509_set_issuer_name(x, X509_get_subject_name(ca.cert.get()));

    auto now = std::chrono::system_clock::now();
    auto ca_end = asn1_time_point(X509_get0_notAfter(ca.cert.get()));
    auto end = std::min(now + kLeafLifetime, ca_end);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    ASN1_TIME_set(X509_getm_notAfter(x), std::chrono::system_clock::to_time_t(end));
    leaf->not_after = end;
    if (!X509_set_pubkey(x, leaf->key.get())) throw_openssl("X509_set_pubkey");

    unsigned char addr[16];
    bool is_ip = ::inet_pton(AF_INET, host.c_str(), addr) == 1 || ::inet_pton(AF_INET6, host.c_str(), addr) == 1;
    std::string san = (is_ip ? "IP:" : "DNS:") + host;
    add_extension(x, ca.cert.get(), NID_basic_constraints, "critical,CA:FALSE");
    add_extension(x, ca.cert.get(), NID_key_usage, "critical,digitalSignature");
    add_extension(x, ca.cert.get(), NID_ext_key_usage, "serverAuth");
    add_extension(x, ca.cert.get(), NID_subject_alt_name, san.c_str());
    add_extension(x, ca.cert.get(), NID_subject_key_identifier, "hash");
    add_extension(x, ca.cert.get(), NID_authority_key_identifier, "keyid:always");
    if (!X509_sign(x, ca.key.get(), EVP_sha256())) throw_openssl("X509_sign(leaf)");
    return leaf;
}

}  // namespace corral::gateway
