// oci/runtime/seccomp_profile.hpp — a bundle's linux.seccomp as the filter
// corral stacks after its own on every command of the box
// (supervisor::SeccompFilter, SandboxSpec::stacked_seccomp).
//
// Two filters both run and the stricter verdict wins: the bundle's profile
// (podman's and containerd's default allow-lists, a pod's own) denies what
// it denies, and can never allow what corral's policy denies. Read as runc
// reads it: the actions SCMP_ACT_ALLOW, LOG, ERRNO (errnoRet, else EPERM),
// TRACE (no tracer: its errno), TRAP, KILL (= KILL_THREAD), KILL_THREAD,
// KILL_PROCESS; the comparisons SCMP_CMP_NE, LT, LE, EQ, GE, GT, MASKED_EQ
// (value the mask, valueTwo the datum). Only the native architecture's
// numbers are filtered (corral's filter kills every other ABI first);
// `architectures` and `flags` are noted, not applied. SCMP_ACT_NOTIFY and
// a listener are refused when config.json is read (config_linux.cpp).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "oci/bundle_config.hpp"
#include "supervisor/seccomp_policy.hpp"

namespace corral::oci {

// Throws UsageError naming the field ("linux.seccomp.syscalls[3].action")
// for an action, comparison or argument corral does not know.
supervisor::SeccompFilter seccomp_filter_of(const nlohmann::json& profile, std::vector<ConfigNote>& notes);

}  // namespace corral::oci
