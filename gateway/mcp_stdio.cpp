// gateway/mcp_stdio.cpp — the MCP stdio transport (gateway/mcp_stdio.hpp):
// lines to the server, lines back, every request's id awaited within the
// deadline, the server's own requests answered by corral.
#include "gateway/mcp_stdio.hpp"

#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace corral::gateway {

namespace asio = boost::asio;
using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

LineReader::Next LineReader::next(std::string& line) {
    for (;;) {
        auto nl = pending_.find('\n');
        if (skipping_) {
            if (nl == std::string::npos) {
                pending_.clear();
                return Next::none;
            }
            pending_.erase(0, nl + 1);
            skipping_ = false;
            continue;
        }
        if (nl == std::string::npos) {
            if (pending_.size() <= max_line_) return Next::none;
            pending_.clear();
            skipping_ = true;
            return Next::oversize;
        }
        if (nl > max_line_ + (nl > 0 && pending_[nl - 1] == '\r' ? 1 : 0)) {
            pending_.erase(0, nl + 1);
            return Next::oversize;
        }
        line.assign(pending_, 0, nl);
        pending_.erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines carry nothing
        return Next::line;
    }
}

StdioRequest stdio_request(std::string_view body, const std::vector<mcp::Message>& messages, bool batch,
                           std::optional<std::string> session_id) {
    StdioRequest r;
    r.batch = batch;
    r.session_id = std::move(session_id);
    // The body was read strictly (no key twice, bounded depth): nlohmann's
    // reading of it is the same one, written back without newlines.
    json parsed = json::parse(body.begin(), body.end());
    auto add = [&](const json& m) { r.lines.push_back(m.dump(-1, ' ', false, json::error_handler_t::replace)); };
    if (parsed.is_array())
        for (const auto& m : parsed) add(m);
    else
        add(parsed);
    for (const auto& m : messages) {
        if (m.kind != mcp::Kind::request) continue;
        r.ids.push_back(m.id);
        if (m.method == "initialize") r.initialize = true;
    }
    return r;
}

namespace {

std::string mint_session_id() {
    unsigned char raw[16];
    if (RAND_bytes(raw, sizeof raw) != 1) throw std::runtime_error("RAND_bytes failed: no session id for a stdio MCP server");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "corral-";
    for (unsigned char b : raw) out += kHex[b >> 4], out += kHex[b & 15];
    return out;
}

// Milliseconds left until `deadline`, for poll(): 0 once it passed.
int ms_left(SteadyClock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 60'000));
}

// Writes all of `bytes` to a non-blocking or blocking fd before `deadline`.
// 0, or the errno that stopped it (ETIMEDOUT for the deadline).
int write_all(int fd, std::string_view bytes, SteadyClock::time_point deadline) {
    while (!bytes.empty()) {
        pollfd p{fd, POLLOUT, 0};
        int ready = poll(&p, 1, ms_left(deadline));
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return errno;
        if (ready == 0) return ETIMEDOUT;
        ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == ENOTSOCK) n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) return errno;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return 0;
}

std::string join_answers(const std::vector<std::string>& answers, bool batch) {
    if (!batch && answers.size() == 1) return answers.front();
    std::string out = "[";
    for (std::size_t i = 0; i < answers.size(); ++i) out += (i ? "," : "") + answers[i];
    return out + "]";
}

}  // namespace

StdioChannel::StdioChannel(std::string name, mcp::StdioServer server, std::shared_ptr<StdioLauncher> launcher,
                           std::size_t max_line)
    : name_(std::move(name)), server_(std::move(server)), launcher_(std::move(launcher)), max_line_(max_line),
      reader_(max_line) {}

StdioChannel::~StdioChannel() {
    // An exchange under way ends at its deadline or when its process is
    // killed (the run tears the servers' sandboxes down before this).
    join_exchanges();
    stop();
}

void StdioChannel::join_exchanges() {
    std::unique_ptr<asio::thread_pool> thread;
    {
        std::lock_guard lock(thread_mutex_);
        thread = std::move(thread_);
    }
    if (thread) {
        thread->stop();
        thread->join();
    }
}

void StdioChannel::stop() {
    if (!process_) return;
    if (process_->stop) process_->stop();
    process_.reset();
    session_id_.clear();
    reader_ = LineReader(max_line_);
}

Refusal StdioChannel::gone(std::string_view what) {
    stop();
    return Refusal{std::string(reason::upstream_connect),
                   "the stdio MCP server " + name_ + " " + std::string(what) + "; it is started again on the next message",
                   Phase::upstream};
}

bool StdioChannel::ensure_started(StdioResult& out) {
    if (process_) return true;
    if (!launcher_) {
        out.refusal = Refusal{std::string(reason::upstream_connect),
                              "stdio MCP server " + name_ + " is not started by this gateway", Phase::upstream};
        return false;
    }
    try {
        process_ = launcher_->start(name_, server_);
        session_id_ = mint_session_id();
    } catch (const std::exception& e) {
        process_.reset();
        out.refusal = Refusal{std::string(reason::upstream_connect),
                              "the stdio MCP server " + name_ + " could not be started: " + e.what(), Phase::upstream};
        return false;
    }
    return true;
}

