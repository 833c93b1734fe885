// gateway/metering/model_routes.hpp — which model API a request inside an
// inject tunnel is, decided once from its method and canonical path, in one
// table (model_routes.cpp) that docs/budgets.md lists row by row.
//
// Why a table of the APIs corral does NOT meter as well as of those it
// does: a budget or a model policy holds only if every request that could
// spend or reach a model is either read by them or refused. An upstream may
// read a path without case or with a trailing slash ("/V1/messages/"), so
// such a spelling of a model route is a model request the gateway would not
// meter; and the providers serve model APIs (batches, legacy completions,
// embeddings, compaction, Assistants runs, ...) that the meter cannot read.
// Both are classified here, by a folded form of the path (ASCII lower case,
// trailing '/' removed), so no spelling escapes its row.
//
// Pure: no I/O. gateway/model_traffic.cpp applies the verdict.
#pragma once

#include <span>
#include <string_view>

#include "gateway/metering/usage.hpp"

namespace corral::gateway::metering {

enum class RouteClass {
    // A route the meter and the policy read: POST on one of the exact model
    // routes, or the WebSocket upgrade of a Responses route. `api` is set.
    metered,
    // A spelling of a metered route that is not the route itself (case, a
    // trailing '/'): refused on every inject grant (400 non_canonical_path),
    // since an upstream may serve it as the route.
    non_canonical,
    // A model API route asked with a method the meter does not read (a GET
    // with a body, a PUT): refused under a budget or a model policy.
    model_route_method,
    // A model API of the providers that corral does not meter or police
    // (the table's unmetered rows): refused under a budget or a model policy.
    unmetered_model_api,
    // None of the above: not a model API corral knows.
    other,
};

struct RouteVerdict {
    RouteClass cls = RouteClass::other;
    ModelApi api = ModelApi::none;  // the matched metered route's API (any class but unmetered/other)
    Provider provider = Provider::none;  // the row's provider; none for `other`
    // For a refusal's sentence: an unmetered row's name ("Message Batches",
    // "legacy Completions"); the route itself ("/v1/messages") otherwise.
    std::string_view name;
};

// `method` as the request line has it (compared exactly: "post" is not
// POST); `path` canonical (canonical_route_path; the query is ignored);
// `websocket` a WebSocket upgrade request.
RouteVerdict classify_model_route(std::string_view method, std::string_view path, bool websocket);

// The API of an exact metered route ("/v1/messages"; query ignored), none
// for any other path or spelling. What the meter reads a response as.
ModelApi model_api_for_path(std::string_view path);

// One row of the table, for docs/budgets.md's generated list and the tests.
struct ModelRouteRow {
    std::string_view path;  // folded form; a prefix row matches it and everything under "path/"
    bool prefix;
    ModelApi api;           // none: an unmetered model API
    Provider provider;      // whose API: the refusal's error shape
    std::string_view name;
};
std::span<const ModelRouteRow> model_route_table();

}  // namespace corral::gateway::metering
