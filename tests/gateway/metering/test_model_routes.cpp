#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gateway/metering/model_routes.hpp"

using namespace corral::gateway::metering;

namespace {

// Every spelling an upstream that ignores case or trailing slashes would
// route as `route`: each letter's case flipped alone and all together, with
// and without trailing slashes.
std::vector<std::string> spellings_of(std::string_view route) {
    std::vector<std::string> out;
    auto upper = [](std::string s) {
        for (char& ch : s)
            if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
        return s;
    };
    std::vector<std::string> bases{std::string(route), upper(std::string(route))};
    for (std::size_t i = 0; i < route.size(); ++i) {
        if (route[i] < 'a' || route[i] > 'z') continue;
        std::string s(route);
        s[i] = static_cast<char>(s[i] - 'a' + 'A');
        bases.push_back(s);
    }
    for (const auto& b : bases)
        for (const char* tail : {"", "/", "//"}) out.push_back(b + tail);
    return out;
}

}  // namespace

TEST_CASE("model routes: the exact routes are metered on POST, the Responses routes also as a WebSocket") {
    CHECK(classify_model_route("POST", "/v1/messages", false).cls == RouteClass::metered);
    CHECK(classify_model_route("POST", "/v1/messages?beta=true", false).api == ModelApi::anthropic_messages);
    CHECK(classify_model_route("POST", "/v1/messages/count_tokens", false).api == ModelApi::anthropic_count_tokens);
    CHECK(classify_model_route("POST", "/v1/chat/completions", false).api == ModelApi::openai_chat);
    CHECK(classify_model_route("GET", "/backend-api/codex/responses", true).cls == RouteClass::metered);
    CHECK(classify_model_route("GET", "/v1/messages", true).cls == RouteClass::model_route_method);
    CHECK(classify_model_route("GET", "/v1/messages", false).cls == RouteClass::model_route_method);
    CHECK(classify_model_route("PUT", "/v1/responses", false).cls == RouteClass::model_route_method);
    // Methods are compared exactly.
    CHECK(classify_model_route("post", "/v1/messages", false).cls == RouteClass::model_route_method);
}

TEST_CASE("model routes: any spelling of a metered route that is not the route is non-canonical (property)") {
    for (const auto& row : model_route_table()) {
        if (row.api == ModelApi::none) continue;
        for (const auto& s : spellings_of(row.path)) {
            CAPTURE(s);
            const RouteVerdict v = classify_model_route("POST", s, false);
            if (s == row.path) {
                CHECK(v.cls == RouteClass::metered);
                CHECK(v.api == row.api);
            } else {
                CHECK(v.cls == RouteClass::non_canonical);
                CHECK(v.name == row.path);
            }
            // The same as a WebSocket upgrade: never metered unread.
            const RouteVerdict w = classify_model_route("GET", s, true);
            CHECK((w.cls == RouteClass::non_canonical) == (s != row.path));
        }
    }
}

TEST_CASE("model routes: the providers' other model APIs are classified unmetered, in any spelling") {
    for (const char* p : {"/v1/messages/batches", "/v1/messages/batches/", "/V1/Messages/Batches/msgbatch_1/cancel",
                          "/v1/messages/anything", "/v1/complete", "/v1/completions", "/v1/embeddings",
                          "/v1/responses/compact", "/v1/responses/resp_1", "/v1/responses/input_tokens",
                          "/backend-api/codex/responses/compact", "/backend-api/codex/responses/x",
                          "/v1/chat/completions/cmpl_1", "/v1/batches", "/v1/images/generations",
                          "/v1/audio/speech", "/v1/realtime/client_secrets", "/v1/threads/t_1/runs",
                          "/v1/experimental/generate_prompt", "/V1/EMBEDDINGS/"}) {
        CAPTURE(p);
        const RouteVerdict v = classify_model_route("POST", p, false);
        CHECK(v.cls == RouteClass::unmetered_model_api);
        CHECK(v.api == ModelApi::none);
        CHECK_FALSE(v.name.empty());
    }
    CHECK(classify_model_route("POST", "/v1/messages/batches", false).name == "Message Batches");
    CHECK(classify_model_route("POST", "/v1/responses/compact", false).provider == Provider::openai);
    CHECK(classify_model_route("POST", "/v1/complete", false).provider == Provider::anthropic);
}

TEST_CASE("model routes: other paths are not model APIs, and a prefix matches only whole segments") {
    for (const char* p : {"/", "/v1/models", "/v1/models/claude-x", "/v1/files", "/api/event_logging/batch",
                          "/v1/messagesX", "/v1/completionsfoo", "/x/v1/messages", "/backend-api/wham/accounts/check"}) {
        CAPTURE(p);
        CHECK(classify_model_route("POST", p, false).cls == RouteClass::other);
    }
}

TEST_CASE("model routes: model_api_for_path is the exact metered rows only") {
    CHECK(model_api_for_path("/v1/responses?x=1") == ModelApi::openai_responses);
    CHECK(model_api_for_path("/v1/responses/") == ModelApi::none);
    CHECK(model_api_for_path("/V1/messages") == ModelApi::none);
    CHECK(model_api_for_path("/v1/messages/batches") == ModelApi::none);
}
