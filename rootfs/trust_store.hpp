// rootfs/trust_store.hpp — where an image keeps its CA bundle.
//
// An agent run that intercepts TLS adds corral's CA to the box's trust store
// in the overlay (the image stays untouched). Distributions keep that store in
// different files, often reached through links (Fedora's
// /etc/pki/tls/certs/ca-bundle.crt -> /etc/pki/ca-trust/extracted/pem/...),
// and a client that ignores SSL_CERT_FILE reads its own distribution's path:
// every one of them must carry the CA, and the file to replace is the one the
// links lead to.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace corral::rootfs {

// The system CA bundle paths TLS libraries read, by distribution family, in
// the order corral prefers one for SSL_CERT_FILE and friends.
inline constexpr std::string_view kCaBundlePaths[] = {
    "/etc/ssl/certs/ca-certificates.crt",                   // Debian, Ubuntu, Alpine, Arch, Gentoo
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",    // Fedora, RHEL, CentOS, Amazon Linux (the file)
    "/etc/pki/tls/certs/ca-bundle.crt",                     //   (their classic name, usually a link to it)
    "/etc/pki/tls/cert.pem",                                //   (OpenSSL's default file there)
    "/etc/ssl/ca-bundle.pem",                               // openSUSE, SLES
    "/etc/ssl/cert.pem",                                    // Alpine, Arch (OpenSSL's default file there)
};

struct CaBundle {
    std::string path;  // the regular file inside the image, every link resolved inside the image
    std::string pem;   // its content
};

// Each distinct regular file that one of kCaBundlePaths leads to inside the
// image rooted at `image_root` (links resolved with the image as "/", so an
// image cannot point root at a host file), first-found order. A path that
// does not exist is skipped; one that is not a regular file or is larger than
// max_bytes throws UsageError naming it.
std::vector<CaBundle> find_ca_bundles(const std::string& image_root, std::size_t max_bytes);

// `bundle` followed by `ca_pem`, with a line break between them when the
// bundle does not end with one (PEM blocks must start on a line of their own).
std::string append_ca(std::string bundle, const std::string& ca_pem);

}  // namespace corral::rootfs
