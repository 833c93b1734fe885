// base/strict_json.cpp — a SAX handler that builds the document itself, so it
// sees every key as it arrives and can refuse the second of a pair.
#include "base/strict_json.hpp"

#include "base/parse.hpp"
#include "base/strict_json_fast.hpp"

#include <string>
#include <unordered_set>
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

// Builds the document in place, as nlohmann's own DOM parser does: each
// container is created where it belongs (its parent's slot) and filled there,
// never moved up when it closes. Per object, the keys seen so far are kept
// ASCII-lower-cased in a list the frame reuses (no map, no allocation for
// a short key); a large object switches to a hash set so that a document
// of many keys costs no more than linear time. Measured: the builder was
// half of a strict parse (docs/benchmarks.md, "session 35").
class StrictBuilder {
public:
    explicit StrictBuilder(std::size_t max_depth) : max_depth_(max_depth) {}

    bool null() { return put(nullptr); }
    bool boolean(bool v) { return put(v); }
    bool number_integer(json::number_integer_t v) { return put(v); }
    bool number_unsigned(json::number_unsigned_t v) { return put(v); }
    bool number_float(json::number_float_t v, const std::string&) { return put(v); }
    bool string(std::string& v) { return put(std::move(v)); }
    bool binary(json::binary_t&) { return fail(JsonProblemKind::malformed, "", "binary value"); }
    bool start_object(std::size_t) { return open(json::value_t::object); }
    bool start_array(std::size_t) { return open(json::value_t::array); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool key(std::string& k) {
        Frame& f = frames_[depth_ - 1];
        lowered_.assign(k);
        for (char& c : lowered_)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (f.seen(lowered_)) {
            const std::string first = first_key_like(*f.value, lowered_);
            const std::string where = json_quoted(pointer() + "/" + escape_token(k), 200);
            if (first == k)
                return fail(JsonProblemKind::duplicate_key, k, "key " + json_quoted(k) + " twice at JSON pointer " + where);
            return fail(JsonProblemKind::case_variant_key, k,
                        "keys " + json_quoted(first) + " and " + json_quoted(k) +
                            " differ only in case at JSON pointer " + where);
        }
        f.remember(lowered_);
        // A fresh key (an exact duplicate would have been seen above): the
        // slot is new, and a std::map node neither its key nor its value moves.
        auto at = f.value->get_ref<json::object_t&>().emplace(std::move(k), nullptr).first;
        f.key = &at->first;
        slot_ = &at->second;
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
    // One open container. Frames are reused as the depth goes up and down,
    // so their key lists keep their capacity.
    struct Frame {
        static constexpr std::size_t kListedKeys = 16;  // beyond this, the hash set
        json* value = nullptr;
        const std::string* key = nullptr;  // an object's current key (in its map node)
        std::vector<std::string> keys;     // ASCII-lower-case keys, while few
        std::unordered_set<std::string> many;

        bool seen(const std::string& lower) const {
            if (!many.empty()) return many.count(lower) != 0;
            for (const auto& k : keys)
                if (k == lower) return true;
            return false;
        }
        void remember(const std::string& lower) {
            if (many.empty() && keys.size() < kListedKeys) {
                keys.push_back(lower);
                return;
            }
            if (many.empty()) many.insert(std::make_move_iterator(keys.begin()), std::make_move_iterator(keys.end()));
            many.insert(lower);
        }
        void reset(json* v) {
            value = v, key = nullptr;
            keys.clear();
            if (!many.empty()) many.clear();
        }
    };

    bool fail(JsonProblemKind kind, std::string key, std::string detail) {
        error_ = JsonProblem{kind, std::move(key), std::move(detail)};
        return false;
    }
    // The key of `object` that lower-cases to `lower` (the first of the pair).
    static std::string first_key_like(const json& object, const std::string& lower) {
        for (const auto& [k, v] : object.items())
            if (ascii_lower(k) == lower) return k;
        return lower;
    }
    // The JSON pointer of the innermost open container's current member
    // (each outer container's member being built: an object's current key,
    // an array's last element).
    std::string pointer() const {
        std::string p;
        for (std::size_t i = 0; i + 1 < depth_; ++i) {
            const Frame& f = frames_[i];
            p += "/" + (f.value->is_object() ? escape_token(f.key ? *f.key : std::string())
                                             : std::to_string(f.value->size() - 1));
        }
        return p;
    }
    // Where the next value goes: the root, the object's slot for the current
    // key, or a new last element of the array.
    template <class V>
    json* place(V&& v) {
        if (depth_ == 0) {
            root_ = json(std::forward<V>(v));
            return &root_;
        }
        json& parent = *frames_[depth_ - 1].value;
        if (parent.is_object()) {
            *slot_ = json(std::forward<V>(v));
            return slot_;
        }
        auto& items = parent.get_ref<json::array_t&>();
        items.emplace_back(std::forward<V>(v));
        return &items.back();
    }
    template <class V>
    bool put(V&& v) {
        place(std::forward<V>(v));
        return true;
    }
    bool open(json::value_t type) {
        if (depth_ >= max_depth_)
            return fail(JsonProblemKind::too_deep, "", "more than " + std::to_string(max_depth_) + " levels at JSON pointer " +
                                                  json_quoted(pointer(), 200));
        // A container's own json value never moves while it is open: an
        // array's elements are appended only after the open one closed.
        json* v = place(type);
        if (depth_ == frames_.size()) frames_.emplace_back();
        frames_[depth_++].reset(v);
        return true;
    }
    bool close() {
        --depth_;
        return true;
    }

    std::size_t max_depth_;
    std::vector<Frame> frames_;
    std::size_t depth_ = 0;
    json* slot_ = nullptr;
    std::string lowered_;
};

}  // namespace

std::string json_quoted(std::string_view s, std::size_t max) {
    const bool cut = s.size() > max;
    std::string out = json(std::string(s.substr(0, max)))
                          .dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
    if (cut) out.insert(out.size() - 1, "...");
    return out;
}

namespace {

std::optional<JsonProblem> oversize(std::string_view text, const StrictJsonLimits& limits) {
    if (text.size() <= limits.max_bytes) return std::nullopt;
    return JsonProblem{JsonProblemKind::oversize, "",
                       std::to_string(text.size()) + " bytes; at most " + std::to_string(limits.max_bytes)};
}

}  // namespace

StrictJson parse_strict_json(std::string_view text, const StrictJsonLimits& limits) {
    StrictJson out;
    if ((out.problem = oversize(text, limits))) return out;
    if (read_strict_json_fast(text, limits.max_depth, nullptr, nullptr, out.value)) return out;
    return parse_strict_json_reference(text, limits);
}

StrictJson parse_strict_json_outline(std::string_view text, std::string_view array_pointer, std::string_view keep,
                                     const StrictJsonLimits& limits) {
    StrictJson out;
    if ((out.problem = oversize(text, limits))) return out;
    const FastOutline outline{array_pointer, keep};
    if (read_strict_json_fast(text, limits.max_depth, &outline, nullptr, out.value)) {
        out.outlined = true;
        return out;
    }
    return parse_strict_json_reference(text, limits);
}

const JsonSelection::Member* JsonSelection::find(std::string_view key) const {
    for (const Member& m : members)
        if (m.key == key) return &m;
    return nullptr;
}

bool read_json_selected(std::string_view text, const JsonSelection& select, nlohmann::json& out) {
    // No depth of its own: nlohmann's parse, the other way to read it, has none.
    return read_strict_json_fast(text, static_cast<std::size_t>(-1), nullptr, &select, out);
}

json select_members(const json& value, const JsonSelection& select) {
    if (!value.is_object()) return value;
    json out = json::object();
    for (const auto& [key, item] : value.items())
        if (const JsonSelection::Member* m = select.find(key)) out[key] = m->only ? select_members(item, *m->only) : item;
    return out;
}

StrictJson parse_strict_json_reference(std::string_view text, const StrictJsonLimits& limits) {
    StrictJson out;
    if ((out.problem = oversize(text, limits))) return out;
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
