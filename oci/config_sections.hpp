// oci/config_sections.hpp — the readers of config.json's sections, one file
// each (config_process.cpp, config_mounts.cpp, config_linux.cpp,
// config_resources.cpp). Internal to oci/: read_bundle_config calls them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "oci/bundle_config.hpp"

namespace corral::oci {

// `process` (required for create).
void read_process(const nlohmann::json& process, const MappingPolicy& policy, BundleConfig& out);
// `mounts`: binds and tmpfs, the standard /proc, /sys, /dev entries as corral's own.
void read_mounts(const nlohmann::json& mounts, std::string_view bundle_dir, const MappingPolicy& policy,
                 BundleConfig& out);
// `linux` but its `resources`.
void read_linux(const nlohmann::json& linux_section, const MappingPolicy& policy, BundleConfig& out);
// `linux.resources`.
void read_resources(const nlohmann::json& resources, const MappingPolicy& policy, BundleConfig& out);

// What the readers accept, for the features document (features.cpp): the
// mount options (without values), the capabilities a config may ask for
// (the engines' default set, reduced to none), the namespaces a box has.
std::vector<std::string> recognised_mount_options();
std::vector<std::string> accepted_capabilities();
std::vector<std::string> box_namespace_types();

// A reduction under the policy: a note, or (strict) a refusal of the field.
void reduce_or_refuse(const MappingPolicy& policy, BundleConfig& out, std::string field, std::string text);

// An absolute box path, lexically normalised ("/a/./b/" → "/a/b"); refused
// when relative or when it has a ".." component.
std::string normalise_box_path(const std::string& path, std::string_view field);

// A host path from the config: an absolute one as is, a relative one taken
// against the bundle; refused with a ".." component (no escape from where it
// points), normalised.
std::string host_path_in_bundle(const std::string& path, std::string_view bundle_dir, std::string_view field);

}  // namespace corral::oci
