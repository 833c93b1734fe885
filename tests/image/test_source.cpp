// Unit tests of what `corral image import SOURCE` decides SOURCE is, on tar
// archives the tests write with libarchive (no root): each kind recognised,
// the refusals kept, and a rootfs tarball decided from its first entries.
#include <archive.h>
#include <archive_entry.h>
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "base/sys_error.hpp"
#include "image/source.hpp"
#include "tests/support/temp_dir.hpp"

using namespace corral::image;

namespace {

struct Entry {
    std::string name;
    std::string data;  // a directory when the name ends in '/'
};

// An uncompressed (or, with `filter`, compressed) pax tar of `entries`.
void write_tar(const std::string& path, const std::vector<Entry>& entries, int filter = ARCHIVE_FILTER_NONE) {
    struct archive* a = archive_write_new();
    REQUIRE(archive_write_set_format_pax_restricted(a) == ARCHIVE_OK);
    if (filter == ARCHIVE_FILTER_GZIP) REQUIRE(archive_write_add_filter_gzip(a) == ARCHIVE_OK);
    REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
    for (const auto& e : entries) {
        struct archive_entry* ae = archive_entry_new();
        const bool dir = !e.name.empty() && e.name.back() == '/';
        archive_entry_set_pathname(ae, e.name.c_str());
        archive_entry_set_filetype(ae, dir ? AE_IFDIR : AE_IFREG);
        archive_entry_set_perm(ae, dir ? 0755 : 0644);
        archive_entry_set_size(ae, dir ? 0 : static_cast<la_int64_t>(e.data.size()));
        REQUIRE(archive_write_header(a, ae) == ARCHIVE_OK);
        if (!dir) REQUIRE(archive_write_data(a, e.data.data(), e.data.size()) == static_cast<la_ssize_t>(e.data.size()));
        archive_entry_free(ae);
    }
    REQUIRE(archive_write_close(a) == ARCHIVE_OK);
    archive_write_free(a);
}

// Overwrites the 512-byte block at `offset` with garbage (a header no tar reader accepts).
void corrupt_block(const std::string& path, std::streamoff offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    REQUIRE(f);
    f.seekp(offset);
    const std::string junk(512, '\x7f');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
}

std::string usage_error_of(const std::string& path) {
    try {
        (void)detect_source(path);
    } catch (const corral::UsageError& e) {
        return e.what();
    }
    return "(no error)";
}

const std::string kHex = std::string(64, 'e');

}  // namespace

TEST_CASE("the names that settle an archive as a rootfs tarball: three or more, outside blobs/") {
    for (std::string n : {"usr/share/doc", "etc/apt/sources.list", "a/b/c/d", "bin/x/y", "blobsx/a/b"})
        CHECK(settles_rootfs_tarball(n));
    // What image archives hold: docker save (old and 25+), podman, OCI archives, hand-made ones.
    for (const std::string& n : std::vector<std::string>{"manifest.json", "oci-layout", kHex + "/layer.tar", kHex + ".json",
                          kHex + ".tar", "blobs/sha256/" + kHex, "blobs/sha512/x", "a/layer.tar", "etc/passwd", "usr", ""})
        CHECK_FALSE(settles_rootfs_tarball(n));
}

TEST_CASE("each archive kind is recognised from its entries") {
    corral::test::TempDir t("corral-image-source");
    const std::string p = t.path();

    write_tar(p + "/root.tar", {{"./", ""}, {"etc/", ""}, {"etc/passwd", "root:x:0:0::/:/bin/sh\n"}, {"etc/apt/", ""}});
    CHECK(detect_source(p + "/root.tar").kind == SourceKind::rootfs_tarball);

    write_tar(p + "/root.tgz", {{"usr/", ""}, {"usr/f", "x"}}, ARCHIVE_FILTER_GZIP);
    CHECK(detect_source(p + "/root.tgz").kind == SourceKind::rootfs_tarball);

    // docker save: layer directories first, manifest.json and repositories last.
    write_tar(p + "/docker.tar", {{kHex + "/", ""}, {kHex + "/layer.tar", "not read here"}, {kHex + ".json", "{}"},
                                  {"manifest.json", "[]"}, {"repositories", "{}"}});
    CHECK(detect_source(p + "/docker.tar").kind == SourceKind::docker_archive);
    // Layers wherever manifest.json says (here as `tar -C DIR -cf F .` of a hand-made one writes them).
    write_tar(p + "/docker-named.tar", {{"./", ""}, {"./a/", ""}, {"./a/layer.tar", "x"}, {"./b/layer.tar", "y"},
                                        {"./" + kHex + ".json", "{}"}, {"./manifest.json", "[]"}});
    CHECK(detect_source(p + "/docker-named.tar").kind == SourceKind::docker_archive);

    // An OCI archive: blobs first, oci-layout last; with manifest.json too (newer docker save) the OCI form wins.
    write_tar(p + "/oci.tar", {{"blobs/", ""}, {"blobs/sha256/" + kHex, "{}"}, {"index.json", "{}"}, {"oci-layout", "{}"}});
    CHECK(detect_source(p + "/oci.tar").kind == SourceKind::oci_archive);
    write_tar(p + "/both.tar", {{"blobs/sha256/" + kHex, "{}"}, {"manifest.json", "[]"}, {"index.json", "{}"}, {"oci-layout", "{}"}});
    CHECK(detect_source(p + "/both.tar").kind == SourceKind::oci_archive);

    // A flat rootfs is read to its end: no name settles it, and no image file is at its top.
    write_tar(p + "/flat.tar", {{"blobs/", ""}, {"blobs/x", "x"}, {"bin/", ""}, {"bin/sh", "x"}, {"hello", "x"}});
    CHECK(detect_source(p + "/flat.tar").kind == SourceKind::rootfs_tarball);
}

