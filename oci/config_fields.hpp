// oci/config_fields.hpp — reading a bundle's config.json one object at a
// time, every value named by its JSON path ("process.user.uid",
// "mounts[3].options[1]"), so that each refusal says exactly which field.
//
// Internal to oci/: bundle_config.hpp is the public face.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "oci/bundle_config.hpp"

namespace corral::oci {

// "process.args" + "[2]" → "process.args[2]"; "process" + "user" → "process.user".
std::string field_path(std::string_view parent, std::string_view key);
std::string index_path(std::string_view parent, std::size_t i);

// Throws UsageError "config.json: PATH: WHY". Every refusal of a config goes
// through here, so they all read alike.
[[noreturn]] void refuse_field(std::string_view path, std::string_view why);

// The value's JSON type as a message names it: "a string", "null", ...
std::string json_type_name(const nlohmann::json& v);

// Typed reads: the value, or a refusal naming the path, the type wanted and
// the type found.
const std::string& as_string(const nlohmann::json& v, std::string_view path);
bool as_bool(const nlohmann::json& v, std::string_view path);
std::uint64_t as_u64(const nlohmann::json& v, std::string_view path);
std::int64_t as_i64(const nlohmann::json& v, std::string_view path);
std::uint32_t as_u32(const nlohmann::json& v, std::string_view path);
const nlohmann::json& as_array(const nlohmann::json& v, std::string_view path);
std::vector<std::string> as_string_array(const nlohmann::json& v, std::string_view path);

// A JSON value that asks for nothing: null, false, 0, "", [] or {}.
bool is_empty_value(const nlohmann::json& v);

// One JSON object being read. Each key read is marked known; finish() turns
// the keys no reader asked for into `ignored` notes: the runtime spec's
// extensibility rule (a runtime MUST NOT fail on an unknown property). A key
// the spec knows but corral cannot honour is never left to finish(): its
// reader refuses it (refuse_unless_empty) or notes what it did with it.
class ObjectFields {
public:
    ObjectFields(const nlohmann::json& object, std::string path, std::vector<ConfigNote>& notes);
    ObjectFields(const ObjectFields&) = delete;
    ObjectFields& operator=(const ObjectFields&) = delete;

    const std::string& path() const { return path_; }
    std::string path_of(std::string_view key) const { return field_path(path_, key); }
    // The value, or null when absent (marks the key known either way).
    const nlohmann::json* find(std::string_view key);
    const nlohmann::json& require(std::string_view key);
    std::optional<std::string> string(std::string_view key);
    std::optional<bool> boolean(std::string_view key);
    std::optional<std::uint64_t> u64(std::string_view key);
    std::optional<std::int64_t> i64(std::string_view key);
    // A spec field corral cannot honour: refused when it asks for anything.
    void refuse_unless_empty(std::string_view key, std::string_view why);
    // A spec field that changes nothing in corral's box: an `ignored` note
    // when present and not empty.
    void ignore_harmless(std::string_view key, std::string_view why);
    void note(NoteKind kind, std::string_view key, std::string text);
    void finish();

private:
    const nlohmann::json& object_;
    std::string path_;
    std::vector<ConfigNote>& notes_;
    std::set<std::string, std::less<>> known_;
};

}  // namespace corral::oci
