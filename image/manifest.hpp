// image/manifest.hpp — what an image's metadata says: the OCI index, manifest
// and config, and `docker save`'s manifest.json.
//
// Pure parsing (nlohmann/json), no file system: each function takes the
// file's text and throws ImageError naming the file, the field and what is
// accepted. The importer (image/store.hpp) reads the files and checks every
// digest named here against the bytes it reads.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace corral::image {

// A malformed or unsupported image: the message names what and where.
class ImageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// "sha256:" followed by 64 lowercase hex digits: the only digest accepted
// (it also names a directory of the store, so nothing else may pass).
bool is_sha256_digest(std::string_view digest);
// The 64 hex digits of a digest is_sha256_digest accepted.
std::string digest_hex(std::string_view digest);

// A blob named by its digest (a layer or a config).
struct Descriptor {
    std::string media_type;
    std::string digest;     // sha256:<hex>
    std::uint64_t size = 0;
};

// index.json of an OCI layout: the image manifest it lists. With several,
// `ref` (the org.opencontainers.image.ref.name annotation) picks one, else
// the one for linux/amd64, else the only one; anything else is refused.
Descriptor pick_manifest(std::string_view index_json, const std::optional<std::string>& ref);

// An OCI (or Docker schema 2) image manifest: its config and its layers,
// bottom layer first.
struct Manifest {
    Descriptor config;
    std::vector<Descriptor> layers;
};
Manifest parse_manifest(std::string_view manifest_json);

// The parts of the image's config corral acts on, and one line for each
// setting it reads but does not honour.
struct ImageConfig {
    std::vector<std::string> env;         // "KEY=VALUE", in order
    std::string working_dir;              // "" = none
    std::vector<std::string> entrypoint;
    std::vector<std::string> cmd;
    std::vector<std::string> diff_ids;    // rootfs.diff_ids: each layer's uncompressed digest
    std::vector<std::string> ignored;     // "User \"1000\" is ignored: the command runs as corral's agent"
};
ImageConfig parse_config(std::string_view config_json);

// manifest.json of `docker save`: its first image (a save of one image).
struct DockerImage {
    std::string config_path;              // "<hex>.json" or "blobs/sha256/<hex>"
    std::vector<std::string> layer_paths; // bottom first, relative to the archive's root
    std::vector<std::string> repo_tags;
};
DockerImage parse_docker_manifest(std::string_view manifest_json);

// The layer's compression, from an OCI media type ("...tar+gzip" -> "gzip");
// "" for an uncompressed tar. Refuses non-distributable and unknown types.
std::string layer_compression(const Descriptor& layer);

}  // namespace corral::image