TEST_CASE("the refusals: empty, not a tar, a broken header before the kind is known") {
    corral::test::TempDir t("corral-image-source-bad");
    const std::string p = t.path();

    write_tar(p + "/empty.tar", {});
    CHECK(usage_error_of(p + "/empty.tar").find("an empty archive; nothing to import") != std::string::npos);

    {
        std::ofstream(p + "/text") << "just some text, no tar at all\n";
    }
    CHECK(usage_error_of(p + "/text").find("expected an OCI layout or archive, a docker save archive or directory, or a rootfs tarball") !=
          std::string::npos);

    // A docker save archive whose last header is broken: every header is read, and that one refused.
    write_tar(p + "/docker-broken.tar", {{kHex + "/", ""}, {kHex + ".json", "{}"}, {"manifest.json", "[]"}, {"repositories", "{}"}});
    corrupt_block(p + "/docker-broken.tar", 512 + 2 * 1024);  // the header of repositories, the last entry
    CHECK(usage_error_of(p + "/docker-broken.tar").find("not a readable tar archive") != std::string::npos);
}

TEST_CASE("a rootfs tarball is decided from its first entries, not by reading every header") {
    corral::test::TempDir t("corral-image-source-sniff");
    const std::string p = t.path();
    // A header far into the archive is broken: the sniff never reads it (the
    // extractor does, and refuses the archive then).
    std::vector<Entry> entries = {{"etc/", ""}, {"etc/d/", ""}};
    for (int i = 0; i < 200; ++i) entries.push_back({"etc/d/f" + std::to_string(i), std::string(600, 'x')});
    write_tar(p + "/root.tar", entries);
    corrupt_block(p + "/root.tar", 1024 + 1536 * 150);  // the header of etc/d/f150
    CHECK(detect_source(p + "/root.tar").kind == SourceKind::rootfs_tarball);
}

TEST_CASE("a registry reference where a path belongs: corral says it does not pull, and how to fetch and import it") {
    for (const char* ref : {"debian:12", "docker://debian:12", "docker.io/library/debian:12", "localhost:5000/team/app:v1.2",
                            "ghcr.io/org/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                            "containers-storage:fedora:40"}) {
        CAPTURE(ref);
        auto hint = registry_reference_hint(ref);
        REQUIRE(hint.has_value());
        CHECK(hint->find("corral does not pull images from registries") == 0);
        CHECK(hint->find("skopeo copy docker://") != std::string::npos);
    }
    CHECK(registry_reference_hint("debian:12")->find("--name debian-12`") != std::string::npos);
    CHECK(registry_reference_hint("debian:12")->find("then --rootfs image:debian-12") != std::string::npos);
    // skopeo's local transports name a path: the path is what corral takes.
    CHECK(*registry_reference_hint("oci:/var/tmp/debian:latest") ==
          "a transport of skopeo's; corral reads the path itself: `corral image import /var/tmp/debian --name NAME`");
    CHECK(registry_reference_hint("docker-archive:/tmp/x.tar")->find("corral image import /tmp/x.tar ") != std::string::npos);
    // Paths and bare names are not references (a tag or digest is required).
    for (const char* path : {"rootfs", "./debian", "/srv/rootfs", "alpine", "images/app.tar", "Debian:12", "a b:1"})
        CHECK_FALSE(registry_reference_hint(path).has_value());
}
