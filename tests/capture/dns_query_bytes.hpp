// tests/capture: DNS queries written byte by byte, the way a resolver
// library sends them, for the capture suites.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace corral::capture::testing {

inline void put16(std::vector<std::uint8_t>& out, std::uint16_t v) {
    out.push_back(static_cast<std::uint8_t>(v >> 8));
    out.push_back(static_cast<std::uint8_t>(v & 0xff));
}

// A name as length-prefixed labels split at '.', ending in the root's 0.
inline std::vector<std::uint8_t> wire_name(std::string_view dotted) {
    std::vector<std::uint8_t> out;
    while (!dotted.empty()) {
        auto dot = dotted.find('.');
        auto label = dotted.substr(0, dot);
        out.push_back(static_cast<std::uint8_t>(label.size()));
        out.insert(out.end(), label.begin(), label.end());
        dotted = dot == std::string_view::npos ? std::string_view() : dotted.substr(dot + 1);
    }
    out.push_back(0);
    return out;
}

struct QueryBytes {
    std::uint16_t id = 0x1234;
    std::uint16_t flags = 0x0100;  // RD, as stub resolvers send
    std::uint16_t qdcount = 1, ancount = 0, nscount = 0, arcount = 0;
    std::vector<std::uint8_t> name = wire_name("api.example.com");
    std::uint16_t qtype = 1, qclass = 1;
    std::vector<std::uint8_t> after;  // bytes after the question (an OPT record...)

    std::vector<std::uint8_t> bytes() const {
        std::vector<std::uint8_t> out;
        for (auto v : {id, flags, qdcount, ancount, nscount, arcount}) put16(out, v);
        out.insert(out.end(), name.begin(), name.end());
        put16(out, qtype);
        put16(out, qclass);
        out.insert(out.end(), after.begin(), after.end());
        return out;
    }
};

// An EDNS0 OPT record as glibc (options edns0), Go and c-ares send it:
// root name, type 41, UDP size 1232, no options.
inline std::vector<std::uint8_t> opt_record() {
    return {0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0};
}

inline std::uint16_t read16(const std::vector<std::uint8_t>& m, std::size_t at) {
    return static_cast<std::uint16_t>((m.at(at) << 8) | m.at(at + 1));
}

}  // namespace corral::capture::testing
