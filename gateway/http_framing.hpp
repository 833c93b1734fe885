// gateway/http_framing.hpp — checks on the raw bytes of a request head.
//
// Beast's parser is lenient in ways a proxy must not be (it is written for
// servers that read their own requests): a front end and a back end that
// disagree on where a message ends is request smuggling. These checks run on
// the head exactly as received, before Beast sees it, so the gateway refuses
// every ambiguous framing instead of picking one interpretation.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

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

// Checks a complete head (as delimited by scan_head). Returns "" when the
// framing is unambiguous; otherwise the ledger reason code ("smuggling" or
// "bad_request") and, in *detail, what was wrong (never a header's value):
//  - obs-fold (a line starting with SP/HT), whitespace before ':', a field
//    line without ':', a control character in a field;
//  - both Content-Length and Transfer-Encoding; more than one Content-Length
//    field (even with equal values) or a list value; a non-decimal length;
//  - Transfer-Encoding other than exactly one "chunked";
//  - Upgrade: h2c or an HTTP2-Settings field (h2c smuggling past the proxy).
std::string check_request_framing(std::string_view head, std::string* detail);

}  // namespace corral::gateway
