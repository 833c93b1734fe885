// Fuzz target: an image's metadata as an archive may carry it (index.json, a
// manifest, a config, docker save's manifest.json). The first byte picks the
// parser; the rest is the file. Each must either refuse with ImageError or
// return what its callers rely on: digests that name a store directory only
// as sha256:<64 hex>, archive paths relative and without "..", absolute
// WorkingDir, KEY=VALUE Env entries. Entry names and whiteout names too:
// a normalized name never holds "..", "." or an empty part.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "image/extract.hpp"
#include "image/manifest.hpp"
#include "image/whiteout.hpp"

using namespace corral::image;

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

bool plain_relative(const std::string& p) {
    if (p.empty() || p.front() == '/') return false;
    std::size_t pos = 0;
    while (pos <= p.size()) {
        std::size_t next = p.find('/', pos);
        if (next == std::string::npos) next = p.size();
        std::string_view part(p.data() + pos, next - pos);
        if (part.empty() || part == "..") return false;
        pos = next + 1;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        switch (data[0] % 5) {
            case 0: require(is_sha256_digest(pick_manifest(text, std::nullopt).digest)); break;
            case 1: {
                Manifest m = parse_manifest(text);
                require(is_sha256_digest(m.config.digest));
                for (const auto& l : m.layers) require(is_sha256_digest(l.digest));
                break;
            }
            case 2: {
                ImageConfig c = parse_config(text);
                require(c.working_dir.empty() || c.working_dir.front() == '/');
                for (const auto& e : c.env) require(e.find('=') != std::string::npos && e.front() != '=');
                for (const auto& d : c.diff_ids) require(is_sha256_digest(d));
                break;
            }
            case 3: {
                DockerImage d = parse_docker_manifest(text);
                require(plain_relative(d.config_path));
                for (const auto& l : d.layer_paths) require(plain_relative(l));
                break;
            }
            case 4: {
                std::string n = normalize_entry_name(text, "fuzz");
                require(n.empty() || plain_relative(n));
                require(n.find("/./") == std::string::npos && n != "." && !n.starts_with("./"));
                Whiteout w = classify_whiteout(text);
                if (w.kind == WhiteoutKind::deletion) require(!w.name.empty() && w.name != "." && w.name != "..");
                break;
            }
        }
    } catch (const ImageError&) {
    }
    return 0;
}
