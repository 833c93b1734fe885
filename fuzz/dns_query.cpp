// Fuzz target: one UDP datagram from a box to its DNS stub (capture/).
// parse_query and resolve must never crash or read past the datagram; a
// refusal answers only with a bare header (or not at all); an accepted
// query's reply echoes its question and is itself never answered (QR set),
// so the stub cannot be played against another resolver; a granted name's
// address maps back to that same name, as the captured listener will ask.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <variant>
#include <vector>

#include "capture/dns_message.hpp"
#include "capture/resolver.hpp"

using namespace corral::capture;

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

void check_query(const DnsQuery& q) {
    require(q.name.size() <= 253);
    require(q.question.size() >= 5 && q.question.size() <= kMaxNameWireBytes + 4);
    auto reply = reply_without_answer(q, Rcode::nxdomain);
    require(reply.size() == 12 + q.question.size());
    require(std::vector<std::uint8_t>(reply.begin() + 12, reply.end()) == q.question);
    auto again = parse_query(reply);
    require(std::holds_alternative<MessageRefusal>(again) && !std::get<MessageRefusal>(again).reply_id);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::uint8_t> message(data, data + size);  // exactly `size` bytes: ASan sees an overread
    auto parsed = parse_query(message);
    if (auto* r = std::get_if<MessageRefusal>(&parsed)) {
        require(!r->reason.empty() && !r->detail.empty());
        require(reply_to_refusal(*r).size() == (r->reply_id ? 12u : 0u));
    } else {
        check_query(std::get<DnsQuery>(parsed));
    }
    // Every name granted (the widest a run's grants could be), a small map.
    ResolverContext ctx;
    ctx.granted = [](const corral::names::HostName&) { return true; };
    ctx.hostname = "box-1";
    SyntheticAddresses map(2);
    auto res = resolve(message, ctx, map);
    require(res.reply.size() <= kMaxQueryBytes);
    if (res.reason.empty() && map.size() == 1) {
        auto a = map.find(*corral::names::normalize_host(res.name).host);
        require(a && map.name_of(a->v4) && map.name_of(a->v4)->text() == res.name);
        require(map.name_of(a->v6) && map.name_of(a->v6)->text() == res.name);
    }
    return 0;
}
