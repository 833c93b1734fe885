// Fuzz target: the usage meters (gateway/metering/usage_meter.*) on any
// response body. Input: [api][form and piece size][body].
// What must hold for every input:
//  - the usage is the same whether the body comes whole, byte by byte or in
//    pieces of the given size (a meter depends on the bytes, never on where
//    the relay's reads happened to split them);
//  - a meter never holds more than its bounds (one event, or the JSON body);
//  - a `reported` usage has its input and output counts;
//  - codex's WebSocket meter, fed each line as a message, does not crash and
//    reports a response at most once per message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/metering/usage_meter.hpp"

using namespace corral::gateway::metering;

namespace {

constexpr std::size_t kEventBound = 4096;  // small, so inputs reach it
constexpr std::size_t kBodyBound = 16384;

std::string describe(const Usage& u) {
    auto n = [](const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : "-"; };
    return std::string(usage_state_name(u.state)) + "|" + u.model + "|" + n(u.input_tokens) + "|" +
           n(u.output_tokens) + "|" + n(u.cache_write_tokens) + "|" + n(u.cache_read_tokens) + "|" +
           n(u.cached_input_tokens) + "|" + n(u.reasoning_tokens) + "|" + u.reason + "|" + u.error;
}

std::string metered(ModelApi api, BodyForm form, std::string_view body, std::size_t piece) {
    UsageMeter m(api, form, kEventBound, kBodyBound);
    for (std::size_t i = 0; i < body.size(); i += piece) {
        m.feed(body.substr(i, piece));
        if (m.held() > (form == BodyForm::sse ? kEventBound : kBodyBound)) std::abort();
    }
    m.finish();
    const Usage& u = m.usage();
    if (u.state == UsageState::reported && (!u.input_tokens || !u.output_tokens)) std::abort();
    if (u.state == UsageState::unavailable && u.reason.empty()) std::abort();
    return describe(u);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    static constexpr ModelApi apis[] = {ModelApi::anthropic_messages, ModelApi::openai_responses,
                                        ModelApi::openai_chat, ModelApi::anthropic_count_tokens};
    const ModelApi api = apis[data[0] % 4];
    const BodyForm form = (data[1] & 0x80) ? BodyForm::json : BodyForm::sse;
    const std::size_t piece = 1 + (data[1] & 0x7f);
    const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);

    const std::string whole = metered(api, form, body, body.size() + 1);
    if (metered(api, form, body, piece) != whole) std::abort();
    if (body.size() <= 4096 && metered(api, form, body, 1) != whole) std::abort();

    WebSocketUsageMeter ws(ModelApi::openai_responses, kEventBound);
    std::string_view rest = body;
    while (!rest.empty()) {
        auto nl = rest.find('\n');
        (void)ws.feed_message(rest.substr(0, nl));
        if (nl == std::string_view::npos) break;
        rest.remove_prefix(nl + 1);
    }
    (void)ws.finish();
    return 0;
}
