// gateway/mcp_forward.hpp — an allowed MCP message on its way to its remote
// server (the MCP endpoint, gateway/mcp_endpoint.hpp): the server's host
// resolved and vetted by the grant grant_for_server() makes (upstream.hpp's
// resolve_target), verified TLS (open_upstream: connect_to and the upstream
// CA as for grants), a request carrying only the MCP headers the box sent
// (Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name,
// Last-Event-ID: any credential it sent is dropped) with the server's
// credential injected as for a model host, and the answer read whole,
// bounded by max_response_bytes and the idle timeout.
#pragma once

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>

#include "gateway/connection.hpp"
#include "gateway/mcp_endpoint.hpp"
#include "gateway/mcp_response.hpp"
#include "gateway/request_reader.hpp"

namespace corral::gateway {

struct McpForward {
    std::optional<Refusal> refusal;  // nothing usable came back (dial, TLS, protocol, credential)
    McpUpstreamAnswer answer;
    std::string credential;          // the credential's NAME when one was injected
};

boost::asio::awaitable<McpForward> forward_mcp(Conn& c, const McpTools::Remote& remote, const Request& box);

// The one place that decides where an allowed message goes: to a remote
// server over TLS (forward_mcp) or to a stdio server over its pipes
// (gateway/mcp_stdio.hpp, mcp_dispatch.cpp), the answer the same
// McpUpstreamAnswer either way. `read` is what read_message made of the body.
boost::asio::awaitable<McpForward> forward_to_server(Conn& c, McpTools& tools, const std::string& server,
                                                     const Request& box, const mcp::ReadResult& read);

}  // namespace corral::gateway
