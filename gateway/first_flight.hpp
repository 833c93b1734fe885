// gateway/first_flight.hpp — what a captured connection's first bytes are
// (docs/capture.md "First flight"): a TLS ClientHello and the name it
// asks for (SNI), the start of an HTTP/1 request, or something else (an SSH
// banner, a raw protocol). Pure: bytes in, a verdict out; every byte comes
// from the box and is read only within the span given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <optional>
#include <string>

#include "config/gateway_config.hpp"
#include "gateway/host.hpp"
#include "gateway/refusal.hpp"

namespace corral::gateway {

// The most bytes looked at: a TLS record's header and the largest record
// (RFC 8446 §5.1: 2^14 bytes of plaintext). A ClientHello must fit in the
// first record (handshake fragmentation across records is refused: no
// client library splits its ClientHello, and reading further would let the
// box make the gateway buffer more before it decides).
inline constexpr std::size_t kMaxFirstFlightBytes = 5 + 16384;

struct FirstFlight {
    enum class Kind {
        need_more,  // too few bytes to tell yet: read more (up to kMaxFirstFlightBytes)
        tls,        // a complete ClientHello in the first record
        http,       // "METHOD SP" at the start: an HTTP/1 request (its Host is the HTTP parser's)
        other,      // neither: refused (reason first_flight)
    };
    Kind kind = Kind::need_more;
    std::string sni;     // tls: the server_name's host_name, as sent ("" when absent)
    std::string detail;  // other: one line naming what the bytes were not
};

// Reads the first bytes a box sent on a captured connection.
FirstFlight read_first_flight(std::span<const std::uint8_t> bytes);

// The first flight against the name the captured address stands for and
// its grant's mode: neither TLS nor HTTP → first_flight; a ClientHello
// whose SNI (when present) is another name → sni_mismatch; HTTP to an
// inject grant → cleartext_inject (inject needs TLS). An HTTP request's
// Host is check_captured_request's (request_checks.hpp), once it is parsed.
std::optional<Refusal> check_first_flight(const FirstFlight& flight, const HostName& name, config::GrantMode mode);

}  // namespace corral::gateway
