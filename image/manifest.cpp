#include "image/manifest.hpp"

#include <nlohmann/json.hpp>

namespace corral::image {

using nlohmann::json;

namespace {

json parse_json(std::string_view text, std::string_view file) {
    try {
        json j = json::parse(text.begin(), text.end());
        if (!j.is_object()) throw ImageError(std::string(file) + ": expected a JSON object at the top");
        return j;
    } catch (const json::exception& e) {
        throw ImageError(std::string(file) + ": not valid JSON (" + e.what() + ")");
    }
}

std::string string_field(const json& j, std::string_view file, const char* key, bool required) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
        if (required) throw ImageError(std::string(file) + ": missing \"" + key + "\"");
        return {};
    }
    if (!it->is_string()) throw ImageError(std::string(file) + ": \"" + key + "\" must be a string");
    return it->get<std::string>();
}

std::vector<std::string> string_list(const json& j, std::string_view file, const char* key) {
    std::vector<std::string> out;
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return out;
    if (!it->is_array()) throw ImageError(std::string(file) + ": \"" + key + "\" must be a list of strings");
    for (const auto& v : *it) {
        if (!v.is_string()) throw ImageError(std::string(file) + ": \"" + key + "\" must be a list of strings");
        out.push_back(v.get<std::string>());
    }
    return out;
}

Descriptor descriptor(const json& j, std::string_view where) {
    if (!j.is_object()) throw ImageError(std::string(where) + ": expected a descriptor object");
    Descriptor d;
    d.media_type = string_field(j, where, "mediaType", false);
    d.digest = string_field(j, where, "digest", true);
    if (!is_sha256_digest(d.digest))
        throw ImageError(std::string(where) + ": digest \"" + d.digest + "\": expected sha256:<64 lowercase hex digits>");
    auto size = j.find("size");
    if (size == j.end() || !size->is_number_unsigned())
        throw ImageError(std::string(where) + ": \"size\" must be a non-negative integer");
    d.size = size->get<std::uint64_t>();
    return d;
}

// A path inside the archive: relative, no "..", no empty part.
bool is_plain_relative(std::string_view p) {
    if (p.empty() || p.front() == '/') return false;
    std::size_t pos = 0;
    while (pos <= p.size()) {
        std::size_t next = p.find('/', pos);
        if (next == std::string_view::npos) next = p.size();
        std::string_view part = p.substr(pos, next - pos);
        if (part.empty() || part == "..") return false;
        pos = next + 1;
    }
    return true;
}

std::string archive_path(const json& v, std::string_view where) {
    if (!v.is_string()) throw ImageError(std::string(where) + ": expected a string path");
    std::string p = v.get<std::string>();
    if (!is_plain_relative(p))
        throw ImageError(std::string(where) + ": \"" + p + "\": expected a relative path inside the archive, without \"..\"");
    return p;
}

}  // namespace

