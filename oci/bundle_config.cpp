#include "oci/bundle_config.hpp"

#include <array>
#include <filesystem>

#include "base/strict_json.hpp"
#include "base/sys_error.hpp"
#include "names/identity.hpp"
#include "oci/config_fields.hpp"
#include "oci/config_sections.hpp"

namespace corral::oci {

std::string_view to_string(NoteKind kind) {
    switch (kind) {
        case NoteKind::mapped: return "mapped";
        case NoteKind::reduced: return "reduced";
        case NoteKind::replaced: return "replaced";
        case NoteKind::ignored: return "ignored";
    }
    return "?";
}

void reduce_or_refuse(const MappingPolicy& policy, BundleConfig& out, std::string field, std::string text) {
    if (policy.strict) refuse_field(field, text + " (refused: the mapping policy is strict)");
    out.notes.push_back(ConfigNote{NoteKind::reduced, std::move(field), std::move(text)});
}

namespace {

bool has_dotdot(std::string_view path) {
    for (const auto& part : std::filesystem::path(path))
        if (part == "..") return true;
    return false;
}

std::string lexical_normal(const std::string& path) {
    std::string norm = std::filesystem::path(path).lexically_normal().string();
    while (norm.size() > 1 && norm.back() == '/') norm.pop_back();
    return norm;
}

}  // namespace

std::string normalise_box_path(const std::string& path, std::string_view field) {
    if (path.empty() || path.front() != '/') refuse_field(field, "\"" + path + "\": expected an absolute path");
    if (has_dotdot(path)) refuse_field(field, "\"" + path + "\": a \"..\" component is not allowed");
    return lexical_normal(path);
}

std::string host_path_in_bundle(const std::string& path, std::string_view bundle_dir, std::string_view field) {
    if (path.empty()) refuse_field(field, "empty; expected a path (relative ones are taken against the bundle)");
    if (has_dotdot(path))
        refuse_field(field, json_quoted(path) + ": a \"..\" component is not allowed (it could point out of where "
                                                "it seems to)");
    if (path.front() == '/') return lexical_normal(path);
    return lexical_normal(std::string(bundle_dir) + "/" + path);
}

namespace {

// 1.0.x, 1.1.x and 1.2.x, with or without a pre-release suffix ("1.0.2-dev",
// "1.1.0-rc.1"): the versions whose fields corral knows.
void check_oci_version(const std::string& v) {
    std::size_t i = 0;
    std::array<unsigned long, 3> parts{};
    for (std::size_t n = 0; n < 3; ++n) {
        std::size_t start = i;
        while (i < v.size() && v[i] >= '0' && v[i] <= '9' && i - start < 6) ++i;
        bool dot_next = n < 2;
        if (i == start || (dot_next && (i >= v.size() || v[i] != '.')))
            refuse_field("ociVersion", json_quoted(v) + ": expected a version such as \"1.2.0\"");
        parts[n] = std::stoul(v.substr(start, i - start));
        if (dot_next) ++i;
    }
    if (i != v.size() && v[i] != '-' && v[i] != '+')
        refuse_field("ociVersion", json_quoted(v) + ": expected a version such as \"1.2.0\"");
    if (parts[0] != 1 || parts[1] > 2)
        refuse_field("ociVersion", json_quoted(v) + ": corral reads runtime spec 1.0, 1.1 and 1.2 configs");
}

void read_root(const nlohmann::json& root, std::string_view bundle_dir, BundleConfig& out) {
    ObjectFields f(root, "root", out.notes);
    out.root_path = host_path_in_bundle(as_string(f.require("path"), "root.path"), bundle_dir, "root.path");
    if (out.root_path == "/") refuse_field("root.path", "the host's / cannot be a box's root");
    out.root_readonly = f.boolean("readonly").value_or(false);
    if (!out.root_readonly)
        out.notes.push_back({NoteKind::mapped, "root.readonly",
                             "a writable root: the box writes into corral's capped scratch layer over root.path, "
                             "which stays as it was"});
    f.finish();
}

void read_annotations(const nlohmann::json& annotations, BundleConfig& out) {
    if (!annotations.is_object()) refuse_field("annotations", "expected an object, got " + json_type_name(annotations));
    for (const auto& [key, value] : annotations.items()) {
        const std::string path = "annotations[" + json_quoted(key) + "]";
        out.annotations[key] = as_string(value, path);
    }
    if (auto it = out.annotations.find(std::string(kWorkerAnnotation)); it != out.annotations.end()) {
        if (Problem bad = names::check_worker_name(it->second))
            refuse_field("annotations[\"io.corral.worker\"]", bad->problem);
        out.worker = it->second;
    }
    if (auto it = out.annotations.find(std::string(kConfigAnnotation)); it != out.annotations.end())
        out.config_dir = normalise_box_path(it->second, "annotations[\"io.corral.config\"]");
}

// Hooks run programs as root on the host around the box's life: corral runs
// none of a config's.
void read_hooks(const nlohmann::json& hooks, BundleConfig& out) {
    ObjectFields f(hooks, "hooks", out.notes);
    for (std::string_view kind :
         {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"})
        f.refuse_unless_empty(kind, "corral runs no hook (a hook is a host program run as root beside the box); "
                                    "allowed: none or an empty list");
    f.finish();
}

void read_top_level(const nlohmann::json& doc, std::string_view bundle_dir, const MappingPolicy& policy,
                    BundleConfig& out) {
    ObjectFields f(doc, "", out.notes);
    out.oci_version = as_string(f.require("ociVersion"), "ociVersion");
    check_oci_version(out.oci_version);
    read_root(f.require("root"), bundle_dir, out);
    read_process(f.require("process"), policy, out);
    if (auto h = f.string("hostname")) out.hostname = *h;
    f.ignore_harmless("domainname", "the box's NIS domain name stays empty; nothing in the box reads it for "
                                    "anything corral governs");
    if (const auto* m = f.find("mounts")) read_mounts(*m, bundle_dir, policy, out);
    if (const auto* h = f.find("hooks")) read_hooks(*h, out);
    if (const auto* a = f.find("annotations")) read_annotations(*a, out);
    if (const auto* l = f.find("linux")) read_linux(*l, policy, out);
    for (std::string_view other : {"solaris", "windows", "vm", "zos"})
        f.refuse_unless_empty(other, "corral runs Linux containers only; allowed: absent");
    f.finish();
}

}  // namespace

BundleConfig read_bundle_config(std::string_view bundle_dir, std::string_view config_text,
                                const MappingPolicy& policy) {
    if (config_text.size() > kMaxConfigBytes)
        throw UsageError("config.json: " + std::to_string(config_text.size()) + " bytes; corral reads at most " +
                         std::to_string(kMaxConfigBytes));
    StrictJsonLimits limits;
    limits.max_bytes = kMaxConfigBytes;
    StrictJson parsed = parse_strict_json(config_text, limits);
    if (!parsed.ok()) throw UsageError("config.json: not valid JSON: " + parsed.problem->detail);
    BundleConfig out;
    read_top_level(parsed.value, bundle_dir, policy, out);
    return out;
}

ProcessPlan read_process_json(std::string_view text, const MappingPolicy& policy) {
    StrictJsonLimits limits;
    limits.max_bytes = kMaxConfigBytes;
    StrictJson parsed = parse_strict_json(text, limits);
    if (!parsed.ok()) throw UsageError("--process: not valid JSON: " + parsed.problem->detail);
    if (!parsed.value.is_object()) throw UsageError("--process: expected a JSON object (the spec's process)");
    BundleConfig out;
    read_process(parsed.value, policy, out);
    return out.process;
}

}  // namespace corral::oci
