// base/strict_json_fast.cpp — the fast strict reader: RapidJSON's SAX
// reader (header-only: nothing more to load at every start) over a copy of
// the text, building nlohmann's tree as strict_json.cpp's builder does. It
// only ever says yes: a document it does not vouch for (RapidJSON refuses
// it, a key twice, two keys differing in case, too deep, a lone surrogate
// escape, which RapidJSON would decode) goes to the reference reader
// (strict_json.cpp, nlohmann's SAX), whose value and refusal are the
// answer. tests/base/test_strict_json.cpp and fuzz/mcp_message.cpp read
// documents both ways. Measured on a 22 KB MCP tools/list answer
// (docs/benchmarks.md, session 45).
#include "base/strict_json_fast.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include <rapidjson/reader.h>

namespace corral {
namespace {

using json = nlohmann::json;

char fold(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool same_folded(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (fold(a[i]) != fold(b[i])) return false;
    return true;
}

std::string folded(std::string_view k) {
    std::string out(k);
    for (char& c : out) c = fold(c);
    return out;
}

// A decoded string holding a UTF-16 surrogate: only a lone surrogate escape
// decodes so (raw text with one fails RapidJSON's UTF-8 check), and
// RapidJSON accepts a lone low one that nlohmann refuses.
bool holds_surrogate(std::string_view s) {
    for (const char* p = s.data(); (p = static_cast<const char*>(std::memchr(p, '\xED', s.data() + s.size() - p)));) {
        if (++p < s.data() + s.size() && static_cast<unsigned char>(*p) >= 0xA0) return true;
    }
    return false;
}

struct BuilderFrame {
    json* value = nullptr;  // nullptr: checked, not built
    bool outlined_array = false, outlined_element = false;
    long matched = -1;                   // how many outline tokens the path to it matched; -1 off the path
    std::size_t keys_from = 0;           // its keys: keys[keys_from, end)
    std::unordered_set<std::string> many;  // its folded keys, once more than kPairwise
    json* slot = nullptr;                // an object's current member (nullptr: not built)
    long slot_matched = -1;
    const JsonSelection* select = nullptr;       // an object's members to build (nullptr: all)
    const JsonSelection* slot_select = nullptr;  // what to build of the current member's value
};

// A thread's builder memory, kept between documents: a parse allocates for
// the tree it builds, not for its own bookkeeping (a metered request reads
// two small documents; each vector grown afresh was most of their allocations).
struct BuilderScratch {
    std::vector<BuilderFrame> frames;
    std::vector<std::string_view> keys;
    rapidjson::CrtAllocator reader_allocator;  // RapidJSON's stack (unused in place; it would new one)
};

class Builder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Builder> {
public:
    Builder(std::size_t max_depth, const FastOutline* outline, const JsonSelection* select, BuilderScratch& scratch, json& root)
        : max_depth_(max_depth), outline_(outline), select_(select), root_(root), frames_(scratch.frames),
          keys_(scratch.keys) {
        keys_.clear();
        if (!outline_) return;
        std::string_view p = outline_->array_pointer;
        while (!p.empty() && p.front() == '/') {
            p.remove_prefix(1);
            const std::size_t slash = p.find('/');
            tokens_.push_back(p.substr(0, slash));
            p = slash == std::string_view::npos ? std::string_view{} : p.substr(slash);
        }
    }

    // A document refused midway leaves its open frames' key sets.
    ~Builder() {
        for (std::size_t i = 0; i < depth_; ++i) release_key_set(frames_[i]);
    }

    bool Null() { return put(nullptr); }
    bool Bool(bool b) { return put(b); }
    // A number's text (kParseNumbersAsStringsFlag: RapidJSON's own
    // conversion would use its stack, whose first push does arithmetic on a
    // null pointer that UBSan stops at), read as nlohmann reads it: without
    // '.', 'e' or 'E' an unsigned integer, or signed after a '-', and a
    // double when it has one of those or overflows 64 bits (from_chars
    // rounds as strtod does). A double out of range is the reference's to judge.
    bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
        const char* end = s + n;
        if (std::find_if(s, end, [](char c) { return c == '.' || c == 'e' || c == 'E'; }) == end) {
            if (*s == '-') {
                std::int64_t v = 0;
                const auto r = std::from_chars(s, end, v);
                if (r.ec == std::errc() && r.ptr == end) return put(v);
            } else {
                std::uint64_t v = 0;
                const auto r = std::from_chars(s, end, v);
                if (r.ec == std::errc() && r.ptr == end) return put(v);
            }
        }
        double d = 0;
        const auto r = std::from_chars(s, end, d);
        return r.ec == std::errc() && r.ptr == end && put(d);
    }
    bool String(const char* s, rapidjson::SizeType n, bool) {
        const std::string_view v(s, n);
        return !holds_surrogate(v) && put(std::string(v));
    }
    bool StartObject() { return open(true); }
    bool StartArray() { return open(false); }
    bool EndObject(rapidjson::SizeType) { return close(); }
    bool EndArray(rapidjson::SizeType) { return close(); }
    // In place (kParseInsituFlag): `s` lives in the copy until the parse ends.
    bool Key(const char* s, rapidjson::SizeType n, bool) {
        const std::string_view k(s, n);
        BuilderFrame& f = frames_[depth_ - 1];
        if (holds_surrogate(k) || seen(f, k)) return false;
        f.slot = nullptr, f.slot_matched = -1, f.slot_select = nullptr;
        if (!f.value || (f.outlined_element && k != outline_->keep)) return true;
        if (f.select) {
            const JsonSelection::Member* m = f.select->find(k);
            if (!m) return true;  // checked, not built
            f.slot_select = m->only;
        }
        f.slot = &f.value->get_ref<json::object_t&>().emplace(std::string(k), nullptr).first->second;
        if (!f.outlined_element) f.slot_matched = next(f.matched, k);
        return true;
    }

private:
    static constexpr std::size_t kPairwise = 16;  // keys compared pairwise; beyond, a hash set
    // RapidJSON's reader recurses once per level (its iterative mode keeps
    // its states on the stack whose first push UBSan stops at): a document
    // nested deeper than this is left to the reference reader, which does
    // not recurse (a model body may nest 20 000 levels under its limits;
    // with ASan's larger frames that overflowed the thread's stack).
    static constexpr std::size_t kMaxNesting = 128;

    bool seen(BuilderFrame& f, std::string_view k) {
        if (!f.many.empty()) return !f.many.insert(folded(k)).second;
        for (std::size_t i = f.keys_from; i < keys_.size(); ++i)
            if (same_folded(keys_[i], k)) return true;
        keys_.push_back(k);
        if (keys_.size() - f.keys_from > kPairwise) {
            for (std::size_t i = f.keys_from; i < keys_.size(); ++i) f.many.insert(folded(keys_[i]));
            keys_.resize(f.keys_from);
        }
        return false;
    }

    long next(long matched, std::string_view key) const {
        if (matched < 0 || static_cast<std::size_t>(matched) >= tokens_.size()) return -1;
        return tokens_[static_cast<std::size_t>(matched)] == key ? matched + 1 : -1;
    }

    // Where the next value goes (value null: nowhere, it is only checked),
    // and what the outline and the selection say of it.
    struct Slot {
        json* value = nullptr;
        long matched = -1;
        bool outlined = false;
        const JsonSelection* select = nullptr;
    };
    Slot target() {
        if (depth_ == 0) return Slot{&root_, outline_ ? 0 : -1, false, select_};
        BuilderFrame& parent = frames_[depth_ - 1];
        if (!parent.value) return Slot{};
        if (parent.value->is_object()) return Slot{parent.slot, parent.slot_matched, false, parent.slot_select};
        auto& items = parent.value->get_ref<json::array_t&>();
        items.emplace_back();
        return Slot{&items.back(), -1, parent.outlined_array, nullptr};
    }

    template <class V>
    bool put(V&& v) {
        if (json* t = target().value) *t = json(std::forward<V>(v));
        return true;
    }

    bool open(bool object) {
        if (depth_ >= max_depth_ || depth_ >= kMaxNesting) return false;
        const Slot s = target();
        json* t = s.value;
        if (t) *t = object ? json::object() : json::array();
        if (depth_ == frames_.size()) frames_.emplace_back();
        BuilderFrame& f = frames_[depth_++];
        f.value = t;
        f.matched = s.matched;
        f.outlined_element = object && s.outlined && t;
        f.outlined_array = !object && outline_ && s.matched >= 0 && static_cast<std::size_t>(s.matched) == tokens_.size();
        f.keys_from = keys_.size();
        f.many.clear();
        f.slot = nullptr, f.slot_matched = -1;
        f.select = object ? s.select : nullptr;  // an array's elements are built whole
        f.slot_select = nullptr;
        return true;
    }

    bool close() {
        BuilderFrame& f = frames_[--depth_];
        keys_.resize(f.keys_from);
        release_key_set(f);
        return true;
    }

    // A thread keeps no large object's key set for the next document.
    static void release_key_set(BuilderFrame& f) {
        if (f.many.bucket_count() > 4 * kPairwise) std::unordered_set<std::string>().swap(f.many);
    }

    std::size_t max_depth_;
    const FastOutline* outline_;
    const JsonSelection* select_;
    json& root_;
    std::vector<std::string_view> tokens_;
    std::vector<BuilderFrame>& frames_;
    std::size_t depth_ = 0;
    std::vector<std::string_view>& keys_;
};

// Documents up to this size are copied into their thread's buffer, which
// keeps its capacity; a larger one gets a buffer of its own, so that no
// thread keeps the memory of its largest document.
constexpr std::size_t kReusedBufferBytes = 256u << 10;

}  // namespace

bool read_strict_json_fast(std::string_view text, std::size_t max_depth, const FastOutline* outline,
                           const JsonSelection* select, nlohmann::json& out) {
    // The in-place reader stops at a NUL: raw, one is never JSON.
    if (std::memchr(text.data(), '\0', text.size())) return false;
    thread_local std::string reused;
    std::string own;
    std::string& copy = text.size() <= kReusedBufferBytes ? reused : own;
    copy.assign(text);
    thread_local BuilderScratch scratch;
    Builder builder(max_depth, outline, select, scratch, out);
    rapidjson::Reader reader(&scratch.reader_allocator);
    rapidjson::InsituStringStream in(copy.data());
    constexpr unsigned kFlags = rapidjson::kParseInsituFlag | rapidjson::kParseValidateEncodingFlag |
                                rapidjson::kParseNumbersAsStringsFlag;
    return !reader.Parse<kFlags>(in, builder).IsError();
}

}  // namespace corral
