// gateway/ledger_line.cpp — how a LedgerEntry becomes its one JSON line
// (docs/gateway.md, "Ledger"): the documented key order, secrets redacted,
// nothing a terminal acts on. Most lines are written directly; an entry with a
// byte JSON must escape goes through nlohmann, and both give the same bytes.
#include "gateway/ledger.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/terminal_text.hpp"

namespace corral::gateway {
namespace {

// "2026-11-30T05:29:39.123Z". gmtime_r takes glibc's time zone lock, which
// the event-loop threads would contend for on every line: each thread keeps
// the text of the last second it formatted and only adds the milliseconds.
void append_rfc3339_ms(std::string& out, std::chrono::system_clock::time_point t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    long frac = static_cast<long>(ms % 1000);
    if (frac < 0) {
        frac += 1000;
        --secs;
    }
    thread_local std::time_t cached_secs = -1;
    thread_local char cached[32];
    thread_local int cached_len = 0;
    if (secs != cached_secs || cached_len <= 0) {
        std::tm tm{};
        gmtime_r(&secs, &tm);
        cached_len = std::snprintf(cached, sizeof cached, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        if (cached_len <= 0 || cached_len >= static_cast<int>(sizeof cached)) cached_len = 0;
        cached_secs = secs;
    }
    out.append(cached, static_cast<std::size_t>(cached_len));
    char tail[6] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                    static_cast<char>('0' + frac % 10), 'Z', 0};
    out.append(tail, 5);
}

std::string rfc3339_ms(std::chrono::system_clock::time_point t) {
    std::string s;
    append_rfc3339_ms(s, t);
    return s;
}

std::string redact(std::string s, const std::vector<std::string>& secrets) {
    for (const auto& secret : secrets) {
        if (secret.empty()) continue;
        for (auto pos = s.find(secret); pos != std::string::npos; pos = s.find(secret, pos + 10))
            s.replace(pos, secret.size(), "[redacted]");
    }
    return s;
}

bool contains_secret(std::string_view s, const std::vector<std::string>& secrets) {
    for (const auto& secret : secrets)
        if (!secret.empty() && s.find(secret) != std::string_view::npos) return true;
    return false;
}

// Bytes JSON carries verbatim (no escape, no UTF-8 question): printable
// ASCII except '"' and '\\'. Almost every ledger field is made of these.
bool json_verbatim(std::string_view s) {
    for (unsigned char ch : s)
        if (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\') return false;
    return true;
}

// One JSON object's members written in order, as nlohmann's dump() writes
// them: '{', members separated by ',', no spaces, then '}'.
class PlainObject {
public:
    explicit PlainObject(std::string& out) : out_(out) { out_ += '{'; }
    void key(std::string_view k) {
        if (!first_) out_ += ',';
        first_ = false;
        out_.append(1, '"').append(k).append("\":");
    }
    void string(std::string_view k, std::string_view v) {
        key(k);
        out_.append(1, '"').append(v).append(1, '"');
    }
    void number(std::string_view k, std::uint64_t v) {
        key(k);
        char digits[24];
        auto r = std::to_chars(digits, digits + sizeof digits, v);
        out_.append(digits, r.ptr);
    }
    void raw(std::string_view k, std::string_view json) {
        key(k);
        out_.append(json);
    }
    void counts(std::string_view k, const std::vector<std::pair<std::string, std::uint64_t>>& v) {
        key(k);
        PlainObject o(out_);
        for (const auto& [name, n] : v) o.number(name, n);
        o.close();
    }
    void close() { out_ += '}'; }

private:
    std::string& out_;
    bool first_ = true;
};

// Whether a set of member names written in this order gives the object
// nlohmann would: no name twice (the JSON tree keeps the last and its place).
bool names_distinct(std::initializer_list<std::string_view> fixed,
                    const std::vector<std::pair<std::string, std::uint64_t>>& v) {
    for (std::size_t i = 0; i < v.size(); ++i) {
        for (auto f : fixed)
            if (v[i].first == f) return false;
        for (std::size_t j = 0; j < i; ++j)
            if (v[i].first == v[j].first) return false;
    }
    return true;
}

// Whether a metering object can be written directly: every string verbatim
// and secret-free, every count's name too and distinct within its object.
bool metered_plain(const MeteredLine& m, const std::vector<std::string>& secrets, std::size_t& size) {
    const std::string_view strings[] = {m.api, m.model, m.usage_state, m.usage_reason, m.cost_state,
                                        m.cost_reason, m.price_source, m.price_date, m.limit};
    for (auto s : strings) {
        if (!json_verbatim(s) || contains_secret(s, secrets)) return false;
        size += s.size() + 16;
    }
    for (const auto* v : {&m.usage, &m.remaining, &m.worker_remaining, &m.overspent, &m.worker_overspent}) {
        for (const auto& [name, n] : *v) {
            if (!json_verbatim(name) || contains_secret(name, secrets)) return false;
            size += name.size() + 24;
        }
        if (!names_distinct({}, *v)) return false;
    }
    // usage's counts share the object with "state" and "reason".
    return names_distinct({"state", "reason"}, m.usage);
}

// The metering object, member for member as metered_json below builds it.
void append_metered_plain(PlainObject& line, std::string& out, const MeteredLine& m) {
    line.key("metering");
    PlainObject j(out);
    j.string("api", m.api);
    if (!m.model.empty()) j.string("model", m.model);
    if (!m.usage_state.empty()) {
        j.key("usage");
        PlainObject u(out);
        u.string("state", m.usage_state);
        if (!m.usage_reason.empty()) u.string("reason", m.usage_reason);
        for (const auto& [k, n] : m.usage) u.number(k, n);
        u.close();
    }
    if (!m.cost_state.empty()) {
        j.key("cost");
        PlainObject c(out);
        c.string("state", m.cost_state);
        if (m.cost_state == "computed") {
            // A double as the JSON library writes one (shortest round trip, ".0" on a whole number).
            c.raw("usd", nlohmann::json(static_cast<double>(m.usd_micros) / 1e6).dump());
            c.number("usd_micros", m.usd_micros);
        }
        if (!m.price_source.empty()) c.string("source", m.price_source);
        if (!m.price_date.empty()) c.string("date", m.price_date);
        if (!m.cost_reason.empty()) c.string("reason", m.cost_reason);
        c.close();
    }
    if (!m.remaining.empty()) j.counts("remaining", m.remaining);
    if (!m.worker_remaining.empty()) j.counts("worker_remaining", m.worker_remaining);
    if (m.over_reservation) j.raw("over_reservation", "true");
    if (!m.overspent.empty()) j.counts("overspent", m.overspent);
    if (!m.worker_overspent.empty()) j.counts("worker_overspent", m.worker_overspent);
    if (!m.limit.empty()) j.string("limit", m.limit);
    j.close();
}

// A tool object's members in the documented order, each string handed to
// `text` (the empty ones left out) and result_bytes to `number`: the one
// list both the direct and the JSON library's paths write.
template <class Text, class Number>
void each_tool_member(const ToolLine& t, Text text, Number number) {
    text("phase", t.phase);
    text("server", t.server);
    text("method", t.method);
    text("tool", t.tool);
    text("arguments_digest", t.arguments_digest);
    text("rule", t.rule);
    text("error", t.error);
    if (t.phase == "outcome") number("result_bytes", t.result_bytes);
    text("result_digest", t.result_digest);
    text("digest", t.digest);
    text("trusted_digest", t.trusted_digest);
    text("arguments", t.arguments);
    text("result", t.result);
}

// Whether a tool object can be written directly: every string verbatim and
// secret-free (the arguments and the result, when logged, rarely are).
bool tool_plain(const ToolLine& t, const std::vector<std::string>& secrets, std::size_t& size) {
    bool plain = true;
    each_tool_member(
        t,
        [&](std::string_view, const std::string& v) {
            plain = plain && json_verbatim(v) && !contains_secret(v, secrets);
            size += v.size() + 24;
        },
        [](std::string_view, std::uint64_t) {});
    return plain;
}

// The tool object written directly. Two lines per MCP call went through an
// nlohmann object before (docs/benchmarks.md, session 35: 8 % of corral's
// CPU for calls).
void append_tool_plain(PlainObject& line, std::string& out, const ToolLine& t) {
    line.key("tool");
    PlainObject j(out);
    each_tool_member(
        t,
        [&j](std::string_view key, const std::string& v) {
            if (!v.empty()) j.string(key, v);
        },
        [&j](std::string_view key, std::uint64_t n) { j.number(key, n); });
    j.close();
}

// The same line nlohmann's dump gives, built directly (no JSON tree, no
// allocation per key) for entries whose string fields are all verbatim and
// hold no secret; std::nullopt otherwise, and the caller takes the general path.
std::optional<std::string> format_plain(const LedgerEntry& e, const std::vector<std::string>& secrets) {
    const std::string_view strings[] = {e.identity, e.role, e.mode, e.method, e.host, e.path, e.reason, e.credential, e.form};
    std::size_t size = 200;
    for (auto s : strings) {
        if (!json_verbatim(s) || contains_secret(s, secrets)) return std::nullopt;
        size += s.size();
    }
    if (e.status < 0 || e.approval) return std::nullopt;
    if (e.metered && !metered_plain(*e.metered, secrets, size)) return std::nullopt;
    if (e.tool && !tool_plain(*e.tool, secrets, size)) return std::nullopt;
    std::string line;
    line.reserve(size);
    PlainObject o(line);
    o.key("time");
    line += '"';
    append_rfc3339_ms(line, e.time);
    line += '"';
    o.string("identity", e.identity);
    if (!e.role.empty()) o.string("role", e.role);
    o.string("mode", e.mode);
    o.string("method", e.method);
    o.string("host", e.host);
    o.number("port", e.port);
    o.string("path", e.path);
    o.string("decision", e.decision == Decision::allow ? "allow" : "refuse");
    o.string("reason", e.reason);
    o.number("status", static_cast<std::uint64_t>(e.status));
    o.number("bytes_up", e.bytes_up);
    o.number("bytes_down", e.bytes_down);
    o.number("duration_ms", e.duration_ms);
    o.string("credential", e.credential);
    if (e.captured) o.raw("captured", "true");
    if (e.refusals != 0) o.number("refusals", e.refusals);
    if (e.matches != 0) {
        o.string("form", e.form);
        o.number("matches", e.matches);
    }
    if (e.metered) append_metered_plain(o, line, *e.metered);
    if (e.tool) append_tool_plain(o, line, *e.tool);
    o.close();
    return line;
}

}  // namespace

namespace {

nlohmann::ordered_json metered_json(const MeteredLine& m, const std::vector<std::string>& secrets) {
    nlohmann::ordered_json j;
    j["api"] = m.api;
    if (!m.model.empty()) j["model"] = redact(m.model, secrets);
    if (!m.usage_state.empty()) {
        auto& u = j["usage"];
        u["state"] = m.usage_state;
        if (!m.usage_reason.empty()) u["reason"] = redact(m.usage_reason, secrets);
        for (const auto& [k, n] : m.usage) u[k] = n;
    }
    if (!m.cost_state.empty()) {
        auto& c = j["cost"];
        c["state"] = m.cost_state;
        if (m.cost_state == "computed") {
            c["usd"] = static_cast<double>(m.usd_micros) / 1e6;
            c["usd_micros"] = m.usd_micros;
        }
        if (!m.price_source.empty()) c["source"] = redact(m.price_source, secrets);
        if (!m.price_date.empty()) c["date"] = m.price_date;
        if (!m.cost_reason.empty()) c["reason"] = redact(m.cost_reason, secrets);
    }
    auto limits = [](const std::vector<std::pair<std::string, std::uint64_t>>& v) {
        nlohmann::ordered_json o = nlohmann::ordered_json::object();
        for (const auto& [k, n] : v) o[k] = n;
        return o;
    };
    if (!m.remaining.empty()) j["remaining"] = limits(m.remaining);
    if (!m.worker_remaining.empty()) j["worker_remaining"] = limits(m.worker_remaining);
    if (m.over_reservation) j["over_reservation"] = true;
    if (!m.overspent.empty()) j["overspent"] = limits(m.overspent);
    if (!m.worker_overspent.empty()) j["worker_overspent"] = limits(m.worker_overspent);
    if (!m.limit.empty()) j["limit"] = m.limit;
    return j;
}

}  // namespace

namespace {

nlohmann::ordered_json tool_json(const ToolLine& t, const std::vector<std::string>& secrets) {
    nlohmann::ordered_json j;
    each_tool_member(
        t,
        [&](std::string_view key, const std::string& v) {
            if (!v.empty()) j[std::string(key)] = redact(v, secrets);
        },
        [&](std::string_view key, std::uint64_t n) { j[std::string(key)] = n; });
    return j;
}

nlohmann::ordered_json approval_json(const ApprovalLine& a, const std::vector<std::string>& secrets) {
    nlohmann::ordered_json j;
    auto put = [&](const char* key, const std::string& v) {
        if (!v.empty()) j[key] = redact(v, secrets);
    };
    put("phase", a.phase);
    put("id", a.id);
    put("digest", a.digest);
    put("state", a.state);
    put("decided_by", a.decided_by);
    put("reason", a.reason);
    put("deadline", a.deadline);
    if (a.always) j["always"] = true;
    return j;
}

}  // namespace

std::string format_ledger_line(const LedgerEntry& e, const std::vector<std::string>& secrets) {
    std::string line;
    if (auto plain = format_plain(e, secrets)) {
        line = std::move(*plain);
    } else {
        // nlohmann::ordered_json keeps the documented key order, so lines diff and grep predictably.
        nlohmann::ordered_json j;
        j["time"] = rfc3339_ms(e.time);
        j["identity"] = redact(e.identity, secrets);
        if (!e.role.empty()) j["role"] = redact(e.role, secrets);
        j["mode"] = redact(e.mode, secrets);
        j["method"] = redact(e.method, secrets);
        j["host"] = redact(e.host, secrets);
        j["port"] = e.port;
        j["path"] = redact(e.path, secrets);
        j["decision"] = e.decision == Decision::allow ? "allow" : "refuse";
        j["reason"] = redact(e.reason, secrets);
        j["status"] = e.status;
        j["bytes_up"] = e.bytes_up;
        j["bytes_down"] = e.bytes_down;
        j["duration_ms"] = e.duration_ms;
        j["credential"] = redact(e.credential, secrets);
        if (e.captured) j["captured"] = true;
        if (e.refusals != 0) j["refusals"] = e.refusals;
        if (e.matches != 0) {
            j["form"] = redact(e.form, secrets);
            j["matches"] = e.matches;
        }
        if (e.metered) j["metering"] = metered_json(*e.metered, secrets);
        if (e.tool) j["tool"] = tool_json(*e.tool, secrets);
        if (e.approval) j["approval"] = approval_json(*e.approval, secrets);
        // Valid UTF-8 JSON (a byte that is not UTF-8 becomes U+FFFD), and
        // nothing a terminal acts on when the ledger is read with cat or
        // tail: C1 controls, DEL and bidi characters from a request become
        // \uXXXX escapes of the same value (base/terminal_text.hpp).
        line = terminal_json(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    }
    // Defence in depth: a secret split across fields or reintroduced by escaping cannot
    // be rebuilt from the line because each field was scrubbed; scrub the whole line too.
    if (contains_secret(line, secrets)) line = redact(std::move(line), secrets);
    line += '\n';
    return line;
}

LedgerEntry dns_refusal_entry(std::string identity, std::string_view qtype, std::string_view name,
                              std::string_view reason) {
    LedgerEntry e;
    e.identity = std::move(identity);
    e.mode = "dns";
    e.method = qtype.empty() ? std::string("-") : std::string(qtype);
    e.host = name.empty() ? std::string(".") : std::string(name.substr(0, 256));
    e.port = 53;
    e.decision = Decision::refuse;
    e.reason = std::string(reason);
    e.status = 0;
    e.captured = true;
    return e;
}

}  // namespace corral::gateway
