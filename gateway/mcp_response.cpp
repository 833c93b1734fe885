#include "gateway/mcp_response.hpp"

#include <algorithm>
#include <optional>

#include "base/sha256.hpp"
#include "gateway/http_framing.hpp"
#include "gateway/mcp_endpoint.hpp"
#include "mcp/strict_json.hpp"
#include "mcp/tools_list.hpp"

namespace corral::gateway {

using json = nlohmann::json;

namespace {

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// One message of the answer: its JSON and, in an event stream, the event's
// type and id lines.
struct AnswerMessage {
    json value;
    std::string event;  // SSE `event:` ("" = message)
    std::string id;     // SSE `id:` ("" = none)
    // The message's text, for a tools/list answer: the whole JSON body (then
    // `text` stays empty) or its SSE event's data.
    bool whole_body = false;
    std::string text;
    // A filtered tools/list answer whose visible tools go to the box as the
    // server wrote them (their spans in the text), not dumped from the tree.
    std::optional<std::vector<mcp::ToolSpan>> tools_as_sent;
    // Read with result.tools' objects holding their names only
    // (mcp::parse_tools_list_outline), the tools' spans in `spans`: only a
    // tools/list answer is governed so, any other is read whole again.
    bool outlined = false;
    std::vector<mcp::ToolSpan> spans;

