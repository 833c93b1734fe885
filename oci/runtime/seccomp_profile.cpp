// oci/runtime/seccomp_profile.cpp — linux.seccomp read into a stacked filter.
#include "oci/runtime/seccomp_profile.hpp"

#include <string>
#include <string_view>
#include <utility>

#include "base/strict_json.hpp"
#include "oci/config_fields.hpp"

namespace corral::oci {

namespace {

using supervisor::FilterAction;
using supervisor::FilterVerdict;

constexpr std::pair<std::string_view, FilterVerdict> kActions[] = {
    {"SCMP_ACT_ALLOW", FilterVerdict::allow},          {"SCMP_ACT_LOG", FilterVerdict::log},
    {"SCMP_ACT_ERRNO", FilterVerdict::errno_},         {"SCMP_ACT_TRACE", FilterVerdict::trace},
    {"SCMP_ACT_TRAP", FilterVerdict::trap},            {"SCMP_ACT_KILL", FilterVerdict::kill_thread},
    {"SCMP_ACT_KILL_THREAD", FilterVerdict::kill_thread}, {"SCMP_ACT_KILL_PROCESS", FilterVerdict::kill_process},
};

constexpr std::pair<std::string_view, supervisor::FilterOp> kOps[] = {
    {"SCMP_CMP_NE", supervisor::FilterOp::ne}, {"SCMP_CMP_LT", supervisor::FilterOp::lt},
    {"SCMP_CMP_LE", supervisor::FilterOp::le}, {"SCMP_CMP_EQ", supervisor::FilterOp::eq},
    {"SCMP_CMP_GE", supervisor::FilterOp::ge}, {"SCMP_CMP_GT", supervisor::FilterOp::gt},
    {"SCMP_CMP_MASKED_EQ", supervisor::FilterOp::masked_eq},
};

template <typename T, std::size_t N>
T look_up(const std::pair<std::string_view, T> (&table)[N], const std::string& name, std::string_view path,
          std::string_view allowed) {
    for (const auto& [text, value] : table)
        if (text == name) return value;
    refuse_field(path, json_quoted(name) + " is not one corral knows; allowed: " + std::string(allowed));
}

// An action and its errno: errnoRet (or defaultErrnoRet) for ERRNO and
// TRACE, EPERM when not given, as runc.
FilterAction action_of(ObjectFields& f, std::string_view action_key, std::string_view errno_key) {
    FilterAction a;
    a.verdict = look_up(kActions, as_string(f.require(action_key), f.path_of(action_key)), f.path_of(action_key),
                        "SCMP_ACT_ALLOW, LOG, ERRNO, TRACE, TRAP, KILL, KILL_THREAD, KILL_PROCESS");
    if (const auto* e = f.find(errno_key)) {
        const std::uint32_t value = as_u32(*e, f.path_of(errno_key));
        if (value > 4095) refuse_field(f.path_of(errno_key), "an errno is at most 4095");
        a.errno_value = static_cast<int>(value);
    }
    return a;
}

supervisor::FilterArg arg_of(const nlohmann::json& j, std::string path, std::vector<ConfigNote>& notes) {
    ObjectFields f(j, std::move(path), notes);
    supervisor::FilterArg a;
    a.index = as_u32(f.require("index"), f.path_of("index"));
    if (a.index > 5) refuse_field(f.path_of("index"), "a system call has arguments 0 to 5");
    a.value = as_u64(f.require("value"), f.path_of("value"));
    if (const auto* two = f.find("valueTwo")) a.value_two = as_u64(*two, f.path_of("valueTwo"));
    a.op = look_up(kOps, as_string(f.require("op"), f.path_of("op")), f.path_of("op"),
                   "SCMP_CMP_NE, LT, LE, EQ, GE, GT, MASKED_EQ");
    f.finish();
    return a;
}

supervisor::FilterRule rule_of(const nlohmann::json& j, std::string path, std::vector<ConfigNote>& notes) {
    ObjectFields f(j, std::move(path), notes);
    supervisor::FilterRule rule;
    rule.syscalls = as_string_array(f.require("names"), f.path_of("names"));
    if (rule.syscalls.empty()) refuse_field(f.path_of("names"), "a rule names at least one system call");
    rule.action = action_of(f, "action", "errnoRet");
    if (const auto* args = f.find("args")) {
        const auto& list = as_array(*args, f.path_of("args"));
        for (std::size_t i = 0; i < list.size(); ++i)
            rule.args.push_back(arg_of(list[i], index_path(f.path_of("args"), i), notes));
    }
    f.finish();
    return rule;
}

}  // namespace

supervisor::SeccompFilter seccomp_filter_of(const nlohmann::json& profile, std::vector<ConfigNote>& notes) {
    ObjectFields f(profile, "linux.seccomp", notes);
    supervisor::SeccompFilter filter;
    filter.default_action = action_of(f, "defaultAction", "defaultErrnoRet");
    if (const auto* arches = f.find("architectures"); arches && !is_empty_value(*arches))
        f.note(NoteKind::reduced, "architectures",
               "the native architecture's calls are filtered; corral's own filter kills every other ABI");
    f.ignore_harmless("flags", "the filter's flags (log, spec_allow, tsync) are not set");
    f.find("listenerPath");
    f.find("listenerMetadata");
    if (const auto* rules = f.find("syscalls")) {
        const auto& list = as_array(*rules, f.path_of("syscalls"));
        for (std::size_t i = 0; i < list.size(); ++i)
            filter.rules.push_back(rule_of(list[i], index_path(f.path_of("syscalls"), i), notes));
    }
    f.finish();
    return filter;
}

}  // namespace corral::oci
