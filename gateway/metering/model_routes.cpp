#include "gateway/metering/model_routes.hpp"

#include <string>

#include "base/parse.hpp"

namespace corral::gateway::metering {

namespace {

using enum ModelApi;
constexpr Provider A = Provider::anthropic;
constexpr Provider O = Provider::openai;

// Checked in order, on the folded path: the exact metered routes first, then
// the model APIs corral does not meter, each prefix row last among its
// family so a more specific row names the API. From the providers' API
// references (2026-12); a model API not listed under a listed prefix is
// still caught by its family's catch-all row.
constexpr ModelRouteRow kRows[] = {
    // Metered and policed (POST; the Responses routes also as a WebSocket).
    {"/v1/messages", false, anthropic_messages, A, "Messages"},
    {"/v1/messages/count_tokens", false, anthropic_count_tokens, A, "Messages count_tokens"},
    {"/v1/responses", false, openai_responses, O, "Responses"},
    {"/backend-api/codex/responses", false, openai_responses, O, "Responses (ChatGPT codex backend)"},
    {"/v1/chat/completions", false, openai_chat, O, "Chat Completions"},
    // Anthropic: not metered.
    {"/v1/messages/batches", true, none, A, "Message Batches"},
    {"/v1/messages", true, none, A, "Messages (another route under /v1/messages)"},
    {"/v1/complete", true, none, A, "legacy Text Completions"},
    {"/v1/experimental", true, none, A, "experimental prompt tools"},
    // OpenAI: not metered.
    {"/v1/responses/compact", true, none, O, "Responses compaction"},
    {"/v1/responses", true, none, O, "Responses (another route under /v1/responses)"},
    {"/backend-api/codex/responses/compact", true, none, O, "Responses compaction (ChatGPT codex backend)"},
    {"/backend-api/codex/responses", true, none, O, "Responses (another route under the codex backend's responses)"},
    {"/v1/chat/completions", true, none, O, "stored Chat Completions"},
    {"/v1/chat", true, none, O, "Chat (another route under /v1/chat)"},
    {"/v1/completions", true, none, O, "legacy Completions"},
    {"/v1/embeddings", true, none, O, "Embeddings"},
    {"/v1/moderations", true, none, O, "Moderations"},
    {"/v1/batches", true, none, O, "Batch"},
    {"/v1/images", true, none, O, "Images"},
    {"/v1/audio", true, none, O, "Audio"},
    {"/v1/videos", true, none, O, "Videos"},
    {"/v1/realtime", true, none, O, "Realtime"},
    {"/v1/assistants", true, none, O, "Assistants"},
    {"/v1/threads", true, none, O, "Assistants threads and runs"},
    {"/v1/vector_stores", true, none, O, "Vector stores"},
    {"/v1/containers", true, none, O, "Containers"},
    {"/v1/fine_tuning", true, none, O, "Fine-tuning"},
    {"/v1/evals", true, none, O, "Evals"},
};

// ASCII lower case, the query cut, trailing '/' removed (but "/" itself):
// the form an upstream that ignores case and trailing slashes would route.
std::string folded(std::string_view path) {
    path = path.substr(0, path.find_first_of("?#"));
    while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
    return ascii_lower(path);
}

bool row_matches(const ModelRouteRow& row, std::string_view fold) {
    if (!fold.starts_with(row.path)) return false;
    if (fold.size() == row.path.size()) return true;
    return row.prefix && fold[row.path.size()] == '/';
}

}  // namespace

std::span<const ModelRouteRow> model_route_table() { return kRows; }

RouteVerdict classify_model_route(std::string_view method, std::string_view path, bool websocket) {
    const std::string fold = folded(path);
    for (const auto& row : kRows) {
        if (!row_matches(row, fold)) continue;
        RouteVerdict v{RouteClass::unmetered_model_api, row.api, row.provider, row.name};
        if (row.api == ModelApi::none) return v;
        v.name = row.path;
        if (path.substr(0, path.find_first_of("?#")) != row.path) {
            v.cls = RouteClass::non_canonical;
            return v;
        }
        const bool read = websocket ? row.api == openai_responses && method == "GET" : method == "POST";
        v.cls = read ? RouteClass::metered : RouteClass::model_route_method;
        v.api = row.api;
        return v;
    }
    return RouteVerdict{};
}

ModelApi model_api_for_path(std::string_view path) {
    path = path.substr(0, path.find_first_of("?#"));
    for (const auto& row : kRows)
        if (row.api != ModelApi::none && row.path == path) return row.api;
    return ModelApi::none;
}

}  // namespace corral::gateway::metering
