// base/strict_json.cpp — a SAX handler that builds the document itself, so it
// sees every key as it arrives and can refuse the second of a pair.
#include "base/strict_json.hpp"

#include "base/parse.hpp"

#include <map>
#include <string>
#include <vector>

namespace corral {
namespace {

using json = nlohmann::json;

std::string escape_token(const std::string& key) {
    std::string out;
    for (char c : key) {
        if (c == '~') out += "~0";
        else if (c == '/') out += "~1";
        else out += c;
    }
    return out;
}

class StrictBuilder {
public:
    explicit StrictBuilder(std::size_t max_depth) : max_depth_(max_depth) {}

    bool null() { return put(json(nullptr)); }
    bool boolean(bool v) { return put(json(v)); }
    bool number_integer(json::number_integer_t v) { return put(json(v)); }
    bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
    bool number_float(json::number_float_t v, const std::string&) { return put(json(v)); }
    bool string(std::string& v) { return put(json(std::move(v))); }
    bool binary(json::binary_t&) { return fail(JsonProblemKind::malformed, "", "binary value"); }
    bool start_object(std::size_t) { return open(json::object()); }
    bool start_array(std::size_t) { return open(json::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool key(std::string& k) {
        Frame& f = stack_.back();
        auto [at, fresh] = f.keys.emplace(ascii_lower(k), k);
        if (!fresh) {
            const std::string where = json_quoted(pointer() + "/" + escape_token(k), 200);
            if (at->second == k)
                return fail(JsonProblemKind::duplicate_key, k, "key " + json_quoted(k) + " twice at JSON pointer " + where);
            return fail(JsonProblemKind::case_variant_key, k,
                        "keys " + json_quoted(at->second) + " and " + json_quoted(k) +
                            " differ only in case at JSON pointer " + where);
        }
        f.key = std::move(k);
        return true;
    }
    bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) {
        if (!error_) {
            std::string what = e.what();
            if (what.size() > 200) what.resize(200);
            fail(JsonProblemKind::malformed, "", "at byte " + std::to_string(pos) + ": " + what);
        }
        return false;
    }

    std::optional<JsonProblem> error_;
    json root_;

private:
    struct Frame {
        json value;
        std::map<std::string, std::string> keys;  // ASCII-lower-case key → the key as sent
        std::string key;
    };

    bool fail(JsonProblemKind kind, std::string key, std::string detail) {
        error_ = JsonProblem{kind, std::move(key), std::move(detail)};
        return false;
    }
    // The JSON pointer of the value being built in the innermost frame.
    std::string pointer() const {
        std::string p;
        for (std::size_t i = 0; i + 1 < stack_.size(); ++i) {
            const Frame& f = stack_[i];
            p += "/" + (f.value.is_object() ? escape_token(f.key) : std::to_string(f.value.size()));
        }
        return p;
    }
    bool put(json v) {
        if (stack_.empty()) {
            root_ = std::move(v);
            return true;
        }
        Frame& f = stack_.back();
        if (f.value.is_object()) f.value[f.key] = std::move(v);
        else f.value.push_back(std::move(v));
        return true;
    }
    bool open(json v) {
        if (stack_.size() >= max_depth_)
            return fail(JsonProblemKind::too_deep, "", "more than " + std::to_string(max_depth_) + " levels at JSON pointer " +
                                                  json_quoted(pointer(), 200));
        stack_.push_back(Frame{std::move(v), {}, {}});
        return true;
    }
    bool close() {
        json v = std::move(stack_.back().value);
        stack_.pop_back();
        return put(std::move(v));
    }

    std::size_t max_depth_;
    std::vector<Frame> stack_;
};

}  // namespace

std::string json_quoted(std::string_view s, std::size_t max) {
    const bool cut = s.size() > max;
    std::string out = json(std::string(s.substr(0, max)))
                          .dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
    if (cut) out.insert(out.size() - 1, "...");
    return out;
}

StrictJson parse_strict_json(std::string_view text, const StrictJsonLimits& limits) {
    StrictJson out;
    if (text.size() > limits.max_bytes) {
        out.problem = JsonProblem{JsonProblemKind::oversize, "",
                                  std::to_string(text.size()) + " bytes; at most " + std::to_string(limits.max_bytes)};
        return out;
    }
    StrictBuilder b(limits.max_depth);
    bool ok = false;
    try {
        ok = json::sax_parse(text, &b, json::input_format_t::json, /*strict=*/true);
    } catch (const std::exception& e) {
        if (!b.error_) b.error_ = JsonProblem{JsonProblemKind::malformed, "", e.what()};
    }
    if (!ok || b.error_) {
        out.problem = b.error_ ? *b.error_ : JsonProblem{JsonProblemKind::malformed, "", "unreadable JSON"};
        return out;
    }
    out.value = std::move(b.root_);
    return out;
}

}  // namespace corral
