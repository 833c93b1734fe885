// Unit tests of rootfs/trust_store: which files of an image carry its CA bundle.
#include <doctest/doctest.h>

#include <string>

#include "base/sys_error.hpp"
#include "rootfs/trust_store.hpp"
#include "tests/support/temp_dir.hpp"

using namespace corral::rootfs;
using corral::test::TempDir;

namespace {

std::string paths_of(const std::vector<CaBundle>& found) {
    std::string out;
    for (const auto& b : found) out += b.path + "=" + b.pem + ";";
    return out;
}

}  // namespace

TEST_CASE("a Debian-family image: one bundle, its other names lead to the same file") {
    TempDir img("corral-trust");
    img.write("etc/ssl/certs/ca-certificates.crt", "DEBIAN-ROOTS\n");
    img.link("etc/ssl/cert.pem", "certs/ca-certificates.crt");
    CHECK(paths_of(find_ca_bundles(img.path(), 1 << 20)) == "/etc/ssl/certs/ca-certificates.crt=DEBIAN-ROOTS\n;");
}

TEST_CASE("a Fedora/RHEL-family image: the linked names resolve, inside the image, to the one real file") {
    TempDir img("corral-trust");
    img.write("etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "RHEL-ROOTS\n");
    // Absolute links as the distribution ships them, and /etc/ssl/certs as a
    // relative link to /etc/pki/tls/certs: all resolved with the image as "/".
    img.link("etc/pki/tls/certs/ca-bundle.crt", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem");
    img.link("etc/pki/tls/cert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem");
    img.link("etc/ssl/certs", "../pki/tls/certs");
    CHECK(paths_of(find_ca_bundles(img.path(), 1 << 20)) ==
          "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem=RHEL-ROOTS\n;");
}

TEST_CASE("distinct files are each found once, in the preferred order") {
    TempDir img("corral-trust");
    img.write("etc/ssl/ca-bundle.pem", "SUSE\n");
    img.write("etc/ssl/certs/ca-certificates.crt", "DEB\n");
    img.link("etc/ssl/cert.pem", "/etc/ssl/ca-bundle.pem");
    CHECK(paths_of(find_ca_bundles(img.path(), 1 << 20)) ==
          "/etc/ssl/certs/ca-certificates.crt=DEB\n;/etc/ssl/ca-bundle.pem=SUSE\n;");
}

TEST_CASE("an image's link cannot lead root to a host file: it resolves inside the image") {
    TempDir img("corral-trust");
    // /etc/passwd exists on the host, not in this image.
    img.link("etc/ssl/certs/ca-certificates.crt", "/etc/passwd");
    img.link("etc/ssl/cert.pem", "../../../../../../../../etc/passwd");
    img.link("etc/pki/tls/cert.pem", "/proc/self/root/etc/passwd");
    CHECK(find_ca_bundles(img.path(), 1 << 20).empty());
}

TEST_CASE("an image without any bundle has none; a bundle that is not a regular file or is too large is refused") {
    TempDir img("corral-trust");
    CHECK(find_ca_bundles(img.path(), 1 << 20).empty());

    std::filesystem::create_directories(img / "etc/ssl/certs/ca-certificates.crt");
    CHECK_THROWS_WITH_AS(find_ca_bundles(img.path(), 1 << 20), doctest::Contains("not a regular file"),
                         corral::UsageError);

    TempDir big("corral-trust");
    big.write("etc/ssl/ca-bundle.pem", std::string(2048, 'x'));
    CHECK_THROWS_WITH_AS(find_ca_bundles(big.path(), 1024), doctest::Contains("2048 bytes, more than the 1024"),
                         corral::UsageError);
}

TEST_CASE("append_ca puts the CA on a line of its own") {
    CHECK(append_ca("A\n", "CA\n") == "A\nCA\n");
    CHECK(append_ca("A", "CA\n") == "A\nCA\n");
    CHECK(append_ca("", "CA\n") == "CA\n");
}
