#include "oci/features.hpp"

#include <nlohmann/json.hpp>

#include "oci/bundle_config.hpp"
#include "oci/config_sections.hpp"
#include "oci/state.hpp"

namespace corral::oci {

std::string features_json(std::string_view corral_version) {
    nlohmann::ordered_json j;
    j["ociVersionMin"] = "1.0.0";
    j["ociVersionMax"] = std::string(kOciVersion);
    // corral runs no hook of a config's (bundle_config.cpp read_hooks).
    j["hooks"] = nlohmann::json::array();
    j["mountOptions"] = recognised_mount_options();
    nlohmann::ordered_json linux_features;
    linux_features["namespaces"] = box_namespace_types();
    // Accepted in a config and reduced to none: the box has no capability.
    linux_features["capabilities"] = accepted_capabilities();
    linux_features["cgroup"] = {{"v1", true}, {"v2", true}, {"systemd", false}, {"systemdUser", false},
                                {"rdma", false}};
    // corral's own filter is always installed; a config's profile is not
    // compiled yet (docs/oci-runtime.md), so no action or operator is listed.
    linux_features["seccomp"] = {{"enabled", true}};
    linux_features["apparmor"] = {{"enabled", false}};
    linux_features["selinux"] = {{"enabled", false}};
    linux_features["intelRdt"] = {{"enabled", false}};
    linux_features["mountExtensions"] = {{"idmap", {{"enabled", false}}}};
    j["linux"] = linux_features;
    // They choose the worker and with it grants and credentials: an engine
    // must not pass them from an untrusted pod spec.
    j["potentiallyUnsafeConfigAnnotations"] = {std::string(kWorkerAnnotation), std::string(kConfigAnnotation)};
    j["annotations"] = {{"io.corral.version", std::string(corral_version)}};
    return j.dump(2) + "\n";
}

}  // namespace corral::oci
