// gateway/openssl_ptr.hpp — owning pointers for the OpenSSL objects the gateway keeps.
//
// OpenSSL hands out raw pointers with matching *_free functions; wrapping each
// in a unique_ptr keeps the "one owner, freed once" rule the rest of corral
// follows for fds. Only the types the gateway actually holds are listed.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

namespace corral::gateway {

template <auto Free>
struct OpenSslDeleter {
    template <typename T>
    void operator()(T* p) const noexcept { Free(p); }
};

using X509Ptr = std::unique_ptr<X509, OpenSslDeleter<X509_free>>;
using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslDeleter<EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslDeleter<BIO_free_all>>;
using X509NamePtr = std::unique_ptr<X509_NAME, OpenSslDeleter<X509_NAME_free>>;
using X509ExtensionPtr = std::unique_ptr<X509_EXTENSION, OpenSslDeleter<X509_EXTENSION_free>>;

// The queued OpenSSL errors as one line ("error:...; error:..."), clearing the queue.
std::string openssl_errors();

}  // namespace corral::gateway
