#include "gateway/metering/usage_meter.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include "base/strict_json.hpp"

namespace corral::gateway::metering {

namespace {

using nlohmann::json;

// A provider's error text goes to the ledger: bounded.
constexpr std::size_t kMaxErrorText = 256;

bool iequals_prefix(std::string_view s, std::string_view prefix) {
    if (s.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
    return true;
}

const json* field(const json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
}

const json* object_field(const json& obj, const char* key) {
    const json* m = field(obj, key);
    return m && m->is_object() ? m : nullptr;
}

std::string field_text(const json& obj, const char* key) {
    const json* m = field(obj, key);
    if (!m) return {};
    if (m->is_string()) return m->get<std::string>();
    if (m->is_number_integer()) return m->dump();
    return {};
}

// "type: message", from {error: {type|code, message}} or {type|code, message}.
std::string error_text(const json& d) {
    const json* e = object_field(d, "error");
    const json& from = e ? *e : d;
    std::string kind = field_text(from, "type");
    if (kind.empty() || kind == "error") kind = field_text(from, "code");
    std::string message = field_text(from, "message");
    std::string text = kind.empty() ? message : message.empty() ? kind : kind + ": " + message;
    if (text.empty()) text = "an error without a message";
    if (text.size() > kMaxErrorText) text.resize(kMaxErrorText);
    return text;
}

// The events worth parsing, by SSE name; an unnamed event is always parsed.
bool may_matter(ModelApi api, std::string_view name) {
    if (name.empty() || name == "error") return true;
    switch (api) {
    case ModelApi::anthropic_messages:
        return name == "message_start" || name == "message_delta" || name == "message_stop";
    case ModelApi::openai_responses:
        return name == "response.created" || name == "response.in_progress" || name == "response.completed" ||
               name == "response.incomplete" || name == "response.failed";
    default: return true;
    }
}

// A chat chunk is worth parsing when it may hold a usage value or an error
// (every chunk names "usage": null in include_usage mode, and most chunks are
// text). The test is on the raw bytes: a key spelled with JSON escapes is not
// seen, and the stream then ends without usage, unavailable: it can make the
// meter fail closed, never count less.
bool chat_chunk_may_matter(std::string_view data) {
    if (data.find("\"error\"") != std::string_view::npos) return true;
    constexpr std::string_view key = "\"usage\"";
    for (auto at = data.find(key); at != std::string_view::npos; at = data.find(key, at + 1)) {
        std::size_t i = at + key.size();
        while (i < data.size() && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) ++i;
        if (i >= data.size() || data[i] != ':') continue;
        ++i;
        while (i < data.size() && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) ++i;
        if (data.substr(i, 4) != "null") return true;
    }
    return false;
}

// The members this file reads of an event or a body (on_parsed, on_body,
// error_text): at the top, and in an Anthropic `message` or a Responses
// `response`. The rest (the answer's text, its tool calls, a Responses
// output) is checked by the reader but never built.
const JsonSelection kMessageMembers{{{"model"}, {"usage"}}};
const JsonSelection kResponseMembers{{{"model"}, {"usage"}, {"error"}}};
const JsonSelection kReadMembers{{{"type"},
                                  {"model"},
                                  {"usage"},
                                  {"error"},
                                  {"code"},
                                  {"message", &kMessageMembers},
                                  {"response", &kResponseMembers}}};

// An event's data or a body, with what this file reads of it: by the fast
// selective reader, or, when that reader does not vouch for the text, by
// nlohmann's parse as a whole (discarded when it is not JSON). Either way
// the members read are the ones nlohmann's parse would give.
json read_document(std::string_view text) {
    json d;
    if (read_json_selected(text, kReadMembers, d)) return d;
    return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace

BodyForm body_form_for(std::string_view content_type) {
    while (!content_type.empty() && (content_type.front() == ' ' || content_type.front() == '\t'))
        content_type.remove_prefix(1);
    constexpr std::string_view sse = "text/event-stream";
    if (iequals_prefix(content_type, sse)) {
        std::string_view rest = content_type.substr(sse.size());
        if (rest.empty() || rest.front() == ';' || rest.front() == ' ' || rest.front() == '\t') return BodyForm::sse;
    }
    return BodyForm::json;
}

// ---- one response ------------------------------------------------------------

void ResponseUsage::break_off(std::string reason) {
    if (broken_.empty()) broken_ = std::move(reason);
}

void ResponseUsage::take_count(const json& obj, const char* key, std::optional<std::uint64_t>& into,
                               std::string_view where) {
    const json* m = field(obj, key);
    if (!m || m->is_null()) return;
    if (m->is_number_unsigned()) {
        into = m->get<std::uint64_t>();
        return;
    }
    break_off(std::string(where) + "." + key + " is not a non-negative integer");
}

void ResponseUsage::take_model(const json& holder) {
    const json* m = field(holder, "model");
    if (m && m->is_string() && !m->get_ref<const std::string&>().empty()) u_.model = m->get<std::string>();
}

void ResponseUsage::take_usage(const json& usage) {
    switch (u_.api) {
    case ModelApi::anthropic_messages:
        take_count(usage, "input_tokens", u_.input_tokens, "usage");
        take_count(usage, "output_tokens", u_.output_tokens, "usage");
        take_count(usage, "cache_creation_input_tokens", u_.cache_write_tokens, "usage");
        take_count(usage, "cache_read_input_tokens", u_.cache_read_tokens, "usage");
        break;
    case ModelApi::openai_responses:
        take_count(usage, "input_tokens", u_.input_tokens, "usage");
        take_count(usage, "output_tokens", u_.output_tokens, "usage");
        if (const json* d = object_field(usage, "input_tokens_details"))
            take_count(*d, "cached_tokens", u_.cached_input_tokens, "usage.input_tokens_details");
        if (const json* d = object_field(usage, "output_tokens_details"))
            take_count(*d, "reasoning_tokens", u_.reasoning_tokens, "usage.output_tokens_details");
        break;
    case ModelApi::openai_chat:
        take_count(usage, "prompt_tokens", u_.input_tokens, "usage");
        take_count(usage, "completion_tokens", u_.output_tokens, "usage");
        if (const json* d = object_field(usage, "prompt_tokens_details"))
            take_count(*d, "cached_tokens", u_.cached_input_tokens, "usage.prompt_tokens_details");
        if (const json* d = object_field(usage, "completion_tokens_details"))
            take_count(*d, "reasoning_tokens", u_.reasoning_tokens, "usage.completion_tokens_details");
        break;
    default: break;
    }
}

void ResponseUsage::on_error(const json& d) {
    u_.error = error_text(d);
    if (begun_ || final_seen_)
        break_off("the provider reported an error after the response began: " + u_.error);
    else
        error_before_start_ = true;
    ended_ = true;
}

void ResponseUsage::on_parsed(std::string_view type, const json& d) {
    switch (u_.api) {
    case ModelApi::anthropic_messages:
        if (type == "message_start") {
            if (begun_) return break_off("a second message_start in one response");
            begun_ = true;
            if (const json* m = object_field(d, "message")) {
                take_model(*m);
                if (const json* usage = object_field(*m, "usage")) take_usage(*usage);
            }
        } else if (type == "message_delta") {
            if (const json* usage = object_field(d, "usage")) {
                take_usage(*usage);
                if (field(*usage, "output_tokens")) final_seen_ = true;
            }
        } else if (type == "message_stop") {
            ended_ = true;
        } else if (type == "error") {
            on_error(d);
        }
        return;
    case ModelApi::openai_responses:
        if (type == "response.created" || type == "response.in_progress") {
            begun_ = true;
            if (const json* r = object_field(d, "response")) take_model(*r);
        } else if (type == "response.completed" || type == "response.incomplete" || type == "response.failed") {
            begun_ = true;
            ended_ = true;
            if (const json* r = object_field(d, "response")) {
                take_model(*r);
                if (const json* usage = object_field(*r, "usage")) {
                    take_usage(*usage);
                    final_seen_ = true;
                }
                if (const json* e = object_field(*r, "error")) u_.error = error_text(*e);
            }
            if (type != "response.completed" && u_.error.empty()) u_.error = std::string(type);
        } else if (type == "error") {
            on_error(d);
        }
        return;
    case ModelApi::openai_chat:
        if (object_field(d, "error")) return on_error(d);
        begun_ = true;
        take_model(d);
        if (const json* usage = object_field(d, "usage")) {
            take_usage(*usage);
            final_seen_ = true;
        }
        return;
    default: return;
    }
}

void ResponseUsage::on_event(std::string_view name, std::string_view data) {
    // What follows the end of a response ([DONE], message_stop) says nothing
    // about its usage, whichever piece it came in.
    if (ended_ || !may_matter(u_.api, name)) return;
    if (u_.api == ModelApi::openai_chat) {
        if (data == "[DONE]") {
            ended_ = true;
            return;
        }
        // The first chunk names the model; after it only usage and errors matter.
        if (begun_ && !chat_chunk_may_matter(data)) return;
    }
    json d = read_document(data);
    if (d.is_discarded() || !d.is_object())
        return break_off(name.empty() ? std::string("an event's data is not a JSON object")
                                      : "the data of a '" + std::string(name.substr(0, 64)) +
                                            "' event is not a JSON object");
    on_value(name, d);
}

void ResponseUsage::on_value(std::string_view name, const json& d) {
    const json* t = field(d, "type");
    std::string type = t && t->is_string() ? t->get<std::string>() : std::string(name);
    // A response whose usage can no longer be trusted still ends where it
    // ends (the next response on a WebSocket is metered afresh).
    if (!broken_.empty()) {
        if (type == "message_stop" || type == "error" || type == "response.completed" ||
            type == "response.incomplete" || type == "response.failed" ||
            (u_.api == ModelApi::openai_chat && object_field(d, "error")))
            ended_ = true;
        return;
    }
    on_parsed(type, d);
}

void ResponseUsage::on_body(std::string_view body) {
    if (!broken_.empty()) return;
    json d = read_document(body);
    if (d.is_discarded() || !d.is_object()) return break_off("the response body is not a JSON object");
    ended_ = true;
    const json* usage = object_field(d, "usage");
    const json* err = object_field(d, "error");
    const json* t = field(d, "type");
    const bool error_shape = (t && t->is_string() && t->get_ref<const std::string&>() == "error") || (err && !usage);
    if (error_shape) {
        on_error(d);
        return;
    }
    take_model(d);
    if (usage) {
        take_usage(*usage);
        final_seen_ = true;
    }
}

Usage ResponseUsage::result() const {
    Usage u = u_;
    if (u.api == ModelApi::anthropic_count_tokens || u.api == ModelApi::none) {
        u.state = UsageState::not_metered;
        return u;
    }
    u.state = UsageState::unavailable;
    if (!broken_.empty()) {
        u.reason = broken_;
    } else if (error_before_start_) {
        u.state = UsageState::provider_error;
    } else if (!final_seen_) {
        u.reason = "no usage in the response";

    } else if (!u.input_tokens) {
        u.reason = u.api == ModelApi::openai_chat ? "usage lacks prompt_tokens" : "usage lacks input_tokens";
    } else if (!u.output_tokens) {
        u.reason = u.api == ModelApi::openai_chat ? "usage lacks completion_tokens" : "usage lacks output_tokens";
    } else if (u.cached_input_tokens && *u.cached_input_tokens > *u.input_tokens) {
        u.reason = "usage reports more cached input tokens than input tokens";
    } else if (u.reasoning_tokens && *u.reasoning_tokens > *u.output_tokens) {
        u.reason = "usage reports more reasoning tokens than output tokens";
    } else if (u.api == ModelApi::anthropic_messages && !ended_) {
        // message_delta's output_tokens is a running total: without
        // message_stop the last one seen may not be the final count.
        u.reason = "the stream ended before message_stop (its last usage may not be final)";
    } else {
        u.state = UsageState::reported;
    }
    return u;
}

// ---- an HTTP body ------------------------------------------------------------

UsageMeter::UsageMeter(ModelApi api, BodyForm form, std::size_t max_event_bytes, std::size_t max_json_body_bytes)
    : api_(api), form_(form), max_body_(max_json_body_bytes), response_(api),
      sse_([this](std::string_view name, std::string_view data) { response_.on_event(name, data); },
           max_event_bytes) {}

void UsageMeter::feed(std::string_view piece) {
    if (finished_ || api_ == ModelApi::anthropic_count_tokens || api_ == ModelApi::none) return;
    if (form_ == BodyForm::sse) {
        // A stream that ended (message_stop, [DONE], response.completed) has
        // nothing more to say about usage.
        if (response_.ended()) return;
        sse_.feed(piece);
        return;
    }
    if (body_over_) return;
    if (body_.size() + piece.size() > max_body_) {
        body_over_ = true;
        body_.clear();
        body_.shrink_to_fit();
        return;
    }
    body_.append(piece);
}

void UsageMeter::finish() {
    if (finished_) return;
    finished_ = true;
    if (form_ == BodyForm::sse) {
        if (sse_.overflowed())
            response_.break_off("an SSE event is over " + std::to_string(sse_.max_event_bytes()) + " bytes");
    } else if (body_over_) {
        response_.break_off("the JSON body is over " + std::to_string(max_body_) + " bytes");
    } else if (api_ != ModelApi::anthropic_count_tokens && api_ != ModelApi::none) {
        response_.on_body(body_);
    }
    body_.clear();
    body_.shrink_to_fit();
    usage_ = response_.result();
}

// ---- codex's WebSocket -------------------------------------------------------

Usage WebSocketUsageMeter::end_current() {
    Usage u = current_.result();
    current_ = ResponseUsage(api_);
    dirty_ = false;
    return u;
}

std::optional<Usage> WebSocketUsageMeter::feed_message(std::string_view message) {
    if (message.size() > max_) {
        current_.break_off("a WebSocket message is over " + std::to_string(max_) + " bytes");
        dirty_ = true;
        return std::nullopt;
    }
    json d = read_document(message);
    if (d.is_discarded() || !d.is_object()) {
        current_.break_off("a WebSocket message is not a JSON object");
        dirty_ = true;
        return std::nullopt;
    }
    std::optional<Usage> ended;
    // A new response while one is open: the open one never completed.
    if (const json* t = field(d, "type");
        dirty_ && t && t->is_string() && t->get_ref<const std::string&>() == "response.created") {
        current_.break_off("a new response began before this one completed");
        ended = end_current();
    }
    current_.on_value({}, d);
    // Messages outside a response (rate-limit notes) open nothing.
    dirty_ = current_.begun() || current_.broken();
    if (current_.ended()) ended = end_current();  // a created event never ends one: no second result here
    return ended;
}

void WebSocketUsageMeter::break_off(std::string reason) {
    current_.break_off(std::move(reason));
    dirty_ = true;
}

std::optional<Usage> WebSocketUsageMeter::finish() {
    if (!dirty_) return std::nullopt;
    current_.break_off("the connection closed before the response completed");
    return end_current();
}

}  // namespace corral::gateway::metering
