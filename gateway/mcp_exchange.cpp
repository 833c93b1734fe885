// gateway/mcp_exchange.cpp — the MCP endpoint's request path
// (gateway/mcp_endpoint.hpp): read, decide, record, forward, answer.
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "gateway/approval_desk.hpp"
#include "gateway/internals.hpp"
#include "gateway/mcp_endpoint.hpp"
#include "gateway/mcp_forward.hpp"
#include "gateway/mcp_response.hpp"
#include "mcp/policy.hpp"
#include "mcp/tools_list.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::awaitable;
using json = nlohmann::json;

namespace {

constexpr std::string_view kPathPrefix = "/mcp/";
constexpr std::size_t kMcpLedgerPathChars = 256;

// One request of the box, read and checked as MCP.
struct McpRequest {
    std::string server;               // NAME of /mcp/NAME
    mcp::ReadResult read;             // the messages (read_message)
    std::optional<mcp::Denial> denial;
    std::string rule;                 // the deciding rule (decide_messages)
    bool asks_approval = false;       // its one tools/call waits for a person (an approval rule)
    std::chrono::seconds approval_timeout{300};  // the deciding approval rule's
};

std::optional<std::string> mcp_header(const Request& req, std::string_view name) {
    auto it = req.find(name);
    if (it == req.end()) return std::nullopt;
    return std::string(it->value());
}

// 2026-07-28 when the box says so (MCP-Protocol-Version) or sends its headers.
mcp::Era era_of(const Request& req, const mcp::HttpHeaders& h) {
    auto version = mcp_header(req, "mcp-protocol-version");
    if ((version && *version == "2026-07-28") || h.mcp_method || h.mcp_name) return mcp::Era::stateless_2026_07_28;
    return mcp::Era::sessions_2025_11_25;
}

// The names of the request's tools/call messages, in order.
std::vector<std::string> call_names(const std::vector<mcp::Message>& messages) {
    std::vector<std::string> out;
    for (const auto& m : messages)
        if (m.tool_call) out.push_back(m.tool_call->name);
    return out;
}

// The messages, the server and the policy's decision, in that order: a
// message that cannot be read is refused before anything else is looked at.
McpRequest check_request(McpTools& tools, const std::string& identity, const Request& req, std::string server) {
    McpRequest r;
    r.server = std::move(server);
    mcp::HttpHeaders h{mcp_header(req, "mcp-method"), mcp_header(req, "mcp-name"), mcp_header(req, "mcp-session-id")};
    r.read = mcp::read_message(req.body(), era_of(req, h), h);
    if (r.read.refusal) {
        r.denial = r.read.refusal;
        return r;
    }
    if (!tools.serves(r.server)) {
        r.denial = mcp::Denial{mcp::Reason::unknown_server, r.server, ""};
        return r;
    }
    mcp::Decision d = mcp::decide_messages(tools.policy(), r.server, r.read.messages);
    r.rule = d.rule;
    // One call an approval rule covers waits for a person (serve_one); a
    // batch cannot wait, and decide_messages refused it whole.
    r.asks_approval = d.action == mcp::Action::approval && !r.read.batch;
    r.approval_timeout = d.approval_timeout;
    if (!d.allowed() && !r.asks_approval) {
        r.denial = d.denial ? d.denial : mcp::Denial{mcp::Reason::unknown_tool, "", ""};
        return r;
    }
    for (const auto& m : r.read.messages) {
        if (!m.tool_call) continue;
        auto q = tools.with_pins([&](mcp::PinBook& pins) { return mcp::quarantine_refusal(pins, r.server, m.tool_call->name); });
        if (q) {
            r.denial = r.read.batch ? mcp::Denial{mcp::Reason::batch_denied, "", "tool " + m.tool_call->name + ": quarantined"} : *q;
            return r;
        }
    }
    // Last, so that only a call corral would forward spends the budget (a
    // call waiting for a person reserves once it is approved). The agent's
    // report to corral itself costs nothing and is never refused for budget.
    if (!r.asks_approval && !tools.is_builtin(r.server)) r.denial = tools.calls(identity).reserve(r.server, call_names(r.read.messages));
    return r;
}

// The one tools/call of `r` held until a person decides (docs/approvals.md):
// approved, the budget is reserved as for an allowed call; otherwise the
// denial whose sentence is the approval queue's.
awaitable<void> wait_for_approval(Conn& c, McpTools& tools, McpRequest& r) {
    const mcp::ToolCall& call = *r.read.messages.front().tool_call;
    approval::Request ask;
    ask.kind = approval::Request::Kind::tool;
    ask.identity = c.id_text;
    ask.server = r.server;
    ask.tool = call.name;
    // A person reads the arguments (capped); the digest binds all of them.
    ask.arguments = capped_text(arguments_canonical(call.arguments), kLoggedTextBytes);
    ask.arguments_digest = arguments_digest(call.arguments);
    const std::optional<approval::Entry> ended = co_await await_person(c, ask, r.approval_timeout);
    if (!ended) {
        r.denial = tools.calls(c.id.str()).reserve(r.server, call_names(r.read.messages));
        co_return;
    }
    const mcp::Reason why = ended->state == approval::State::denied      ? mcp::Reason::approval_denied
                            : ended->state == approval::State::cancelled ? mcp::Reason::approval_cancelled
                                                                         : mcp::Reason::approval_timeout;
    std::string sentence = approval::refusal_sentence(*ended);
    if (sentence.starts_with("refused by corral: ")) sentence.erase(0, 19);  // denial_sentence says it once
    r.denial = mcp::Denial{why, sentence, "approval " + ended->id};
}

// With [mcp] log_arguments: `text` scrubbed of every secret the gateway
// holds, then capped (kLoggedTextBytes).
std::string logged_text(Conn& c, McpTools& tools, std::string_view text) {
    SecretScrubber scrub(tools.scrub_patterns(c.gw.secrets));
    std::string out = scrub.feed(text);
    scrub.finish(out);
    return capped_text(out, kLoggedTextBytes);
}

// One decision line per message (one line when none could be read).
void record_decisions(Conn& c, McpTools& tools, const LedgerEntry& base, const McpRequest& r) {
    auto line = [&](const mcp::Message* m) {
        LedgerEntry e = base;
        e.time = std::chrono::system_clock::now();
        e.decision = r.denial ? Decision::refuse : Decision::allow;
        e.reason = r.denial ? std::string(mcp::denial_entry(r.denial->reason).code) : "";
        e.status = r.denial ? 200 : 0;
        ToolLine t;
        t.phase = "decision", t.server = r.server, t.rule = r.rule;
        if (m) {
            t.method = m->method;
            if (m->tool_call) t.tool = m->tool_call->name, t.arguments_digest = arguments_digest(m->tool_call->arguments);
            if (m->tool_call && tools.config().log_arguments)
                t.arguments = logged_text(c, tools, arguments_canonical(m->tool_call->arguments));
        }
        e.tool = std::move(t);
        record(c, std::move(e));
    };
    if (r.read.messages.empty()) line(nullptr);
    for (const auto& m : r.read.messages) line(&m);
}

// One outcome line per request message the box sent.
void record_outcomes(Conn& c, const LedgerEntry& base, const McpRequest& r, const McpAnswer& a) {
    for (const auto& o : a.outcomes) {
        LedgerEntry e = base;
        e.time = std::chrono::system_clock::now();
        ToolLine t;
        t.phase = "outcome", t.server = r.server, t.error = o.error, t.result_bytes = o.result_bytes;
        t.result_digest = o.result_digest, t.result = o.result;
        for (const auto& m : r.read.messages)
            if (m.kind == mcp::Kind::request && m.id == o.id) {
                t.method = m.method;
                if (m.tool_call) t.tool = m.tool_call->name;
            }
        e.tool = std::move(t);
        record(c, std::move(e));
    }
}

// A first_sight line for each tool the answer showed for the first time, a
// quarantine line for each tool whose digest first differs from the trusted one.
void record_pins(Conn& c, McpTools& tools, const LedgerEntry& base, const McpRequest& r, const McpAnswer& a) {
    auto line = [&](std::string phase, const std::string& tool, const std::string& digest, const std::string& trusted) {
        LedgerEntry e = base;  // a record of the answer, not an exchange: no numbers of its own
        e.time = std::chrono::system_clock::now();
        e.status = 0, e.bytes_up = e.bytes_down = e.duration_ms = 0, e.credential.clear();
        e.decision = trusted.empty() ? Decision::allow : Decision::refuse;
        e.reason = trusted.empty() ? "" : std::string(mcp::denial_entry(mcp::Reason::quarantined).code);
        ToolLine t;
        t.phase = std::move(phase), t.server = r.server, t.method = "tools/list", t.tool = tool;
        t.digest = digest, t.trusted_digest = trusted;
        e.tool = std::move(t);
        record(c, std::move(e));
    };
    bool news = !a.first_seen.empty();
    for (const auto& [tool, digest] : a.first_seen) line("first_sight", tool, digest, "");
    for (const auto& q : a.quarantined)
        if (tools.calls(c.id.str()).first_quarantine(r.server, q.tool, q.digest)) {
            line("quarantine", q.tool, q.digest, q.trusted_digest.empty() ? "?" : q.trusted_digest);
            news = true;
        }
    if (news) tools.sighted(c.id.run_id);
}

// Writes one answer to the box. False when the box went away.
awaitable<bool> write_mcp_answer(Conn& c, int status, std::string_view content_type, const std::string& body,
                             const std::string& session_id, bool keep_alive) {
    std::string head = "HTTP/1.1 " + std::to_string(status) + " " +
                       std::string(http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)))) + "\r\n";
    if (!content_type.empty()) head.append("Content-Type: ").append(content_type).append("\r\n");
    if (!session_id.empty()) head.append("Mcp-Session-Id: ").append(session_id).append("\r\n");
    head.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
    if (!keep_alive) head += "Connection: close\r\n";
    head += "\r\n";
    std::array<asio::const_buffer, 2> bufs{asio::buffer(head), asio::buffer(body)};
    auto [ec, n] = co_await asio::async_write(c.client, bufs, nothrow);
    co_return !ec;
}