    std::string_view source(std::string_view body) const { return whole_body ? body : std::string_view(text); }
};

bool media_type_is(std::string_view content_type, std::string_view type) {
    auto semi = content_type.find(';');
    std::string_view t = content_type.substr(0, semi);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    return iequals(t, type);
}

// An SSE stream's events (WHATWG "server-sent events"): `data:` lines joined
// by "\n", `event:` and `id:` kept, comments and `retry:` dropped.
void read_events(std::string_view body, std::vector<std::pair<AnswerMessage, std::string>>& out) {
    // Every CR before an LF dropped ("\r\r\n" too, as erasing CRLF until
    // none was left did), in one pass: that erase per CRLF was quadratic.
    std::string text;
    text.reserve(body.size());
    for (std::size_t at = 0; at < body.size();) {
        std::size_t lf = body.find('\n', at);
        if (lf == std::string_view::npos) lf = body.size();
        text.append(body.substr(at, lf - at));
        if (lf == body.size()) break;
        while (!text.empty() && text.back() == '\r') text.pop_back();
        text += '\n';
        at = lf + 1;
    }
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find("\n\n", pos);
        std::string_view block(text.data() + pos, (end == std::string::npos ? text.size() : end) - pos);
        pos = end == std::string::npos ? text.size() : end + 2;
        AnswerMessage m;
        std::string data;
        bool has_data = false;
        for (std::size_t ls = 0; ls <= block.size();) {
            std::size_t le = block.find('\n', ls);
            std::string_view line = block.substr(ls, le == std::string_view::npos ? std::string_view::npos : le - ls);
            ls = le == std::string_view::npos ? block.size() + 1 : le + 1;
            std::string_view field = line.substr(0, line.find(':'));
            std::string_view value = field.size() < line.size() ? line.substr(field.size() + 1) : std::string_view{};
            if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
            if (field == "data") data.append(has_data ? "\n" : "").append(value), has_data = true;
            else if (field == "event") m.event = value;
            else if (field == "id") m.id = value;
        }
        // An event without data, or with empty data (2025-11-25: the event
        // that primes a client's reconnection), carries no message.
        if (has_data && !data.empty()) out.emplace_back(std::move(m), std::move(data));
    }
}

// How an answer's messages are read: the whole answer at most `cap` bytes.
mcp::JsonLimits answer_limits(std::uint64_t cap) {
    mcp::JsonLimits limits;
    limits.max_bytes = cap;
    return limits;
}

// The spans of a message's tools when it can be outlined: it reads as a
// tools/list answer and each tool may go to the box as the server wrote it.
std::optional<std::vector<mcp::ToolSpan>> outlinable_spans(std::string_view text) {
    auto spans = mcp::tool_spans(text);
    if (!spans || spans->empty()) return std::nullopt;
    for (const auto& s : *spans)
        if (!mcp::reads_as_dumped(text.substr(s.begin, s.end - s.begin))) return std::nullopt;
    return spans;
}

// The answer's messages, each read the strict way. "" or what is wrong.
// `lists`: the box asked for tools/list, so a message that reads as its
// answer is outlined.
std::string parse_answer(const McpUpstreamAnswer& in, std::uint64_t cap, bool lists, std::vector<AnswerMessage>& out,
                         bool& sse) {
    const mcp::JsonLimits limits = answer_limits(cap);
    std::vector<std::pair<AnswerMessage, std::string>> texts;
    sse = media_type_is(in.content_type, "text/event-stream");
    if (sse) read_events(in.body, texts);
    else if (!media_type_is(in.content_type, "application/json"))
        return "Content-Type " + json_quoted(in.content_type) + " is neither application/json nor text/event-stream";
    // A JSON body is read where it lies, not copied first.
    // Each message keeps where its text is: a tools/list answer's tools can
    // then go to the box as the server wrote them (govern_tools_list).
    auto take = [&](AnswerMessage m, std::string* text) -> std::string {
        const std::string_view source = text ? std::string_view(*text) : std::string_view(in.body);
        auto spans = lists ? outlinable_spans(source) : std::nullopt;
        auto parsed = spans ? mcp::parse_tools_list_outline(source, limits) : mcp::parse_mcp_json(source, limits);
        if (!parsed.ok()) return "not JSON-RPC: " + mcp::denial_sentence(*parsed.error);
        if (parsed.outlined) m.outlined = true, m.spans = std::move(*spans);
        if (!sse && parsed.value.is_array()) {
            for (auto& item : parsed.value) out.push_back({std::move(item), "", ""});
            return "";
        }
        m.value = std::move(parsed.value);
        if (text) m.text = std::move(*text);
        else m.whole_body = true;
        out.push_back(std::move(m));
        return "";
    };
    if (!sse) {
        if (auto why = take(AnswerMessage{}, nullptr); !why.empty()) return why;
    }
    for (auto& [m, text] : texts)
        if (auto why = take(std::move(m), &text); !why.empty()) return why;
    for (const auto& m : out)
        // Never json::value(): it throws when the member is there but not a
        // string ({"jsonrpc":7}, found by fuzz/mcp_answer.cpp).
        if (!m.value.is_object() || !m.value.contains("jsonrpc") || m.value["jsonrpc"] != json("2.0"))
            return "a message that is not a JSON-RPC 2.0 object";
    return "";
}

// Whether a body carries a JSON-RPC result in any message it holds (JSON or
// SSE, read the strict way). A non-2xx answer passes with its body (an error
// page, a JSON-RPC error with a null id), but never with a result: a client
// that read one would take an ungoverned tools/list (fuzz/mcp_answer.cpp
// found a 404 listing a tool no rule allows).
bool carries_result(const McpUpstreamAnswer& in, std::uint64_t cap) {
    const mcp::JsonLimits limits = answer_limits(cap);
    std::vector<std::pair<AnswerMessage, std::string>> texts;
    if (media_type_is(in.content_type, "text/event-stream")) read_events(in.body, texts);
    else texts.emplace_back(AnswerMessage{}, in.body);
    auto has_result = [](const json& m) { return m.is_object() && m.contains("result"); };
    for (const auto& [m, text] : texts) {
        auto parsed = mcp::parse_mcp_json(text, limits);
        if (!parsed.ok()) continue;
        const json& v = parsed.value;
        if (has_result(v) || (v.is_array() && std::any_of(v.begin(), v.end(), has_result))) return true;
    }
    return false;
}

const mcp::Message* request_with_id(const std::vector<mcp::Message>& requests, const json& id) {
    for (const auto& r : requests)
        if (r.kind == mcp::Kind::request && r.id == id) return &r;
    return nullptr;
}

// True when response `v` answers a request the box sent in this message and
// not answered yet (`req` is that request), or is an error with a null id
// (JSON-RPC's answer to a request the server could not read). Any other
// response is the box's only by the server's word: an id of another request
// ("5" for 5), a second answer to one request. Passed, it would dodge what
// the request's method decides (a tools/list answer unfiltered); a
// conforming server never sends one, so the answer is withheld as
// malformed.
bool answers_own_request(const json& v, const std::vector<mcp::Message>& requests,
                         std::vector<const mcp::Message*>& answered, const mcp::Message*& req) {
    if (v["id"].is_null()) return v.contains("error") && !v.contains("result");
    req = request_with_id(requests, v["id"]);
    if (!req || std::find(answered.begin(), answered.end(), req) != answered.end()) return false;
    answered.push_back(req);
    return true;
}

// A tools/list answer's result, filtered and pinned; a malformed one is
// replaced by the malformed_result error. "" or why it was replaced. With
// the message's text, each tool's bytes are compared for its pin, and the
// visible tools go to the box as the server wrote them when each reads to
// the scrubber as its dump would (mcp::reads_as_dumped): dumping 100 tools
// again and comparing their trees were a third of the list's governance
// (docs/benchmarks.md, session 35).
void govern_tools_list(AnswerMessage& m, std::string_view body, const McpAnswerContext& ctx, McpTools& tools,
                       McpAnswer& a) {
    json& message = m.value;
    if (!message.contains("result")) return;
    const std::string_view text = m.source(body);
    std::optional<std::vector<mcp::ToolSpan>> spans;
    if (m.outlined) spans = std::move(m.spans);
    else if (!text.empty()) spans = mcp::tool_spans(text);
    static const std::vector<mcp::ToolSpan> none;
    auto filtered = tools.with_pins([&](mcp::PinBook& pins) {
        return mcp::filter_tools_list(std::move(message["result"]), ctx.server, tools.policy(), pins, text,
                                      spans ? *spans : none, m.outlined);
    });
    if (!filtered.ok()) {
        a.withheld = filtered.refusal->detail;
        message = mcp::denial_response(*filtered.refusal, message["id"]);
        return;
    }
    for (auto& f : filtered.first_seen) a.first_seen.push_back(std::move(f));
    for (std::size_t i = 0; i < filtered.quarantined.size(); ++i) {
        const std::string& tool = filtered.quarantined[i];
        auto trusted = tools.with_pins([&](mcp::PinBook& pins) { return pins.trusted(ctx.server, tool); });
        a.quarantined.push_back({tool, trusted.value_or(""), filtered.quarantined_digests.at(i)});
    }
    message["result"] = std::move(filtered.result);
    const std::size_t visible = message["result"]["tools"].size();
    if (spans && filtered.visible_spans.size() == visible &&
        std::all_of(filtered.visible_spans.begin(), filtered.visible_spans.end(), [&](const mcp::ToolSpan& s) {
            return mcp::reads_as_dumped(text.substr(s.begin, s.end - s.begin));
        }))
        m.tools_as_sent = std::move(filtered.visible_spans);
}

// Appends `object` as dump writes it, with `member(key, value)` writing
// each member's value.
template <class Member>
void append_members(std::string& out, const json& object, Member member) {
    out += '{';
    bool first = true;
    for (const auto& [key, value] : object.items()) {
        if (!first) out += ',';
        first = false;
        out += dump_json(json(key));
        out += ':';
        member(key, value);
    }
    out += '}';
}

// What dump_json(m.value) writes, but with result.tools' elements copied from
// the server's text (m.tools_as_sent) instead of dumped from their trees.
std::string dump_with_tools_as_sent(const AnswerMessage& m, std::string_view body) {
    const std::string_view text = m.source(body);
    std::string out;
    out.reserve(text.size() + 64);
    append_members(out, m.value, [&](const std::string& key, const json& value) {
        if (key != "result") {
            out += dump_json(value);
            return;
        }
        append_members(out, value, [&](const std::string& k, const json& v) {
            if (k != "tools") {
                out += dump_json(v);
                return;
            }
            out += '[';
            for (std::size_t i = 0; i < m.tools_as_sent->size(); ++i) {
                const mcp::ToolSpan& s = (*m.tools_as_sent)[i];
                if (i) out += ',';
                out.append(text.substr(s.begin, s.end - s.begin));
            }
            out += ']';
        });
    });
    return out;
}

std::string error_text(const json& message) {
    if (!message.contains("error") || !message["error"].is_object()) return "";
    const json& e = message["error"];
    std::string code = e.contains("code") && e["code"].is_number_integer() ? std::to_string(e["code"].get<long long>()) : "?";
    return code + " " + (e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>() : "");
}

// Each message scrubbed on its own and framed as the box's transport wants.
void frame_answer(std::vector<AnswerMessage>& messages, std::string_view body, bool sse, const McpAnswerContext& ctx,
                  McpAnswer& a) {
    std::vector<std::string> texts;
    std::string dumped;
    for (auto& m : messages) {
        SecretScrubber scrub(ctx.patterns);
        dumped = m.tools_as_sent ? dump_with_tools_as_sent(m, body) : dump_json(m.value);
        std::string text;
        text.reserve(dumped.size());
        scrub.feed(dumped, text);
        scrub.finish(text);
        a.secrets_masked += scrub.matches();
        if (m.value.contains("id") && request_with_id(ctx.requests, m.value["id"])) {
            for (auto& o : a.outcomes)
                if (o.id == m.value["id"]) {
                    o.error = error_text(m.value);
                    o.result_bytes = text.size();
                    o.result_digest = "sha256:" + sha256_hex(text);
                    if (ctx.keep_result_bytes) o.result = capped_text(text, ctx.keep_result_bytes);
                }
        }
        texts.push_back(std::move(text));
    }
    a.content_type = sse ? "text/event-stream" : "application/json";
    // Appended in place: a temporary per piece copied each message's text
    // twice more.
    std::size_t size = 2;
    for (std::size_t i = 0; i < texts.size(); ++i) size += texts[i].size() + messages[i].event.size() + messages[i].id.size() + 20;
    if (sse) {
        a.body.reserve(size);
        for (std::size_t i = 0; i < texts.size(); ++i) {
            if (!messages[i].event.empty()) a.body.append("event: ").append(messages[i].event).append("\n");
            if (!messages[i].id.empty()) a.body.append("id: ").append(messages[i].id).append("\n");
            a.body.append("data: ").append(texts[i]).append("\n\n");
        }
    } else if (texts.size() == 1 && !ctx.batch) {
        a.body = std::move(texts.front());
    } else {
        a.body.reserve(size);
        a.body = "[";
        for (std::size_t i = 0; i < texts.size(); ++i) a.body.append(i ? "," : "").append(texts[i]);
        a.body += "]";
    }
}

// Why an answer was withheld can quote the server's bytes (a parse error's
// context), so it is scrubbed like the answer itself before the box or the
// ledger gets it (fuzz/mcp_answer.cpp found a secret in such a detail).
std::string scrubbed(std::string text, const McpAnswerContext& ctx, McpAnswer& a) {
    SecretScrubber scrub(ctx.patterns);
    std::string out = scrub.feed(text);
    scrub.finish(out);
    a.secrets_masked += scrub.matches();
    return out;
}

void withhold(McpAnswer& a, const McpAnswerContext& ctx, std::string why) {
    why = scrubbed(std::move(why), ctx, a);
    mcp::Denial d{mcp::Reason::malformed_result, ctx.server, why};
    a.withheld = std::move(why);
    a.status = 200;
    a.content_type = "application/json";
    a.body = denial_body(d, ctx.requests, ctx.batch, nullptr);
    for (auto& o : a.outcomes) {
        o.error = "withheld: " + a.withheld;
        o.result_bytes = 0, o.result_digest.clear();
    }
}

}  // namespace

