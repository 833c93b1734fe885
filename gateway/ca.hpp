// gateway/ca.hpp — corral's certificate authority and the leaf certificates it mints.
//
// Inject-mode grants terminate the sandbox's TLS with a certificate for the
// CONNECT host signed by this CA; sandboxes trust the CA's certificate (never
// its key). Layout in the state directory:
//   <state_dir>/ca/          mode 0755 (the certificate must be readable by image builders)
//   <state_dir>/ca/ca.crt    mode 0644, PEM
//   <state_dir>/ca/ca.key    mode 0600, owned by the gateway's effective UID (root), PEM PKCS#8
// Both keys are ECDSA P-256: small, fast to sign with, accepted by every TLS client we serve.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "gateway/openssl_ptr.hpp"

namespace corral::gateway {

struct CaFiles {
    std::string dir;
    std::string cert_path;
    std::string key_path;
};
CaFiles ca_files(const std::string& state_dir);

// A minted leaf: certificate + its own private key (never the CA's key).
struct LeafCertificate {
    std::string host;
    X509Ptr cert;
    EvpPkeyPtr key;
    std::chrono::system_clock::time_point not_after;
};

class CertificateAuthority {
public:
    // Loads the CA from <state_dir>/ca/, creating it (and the directories) when
    // neither file exists. Creation is serialised with flock so two starting
    // daemons cannot write mismatched halves. Refuses (UsageError naming the
    // path) a key file that is not owned by the effective UID or is readable by
    // group/other, only one of the two files, or a certificate that does not
    // match the key.
    static CertificateAuthority load_or_create(const std::string& state_dir);
    // The same CA, loaded (or created) by the first call that needs it, with
    // the same checks; that call throws what load_or_create would. For a
    // gateway without inject grants, which never terminates TLS: a plain
    // `corral run` then pays nothing for a CA it does not use.
    static CertificateAuthority deferred(const std::string& state_dir);

    const std::string& certificate_pem() const { return material().pem; }
    const std::string& certificate_path() const { return files_.cert_path; }
    X509* certificate() const { return material().cert.get(); }
    // True if loading made a new CA (rather than loading one).
    bool created() const { return material().created; }

    // A fresh ECDSA P-256 leaf for `host` (DNS SAN, or IP SAN for an address
    // literal), signed by this CA: serverAuth only, not a CA, valid from one
    // hour ago (clock skew) for kLeafLifetime or until the CA expires, whichever
    // comes first.
    std::shared_ptr<const LeafCertificate> mint_leaf(const std::string& host) const;

    static constexpr std::chrono::hours kLeafLifetime{24 * 30};
    static constexpr std::chrono::hours kCaLifetime{24 * 3650};

private:
    struct Material {
        X509Ptr cert;
        EvpPkeyPtr key;
        std::string pem;
        bool created = false;
    };
    // Shared so the CA stays movable; loaded at most once (a failed load is
    // retried by the next caller). A mutex, not std::call_once: libstdc++'s
    // call_once runs on pthread_once, which cannot propagate an exception.
    struct Loader {
        std::mutex mutex;
        std::atomic<bool> loaded{false};
        Material material;
    };
    CertificateAuthority() = default;
    static Material load_material(const std::string& state_dir, const CaFiles& files);
    const Material& material() const;

    std::string state_dir_;
    CaFiles files_;
    std::shared_ptr<Loader> loader_;
};

}  // namespace corral::gateway