// A refusal that is not the policy's: the upstream could not be reached or
// answered nothing usable. Still a JSON-RPC error with HTTP 200, so the
// agent reads corral's sentence instead of a network failure.
std::string upstream_failure_body(const McpRequest& r, const Refusal& why) {
    json answers = json::array();
    auto error = [&](const json& id) {
        return json{{"jsonrpc", "2.0"},
                    {"id", id},
                    {"error",
                     {{"code", -32603},
                      {"message", "corral gateway: MCP server " + r.server + " could not be reached: " + why.detail},
                      {"data", {{"reason", why.reason}}}}}};
    };
    for (const auto& m : r.read.messages)
        if (m.kind == mcp::Kind::request) answers.push_back(error(m.id));
    if (answers.empty()) return error(nullptr).dump();
    return r.read.batch ? answers.dump() : answers[0].dump();
}

// Governs one request. False when the connection must close.
awaitable<bool> serve_one(Conn& c, McpTools& tools, Request& req, std::string server, Clock::time_point started) {
    LedgerEntry e;
    e.mode = "mcp", e.method = std::string(req.method_string()), e.path = std::string(req.target()).substr(0, kMcpLedgerPathChars);
    e.bytes_up = req.body().size();
    McpRequest r = check_request(tools, c.id.str(), req, std::move(server));
    if (r.asks_approval && !r.denial) co_await wait_for_approval(c, tools, r);
    if (const auto* remote = tools.remote(r.server)) e.host = remote->server->host, e.port = remote->server->port;
    if (r.denial) tools.calls(c.id.str()).refused(r.server, call_names(r.read.messages), mcp::denial_entry(r.denial->reason).code);
    record_decisions(c, tools, e, r);
    const bool keep = req.keep_alive();
    if (r.denial) {
        std::string body = denial_body(*r.denial, r.read.messages, r.read.batch, r.read.refusal_id);
        co_return co_await write_mcp_answer(c, 200, "application/json", body, "", keep) && keep;
    }
    McpForward f = co_await forward_to_server(c, tools, r.server, req, r.read);
    e.credential = f.credential;
    SecretScrubber scrub_id(tools.scrub_patterns(c.gw.secrets));
    std::string session = scrub_id.feed(f.answer.session_id);
    scrub_id.finish(session);
    McpAnswer a;
    if (f.refusal) {
        a.content_type = "application/json";
        a.body = upstream_failure_body(r, *f.refusal);
        for (const auto& m : r.read.messages)
            if (m.kind == mcp::Kind::request) a.outcomes.push_back({m.id, f.refusal->reason + ": " + f.refusal->detail, 0, ""});
    } else {
        McpAnswerContext ctx{r.server, r.read.messages, r.read.batch,
                             tools.allows_server_requests(r.server), c.limits().max_response_bytes,
                             tools.scrub_patterns(c.gw.secrets),
                             tools.config().log_arguments ? kLoggedTextBytes : 0};
        a = govern_answer(std::move(f.answer), ctx, tools);
        if (!a.withheld.empty()) e.reason = "malformed_result";
    }
    e.status = a.status, e.bytes_down = a.body.size(), e.duration_ms = ms_since(started);
    if (f.refusal) e.reason = f.refusal->reason;
    record_outcomes(c, e, r, a);
    record_pins(c, tools, e, r, a);
    co_return co_await write_mcp_answer(c, a.status, a.content_type, a.body, session, keep) && keep;
}

