#include "gateway/metering/request_facts.hpp"

#include "gateway/metering/json_member.hpp"

#include <nlohmann/json.hpp>

#include <vector>

namespace corral::gateway::metering {

namespace {

using nlohmann::json;

// A count the request names; a present field of the wrong type is a problem
// (the request is then treated as naming none).
std::optional<std::uint64_t> count(const json& obj, const char* key, std::string& problem) {
    const json* m = member(obj, key);
    if (!m) return std::nullopt;
    if (m->is_number_unsigned()) return m->get<std::uint64_t>();
    if (problem.empty()) problem = std::string(key) + " is not a non-negative integer";
    return std::nullopt;
}

// Chat Completions `n`: each of the n choices may use the whole output cap.
std::uint64_t completions_asked(const json& body, std::string& problem) {
    const json* n = member(body, "n");
    if (!n || n->is_null()) return 1;
    if (n->is_number_unsigned() && n->get<std::uint64_t>() >= 1 && n->get<std::uint64_t>() <= kMaxCompletionsPerRequest)
        return n->get<std::uint64_t>();
    if (problem.empty())
        problem = "n is not a whole number from 1 to " + std::to_string(kMaxCompletionsPerRequest) +
                  "; reserved as " + std::to_string(kMaxCompletionsPerRequest) + " completions";
    return kMaxCompletionsPerRequest;
}

bool is_data_url(const json& v) { return v.is_string() && v.get_ref<const std::string&>().starts_with("data:"); }

// What an object in the body asks the provider to add from elsewhere, as
// "document block", "image by file_id", ...; "" for nothing.
std::string unbounded_part(const json& o) {
    auto t = o.find("type");
    if (t == o.end() || !t->is_string()) return {};
    const auto& type = t->get_ref<const std::string&>();
    if (type == "document" || type == "input_file") return type + " block";
    if (type == "image") {  // Anthropic: source.type base64 is in the body; url and file are fetched
        if (auto src = o.find("source"); src != o.end() && src->is_object())
            if (auto st = src->find("type"); st != src->end() && st->is_string() && *st != "base64")
                return "image by " + st->get<std::string>();
        return {};
    }
    if (type == "input_image") {  // Responses: file_id, or an image_url that is not a data: URL
        if (o.contains("file_id")) return "image by file_id";
        if (auto u = o.find("image_url"); u != o.end() && !is_data_url(*u)) return "image by URL";
        return {};
    }
    if (type == "image_url") {  // Chat Completions: image_url.url
        if (auto u = o.find("image_url"); u != o.end() && u->is_object())
            if (auto url = u->find("url"); url != u->end() && !is_data_url(*url)) return "image by URL";
    }
    return {};
}

// The first content block whose tokens its bytes do not bound (a document
// or file, an image the provider fetches by URL or file id: a small body can
// cost tens of thousands of input tokens); "" when there is none. Iterative
// (a request nests as deep as it likes) and bounded by the body's size.
std::string unbounded_block(const json& root) {
    std::vector<const json*> todo{&root};
    while (!todo.empty()) {
        const json* j = todo.back();
        todo.pop_back();
        if (j->is_object())
            if (std::string what = unbounded_part(*j); !what.empty()) return what;
        for (const auto& value : *j)  // an object's values or an array's elements
            if (value.is_structured()) todo.push_back(&value);
    }
    return {};
}

}  // namespace

std::vector<const char*> output_cap_fields(ModelApi api) {
    switch (api) {
    case ModelApi::anthropic_messages:
    case ModelApi::anthropic_count_tokens: return {"max_tokens"};
    case ModelApi::openai_responses: return {"max_output_tokens"};
    case ModelApi::openai_chat: return {"max_completion_tokens", "max_tokens"};
    case ModelApi::none: break;
    }
    return {};
}

RequestFacts request_facts(ModelApi api, std::string_view body, std::size_t max_bytes) {
    if (body.size() > max_bytes) {
        RequestFacts f;
        f.api = api;
        f.body_bytes = body.size();
        f.problem = "the request body is over " + std::to_string(max_bytes) + " bytes";
        return f;
    }
    return request_facts(api, parse_model_body(body, max_bytes));
}

RequestFacts request_facts(ModelApi api, const ModelBody& body) {
    RequestFacts f;
    f.api = api;
    f.body_bytes = body.bytes;
    if (body.too_large) {
        f.problem = "the request body is over " + std::to_string(kMaxRequestFactsBytes) + " bytes";
        return f;
    }
    if (!body.object) {
        f.problem = "the request body is not a JSON object";
        return f;
    }
    const json& d = *body.object;
    f.parsed = true;
    if (const json* m = member(d, "model")) {
        if (m->is_string())
            f.model = m->get<std::string>();
        else
            f.problem = "model is not a string";
    }
    if (const json* s = member(d, "stream")) {
        if (s->is_boolean())
            f.stream = s->get<bool>();
        else if (f.problem.empty())
            f.problem = "stream is not a boolean";
    }
    for (const char* field : output_cap_fields(api))
        if (auto n = count(d, field, f.problem); n && (!f.max_output_tokens || *n > *f.max_output_tokens))
            f.max_output_tokens = n;
    if (api == ModelApi::openai_responses) {
        if (member(d, "previous_response_id"))
            f.unbounded_input = "previous_response_id";
        else if (member(d, "conversation"))
            f.unbounded_input = "conversation";
        else if (member(d, "prompt"))
            f.unbounded_input = "prompt template";
    }
    if (api == ModelApi::openai_chat) f.completions = completions_asked(d, f.problem);
    if (api == ModelApi::openai_chat)
        if (const json* so = member(d, "stream_options"); so && so->is_object())
            if (const json* iu = member(*so, "include_usage"); iu && iu->is_boolean()) f.include_usage = iu->get<bool>();
    if (f.unbounded_input.empty()) f.unbounded_input = unbounded_block(d);
    return f;
}

}  // namespace corral::gateway::metering
