// gateway/daemon.hpp — `corral gateway`: the gateway as a long-lived daemon
// serving many runs (tools/cmd_gateway.cpp parses the command line, loads
// the configuration and checks its paths, then calls serve_daemon).
//
// Listeners:
//  - listen_unix: a Unix stream socket, mode 0600, for the sandbox bridge
//    (run/bridge). Only root peers are accepted (SO_PEERCRED). Each
//    connection starts with one line of gateway/daemon_protocol.hpp: an
//    announcement naming who the bridge vouches for (the box's bytes follow
//    it), or a run's supervisor asking for its counts. A connection without a
//    valid line within 5 s is closed without an answer. A connection of a
//    box's MCP listener (CORRAL-MCP) is served as that worker's MCP endpoint
//    with its McpTools (DaemonOptions::mcp_tools), shared by all its runs;
//    for a worker without any, every message is refused (unknown_server).
//  - listen_tcp: loopback only, for tests and benchmarks run as root; every
//    connection gets the fixed tcp_identity, so it is served only when the
//    socket at its other end is root's (the Unix listener's rule): the kernel
//    is asked who owns that socket (gateway/socket_owner.hpp; one netlink
//    round trip per accepted connection, not per request). Any other peer,
//    or one whose owner cannot be read, gets 403 tcp_peer_not_root and a
//    ledger line, and nothing is dialled: otherwise every local user could
//    send requests with the injected credentials.
// Threads: `threads` event loops, each an io_context run by exactly one
// thread. The listeners accept on the first loop and hand each connection to
// the next loop in turn; everything a connection does (its client socket,
// upstream sockets, timers) then stays on that loop's thread, so no handler
// crosses threads and no loop has to wake another.
// Once every listener is bound it prints "listening unix:PATH" and/or
// "listening tcp:ADDR:PORT" on stdout (flushed).
// Signals:
//  - SIGHUP reopens the ledger (after logrotate moved it away; a ledger that
//    had failed, e.g. on ENOSPC, becomes writable again) and logs it.
//  - SIGTERM / SIGINT stop accepting at once, let the open connections finish
//    for at most `shutdown_grace`, then close what is left, sync the ledger,
//    remove the socket and return 0. A second signal ends the grace at once.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "config/gateway_config.hpp"
#include "gateway/ledger.hpp"

namespace corral::gateway {

class McpTools;  // gateway/mcp_endpoint.hpp

struct DaemonOptions {
    config::GatewayConfig config;   // validated; its paths checked by the caller
    std::string source;             // the file it came from, for messages
    unsigned threads = 1;
    std::chrono::milliseconds shutdown_grace{10000};
    // Where every ledger batch also goes, before the ledger file (the
    // daemon's signed journal: tools/cmd_gateway.cpp); empty for none.
    LedgerMirror ledger_mirror;
    // Each worker's governed tools, by worker name (its remote MCP servers,
    // policy, pins and call budgets; run/daemon_tools.hpp builds them with
    // their pins store and their tool_calls_per_worker budget).
    std::map<std::string, std::shared_ptr<McpTools>> mcp_tools;
};

// Runs the daemon until SIGTERM/SIGINT; returns its exit status (0 after a
// clean stop, once no decision can reach ledger_mirror any more). Throws UsageError/SysError/ConfigError for what stops it from
// starting (a listener that cannot be bound, unreadable credentials).
int serve_daemon(DaemonOptions options);

}  // namespace corral::gateway