// GET (the event stream a client may open) or DELETE (a session's end) of
// /mcp/NAME: this endpoint offers neither, and MCP's Streamable HTTP answer
// for that is 405. A protocol answer, not a refusal of anything the agent
// asked (claude's SDK opens the stream after every initialize): recorded as
// an allowed exchange with its status, never counted or shown as a refusal.
bool is_stream_probe(const Request& req) {
    std::string_view target = req.target();
    return (req.method() == http::verb::get || req.method() == http::verb::delete_) && target.starts_with(kPathPrefix) &&
           mcp::valid_tool_name(target.substr(kPathPrefix.size()));
}

awaitable<bool> answer_no_stream(Conn& c, LedgerEntry e, bool keep, Clock::time_point started) {
    static const std::string kHead = "HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\nContent-Length: 0\r\n";
    const std::string head = kHead + (keep ? "" : "Connection: close\r\n") + "\r\n";
    e.decision = Decision::allow, e.status = 405, e.duration_ms = ms_since(started);
    record(c, std::move(e));
    auto [ec, n] = co_await asio::async_write(c.client, asio::buffer(head), nothrow);
    co_return !ec && keep;
}

// The server's name in "/mcp/NAME", or a refusal.
std::variant<std::string, Refusal> server_of(const Request& req) {
    std::string_view target = req.target();
    if (req.method() != http::verb::post)
        return Refusal{std::string(reason::unsupported_method),
                       "the MCP endpoint answers POST only (no GET event stream, no DELETE of a session yet)"};
    if (!target.starts_with(kPathPrefix) || !mcp::valid_tool_name(target.substr(kPathPrefix.size())))
        return Refusal{std::string(reason::bad_path), "the MCP endpoint serves /mcp/NAME, NAME a server's name"};
    return std::string(target.substr(kPathPrefix.size()));
}