std::string arguments_canonical(const json& arguments) {
    // nlohmann's objects are std::map-backed: dump() writes keys sorted.
    return arguments.dump(-1, ' ', true, json::error_handler_t::replace);
}

std::string arguments_digest(const json& arguments) { return "sha256:" + sha256_hex(arguments_canonical(arguments)); }

std::string capped_text(std::string_view text, std::size_t cap) {
    if (text.size() <= cap) return std::string(text);
    std::size_t end = cap;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // a continuation byte
    return std::string(text.substr(0, end)) + "...[cut: " + std::to_string(text.size()) + " bytes]";
}

std::string denial_body(const mcp::Denial& d, const std::vector<mcp::Message>& requests, bool batch,
                        const json& fallback_id) {
    json answers = json::array();
    for (const auto& r : requests)
        if (r.kind == mcp::Kind::request) answers.push_back(mcp::denial_response(d, r.id));
    if (answers.empty() || !batch) return dump_json(answers.empty() ? mcp::denial_response(d, fallback_id) : answers[0]);
    return dump_json(answers);
}

McpAnswer govern_answer(McpUpstreamAnswer in, const McpAnswerContext& ctx, McpTools& tools) {
    McpAnswer a;
    a.status = in.status;
    for (const auto& r : ctx.requests)
        if (r.kind == mcp::Kind::request) a.outcomes.push_back({r.id, "no answer", 0, ""});
    if (in.oversize) {
        withhold(a, ctx, "the answer exceeds max_response_bytes (" + std::to_string(ctx.cap) + ")");
        return a;
    }
    if (in.status < 200 || in.status >= 300 || in.body.empty()) {
        // An HTTP-level answer (202 to a notification, 404 for an expired
        // session, a server's error page): its status passes, its body scrubbed.
        if (carries_result(in, ctx.cap)) {
            withhold(a, ctx, "an HTTP " + std::to_string(in.status) + " answer carries a JSON-RPC result");
            return a;
        }
        SecretScrubber scrub(ctx.patterns);
        a.body = scrub.feed(in.body);
        scrub.finish(a.body);
        a.secrets_masked = scrub.matches();
        a.content_type = in.content_type;
        for (auto& o : a.outcomes) o.error = "HTTP " + std::to_string(in.status);
        return a;
    }
    std::vector<AnswerMessage> messages;
    bool sse = false;
    const bool lists = std::any_of(ctx.requests.begin(), ctx.requests.end(),
                                   [](const mcp::Message& r) { return r.kind == mcp::Kind::request && r.method == "tools/list"; });
    if (auto why = parse_answer(in, ctx.cap, lists, messages, sse); !why.empty()) {
        withhold(a, ctx, why);
        return a;
    }
    std::vector<AnswerMessage> kept;
    std::vector<const mcp::Message*> answered;
    for (auto& m : messages) {
        json& v = m.value;
        bool server_request = v.contains("method") && v.contains("id");
        if (server_request && !ctx.allow_server_requests) {
            ++a.server_requests_dropped;
            continue;
        }
        const mcp::Message* req = nullptr;
        if (v.contains("id") && !v.contains("method") && !answers_own_request(v, ctx.requests, answered, req)) {
            withhold(a, ctx, "a response with id " + dump_json(v["id"]) +
                                 " answers no request of this message (or one already answered)");
            return a;
        }
        const bool list = req && req->method == "tools/list";
        if (m.outlined && !list) {
            // Checked already; read whole, as any answer but a list's is.
            m.value = mcp::parse_mcp_json(m.source(in.body), answer_limits(ctx.cap)).value;
            m.outlined = false;
        }
        if (list) govern_tools_list(m, in.body, ctx, tools, a);
        kept.push_back(std::move(m));
    }
    frame_answer(kept, in.body, sse, ctx, a);
    a.parsed = std::make_shared<std::vector<AnswerMessage>>(std::move(kept));
    return a;
}

}  // namespace corral::gateway
