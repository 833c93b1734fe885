// gateway/model_traffic.hpp — an inject-mode request to a model API,
// governed: before it is forwarded its worst case is reserved on the
// identity's budgets (gateway/metering/book.hpp); while its response streams
// by, the usage the provider reports is read from a copy of the bytes
// (never holding them back); when it ends the reservation is settled with
// what was used and the request's ledger line says model, usage, cost and
// what remains.
//
// Which requests: POST to a model route (metering::classify_model_route) on an
// inject grant, and codex's Responses WebSocket (one ledger line per
// response on it). A WebSocket gives no point at which a response can be
// refused before it is sent, so under a budget the upgrade is refused and
// the CLI streams over HTTP instead (codex falls back by itself); the same
// under a model policy that reads bodies (each response.create would have to
// be checked before it is sent).
//
// Which route is which, and what is refused before any of this, is
// govern_route()'s (below).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/connection.hpp"
#include "gateway/exchange.hpp"
#include "gateway/ledger.hpp"
#include "gateway/metering/book.hpp"
#include "gateway/metering/model_policy.hpp"
#include "gateway/metering/usage_meter.hpp"
#include "gateway/metering/ws_messages.hpp"
#include "gateway/request_reader.hpp"

namespace corral::gateway {

// What a request inside an inject tunnel is to the budgets and the model
// policy (metering::classify_model_route) and what follows from it:
//  - a model route metered and policed: `model` is its traffic, admit() next;
//  - a spelling of a model route that is not the route (case, trailing '/'):
//    refused on every grant (400 non_canonical_path);
//  - under a budget or a model policy ("governed"), refused with 400
//    ungoverned_route: a model API corral does not meter, a model route asked
//    with a method the meter does not read, and a request that could spend
//    (any method but GET, HEAD and OPTIONS, or any body) on a route that is
//    neither a known model route nor declared in the grant's `routes`;
//  - a compaction route under a policy without context_management: 400
//    model_policy, as before;
//  - anything else passes unmetered.
// A refusal is counted in the book and `e` gets its metering line.
struct RouteDecision {
    std::unique_ptr<class ModelTraffic> model;
    std::optional<Refusal> refusal;
};
RouteDecision govern_route(Conn& c, const Request& req, const config::Grant& grant,
                           const metering::ModelPolicy& policy, std::string_view path, bool websocket,
                           LedgerEntry& e);

class ModelTraffic final : public ResponseObserver {
public:
    // Before anything is forwarded (and before the gateway touches the
    // headers): the grant's model policy, then the budget's reservation. A
    // refusal (in the provider's error shape) is counted in the book and `e`
    // gets its metering; nothing is reserved then. `gateway_beta`: the
    // anthropic-beta token the grant's credential adds itself.
    std::optional<Refusal> admit(const Request& req, const metering::ModelPolicy& policy,
                                 std::string_view gateway_beta, LedgerEntry& e);

    // The exchange is over (whole, cut, or failed before anything was sent):
    // the reservation settled or released, `e` given its metering. After a
    // WebSocket, a response still open is recorded as unavailable.
    void finish(const Exchange& x, LedgerEntry& e);

    void on_head(int status, std::string_view content_type) override;
    void on_body(std::string_view piece) override;
    void on_upgraded(std::string_view frames) override;

    ModelTraffic(Conn& c, metering::ModelApi api, bool websocket);
    ~ModelTraffic() override;

private:
    void on_ws_message(std::string_view text, std::string_view problem);
    void record_ws_response(const metering::Usage& u);
    MeteredLine line_for(const metering::Charge& ch) const;

    Conn& c_;
    metering::ModelApi api_;
    bool websocket_;
    metering::RequestFacts facts_;
    std::optional<metering::Admission> admission_;
    std::optional<metering::UsageMeter> meter_;
    std::optional<metering::WebSocketMessages> ws_frames_;
    std::optional<metering::WebSocketUsageMeter> ws_usage_;
    LedgerEntry ws_line_;  // the WebSocket's request line, each response's line starts from it
};

}  // namespace corral::gateway