// The body, after a 100 Continue when the box waits for one.
awaitable<std::optional<Refusal>> read_mcp_body(Conn& c, RequestParser& p) {
    if (p.is_done()) co_return std::nullopt;
    auto& req = p.get();
    if (auto ex = req.find(http::field::expect); ex != req.end() && iequals(ex->value(), "100-continue"))
        co_await asio::async_write(c.client, asio::buffer("HTTP/1.1 100 Continue\r\n\r\n", 25), nothrow);
    co_return co_await read_body(c, c.client, p);
}

awaitable<void> serve_requests(std::shared_ptr<Conn> cp, std::shared_ptr<McpTools> tools) {
    Conn& c = *cp;
    for (bool first = true;; first = false) {
        auto started = Clock::now();
        LedgerEntry e;
        e.mode = "mcp";
        HeadResult h = co_await read_head(c, c.client, first);
        if (h.closed) break;
        std::optional<Refusal> refused = std::move(h.refusal);
        ParsedRequest pr;
        if (!refused && !c.gw.ledger.healthy())
            refused = Refusal{std::string(reason::ledger_unwritable), "the ledger cannot be written: " + c.gw.ledger.failure()};
        if (!refused) parse_request_head(c, h.length, pr), refused = std::move(pr.refusal);
        if (pr.parser) e.method = std::string(pr.parser->get().method_string());
        if (!refused) {
            e.path = std::string(pr.parser->get().target()).substr(0, kMcpLedgerPathChars);
            if (is_stream_probe(pr.parser->get()) && pr.parser->is_done()) {
                if (!co_await answer_no_stream(c, e, pr.parser->get().keep_alive(), started)) break;
                continue;
            }
            auto server = server_of(pr.parser->get());
            if (auto* why = std::get_if<Refusal>(&server)) refused = std::move(*why);
            if (!refused) refused = co_await read_mcp_body(c, *pr.parser);
            if (!refused && !co_await serve_one(c, *tools, pr.parser->get(), std::get<std::string>(server), started)) break;
            if (!refused) continue;
        }
        co_await refuse(c, c.client, e, *refused, started);
        break;
    }
}

}  // namespace

awaitable<void> serve_mcp_connection(Gateway::Internals& gw, ClientSocket s, Identity id, std::shared_ptr<McpTools> tools) {
    auto c = std::make_shared<Conn>(gw, std::move(s), std::move(id));
    co_await run_watched(c, serve_requests(c, std::move(tools)));
}

}  // namespace corral::gateway
