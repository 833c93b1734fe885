#include "rootfs/trust_store.hpp"

#include <algorithm>

#include "base/regular_file.hpp"

namespace corral::rootfs {

std::vector<CaBundle> find_ca_bundles(const std::string& image_root, std::size_t max_bytes) {
    std::vector<CaBundle> found;
    for (std::string_view path : kCaBundlePaths) {
        auto f = read_regular_file_resolved(
            {"the image's CA bundle", std::string(path), PathWalk::in_root, image_root, max_bytes});
        if (!f) continue;
        bool seen = std::any_of(found.begin(), found.end(), [&](const CaBundle& b) { return b.path == f->path; });
        if (!seen) found.push_back({std::move(f->path), std::move(f->text)});
    }
    return found;
}

std::string append_ca(std::string bundle, const std::string& ca_pem) {
    if (!bundle.empty() && bundle.back() != '\n') bundle += '\n';
    return bundle + ca_pem;
}

}  // namespace corral::rootfs
