// rootfs/spec_checks.hpp — internal to rootfs/: the checks plan_rootfs makes
// of a RootfsSpec before it plans a single mount. Each throws UsageError
// naming the option, the value and what is allowed. (require_directory and
// check_bind_target, public, are declared in mount_plan.hpp.)
#pragma once

#include <string>
#include <string_view>

#include "rootfs/mount_plan.hpp"

namespace corral::rootfs {

// The agent's name, UID/GID and the box's hostname.
void validate_names(const RootfsSpec& spec);
// No size of 0 (tmpfs reads it as unlimited).
void validate_sizes(const RootfsSpec& spec);
// Each extra file: a normalized absolute path outside /proc, /dev, /sys and
// /workspace, mode within 0777, given once.
void validate_extra_files(const RootfsSpec& spec);
// image:NAME: its layers, root-only directories, at most kMaxImageLayers.
void validate_layers(const RootfsSpec& spec);
// An image's or a DIR's working directory (image_working_dir), made in the
// overlay: absolute, normalised, outside /proc, /dev and /sys.
void validate_working_dir(const RootfsSpec& spec);
// A host directory shown to the box (--workspace, --bind, --ro-bind; a bind may show a regular file).
void check_host_source(std::string_view option, const std::string& source, const RootfsSpec& spec, bool host_mode,
                       const std::string& image_real);
// Every --bind/--ro-bind: source, target, and no two targets nested.
void check_binds(const RootfsSpec& spec, bool host_mode, const std::string& image_real);
// The box's tmpfs mounts: normalised targets by the binds' rule, each once,
// none at or below a bind's target, mode within 07777, a size above zero.
void check_box_tmpfs(const RootfsSpec& spec);

}  // namespace corral::rootfs
