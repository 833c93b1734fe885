// base/strict_json_fast.cpp — the fast strict reader: simdjson's DOM,
// checked for what the strict reading refuses and copied into nlohmann's
// tree. It only ever says yes: a document it does not vouch for (simdjson
// refuses it, a key twice, two keys differing in case, too deep) goes to the
// reference reader (strict_json.cpp, nlohmann's SAX), whose answer and
// refusal are the ones given. simdjson accepts no document nlohmann's strict
// parse refuses (unescaped control characters, lone surrogates, invalid
// UTF-8, numbers out of range: each refused; tests/base/test_strict_json.cpp
// reads tricky documents both ways). Measured on a 22 KB MCP tools/list
// answer: 270 µs through the SAX reader, 170 µs here, 25 µs outlined
// (docs/benchmarks.md, session 45).
#include "base/strict_json_fast.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <simdjson.h>

namespace corral {
namespace {

using json = nlohmann::json;
namespace dom = simdjson::dom;

char fold(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool same_folded(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (fold(a[i]) != fold(b[i])) return false;
    return true;
}

// Whether two keys of `object` are equal once ASCII case is folded (an exact
// duplicate included): pairwise while few, sorted when many.
bool has_folded_twin(dom::object object) {
    constexpr std::size_t kPairwise = 16;
    std::string_view few[kPairwise];
    std::size_t n = 0;
    for (auto field : object) {
        if (n == kPairwise) break;
        for (std::size_t i = 0; i < n; ++i)
            if (same_folded(few[i], field.key)) return true;
        few[n++] = field.key;
    }
    if (n < kPairwise) return false;
    std::vector<std::string> all;
    for (auto field : object) {
        std::string k(field.key);
        for (char& c : k) c = fold(c);
        all.push_back(std::move(k));
    }
    std::sort(all.begin(), all.end());
    return std::adjacent_find(all.begin(), all.end()) != all.end();
}

class Copier {
public:
    Copier(std::size_t max_depth, const FastOutline* outline) : max_depth_(max_depth), outline_(outline) {
        if (!outline_) return;
        std::string_view p = outline_->array_pointer;
        while (!p.empty() && p.front() == '/') {
            p.remove_prefix(1);
            const std::size_t slash = p.find('/');
            tokens_.push_back(p.substr(0, slash));
            p = slash == std::string_view::npos ? std::string_view{} : p.substr(slash);
        }
    }

    // `e` into `out`, `depth` containers open above it; `matched`: how many
    // of the outline's tokens the path to `e` matched (-1: off the path).
    // False when the document is not one this reader vouches for.
    bool copy(dom::element e, json& out, std::size_t depth, long matched) {
        using T = dom::element_type;
        switch (e.type()) {
            case T::OBJECT: return copy_object(e.get_object().value_unsafe(), out, depth, matched, false);
            case T::ARRAY: return copy_array(e.get_array().value_unsafe(), out, depth, matched);
            case T::STRING: out = std::string(e.get_string().value_unsafe()); return true;
            case T::INT64: {
                // nlohmann reads a non-negative integer as unsigned.
                const std::int64_t v = e.get_int64().value_unsafe();
                if (v >= 0) out = static_cast<std::uint64_t>(v);
                else out = v;
                return true;
            }
            case T::UINT64: out = e.get_uint64().value_unsafe(); return true;
            case T::DOUBLE: out = e.get_double().value_unsafe(); return true;
            case T::BOOL: out = e.get_bool().value_unsafe(); return true;
            case T::NULL_VALUE: out = nullptr; return true;
        }
        return false;
    }

private:
    bool open(std::size_t depth) const { return depth < max_depth_; }

    long next(long matched, std::string_view key) const {
        if (matched < 0 || static_cast<std::size_t>(matched) >= tokens_.size()) return -1;
        return tokens_[static_cast<std::size_t>(matched)] == key ? matched + 1 : -1;
    }

    // An outlined element keeps only the outline's member.
    bool copy_object(dom::object o, json& out, std::size_t depth, long matched, bool outlined) {
        if (!open(depth) || has_folded_twin(o)) return false;
        out = json::object();
        auto& members = out.get_ref<json::object_t&>();
        for (auto field : o) {
            if (outlined && field.key != outline_->keep) continue;
            auto slot = members.emplace(std::string(field.key), nullptr).first;
            if (!copy(field.value, slot->second, depth + 1, outlined ? -1 : next(matched, field.key))) return false;
        }
        // An outlined element's other members are checked, not copied.
        if (outlined)
            for (auto field : o)
                if (field.key != outline_->keep && !check(field.value, depth + 1)) return false;
        return true;
    }

    bool copy_array(dom::array a, json& out, std::size_t depth, long matched) {
        if (!open(depth)) return false;
        const bool outlined_here = outline_ && matched >= 0 && static_cast<std::size_t>(matched) == tokens_.size();
        out = json::array();
        auto& items = out.get_ref<json::array_t&>();
        items.reserve(a.size());
        for (dom::element item : a) {
            items.emplace_back();
            if (outlined_here && item.type() == dom::element_type::OBJECT) {
                if (!copy_object(item.get_object().value_unsafe(), items.back(), depth + 1, -1, true)) return false;
            } else if (!copy(item, items.back(), depth + 1, -1)) {
                return false;
            }
        }
        return true;
    }

    // What copy refuses, without copying.
    bool check(dom::element e, std::size_t depth) {
        if (e.type() == dom::element_type::OBJECT) {
            dom::object o = e.get_object().value_unsafe();
            if (!open(depth) || has_folded_twin(o)) return false;
            for (auto field : o)
                if (!check(field.value, depth + 1)) return false;
        } else if (e.type() == dom::element_type::ARRAY) {
            if (!open(depth)) return false;
            dom::array a = e.get_array().value_unsafe();
            for (dom::element item : a)
                if (!check(item, depth + 1)) return false;
        }
        return true;
    }

    std::size_t max_depth_;
    const FastOutline* outline_;
    std::vector<std::string_view> tokens_;
};

// Documents up to this size reuse their thread's parser (and its buffers);
// a larger one gets a parser of its own, so that no thread keeps the memory
// of its largest document.
constexpr std::size_t kReusedParserBytes = 256u << 10;

}  // namespace

bool read_strict_json_fast(std::string_view text, std::size_t max_depth, const FastOutline* outline, nlohmann::json& out) {
    thread_local dom::parser reused;
    dom::parser own;
    dom::parser& parser = text.size() <= kReusedParserBytes ? reused : own;
    dom::element root;
    if (parser.parse(text.data(), text.size(), /*realloc_if_needed=*/true).get(root) != simdjson::SUCCESS) return false;
    Copier copier(max_depth, outline);
    return copier.copy(root, out, 0, outline ? 0 : -1);
}

}  // namespace corral
