// gateway/request_reader.hpp — reading one request (head, then body) from
// the box, bounded by max_header_bytes, max_body_bytes and the read timeout.
// Nothing is forwarded from here: the caller checks the head before the body
// is read, so a refused request's body is never read.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/string_body.hpp>

#include <optional>

#include "gateway/connection.hpp"
#include "gateway/http_framing.hpp"
#include "gateway/refusal.hpp"

namespace corral::gateway {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using RequestParser = StrictRequestParser<boost::beast::http::string_body>;

struct HeadResult {
    bool closed = false;              // the box closed before sending a byte of a request
    std::size_t length = 0;           // the head's length in c.buf when neither closed nor refused
    std::optional<Refusal> refusal;
};

// Reads into c.buf until a request head is complete. `first` is true for a
// connection's first request (the read timeout runs from accept); later
// keep-alive requests get the idle timeout until their first byte, then the
// read timeout. Stream: ClientSocket or ClientTls.
template <class Stream>
boost::asio::awaitable<HeadResult> read_head(Conn& c, Stream& s, bool first);

struct ParsedRequest {
    std::optional<RequestParser> parser;  // set once the request line parsed, even when refused
    std::optional<Refusal> refusal;
};

// Framing checks on the raw head (check_request_framing), then Beast parses
// it with the body capped at max_body_bytes: a declared length over the cap is
// refused before anything is read or forwarded. Consumes the head from c.buf.
// No I/O. (The parser cannot move: `out` is filled in place.)
void parse_request_head(Conn& c, std::size_t head_len, ParsedRequest& out);

// Reads the rest of the body the parsed head announced (nothing when it is
// complete). A refusal when it could not be read whole.
template <class Stream>
boost::asio::awaitable<std::optional<Refusal>> read_body(Conn& c, Stream& s, RequestParser& p);

}  // namespace corral::gateway
