#include <doctest/doctest.h>

#include <set>
#include <string>

#include "mcp/denial.hpp"

using namespace corral::mcp;

TEST_CASE("denial: every reason has one row, with a distinct code and a sentence") {
    std::set<std::string_view> codes;
    for (int r = 0; r <= static_cast<int>(Reason::budget_exhausted); ++r) {
        const DenialEntry& e = denial_entry(static_cast<Reason>(r));
        CHECK(static_cast<int>(e.reason) == r);
        CHECK(codes.insert(e.code).second);
        CHECK(!e.sentence.empty());
    }
    CHECK(codes.size() == kDenials.size());
}

TEST_CASE("denial: the answer is a JSON-RPC error the model can act on, with the request's id") {
    const auto resp = denial_response(Denial{Reason::unknown_tool, "exec", "no rule allows it"}, 12);
    CHECK(resp["jsonrpc"] == "2.0");
    CHECK(resp["id"] == 12);
    CHECK(resp["error"]["code"] == kPolicyErrorCode);
    CHECK(resp["error"]["message"] ==
          "refused by corral: tool exec is not allowed for this worker; do not retry it by other means "
          "(no rule allows it)");
    CHECK(resp["error"]["data"]["reason"] == "unknown_tool");
    CHECK(resp["error"]["data"]["subject"] == "exec");
    CHECK(denial_response(Denial{Reason::header_mismatch, "", ""}, nullptr)["error"]["code"] == -32020);
    CHECK(denial_response(Denial{Reason::duplicate_key, "", ""}, nullptr)["error"]["code"] == -32700);
}