bool StdioChannel::write_lines(const StdioRequest& request, StdioResult& out) {
    std::string bytes;
    for (const auto& line : request.lines) bytes.append(line).push_back('\n');
    int err = write_all(process_->to_server.get(), bytes, request.deadline);
    if (err == 0) return true;
    if (err == ETIMEDOUT) {
        // A server that reads nothing: the rest of the message would reach it
        // later, out of step with the next one. Started afresh instead.
        stop();
        out.refusal = Refusal{std::string(reason::timeout), "the stdio MCP server " + name_ +
                                                                " read nothing within idle_timeout", Phase::upstream};
        return false;
    }
    out.refusal = gone("exited (its stdin: " + std::string(std::strerror(err)) + ")");
    return false;
}

void StdioChannel::refuse_server_request(const json& id) {
    json error = {{"jsonrpc", "2.0"},
                  {"id", id},
                  {"error", {{"code", -32601}, {"message", std::string(kStdioServerRequestRefused)}}}};
    std::string line = error.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    // Best effort, briefly: the server's own answer is what is awaited.
    write_all(process_->to_server.get(), line, SteadyClock::now() + std::chrono::seconds(1));
}

// One line of the server's: an answer awaited (kept), a request of its own
// (answered by corral, never the agent), a notification or a stale answer
// (dropped), or no JSON object at all (kept, so govern_answer withholds it).
void StdioChannel::handle_line(const std::string& line, std::vector<json>& pending, std::vector<std::string>& answers,
                               StdioResult&) {
    json m = json::parse(line, nullptr, false);
    if (m.is_discarded() || !m.is_object()) {
        answers.push_back(line);
        pending.clear();
        return;
    }
    const bool has_id = m.contains("id"), has_method = m.contains("method");
    if (has_method && has_id) return refuse_server_request(m["id"]);
    if (has_method || !has_id) return;
    auto it = std::find(pending.begin(), pending.end(), m["id"]);
    if (it == pending.end()) return;
    pending.erase(it);
    answers.push_back(line);
}

bool StdioChannel::read_answers(const StdioRequest& request, std::vector<std::string>& answers, StdioResult& out) {
    std::vector<json> pending = request.ids;
    char buf[65536];
    std::string line;
    while (!pending.empty()) {
        const auto next = reader_.next(line);
        if (next == LineReader::Next::oversize) {
            out.answer.oversize = true;
            return true;
        }
        if (next == LineReader::Next::line) {
            handle_line(line, pending, answers, out);
            continue;
        }
        pollfd p{process_->from_server.get(), POLLIN, 0};
        int ready = poll(&p, 1, ms_left(request.deadline));
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) {
            out.refusal = Refusal{std::string(reason::timeout), "the stdio MCP server " + name_ +
                                      " did not answer within idle_timeout", Phase::upstream};
            return false;
        }
        ssize_t n = ready < 0 ? -1 : ::read(p.fd, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) {
            // A server that exits with a request unread resets the socket.
            const bool exited = n == 0 || errno == ECONNRESET;
            out.refusal = gone(exited ? "exited before it answered" : "could not be read (" + std::string(std::strerror(errno)) + ")");
            return false;
        }
        reader_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
    return true;
}

StdioResult StdioChannel::exchange(const StdioRequest& request) {
    StdioResult out;
    out.answer.content_type = "application/json";
    // A session id the box holds from a process that is gone (or never was):
    // "expired", as an HTTP server says it, so the client initializes again.
    if (request.session_id && !request.initialize && (!process_ || *request.session_id != session_id_)) {
        out.answer.status = 404;
        return out;
    }
    if (!ensure_started(out) || !write_lines(request, out)) return out;
    out.answer.session_id = session_id_;
    if (request.ids.empty()) {
        out.answer.status = 202;  // notifications or responses only: nothing comes back
        return out;
    }
    std::vector<std::string> answers;
    if (!read_answers(request, answers, out)) return out;
    out.answer.status = 200;
    if (!out.answer.oversize) out.answer.body = join_answers(answers, request.batch);
    return out;
}

asio::awaitable<StdioResult> StdioChannel::exchange_async(StdioRequest request) {
    auto ex = co_await asio::this_coro::executor;
    asio::thread_pool* thread = nullptr;
    {
        std::lock_guard lock(thread_mutex_);
        if (!thread_) thread_ = std::make_unique<asio::thread_pool>(1);
        thread = thread_.get();
    }
    // Shared, not moved into the initiation: g++ 12 destroyed a coroutine
    // parameter moved into a co_await's temporary twice.
    auto shared = std::make_shared<const StdioRequest>(std::move(request));
    auto initiate = [this, thread, ex, shared](auto handler) {
        auto h = std::make_shared<decltype(handler)>(std::move(handler));
        asio::post(*thread, [this, ex, h, shared] {
            auto r = std::make_shared<StdioResult>();
            try {
                *r = exchange(*shared);
            } catch (const std::exception& e) {
                r->refusal = gone(std::string("failed: ") + e.what());
            }
            asio::post(ex, [h, r] { (*h)(std::move(*r)); });
        });
    };
    StdioResult result = co_await asio::async_initiate<decltype(asio::use_awaitable), void(StdioResult)>(
        initiate, asio::use_awaitable);
    co_return result;
}

}  // namespace corral::gateway
