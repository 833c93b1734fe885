// journal/canonical.cpp — see canonical.hpp for the rules.
#include "journal/canonical.hpp"

#include "base/sys_error.hpp"

namespace corral::journal {

namespace {

// A float anywhere refuses the whole value: its printed form is a choice of
// the printer, and a signed byte string must not depend on one.
void refuse_floats(const nlohmann::json& value, const std::string& path) {
    switch (value.type()) {
    case nlohmann::json::value_t::number_float:
        throw UsageError("journal record: " + path + " is a floating-point number; records hold integers only");
    case nlohmann::json::value_t::object:
        for (const auto& [key, item] : value.items()) refuse_floats(item, path + "." + key);
        break;
    case nlohmann::json::value_t::array:
        for (std::size_t i = 0; i < value.size(); ++i) refuse_floats(value[i], path + "[" + std::to_string(i) + "]");
        break;
    case nlohmann::json::value_t::binary:
        throw UsageError("journal record: " + path + " is binary; records hold JSON text only");
    default:
        break;
    }
}

// Whether refuse_floats has anything to say: the walk without the paths it
// would name (a record of 80 ledger lines is 80 strings, each path an allocation).
bool holds_float_or_binary(const nlohmann::json& value) {
    switch (value.type()) {
    case nlohmann::json::value_t::number_float:
    case nlohmann::json::value_t::binary: return true;
    case nlohmann::json::value_t::object:
        for (const auto& item : value.get_ref<const nlohmann::json::object_t&>())
            if (holds_float_or_binary(item.second)) return true;
        return false;
    case nlohmann::json::value_t::array:
        for (const auto& item : value.get_ref<const nlohmann::json::array_t&>())
            if (holds_float_or_binary(item)) return true;
        return false;
    default: return false;
    }
}

}  // namespace

std::string canonical_json(const nlohmann::json& value) {
    if (holds_float_or_binary(value)) refuse_floats(value, "$");
    try {
        // indent -1: no whitespace; ensure_ascii false: UTF-8 as is; strict:
        // invalid UTF-8 throws instead of being replaced.
        return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
    } catch (const nlohmann::json::exception& e) {
        throw UsageError(std::string("journal record: not valid UTF-8 text: ") + e.what());
    }
}

Checked<nlohmann::json> parse_canonical(std::string_view text) {
    nlohmann::json out;
    try {
        out = nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        return Failed{std::string("not JSON: ") + e.what()};
    }
    std::string again;
    try {
        again = canonical_json(out);
    } catch (const std::exception& e) {
        return Failed{e.what()};
    }
    if (again != text) {
        // A changed number form (1.0, 1e0), whitespace, key order, an escape
        // written differently or a duplicate key: bytes the signature did not cover.
        std::size_t at = 0;
        while (at < again.size() && at < text.size() && again[at] == text[at]) ++at;
        return Failed{"not in canonical form (first difference at byte " + std::to_string(at) + ")"};
    }
    return out;
}

}  // namespace corral::journal
