// Requests that would walk around a budget or a model policy (issue 37),
// through `corral gateway` to the stand-in model API: every spelling of a
// model route, the model APIs corral does not meter, methods and headers an
// upstream could read otherwise, bodies two JSON readers could read
// differently, and input the provider adds from elsewhere. Each is refused
// before the stand-in sees anything; the exact forms still pass.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/gateway_e2e/fixture.hpp"
#include "tests/gateway_e2e/model_upstream.hpp"
#include "tests/support/ledger.hpp"

using namespace corral::test;
using namespace corral::test::gw;
using nlohmann::json;

// Issue 37, items 1, 2 and 4: under a budget, every spelling of a model
// route, every model API corral does not meter, a method spelled otherwise,
// a method override and an underscore header are refused before anything
// reaches the stand-in; a read elsewhere still passes.
TEST_CASE("budgets hold whatever the route looks like: spellings, other model APIs, methods, headers" *
          doctest::timeout(180)) {
    if (auto why = missing_prerequisite(); !why.empty()) {
        MESSAGE("skipped: " << why);
        return;
    }
    ModelUpstream m;
    OwnDaemon d("meter-routes", "", "5s", "meter/run-routes", grant_for(m, std::string(kPrices) + "[budget]\nrequests = 100\n"));
    auto refused_as = [&](const Answer& a, const char* code) {
        CHECK(a.status == (std::string_view(code) == "unsupported_method" ? 405 : 400));
        CHECK(a.body.find(code) != std::string::npos);
    };
    const json chat = {{"model", "gpt-test"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
    for (const char* p : {"/v1/messages/", "/V1/messages", "/v1/Messages", "/v1/MESSAGES", "/v1/messages/count_tokens/",
                          "/v1/responses/", "/V1/responses", "/v1/chat/completions/"}) {
        CAPTURE(p);
        refused_as(post(d, m, p, anthropic_body(false)), "non_canonical_path");
    }
    for (const char* p : {"/v1/messages/batches", "/v1/complete", "/v1/completions", "/v1/embeddings",
                          "/v1/responses/compact", "/backend-api/codex/responses/compact", "/v1/other/route"}) {
        CAPTURE(p);
        refused_as(post(d, m, p, chat), "ungoverned_route");
    }
    auto with = [&](std::vector<std::string> args, std::string body = anthropic_body(false).dump()) {
        args.insert(args.end(), {"-D", "-", "-H", "content-type: application/json", "--data-binary", body,
                                 url(m, "/v1/messages")});
        auto r = d.curl_args(args);
        Answer a;
        auto at = r.out.rfind("\nstatus=");
        if (at != std::string::npos) a.status = std::atoi(r.out.c_str() + at + 8);
        a.body = r.out;
        return a;
    };
    refused_as(with({"-X", "post"}), "unsupported_method");
    refused_as(with({"-X", "GET", "-H", "X-HTTP-Method-Override: POST"}), "header_refused");
    refused_as(with({"-X", "GET"}), "ungoverned_route");  // a model route read without POST
    refused_as(with({"-H", "anthropic_beta: web-fetch-2025-09-10"}), "header_refused");
    // The WebSocket upgrade on a spelling of the Responses route: refused
    // as that spelling, not relayed (the exact route gets 426).
    for (const char* p : {"/v1/responses/", "/V1/Responses"}) {
        CAPTURE(p);
        json ws = node_client_via(d.port, d.ca,
                                  {{"host", "upstream.test"}, {"port", m.main}, {"mode", "ws-turns"}, {"path", p},
                                   {"messages", json::array({"{}"})}});
        CHECK(ws["status"] == 400);
    }
    // Item 5: a body two JSON readers could read as different requests.
    const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
    for (const std::string& body :
         {R"({"model":"claude-test","max_tokens":100000,"max_tokens":1,)" + msgs + "}",
          R"({"model":"claude-other","model":"claude-test","max_tokens":1,)" + msgs + "}",
          R"({"MODEL":"claude-other","model":"claude-test","max_tokens":1,)" + msgs + "}",
          R"({"model":"claude-test","max_tokens":1,"Tools":[{"type":"web_search_20250305","name":"w"}],)" + msgs + "}"}) {
        CAPTURE(body);
        refused_as(with({}, body), "ambiguous_body");
    }
    CHECK(m.stats()["requests"] == 0);
    auto lines = metered_lines(d, [](const std::vector<json>& v) {
        for (const auto& l : v)
            if (l["metering"].value("limit", "") == "unmetered_model_api") return true;
        return false;
    });
    bool batches = false;
    for (const auto& l : lines)
        batches |= l.value("path", "") == "/v1/messages/batches" && l["metering"]["limit"] == "unmetered_model_api" &&
                   l["reason"] == "ungoverned_route";
    CHECK(batches);
    // The exact route is still metered and forwarded.
    CHECK(post(d, m, "/v1/messages", anthropic_body(false)).status == 200);
    CHECK(m.stats()["requests"] == 1);
}

// Issue 37 item 6: input the provider adds from elsewhere (an image by file
// id or URL, a prompt template) is not bounded by the body's bytes, so under
// an input budget it is reserved at the unbounded figure and refused before
// the stand-in sees it; the same image inline (base64) is bounded and passes.
TEST_CASE("metering: images by file id or URL and prompt templates are reserved as unbounded input under an input budget" *
          doctest::timeout(120)) {
    if (auto why = missing_prerequisite(); !why.empty()) {
        MESSAGE("skipped: " << why);
        return;
    }
    ModelUpstream m;
    OwnDaemon d("meter-unbounded", "", "5s", "meter/run-unbounded",
                grant_for(m, std::string(kPrices) + "[budget]\ninput_tokens = 40000\n"));
    auto with_image = [](const json& source) {
        json b = anthropic_body(false);
        json blocks = json::array();
        for (int i = 0; i < 20; ++i) blocks.push_back({{"type", "image"}, {"source", source}});
        blocks.push_back({{"type", "text"}, {"text", "describe"}});
        b["messages"] = json::array({{{"role", "user"}, {"content", blocks}}});
        return b;
    };
    for (const json& source : {json{{"type", "file"}, {"file_id", "file_011CNha8iCJcU1wXNR6q4V8w"}},
                               json{{"type", "url"}, {"url", "https://img.invalid/a.png"}}}) {
        CAPTURE(source.dump());
        Answer a = post(d, m, "/v1/messages", with_image(source));
        CHECK(a.status == 400);
        CHECK(a.body.find("model_budget") != std::string::npos);
    }
    Answer p = post(d, m, "/v1/responses", {{"model", "gpt-test"}, {"stream", true}, {"prompt", {{"id", "pmpt_1"}}}});
    CHECK(p.status == 400);
    CHECK(m.stats()["requests"] == 0);
    Answer inline_image =
        post(d, m, "/v1/messages", with_image({{"type", "base64"}, {"media_type", "image/png"}, {"data", "iVBORw0KGgo="}}));
    CHECK(inline_image.status == 200);
    CHECK(m.stats()["requests"] == 1);
}
