#include "run/trust.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agents/agent_profile.hpp"
#include "base/fd.hpp"
#include "rootfs/mount_plan.hpp"
#include "rootfs/trust_store.hpp"
#include "run/bridge.hpp"

namespace corral::run {

TrustFiles find_trust_files(const RunPlan& plan, const std::string& ca_pem) {
    const auto& spec = plan.spec;
    TrustFiles out;
    if (ca_pem.empty()) {
        out.proxy_env = agents::proxy_environment("", run::bridge_port);
        return out;
    }
    out.files.push_back({kCaInBox, ca_pem, 0644});
    // Every bundle gets corral's CA in the overlay (the image or host stays
    // untouched): image mode, each CA bundle the image has (rootfs/trust_store:
    // Debian, Fedora/RHEL, openSUSE, Alpine names, resolved inside the image,
    // non-blocking, bounded, so an image can neither make root read a host file
    // nor hang it); an image without any gets the host's roots at the Debian
    // path, so tunnelled hosts still verify. Host mode shows the host's
    // /etc/ssl/certs, so its bundle there is the one to overlay.
    std::vector<rootfs::CaBundle> bundles;
    bool image = !std::holds_alternative<names::HostRootfs>(spec.rootfs.source);
    // image:NAME: each layer, top first; a path a higher layer has wins.
    for (const auto& dir : rootfs::image_lookup_dirs(spec.rootfs))
        for (auto& b : rootfs::find_ca_bundles(dir, 16u << 20))
            if (std::none_of(bundles.begin(), bundles.end(), [&](const rootfs::CaBundle& x) { return x.path == b.path; }))
                bundles.push_back(std::move(b));
    if (bundles.empty() && std::filesystem::is_regular_file(kBundleInBox))
        bundles.push_back({kBundleInBox, read_optional_file(kBundleInBox)});
    if (bundles.empty() && image) bundles.push_back({kBundleInBox, ""});
    for (const auto& b : bundles) out.files.push_back({b.path, rootfs::append_ca(b.pem, ca_pem), 0644});
    // Host mode without a host bundle: the CA alone is the store.
    auto env = agents::proxy_environment(bundles.empty() ? kCaInBox : bundles.front().path, run::bridge_port);
    env.emplace_back("NODE_EXTRA_CA_CERTS", kCaInBox);  // later wins: only the extra cert
    out.proxy_env = std::move(env);
    return out;
}

std::string read_optional_file(const std::string& path) {
    // A CA bundle (the host's is ~200 KiB): 16 MiB is far past any real one.
    return read_whole_file({path, 16u << 20}).value_or(std::string());
}

}  // namespace corral::run
