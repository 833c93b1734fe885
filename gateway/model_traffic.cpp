#include "gateway/model_traffic.hpp"

#include <boost/beast/http.hpp>

#include "gateway/metering/model_routes.hpp"

namespace corral::gateway {

namespace http = boost::beast::http;
using metering::Admission;
using metering::Budget;
using metering::Charge;
using metering::Cost;
using metering::ModelApi;
using metering::Provider;
using metering::Usage;
using metering::UsageState;

namespace {

ErrorShape shape_of(Provider p) {
    switch (p) {
    case Provider::anthropic: return ErrorShape::anthropic;
    case Provider::openai: return ErrorShape::openai;
    case Provider::none: break;
    }
    return ErrorShape::text;
}

ErrorShape shape_of(ModelApi api) { return shape_of(metering::provider_of(api)); }

std::vector<std::pair<std::string, std::uint64_t>> limits_left(const Budget& b) {
    std::vector<std::pair<std::string, std::uint64_t>> out;
    if (b.requests) out.emplace_back("requests", *b.requests);
    if (b.input_tokens) out.emplace_back("input_tokens", *b.input_tokens);
    if (b.output_tokens) out.emplace_back("output_tokens", *b.output_tokens);
    if (b.total_tokens) out.emplace_back("total_tokens", *b.total_tokens);
    if (b.usd_micros) out.emplace_back("usd_micros", *b.usd_micros);
    return out;
}

std::vector<std::pair<std::string, std::uint64_t>> usage_numbers(const Usage& u) {
    std::vector<std::pair<std::string, std::uint64_t>> out;
    auto put = [&](const char* k, const std::optional<std::uint64_t>& n) {
        if (n) out.emplace_back(k, *n);
    };
    put("input_tokens", u.input_tokens);
    put("output_tokens", u.output_tokens);
    put("cache_write_tokens", u.cache_write_tokens);
    put("cache_read_tokens", u.cache_read_tokens);
    put("cached_input_tokens", u.cached_input_tokens);
    put("reasoning_tokens", u.reasoning_tokens);
    return out;
}

}  // namespace

ModelTraffic::ModelTraffic(Conn& c, ModelApi api, bool websocket) : c_(c), api_(api), websocket_(websocket) {}

ModelTraffic::~ModelTraffic() {
    // Torn down mid-exchange (the connection's frame destroyed): whatever
    // was sent may have been billed; the reservations settle themselves as
    // usage unavailable (Reservation's destructor).
}

namespace {

// GET, HEAD and OPTIONS without a body read; anything else may make the
// upstream act (a method-override header is refused before this).
bool may_spend(const Request& req) {
    const bool reads = req.method() == http::verb::get || req.method() == http::verb::head ||
                       req.method() == http::verb::options;
    return !reads || request_has_body(req) || !req.body().empty();
}

}  // namespace

RouteDecision govern_route(Conn& c, const Request& req, const config::Grant& grant,
                           const metering::ModelPolicy& policy, std::string_view path, bool websocket,
                           LedgerEntry& e) {
    using metering::RouteClass;
    const metering::RouteVerdict v = metering::classify_model_route(req.method_string(), path, websocket);
    RouteDecision d;
    if (v.cls == RouteClass::metered) {
        d.model = std::make_unique<ModelTraffic>(c, v.api, websocket);
        return d;
    }
    if (v.cls == RouteClass::non_canonical) {
        d.refusal = Refusal{std::string(reason::non_canonical_path),
                            "this path is a spelling of the model route " + std::string(v.name) +
                                " (case or a trailing '/'); send the route exactly",
                            Phase::request, shape_of(v.provider)};
        return d;
    }
    const bool budgeted = c.gw.book.budgeted(c.id_text);
    auto refuse = [&](std::string_view reason_code, std::string_view rule, std::string detail) {
        if (budgeted) c.gw.book.count_budget_refusal(c.id_text);
        else c.gw.book.count_policy_refusal(c.id_text);
        MeteredLine line;
        line.api = "none";
        line.limit = std::string(rule);
        e.metered = std::move(line);
        d.refusal = Refusal{std::string(reason_code), std::move(detail), Phase::request, shape_of(v.provider)};
    };
    if (policy.strict())
        if (auto r = metering::check_model_route(policy, path)) {
            refuse(reason::model_policy, r->rule, r->detail);
            return d;
        }
    if (!budgeted && !policy.strict()) return d;
    const std::string governed = budgeted ? "a budget" : "a model policy";
    const std::string asked = std::string(req.method_string()) + " " + std::string(path.substr(0, 200));
    switch (v.cls) {
    case RouteClass::unmetered_model_api:
        refuse(reason::ungoverned_route, "unmetered_model_api",
               asked + " is the provider's " + std::string(v.name) + " API, which corral does not meter or police; " +
                   governed + " is in force, so it is refused (docs/budgets.md lists the routes)");
        break;
    case RouteClass::model_route_method:
        refuse(reason::ungoverned_route, "model_route_method",
               asked + ": the model route " + std::string(v.name) + " is metered on POST" +
                   (v.api == ModelApi::openai_responses ? " (and as a WebSocket)" : "") +
                   " only; " + governed + " is in force");
        break;
    case RouteClass::other:
        if (grant.routes.empty() && may_spend(req))
            refuse(reason::ungoverned_route, "undeclared_route",
                   asked + " is not a model route corral meters, and " + governed +
                       " is in force: a request that could spend is forwarded only on a route the grant's "
                       "`routes` declare");
        break;
    case RouteClass::metered:
    case RouteClass::non_canonical: break;
    }
    return d;
}

std::optional<Refusal> ModelTraffic::admit(const Request& req, const metering::ModelPolicy& policy,
                                           std::string_view gateway_beta, LedgerEntry& e) {
    MeteredLine line;
    line.api = std::string(metering::model_api_name(api_));
    if (websocket_) {
        const bool budgeted = c_.gw.book.budgeted(c_.id_text);
        if (budgeted || policy.reads_body()) {
            if (budgeted) c_.gw.book.count_budget_refusal(c_.id_text);
            else c_.gw.book.count_policy_refusal(c_.id_text);
            line.limit = "websocket";
            e.metered = std::move(line);
            return Refusal{std::string(reason::model_websocket),
                           std::string(budgeted ? "a budget" : "a model policy") +
                               " is in force and a WebSocket model stream cannot be checked response by response "
                               "before it is sent: stream over HTTP (POST) instead",
                           Phase::request, shape_of(api_)};
        }
        ws_line_ = e;
        ws_usage_.emplace(api_);
        ws_frames_.emplace([this](std::string_view text, std::string_view problem) { on_ws_message(text, problem); },
                           metering::kMaxSseEventBytes);
        return std::nullopt;
    }
    // One parse for both readers: the policy and the facts the budget reserves on.
    const metering::ModelBody body = metering::parse_model_body(req.body());
    const bool budgeted = c_.gw.book.budgeted(c_.id_text);
    if (body.ambiguous && (budgeted || policy.reads_body())) {
        if (budgeted) c_.gw.book.count_budget_refusal(c_.id_text);
        else c_.gw.book.count_policy_refusal(c_.id_text);
        line.limit = "ambiguous_body";
        e.metered = std::move(line);
        return Refusal{std::string(reason::ambiguous_body),
                       "the body could be read as two different requests: " + body.ambiguous->detail +
                           std::string("; ") + (budgeted ? "a budget" : "a model policy") + " is in force",
                       Phase::request, shape_of(api_)};
    }
    if (policy.strict()) {
        std::string betas;
        for (auto [it, end] = req.equal_range("anthropic-beta"); it != end; ++it)
            betas += (betas.empty() ? "" : ",") + std::string(it->value());
        if (auto refused = metering::check_model_request(policy, api_, body, betas, gateway_beta)) {
            c_.gw.book.count_policy_refusal(c_.id_text);
            line.limit = refused->rule;
            e.metered = std::move(line);
            return Refusal{std::string(reason::model_policy), refused->detail, Phase::request, shape_of(api_)};
        }
    }
    facts_ = metering::request_facts(api_, body);
    if (facts_.model) line.model = *facts_.model;
    auto r = c_.gw.book.admit(c_.id_text, facts_);
    if (auto* refusal = std::get_if<metering::OverBudget>(&r)) {
        c_.gw.book.count_budget_refusal(c_.id_text);
        line.limit = refusal->limit;
        if (auto st = c_.gw.book.run_state(c_.id_text)) line.remaining = limits_left(st->remaining);
        e.metered = std::move(line);
        return Refusal{std::string(reason::model_budget), refusal->reason, Phase::request, shape_of(api_)};
    }
    admission_.emplace(std::move(std::get<Admission>(r)));
    e.metered = std::move(line);
    return std::nullopt;
}

void ModelTraffic::on_head(int, std::string_view content_type) {
    if (websocket_) return;
    meter_.emplace(api_, metering::body_form_for(content_type));
}

void ModelTraffic::on_body(std::string_view piece) {
    if (meter_) meter_->feed(piece);
}

void ModelTraffic::on_upgraded(std::string_view frames) {
    if (ws_frames_) ws_frames_->feed(frames);
}

MeteredLine ModelTraffic::line_for(const Charge& ch) const {
    MeteredLine m;
    m.api = std::string(metering::model_api_name(api_));
    m.model = !ch.usage.model.empty() ? ch.usage.model : facts_.model.value_or("");
    m.usage_state = std::string(metering::usage_state_name(ch.usage.state));
    m.usage_reason = !ch.usage.reason.empty() ? ch.usage.reason : ch.usage.error;
    m.usage = usage_numbers(ch.usage);
    m.cost_state = ch.cost.state == Cost::State::computed ? "computed" : "unavailable";
    m.usd_micros = ch.cost.usd_micros;
    m.cost_reason = ch.cost.reason;
    m.price_source = ch.cost.source;
    m.price_date = ch.cost.date;
    m.remaining = limits_left(ch.run_state.remaining);
    if (ch.worker_state) m.worker_remaining = limits_left(ch.worker_state->remaining);
    m.over_reservation = ch.over_reservation;
    m.overspent = limits_left(ch.run_state.overspent);
    if (ch.worker_state) m.worker_overspent = limits_left(ch.worker_state->overspent);
    return m;
}

void ModelTraffic::finish(const Exchange& x, LedgerEntry& e) {
    if (websocket_) {
        if (ws_usage_)
            if (auto u = ws_usage_->finish()) record_ws_response(*u);
        return;
    }
    if (!admission_) return;
    if (x.status == 0 && x.nothing_received) {
        // Nothing reached the provider (the connection failed before the
        // request was answered, and it is not retried here): no charge.
        c_.gw.book.release(*admission_);
        admission_.reset();
        return;
    }
    Usage u;
    if (meter_) {
        meter_->finish();
        u = meter_->usage();
        if (!x.reason.empty() && u.state == UsageState::reported) {
            // A cut after the final usage arrived still used what it said.
        } else if (!x.reason.empty() && u.reason.empty()) {
            u.reason = "the response was cut (" + x.reason + ")";
        }
    } else {
        u.api = api_;
        u.reason = x.reason.empty() ? "no response body" : "no response (" + x.reason + ")";
    }
    Charge ch = c_.gw.book.settle(c_.id_text, *admission_, u, facts_.model.value_or(""));
    admission_.reset();
    e.metered = line_for(ch);
}

void ModelTraffic::on_ws_message(std::string_view text, std::string_view problem) {
    if (!problem.empty()) {
        ws_usage_->break_off(std::string(problem));
        return;
    }
    if (auto u = ws_usage_->feed_message(text)) record_ws_response(*u);
}

void ModelTraffic::record_ws_response(const Usage& u) {
    Admission none;
    none.worker = metering::worker_of(c_.id_text);
    Charge ch = c_.gw.book.settle(c_.id_text, none, u, "");
    LedgerEntry e = ws_line_;
    e.time = std::chrono::system_clock::now();
    e.method = "WS";
    e.decision = Decision::allow;
    e.status = 101;
    e.metered = line_for(ch);
    record(c_, e);
}

}  // namespace corral::gateway
