#include "image/source.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <regex>

#include "base/sys_error.hpp"
#include "image/extract.hpp"
#include "image/libarchive.hpp"
#include "image/manifest.hpp"

namespace corral::image {

namespace {

bool is_file(const std::string& p) {
    struct stat st {};
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}


}  // namespace

bool settles_rootfs_tarball(std::string_view name) {
    // docker save writes "<id>/layer.tar" or "blobs/sha256/<hex>", podman
    // "<hex>.tar", an OCI archive "blobs/<alg>/<hex>": only blobs/ goes
    // deeper than two names.
    const auto first = name.find('/');
    if (first == std::string_view::npos || name.substr(0, first) == "blobs") return false;
    return name.find('/', first + 1) != std::string_view::npos;
}

namespace {

// Which of the image forms' top-level files the tar holds, from its headers.
// Read only until an entry settles it as a rootfs tarball: a layer of 60 000
// files is decided from its first entries, not by reading every header (the
// extractor reads and judges them all).
SourceKind classify_archive(const std::string& path) {
    ArchiveReader a(libarchive().archive_read_new());
    libarchive().archive_read_support_filter_all(a.get());
    libarchive().archive_read_support_format_tar(a.get());
    libarchive().archive_read_support_format_gnutar(a.get());
    if (libarchive().archive_read_open_filename(a.get(), path.c_str(), 1 << 16) != ARCHIVE_OK)
        throw UsageError(path + ": cannot be read as a tar archive (" + libarchive().archive_error_string(a.get()) +
                         "); expected an OCI layout or archive, a docker save archive or directory, or a rootfs tarball");
    bool oci = false, docker = false;
    std::uint64_t entries = 0;
    for (;;) {
        struct archive_entry* e = nullptr;
        int r = libarchive().archive_read_next_header(a.get(), &e);
        if (r == ARCHIVE_EOF) break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
            throw UsageError(path + ": not a readable tar archive (" + std::string(libarchive().archive_error_string(a.get())) +
                             "); expected an OCI layout or archive, a docker save archive or directory, or a rootfs tarball");
        ++entries;
        const char* raw = libarchive().archive_entry_pathname(e);
        if (raw == nullptr) continue;
        std::string name;
        try {
            name = normalize_entry_name(raw, path);
        } catch (const ImageError&) {
            continue;  // judged (and refused) by the extractor
        }
        if (name == "oci-layout") oci = true;
        if (name == "manifest.json") docker = true;
        if (!oci && !docker && settles_rootfs_tarball(name)) return SourceKind::rootfs_tarball;
    }
    if (entries == 0) throw UsageError(path + ": an empty archive; nothing to import");
    if (oci) return SourceKind::oci_archive;
    if (docker) return SourceKind::docker_archive;
    return SourceKind::rootfs_tarball;
}

}  // namespace

std::string_view describe(SourceKind kind) {
    switch (kind) {
        case SourceKind::oci_layout: return "OCI image layout";
        case SourceKind::docker_dir: return "docker save directory";
        case SourceKind::oci_archive: return "OCI image archive";
        case SourceKind::docker_archive: return "docker save archive";
        case SourceKind::rootfs_tarball: return "rootfs tarball";
    }
    return "?";
}

std::string_view format_name(SourceKind kind) {
    switch (kind) {
        case SourceKind::oci_layout: return "oci-layout";
        case SourceKind::docker_dir: return "docker-save-dir";
        case SourceKind::oci_archive: return "oci-archive";
        case SourceKind::docker_archive: return "docker-save";
        case SourceKind::rootfs_tarball: return "rootfs-tarball";
    }
    return "?";
}

std::optional<std::string> image_directory_hint(const std::string& dir) {
    if (is_file(dir + "/oci-layout") && is_file(dir + "/index.json"))
        return "this is an OCI image layout, not a root file system: `corral image import " + dir +
               " --name NAME`, then --rootfs image:NAME";
    if (is_file(dir + "/manifest.json"))
        return "this is a `docker save` directory, not a root file system: `corral image import " + dir +
               " --name NAME`, then --rootfs image:NAME";
    return std::nullopt;
}

namespace {

// The transports skopeo and podman name images with; none of them is a path.
constexpr std::string_view kTransports[] = {"docker://", "docker-daemon:", "containers-storage:"};

// NAME:TAG or NAME@sha256:HEX, NAME as a registry spells it (lower case,
// components joined by '/', an optional host[:port] first). A tag or digest
// is required: a bare "alpine" is as likely a directory that is not there.
bool reads_as_reference(std::string_view text) {
    static const std::regex reference(
        R"(^([a-z0-9.-]+(:[0-9]+)?/)?[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*)"
        R"((:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[0-9a-f]{64})$)");
    return std::regex_match(text.begin(), text.end(), reference);
}

// "debian-12" of "docker.io/library/debian:12": a name `corral image import --name` takes.
std::string suggested_name(std::string_view reference) {
    std::string_view last = reference.substr(reference.rfind('/') + 1);
    std::string name;
    for (char c : last.substr(0, last.find('@'))) name += (c == ':' ? '-' : c);
    return name;
}

}  // namespace

std::optional<std::string> registry_reference_hint(std::string_view text) {
    // skopeo's transports that name a local path (oci:DIR[:TAG], oci-archive:FILE, docker-archive:FILE).
    for (std::string_view local : {"oci:", "oci-archive:", "docker-archive:"})
        if (text.starts_with(local)) {
            std::string_view path = text.substr(local.size());
            if (local == "oci:" && path.find(':') != std::string_view::npos) path = path.substr(0, path.find(':'));
            return "a transport of skopeo's; corral reads the path itself: `corral image import " + std::string(path) +
                   " --name NAME`";
        }
    std::string_view reference = text;
    bool transport = false;
    for (std::string_view t : kTransports)
        if (reference.starts_with(t)) {
            reference.remove_prefix(t.size());
            transport = true;
        }
    if (!transport && !reads_as_reference(reference)) return std::nullopt;
    const std::string ref(reference), name = suggested_name(reference);
    return "corral does not pull images from registries; fetch it with another tool, then import it: `skopeo copy "
           "docker://" + ref + " oci:/var/tmp/" + name + ":latest && corral image import /var/tmp/" + name +
           " --name " + name + "` (or `docker save " + ref + " -o " + name + ".tar && corral image import " + name +
           ".tar --name " + name + "`), then --rootfs image:" + name;
}

Source detect_source(const std::string& source) {
    if (source.empty()) throw UsageError("SOURCE: empty; expected an image layout, archive or tarball");
    const std::string path = std::filesystem::absolute(source).lexically_normal().string();
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 && errno == ENOENT)
        if (auto hint = registry_reference_hint(source)) throw UsageError(source + ": " + *hint);
    if (stat(path.c_str(), &st) != 0)
        throw UsageError(source + ": " + errno_text(errno) +
                         "; expected an OCI layout or archive, a docker save archive or directory, or a rootfs tarball");
    if (S_ISDIR(st.st_mode)) {
        if (is_file(path + "/oci-layout") && is_file(path + "/index.json")) return {SourceKind::oci_layout, path};
        if (is_file(path + "/manifest.json")) return {SourceKind::docker_dir, path};
        throw UsageError(source + ": a directory without oci-layout + index.json (an OCI layout) or manifest.json "
                                  "(docker save); an unpacked root file system is used as it is with --rootfs DIR, "
                                  "or import it as a tarball (tar -C DIR -cf root.tar .)");
    }
    if (!S_ISREG(st.st_mode)) throw UsageError(source + ": neither a directory nor a regular file");
    return {classify_archive(path), path};
}

}  // namespace corral::image
