#include "gateway/model_traffic.hpp"

#include <boost/beast/http.hpp>

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

ErrorShape shape_of(ModelApi api) {
    switch (metering::provider_of(api)) {
    case Provider::anthropic: return ErrorShape::anthropic;
    case Provider::openai: return ErrorShape::openai;
    case Provider::none: break;
    }
    return ErrorShape::text;
}

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

std::unique_ptr<ModelTraffic> ModelTraffic::for_request(Conn& c, const Request& req, std::string_view path,
                                                        bool websocket) {
    ModelApi api = metering::model_api_for_path(path);
    if (api == ModelApi::none) return nullptr;
    if (websocket ? api != ModelApi::openai_responses : req.method() != http::verb::post) return nullptr;
    return std::make_unique<ModelTraffic>(c, api, websocket);
}

ModelTraffic::ModelTraffic(Conn& c, ModelApi api, bool websocket) : c_(c), api_(api), websocket_(websocket) {}

ModelTraffic::~ModelTraffic() {
    // Torn down mid-exchange (the connection's frame destroyed): whatever
    // was sent may have been billed; the reservations settle themselves as
    // usage unavailable (Reservation's destructor).
}

std::optional<Refusal> policy_refuses_route(Conn& c, const metering::ModelPolicy& policy, std::string_view path,
                                            LedgerEntry& e) {
    if (!policy.strict()) return std::nullopt;
    auto refused = metering::check_model_route(policy, path);
    if (!refused) return std::nullopt;
    c.gw.book.count_policy_refusal(c.id_text);
    MeteredLine line;
    line.api = "none";
    line.limit = refused->rule;
    e.metered = std::move(line);
    // The compaction routes are OpenAI's.
    return Refusal{std::string(reason::model_policy), refused->detail, Phase::request, ErrorShape::openai};
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
    if (auto* refusal = std::get_if<metering::Refusal>(&r)) {
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