bool is_sha256_digest(std::string_view d) {
    constexpr std::string_view prefix = "sha256:";
    if (d.size() != prefix.size() + 64 || d.substr(0, prefix.size()) != prefix) return false;
    for (char c : d.substr(prefix.size()))
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

std::string digest_hex(std::string_view digest) { return std::string(digest.substr(7)); }

Descriptor pick_manifest(std::string_view index_json, const std::optional<std::string>& ref) {
    const json index = parse_json(index_json, "index.json");
    auto manifests = index.find("manifests");
    if (manifests == index.end() || !manifests->is_array() || manifests->empty())
        throw ImageError("index.json: \"manifests\" must list at least one image manifest");
    struct Candidate {
        Descriptor d;
        std::string ref, platform;
    };
    std::vector<Candidate> all;
    for (std::size_t i = 0; i < manifests->size(); ++i) {
        const json& m = (*manifests)[i];
        Candidate c{descriptor(m, "index.json manifests[" + std::to_string(i) + "]"), {}, {}};
        if (auto a = m.find("annotations"); a != m.end() && a->is_object())
            if (auto r = a->find("org.opencontainers.image.ref.name"); r != a->end() && r->is_string()) c.ref = *r;
        if (auto p = m.find("platform"); p != m.end() && p->is_object())
            c.platform = p->value("os", "") + "/" + p->value("architecture", "");
        if (c.d.media_type == "application/vnd.oci.image.index.v1+json")
            throw ImageError("index.json manifests[" + std::to_string(i) +
                             "]: a nested image index is not supported; export one platform's image");
        all.push_back(std::move(c));
    }
    if (ref) {
        for (const auto& c : all)
            if (c.ref == *ref) return c.d;
        std::string known;
        for (const auto& c : all) known += (known.empty() ? "" : ", ") + (c.ref.empty() ? "(unnamed)" : c.ref);
        throw ImageError("index.json: no manifest named \"" + *ref + "\"; it has: " + known);
    }
    if (all.size() == 1) return all.front().d;
    for (const auto& c : all)
        if (c.platform == "linux/amd64") return c.d;
    throw ImageError("index.json lists " + std::to_string(all.size()) +
                     " manifests and none for linux/amd64: copy the one to import into a layout of its own "
                     "(skopeo copy oci:DIR:REF oci:NEW)");
}

Manifest parse_manifest(std::string_view manifest_json) {
    const json m = parse_json(manifest_json, "image manifest");
    if (auto v = m.find("schemaVersion"); v == m.end() || !v->is_number_integer() || v->get<int>() != 2)
        throw ImageError("image manifest: \"schemaVersion\" must be 2");
    auto cfg = m.find("config");
    if (cfg == m.end()) throw ImageError("image manifest: missing \"config\"");
    Manifest out;
    out.config = descriptor(*cfg, "image manifest config");
    auto layers = m.find("layers");
    if (layers == m.end() || !layers->is_array())
        throw ImageError("image manifest: \"layers\" must be a list of layer descriptors");
    for (std::size_t i = 0; i < layers->size(); ++i)
        out.layers.push_back(descriptor((*layers)[i], "image manifest layers[" + std::to_string(i) + "]"));
    return out;
}

ImageConfig parse_config(std::string_view config_json) {
    const json c = parse_json(config_json, "image config");
    ImageConfig out;
    if (auto rootfs = c.find("rootfs"); rootfs != c.end() && rootfs->is_object())
        out.diff_ids = string_list(*rootfs, "image config rootfs", "diff_ids");
    for (const auto& d : out.diff_ids)
        if (!is_sha256_digest(d)) throw ImageError("image config rootfs.diff_ids: \"" + d + "\": expected sha256:<hex>");
    auto cfg = c.find("config");
    if (cfg == c.end() || cfg->is_null()) return out;
    if (!cfg->is_object()) throw ImageError("image config: \"config\" must be an object");
    const std::string where = "image config";
    out.env = string_list(*cfg, where, "Env");
    for (const auto& e : out.env)
        if (e.find('=') == std::string::npos || e.front() == '=')
            throw ImageError("image config Env: \"" + e + "\": expected KEY=VALUE");
    out.working_dir = string_field(*cfg, where, "WorkingDir", false);
    if (!out.working_dir.empty() && out.working_dir.front() != '/')
        throw ImageError("image config WorkingDir \"" + out.working_dir + "\": expected an absolute path");
    out.entrypoint = string_list(*cfg, where, "Entrypoint");
    out.cmd = string_list(*cfg, where, "Cmd");
    // Read, shown, and not honoured: corral decides who runs, what is
    // reachable and what is kept.
    if (auto user = string_field(*cfg, where, "User", false); !user.empty())
        out.ignored.push_back("User \"" + user + "\" is ignored: the command runs as corral's unprivileged agent");
    if (auto p = cfg->find("ExposedPorts"); p != cfg->end() && p->is_object() && !p->empty())
        out.ignored.push_back("ExposedPorts is ignored: the box has no network but its gateway");
    if (auto v = cfg->find("Volumes"); v != cfg->end() && v->is_object() && !v->empty())
        out.ignored.push_back("Volumes is ignored: only --workspace is bound into the box");
    if (auto h = cfg->find("Healthcheck"); h != cfg->end() && h->is_object() && !h->empty())
        out.ignored.push_back("Healthcheck is ignored: corral runs one command and reports its exit status");
    return out;
}

DockerImage parse_docker_manifest(std::string_view manifest_json) {
    json m;
    try {
        m = json::parse(manifest_json.begin(), manifest_json.end());
    } catch (const json::exception& e) {
        throw ImageError(std::string("manifest.json: not valid JSON (") + e.what() + ")");
    }
    if (!m.is_array() || m.empty()) throw ImageError("manifest.json: expected a list with one image (docker save IMAGE)");
    if (m.size() > 1)
        throw ImageError("manifest.json lists " + std::to_string(m.size()) + " images: save one image per archive");
    const json& img = m.front();
    if (!img.is_object()) throw ImageError("manifest.json: expected an object per image");
    DockerImage out;
    auto cfg = img.find("Config");
    if (cfg == img.end()) throw ImageError("manifest.json: missing \"Config\"");
    out.config_path = archive_path(*cfg, "manifest.json Config");
    auto layers = img.find("Layers");
    if (layers == img.end() || !layers->is_array()) throw ImageError("manifest.json: \"Layers\" must be a list of paths");
    for (std::size_t i = 0; i < layers->size(); ++i)
        out.layer_paths.push_back(archive_path((*layers)[i], "manifest.json Layers[" + std::to_string(i) + "]"));
    out.repo_tags = string_list(img, "manifest.json", "RepoTags");
    return out;
}

std::string layer_compression(const Descriptor& layer) {
    const std::string& t = layer.media_type;
    if (t.find("nondistributable") != std::string::npos || t.find("foreign") != std::string::npos)
        throw ImageError("layer " + layer.digest + ": media type " + t +
                         " is a non-distributable layer whose content is not in the image; corral cannot import it");
    auto ends = [&](std::string_view s) { return t.size() >= s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0; };
    if (t == "application/vnd.oci.image.layer.v1.tar" || t == "application/vnd.docker.image.rootfs.diff.tar") return "";
    if (ends("tar+gzip") || t == "application/vnd.docker.image.rootfs.diff.tar.gzip") return "gzip";
    if (ends("tar+zstd")) return "zstd";
    throw ImageError("layer " + layer.digest + ": media type \"" + t +
                     "\": expected an OCI or Docker layer tar (plain, +gzip or +zstd)");
}

}  // namespace corral::image
