#include "gateway/first_flight.hpp"

#include <optional>

namespace corral::gateway {
// Named, not anonymous: the unity build shares one translation unit.
namespace first_flight_parse {

// A bounded reader over the box's bytes: every read checks what is left.
class Reader {
public:
    explicit Reader(std::span<const std::uint8_t> b) : b_(b) {}
    bool u8(unsigned& v) {
        if (pos_ + 1 > b_.size()) return false;
        v = b_[pos_++];
        return true;
    }
    bool u16(unsigned& v) {
        if (pos_ + 2 > b_.size()) return false;
        v = (unsigned{b_[pos_]} << 8) | b_[pos_ + 1];
        pos_ += 2;
        return true;
    }
    bool u24(std::size_t& v) {
        if (pos_ + 3 > b_.size()) return false;
        v = (std::size_t{b_[pos_]} << 16) | (std::size_t{b_[pos_ + 1]} << 8) | b_[pos_ + 2];
        pos_ += 3;
        return true;
    }
    bool skip(std::size_t n) {
        if (n > b_.size() - pos_) return false;
        pos_ += n;
        return true;
    }
    // A sub-reader over the next n bytes (consumed here).
    std::optional<Reader> take(std::size_t n) {
        if (n > b_.size() - pos_) return std::nullopt;
        Reader r(b_.subspan(pos_, n));
        pos_ += n;
        return r;
    }
    std::size_t left() const { return b_.size() - pos_; }
    const std::uint8_t* here() const { return b_.data() + pos_; }

private:
    std::span<const std::uint8_t> b_;
    std::size_t pos_ = 0;
};

FirstFlight other(std::string detail) { return {FirstFlight::Kind::other, {}, std::move(detail)}; }

// The server_name extension's body (RFC 6066 §3): a list holding one
// host_name (type 0). False when malformed.
bool read_sni(Reader ext, std::string& sni) {
    unsigned list_len = 0;
    if (!ext.u16(list_len)) return false;
    auto list = ext.take(list_len);
    if (!list || ext.left() != 0) return false;
    while (list->left() > 0) {
        unsigned type = 0, len = 0;
        if (!list->u8(type) || !list->u16(len) || len > list->left()) return false;
        if (type == 0 && sni.empty()) sni.assign(reinterpret_cast<const char*>(list->here()), len);
        list->skip(len);
    }
    return true;
}

// The ClientHello body after its handshake header (RFC 8446 §4.1.2).
FirstFlight read_client_hello(Reader h) {
    unsigned len8 = 0, len16 = 0;
    if (!h.skip(2 + 32)) return other("a ClientHello too short for its version and random");
    if (!h.u8(len8) || len8 > 32 || !h.skip(len8)) return other("a ClientHello with a malformed session id");
    if (!h.u16(len16) || len16 == 0 || !h.skip(len16)) return other("a ClientHello with malformed cipher suites");
    if (!h.u8(len8) || len8 == 0 || !h.skip(len8)) return other("a ClientHello with malformed compression methods");
    FirstFlight f{FirstFlight::Kind::tls, {}, {}};
    if (h.left() == 0) return f;  // no extensions at all (SSL 3 style): no SNI
    if (!h.u16(len16)) return other("a ClientHello with a malformed extensions length");
    auto exts = h.take(len16);
    if (!exts || h.left() != 0) return other("a ClientHello whose extensions do not fill it");
    bool seen_sni = false;
    while (exts->left() > 0) {
        unsigned type = 0, elen = 0;
        if (!exts->u16(type) || !exts->u16(elen)) return other("a ClientHello with a malformed extension");
        auto body = exts->take(elen);
        if (!body) return other("a ClientHello with an extension past its end");
        if (type != 0) continue;
        // Two server_name extensions could be read differently by two TLS stacks.
        if (seen_sni) return other("a ClientHello with two server_name extensions");
        seen_sni = true;
        if (!read_sni(*body, f.sni) || f.sni.empty()) return other("a ClientHello with a malformed server_name");
    }
    return f;
}

FirstFlight read_tls(std::span<const std::uint8_t> bytes) {
    if (bytes.size() < 5) return {};
    Reader r(bytes);
    unsigned type = 0, major = 0, minor = 0, rec_len = 0;
    r.u8(type), r.u8(major), r.u8(minor), r.u16(rec_len);
    if (major != 3 || minor > 4) return other("a TLS record of version " + std::to_string(major) + "." + std::to_string(minor));
    if (rec_len == 0 || rec_len > 16384) return other("a TLS record of " + std::to_string(rec_len) + " bytes");
    if (r.left() < rec_len) return {};
    Reader rec = *r.take(rec_len);
    unsigned hs_type = 0;
    std::size_t hs_len = 0;
    if (!rec.u8(hs_type) || hs_type != 1) return other("a TLS handshake that does not start with a ClientHello");
    if (!rec.u24(hs_len)) return other("a ClientHello cut inside its header");
    if (hs_len > rec.left()) return other("a ClientHello split across TLS records");
    return read_client_hello(*rec.take(hs_len));
}

// "METHOD SP": 1..20 uppercase letters (or '-', as in M-SEARCH) then a space.
FirstFlight read_http(std::span<const std::uint8_t> bytes) {
    constexpr std::size_t kMaxMethod = 20;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        const std::uint8_t c = bytes[i];
        if (c == ' ' && i > 0) return {FirstFlight::Kind::http, {}, {}};
        if (i >= kMaxMethod || !((c >= 'A' && c <= 'Z') || c == '-'))
            return other("neither a TLS ClientHello nor an HTTP request");
    }
    return {};
}

}  // namespace first_flight_parse

std::optional<Refusal> check_first_flight(const FirstFlight& flight, const HostName& name, config::GrantMode mode) {
    switch (flight.kind) {
        case FirstFlight::Kind::need_more:
        case FirstFlight::Kind::other:
            return Refusal{std::string(reason::first_flight),
                           (flight.detail.empty() ? std::string("no complete first message") : flight.detail) +
                               " on a captured connection to " + name.text()};
        case FirstFlight::Kind::http:
            if (mode == config::GrantMode::inject)
                return Refusal{std::string(reason::cleartext_inject),
                               name.text() + " is granted in inject mode, which requires TLS"};
            return std::nullopt;
        case FirstFlight::Kind::tls: break;
    }
    if (flight.sni.empty()) return std::nullopt;  // no SNI: the address alone names the host
    auto sni = names::normalize_host(flight.sni);
    if (sni.host && *sni.host == name) return std::nullopt;
    std::string shown;
    for (char ch : flight.sni.substr(0, 64)) shown += (ch > 0x20 && ch < 0x7f) ? ch : '?';
    return Refusal{std::string(reason::sni_mismatch),
                   "the ClientHello names " + shown + ", the captured address stands for " + name.text()};
}

FirstFlight read_first_flight(std::span<const std::uint8_t> bytes) {
    if (bytes.empty()) return {};
    if (bytes[0] == 0x16) return first_flight_parse::read_tls(bytes);
    return first_flight_parse::read_http(bytes);
}

}  // namespace corral::gateway
