// image/source.hpp — what `corral image import SOURCE` was given.
//
// Decided from the files themselves, never from a name's suffix: a directory
// with oci-layout + index.json is an OCI image layout, one with manifest.json
// a `docker save` directory; a file is read as a tar (libarchive detects any
// compression): with oci-layout at its top an OCI archive (newer `docker
// save` writes both files: the OCI form is used), with manifest.json a
// `docker save` archive, otherwise a plain rootfs tarball (one layer). The
// headers are read only until an entry no image archive holds.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace corral::image {

enum class SourceKind { oci_layout, docker_dir, oci_archive, docker_archive, rootfs_tarball };

// "OCI image layout", "docker save directory", ...
std::string_view describe(SourceKind kind);
// "oci-layout", "docker-save", ... as recorded in the image's JSON.
std::string_view format_name(SourceKind kind);

struct Source {
    SourceKind kind{};
    std::string path;  // absolute
};

// Throws UsageError naming SOURCE and what is accepted: missing, a directory
// that is none of the image forms (a rootfs directory is used as it is with
// --rootfs DIR), a file that is not a tar archive.
Source detect_source(const std::string& source);

// Whether an archive entry (a normalized name) is one no image archive
// holds, so that the archive is a rootfs tarball: three names or more
// ("usr/share/doc") outside blobs/. (Image archives hold their layers as
// "<id>/layer.tar", "<hex>.tar" or "blobs/sha256/<hex>".)
bool settles_rootfs_tarball(std::string_view name);

// When `text` (a --rootfs value or an import SOURCE that is not on disk)
// reads as a registry reference rather than a path (docker://debian:12,
// debian:12, ghcr.io/org/app@sha256:..., an oci:/docker-archive: transport),
// the answer that corral does not pull, with the recipes that fetch it and
// the import that follows; nullopt for anything else.
std::optional<std::string> registry_reference_hint(std::string_view text);

// For `--rootfs DIR`: if DIR is an image rather than a root file system, the
// line that says what it is and how to import it; nullopt otherwise.
std::optional<std::string> image_directory_hint(const std::string& dir);

}  // namespace corral::image
