#include <doctest/doctest.h>

#include <string>

#include "mcp/message.hpp"

using namespace corral::mcp;

namespace {

const std::string kCall =
    R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/w/a"}}})";

HttpHeaders stateless(const char* method, const char* name = nullptr) {
    HttpHeaders h;
    h.mcp_method = method;
    if (name) h.mcp_name = name;
    return h;
}

Reason message_refusal(const std::string& body, Era era = Era::sessions_2025_11_25, const HttpHeaders& h = {},
               const MessageLimits& lim = {}) {
    auto r = read_message(body, era, h, lim);
    REQUIRE(!r.ok());
    CHECK(!r.refusal->detail.empty());
    CHECK(r.messages.empty());  // nothing of a refused read is handed on
    return r.refusal->reason;
}

}  // namespace

TEST_CASE("message: a tools/call request gives kind, id, method, tool name and arguments") {
    auto r = read_message(kCall, Era::sessions_2025_11_25, {});
    REQUIRE(r.ok());
    REQUIRE(r.messages.size() == 1);
    const Message& m = r.messages[0];
    CHECK(m.kind == Kind::request);
    CHECK(m.id == 7);
    CHECK(m.method == "tools/call");
    REQUIRE(m.tool_call);
    CHECK(m.tool_call->name == "read_file");
    CHECK(m.tool_call->arguments["path"] == "/w/a");
    CHECK(!r.batch);
}

TEST_CASE("message: notifications, responses and batches are told apart") {
    auto n = read_message(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})",
                          Era::sessions_2025_11_25, {});
    REQUIRE(n.ok());
    CHECK(n.messages[0].kind == Kind::notification);
    auto resp = read_message(R"({"jsonrpc":"2.0","id":"s1","result":{}})", Era::sessions_2025_11_25, {});
    REQUIRE(resp.ok());
    CHECK(resp.messages[0].kind == Kind::response);
    auto b = read_message("[" + kCall + R"(,{"jsonrpc":"2.0","id":8,"method":"tools/list"}])",
                          Era::sessions_2025_11_25, {});
    REQUIRE(b.ok());
    CHECK(b.batch);
    CHECK(b.messages.size() == 2);
}

TEST_CASE("message: malformed JSON-RPC is refused with a reason, never passed through") {
    for (const char* bad : {
             R"({"id":1,"method":"tools/list"})",                              // no jsonrpc
             R"({"jsonrpc":"1.0","id":1,"method":"tools/list"})",              // wrong version
             R"({"jsonrpc":"2.0","id":1.5,"method":"tools/list"})",            // float id
             R"({"jsonrpc":"2.0","id":null,"method":"tools/list"})",           // null id
             R"({"jsonrpc":"2.0","id":1,"method":""})",                        // empty method
             R"({"jsonrpc":"2.0","id":1,"method":5})",                         // method not a string
             R"({"jsonrpc":"2.0","id":1,"method":"x","params":[1]})",          // positional params
             R"({"jsonrpc":"2.0","id":1,"method":"x","result":{}})",           // request and response
             R"({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}})",
             R"({"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}})",
             R"({"jsonrpc":"2.0","result":{}})",                               // response without id
             R"({"jsonrpc":"2.0","id":1,"method":"x","extra":1})",             // unknown member
             R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})",  // no tool name
             R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a b"}})",
             R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":[]}})",
             R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}})",  // call as notification
             "[]", "5", R"("x")", R"([{"jsonrpc":"2.0","id":1,"method":"a"},7])"}) {
        INFO(bad);
        CHECK(message_refusal(bad) == Reason::invalid_request);
    }
}

TEST_CASE("message: a refusal of a single request keeps its id for the answer") {
    auto r = read_message(R"({"jsonrpc":"2.0","id":"q9","method":"tools/call","params":{"name":""}})",
                          Era::sessions_2025_11_25, {});
    REQUIRE(!r.ok());
    CHECK(r.refusal_id == "q9");
}

TEST_CASE("message: duplicate keys, oversize messages and oversize batches are refused") {
    CHECK(message_refusal(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}})") ==
          Reason::duplicate_key);
    MessageLimits lim;
    lim.json.max_bytes = 64;
    CHECK(message_refusal(kCall, Era::sessions_2025_11_25, {}, lim) == Reason::oversize);
    MessageLimits two;
    two.max_batch = 2;
    CHECK(message_refusal("[" + kCall + "," + kCall + "," + kCall + "]", Era::sessions_2025_11_25, {}, two) ==
          Reason::oversize);
}

TEST_CASE("message 2025-11-25: initialize alone and without a session; later requests carry the session") {
    const std::string init = R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{}})";
    CHECK(read_message(init, Era::sessions_2025_11_25, {}).ok());
    CHECK(message_refusal("[" + init + "]") == Reason::invalid_request);
    HttpHeaders with;
    with.session_id = "abc";
    CHECK(message_refusal(init, Era::sessions_2025_11_25, with) == Reason::invalid_request);
    MessageLimits lim;
    lim.session_required = true;
    CHECK(message_refusal(kCall, Era::sessions_2025_11_25, {}, lim) == Reason::invalid_request);
    CHECK(read_message(kCall, Era::sessions_2025_11_25, with, lim).ok());
}

TEST_CASE("message 2026-07-28: Mcp-Method and Mcp-Name must agree with the body, else -32020") {
    const Era e = Era::stateless_2026_07_28;
    CHECK(read_message(kCall, e, stateless("tools/call", "read_file")).ok());
    CHECK(message_refusal(kCall, e, {}) == Reason::header_mismatch);
    CHECK(message_refusal(kCall, e, stateless("tools/list")) == Reason::header_mismatch);
    CHECK(message_refusal(kCall, e, stateless("tools/call")) == Reason::header_mismatch);
    CHECK(message_refusal(kCall, e, stateless("tools/call", "write_file")) == Reason::header_mismatch);
    CHECK(message_refusal(kCall, e, stateless("tools/call", "read_file ")) == Reason::header_mismatch);
    const std::string list = R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})";
    CHECK(read_message(list, e, stateless("tools/list")).ok());
    CHECK(message_refusal(list, e, stateless("tools/list", "x")) == Reason::header_mismatch);
    CHECK(message_refusal(R"({"jsonrpc":"2.0","id":0,"method":"initialize"})", e, stateless("initialize")) ==
          Reason::invalid_request);
    CHECK(message_refusal("[" + kCall + "]", e, stateless("tools/call", "read_file")) == Reason::header_mismatch);
    auto r = read_message(kCall, e, stateless("tools/list"));
    CHECK(denial_entry(r.refusal->reason).jsonrpc_code == -32020);
    CHECK(r.refusal_id == 7);
}
