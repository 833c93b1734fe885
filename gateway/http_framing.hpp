// gateway/http_framing.hpp — checks on the raw bytes of a request head.
//
// Beast's parser is lenient in ways a proxy must not be (it is written for
// servers that read their own requests): a front end and a back end that
// disagree on where a message ends is request smuggling. These checks run on
// the head exactly as received, before Beast sees it, so the gateway refuses
// every ambiguous framing instead of picking one interpretation.
#pragma once

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/refusal.hpp"

namespace corral::gateway {

// Where the head ends in `data` (index one past the blank line's "\r\n"), or
// npos if it has not ended yet. `bare_lf` is set when a '\n' not preceded by
// '\r' appears before the end (the caller refuses the request as smuggling
// without waiting for more bytes). Leading empty lines (RFC 9112 §2.2 allows
// a client to send CRLF before a request) are counted as part of the head.
struct HeadScan {
    std::size_t end = std::string_view::npos;
    bool bare_lf = false;
};
HeadScan scan_head(std::string_view data);

// ASCII case-insensitive equality, as field names and tokens compare.
bool iequals(std::string_view a, std::string_view b);
// True when the comma-separated field value `list` holds `token` (any case,
// optional whitespace around each item).
bool contains_token(std::string_view list, std::string_view token);

// Checks a complete head (as delimited by scan_head). Returns nullopt when
// the framing is unambiguous; otherwise the refusal: its reason "smuggling"
// or "bad_request", its detail what was wrong (never a header's value):
//  - obs-fold (a line starting with SP/HT), whitespace before ':', a field
//    line without ':', a control character in a field;
//  - both Content-Length and Transfer-Encoding; more than one Content-Length
//    field (even with equal values) or a list value; a non-decimal length;
//  - Transfer-Encoding other than exactly one "chunked";
//  - Upgrade: h2c or an HTTP2-Settings field (h2c smuggling past the proxy).
std::optional<Refusal> check_request_framing(std::string_view head);

// Longest chunk extension a strict parser accepts. The gateway never forwards
// extensions (request bodies are re-framed with Content-Length, responses are
// re-chunked), so a long one has no use but to make the gateway buffer it.
inline constexpr std::size_t kMaxChunkExtension = 256;

// Why a StrictParser stopped: a ledger reason code and what was wrong (fixed
// text, never a field's value).
struct FramingRefusal {
    std::string_view reason;  // "" = the parser refused nothing
    std::string_view detail;
};

// Beast's parser (1.81) without what a proxy must not accept from it:
//  - trailer fields (after a chunked body): Beast merges them into the
//    message's head after the proxy has checked that head (a second Host, an
//    Upgrade: h2c, a credential header would then be forwarded as headers),
//    and for a value over 65535 bytes it throws std::length_error from inside
//    the read's completion handler, out of the event loop. Refused at the
//    first trailer field, before it is stored: "trailers_refused";
//  - a field name or value over 65535 bytes (the most Beast's field storage
//    holds; it would throw), possible when max_header_bytes is set above
//    64 KiB: "headers_too_large";
//  - a chunk extension longer than kMaxChunkExtension: "bad_request".
// The parse then fails with a Beast error and refusal() names the reason.
template <bool isRequest, class Body>
class StrictParser : public boost::beast::http::parser<isRequest, Body> {
public:
    const FramingRefusal& refusal() const { return refusal_; }

private:
    void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                       boost::beast::string_view value, boost::beast::error_code& ec) override {
        namespace http = boost::beast::http;
        if (this->is_header_done()) {
            refusal_ = {"trailers_refused", "trailer fields after a chunked body"};
            ec = http::error::bad_field;
            return;
        }
        constexpr std::size_t kMaxField = std::numeric_limits<std::uint16_t>::max() - 2;
        if (name_string.size() > kMaxField || value.size() > kMaxField) {
            refusal_ = {"headers_too_large", "a header field longer than 65533 bytes"};
            ec = http::error::header_limit;
            return;
        }
        this->get().insert(name, name_string, value);  // what Beast's own parser does
    }
    void on_chunk_header_impl(std::uint64_t, boost::beast::string_view extensions,
                              boost::beast::error_code& ec) override {
        if (extensions.size() > kMaxChunkExtension) {
            refusal_ = {"bad_request", "a chunk extension longer than 256 bytes"};
            ec = boost::beast::http::error::bad_chunk_extension;
        }
    }

    FramingRefusal refusal_;
};

template <class Body>
using StrictRequestParser = StrictParser<true, Body>;
template <class Body>
using StrictResponseParser = StrictParser<false, Body>;

}  // namespace corral::gateway
