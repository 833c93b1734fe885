// gateway/mcp_stdio.hpp — an allowed MCP message on its way to a stdio
// server (mcp::StdioServer) and its answer back, for the MCP endpoint
// (gateway/mcp_endpoint.hpp). The MCP stdio transport: each JSON-RPC message
// one line on the server's stdin, each of its answers one line on its stdout
// (its stderr is logs, never read here).
//
// The gateway does not start processes: a StdioLauncher (the run's, in run/,
// which starts each server in a sandbox of its own) hands it a started
// server's two ends. One StdioChannel per server per run, started on the
// first message, one exchange at a time (its own thread), so that the
// answer lines of two requests never interleave. The answer is built as an
// McpUpstreamAnswer (application/json: one object, an array for a batch),
// so govern_answer governs it as it governs an HTTP server's.
// docs/tools.md "Stdio servers".
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fd.hpp"
#include "gateway/mcp_response.hpp"
#include "gateway/refusal.hpp"
#include "mcp/servers.hpp"

namespace corral::gateway {

// A started stdio server: bytes to its stdin, bytes from its stdout (the
// same socket may be both), and how to end it. `stop` is called once, when
// the channel gives the process up (it exited, or the channel ends).
struct StdioProcess {
    Fd to_server;
    Fd from_server;
    std::function<void()> stop;
};

// Starts the run's stdio servers. Throws std::exception with a sentence
// naming what failed when it cannot (the box then reads it in a -32603).
class StdioLauncher {
public:
    virtual ~StdioLauncher() = default;
    virtual StdioProcess start(const std::string& name, const mcp::StdioServer& server) = 0;
};

// The server's stdout as lines, each at most `max_line` bytes (the newline
// excluded). A longer line is reported once as oversize and the rest of it
// skipped, so the lines after it are read in step again. Pure.
class LineReader {
public:
    explicit LineReader(std::size_t max_line) : max_line_(max_line) {}
    enum class Next { line, none, oversize };
    void feed(std::string_view bytes) { pending_.append(bytes); }
    // The next whole line into `line` (without its '\n' or a '\r' before it).
    Next next(std::string& line);

private:
    std::size_t max_line_;
    std::string pending_;
    bool skipping_ = false;   // inside an oversize line: drop up to its '\n'
};

// One exchange: the box's messages as lines, the ids answers are awaited for.
struct StdioRequest {
    std::vector<std::string> lines;             // each message, one line of JSON (no '\n')
    std::vector<nlohmann::json> ids;            // the box's requests' ids, answered in any order
    bool batch = false;
    bool initialize = false;                    // the box asks to initialize: a new session may start
    std::optional<std::string> session_id;      // Mcp-Session-Id the box sent
    std::chrono::steady_clock::time_point deadline;
};

// The lines and ids of the box's body (already read strictly by
// mcp::read_message): each message re-serialised on one line.
StdioRequest stdio_request(std::string_view body, const std::vector<mcp::Message>& messages, bool batch,
                           std::optional<std::string> session_id);

// What the exchange gave: an answer for govern_answer, or why nothing usable
// came (the process could not start, exited, or did not answer in time).
struct StdioResult {
    std::optional<Refusal> refusal;
    McpUpstreamAnswer answer;
};

class StdioChannel {
public:
    StdioChannel(std::string name, mcp::StdioServer server, std::shared_ptr<StdioLauncher> launcher,
                 std::size_t max_line);
    ~StdioChannel();
    StdioChannel(const StdioChannel&) = delete;
    StdioChannel& operator=(const StdioChannel&) = delete;

    // Blocking: writes the lines and reads until every id is answered or the
    // deadline passes. One at a time (callers are serialised by the channel's
    // thread; exchange_async is the gateway's way in).
    StdioResult exchange(const StdioRequest& request);

    // exchange() on the channel's own thread, the result back on the caller's executor.
    boost::asio::awaitable<StdioResult> exchange_async(StdioRequest request);

    // Ends the process (if any); a later exchange starts a new one.
    void stop();

    // Waits for the exchange thread's jobs to end and lets the thread go (a
    // later exchange makes a new one). Whoever destroys the io_context an
    // exchange_async answers on calls this first: a finished job still holds
    // that context's executor until the thread lets go of it.
    void join_exchanges();

    const std::string& name() const { return name_; }

private:
    bool ensure_started(StdioResult& out);
    bool write_lines(const StdioRequest& request, StdioResult& out);
    bool read_answers(const StdioRequest& request, std::vector<std::string>& answers, StdioResult& out);
    void handle_line(const std::string& line, std::vector<nlohmann::json>& pending, std::vector<std::string>& answers,
                     StdioResult& out);
    void refuse_server_request(const nlohmann::json& id);
    Refusal gone(std::string_view what);

    std::string name_;
    mcp::StdioServer server_;
    std::shared_ptr<StdioLauncher> launcher_;
    std::size_t max_line_;
    std::optional<StdioProcess> process_;
    LineReader reader_;
    std::string session_id_;   // minted per process; "" = none running
    // The channel's thread, started on the first exchange: a run makes its
    // channels before the agent's box is cloned, which needs one thread.
    std::mutex thread_mutex_;
    std::unique_ptr<boost::asio::thread_pool> thread_;
};

// The sentence a server→client request of a stdio server is answered with.
inline constexpr std::string_view kStdioServerRequestRefused =
    "refused by corral: requests from a stdio MCP server to the client (sampling, elicitation, roots) are not "
    "passed on to the agent";

}  // namespace corral::gateway
