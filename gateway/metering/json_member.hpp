// gateway/metering/json_member.hpp — how the model policy and the request's
// facts read one member of a request body: an object's member that is there
// and not null, else nothing (a JSON null is the API's "not given").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace corral::gateway::metering {

inline const nlohmann::json* member(const nlohmann::json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
}

inline const std::string* string_member(const nlohmann::json& obj, const char* key) {
    const nlohmann::json* m = member(obj, key);
    return m && m->is_string() ? &m->get_ref<const std::string&>() : nullptr;
}

}  // namespace corral::gateway::metering
