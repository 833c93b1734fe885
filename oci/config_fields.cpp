#include "oci/config_fields.hpp"

#include <limits>

#include "base/strict_json.hpp"
#include "base/sys_error.hpp"

namespace corral::oci {

std::string field_path(std::string_view parent, std::string_view key) {
    if (parent.empty()) return std::string(key);
    return std::string(parent) + "." + std::string(key);
}

std::string index_path(std::string_view parent, std::size_t i) {
    return std::string(parent) + "[" + std::to_string(i) + "]";
}

void refuse_field(std::string_view path, std::string_view why) {
    throw UsageError("config.json: " + std::string(path) + ": " + std::string(why));
}

std::string json_type_name(const nlohmann::json& v) {
    switch (v.type()) {
        case nlohmann::json::value_t::null: return "null";
        case nlohmann::json::value_t::boolean: return "a boolean";
        case nlohmann::json::value_t::string: return "a string";
        case nlohmann::json::value_t::array: return "an array";
        case nlohmann::json::value_t::object: return "an object";
        case nlohmann::json::value_t::number_integer:
        case nlohmann::json::value_t::number_unsigned: return "an integer (" + v.dump() + ")";
        case nlohmann::json::value_t::number_float: return "a number (" + v.dump() + ")";
        default: return "an unexpected value";
    }
}

namespace {

[[noreturn]] void refuse_type(const nlohmann::json& v, std::string_view path, std::string_view wanted) {
    refuse_field(path, "expected " + std::string(wanted) + ", got " + json_type_name(v));
}

}  // namespace

const std::string& as_string(const nlohmann::json& v, std::string_view path) {
    if (!v.is_string()) refuse_type(v, path, "a string");
    return v.get_ref<const std::string&>();
}

bool as_bool(const nlohmann::json& v, std::string_view path) {
    if (!v.is_boolean()) refuse_type(v, path, "true or false");
    return v.get<bool>();
}

std::uint64_t as_u64(const nlohmann::json& v, std::string_view path) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
    refuse_type(v, path, "an integer from 0");
}

std::int64_t as_i64(const nlohmann::json& v, std::string_view path) {
    if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<std::int64_t>();
    if (v.is_number_unsigned() && v.get<std::uint64_t>() <= std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        return static_cast<std::int64_t>(v.get<std::uint64_t>());
    refuse_type(v, path, "an integer");
}

std::uint32_t as_u32(const nlohmann::json& v, std::string_view path) {
    const std::uint64_t n = as_u64(v, path);
    if (n > std::numeric_limits<std::uint32_t>::max()) refuse_type(v, path, "an integer from 0 to 4294967295");
    return static_cast<std::uint32_t>(n);
}

const nlohmann::json& as_array(const nlohmann::json& v, std::string_view path) {
    if (!v.is_array()) refuse_type(v, path, "an array");
    return v;
}

std::vector<std::string> as_string_array(const nlohmann::json& v, std::string_view path) {
    std::vector<std::string> out;
    const auto& a = as_array(v, path);
    for (std::size_t i = 0; i < a.size(); ++i) out.push_back(as_string(a[i], index_path(path, i)));
    return out;
}

bool is_empty_value(const nlohmann::json& v) {
    if (v.is_null()) return true;
    if (v.is_boolean()) return !v.get<bool>();
    if (v.is_number()) return v == 0;
    if (v.is_string() || v.is_array() || v.is_object()) return v.empty();
    return false;
}

ObjectFields::ObjectFields(const nlohmann::json& object, std::string path, std::vector<ConfigNote>& notes)
    : object_(object), path_(std::move(path)), notes_(notes) {
    if (!object_.is_object()) refuse_type(object_, path_.empty() ? "(the document)" : path_, "an object");
}

const nlohmann::json* ObjectFields::find(std::string_view key) {
    known_.emplace(key);
    auto it = object_.find(std::string(key));
    return it == object_.end() ? nullptr : &*it;
}

const nlohmann::json& ObjectFields::require(std::string_view key) {
    const nlohmann::json* v = find(key);
    if (!v) refuse_field(path_of(key), "missing; the runtime spec requires it");
    return *v;
}

std::optional<std::string> ObjectFields::string(std::string_view key) {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    return as_string(*v, path_of(key));
}

std::optional<bool> ObjectFields::boolean(std::string_view key) {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    return as_bool(*v, path_of(key));
}

std::optional<std::uint64_t> ObjectFields::u64(std::string_view key) {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    return as_u64(*v, path_of(key));
}

std::optional<std::int64_t> ObjectFields::i64(std::string_view key) {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    return as_i64(*v, path_of(key));
}

void ObjectFields::refuse_unless_empty(std::string_view key, std::string_view why) {
    const nlohmann::json* v = find(key);
    if (v && !is_empty_value(*v)) refuse_field(path_of(key), why);
}

void ObjectFields::ignore_harmless(std::string_view key, std::string_view why) {
    const nlohmann::json* v = find(key);
    if (v && !is_empty_value(*v)) note(NoteKind::ignored, key, std::string(why));
}

void ObjectFields::note(NoteKind kind, std::string_view key, std::string text) {
    notes_.push_back(ConfigNote{kind, path_of(key), std::move(text)});
}

void ObjectFields::finish() {
    for (const auto& [key, value] : object_.items()) {
        if (known_.count(key)) continue;
        notes_.push_back(ConfigNote{NoteKind::ignored, path_of(key),
                                    "not a runtime spec property: ignored, as the spec's extensibility rule asks"});
    }
}

}  // namespace corral::oci
