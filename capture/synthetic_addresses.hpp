// capture/synthetic_addresses.hpp — one run's map between the names its box
// resolved and the made-up addresses it got for them.
//
// The box's DNS stub hands out an address per granted name; the box's
// `local` routes make every address of the two ranges its own, so a connect
// to one lands on a listener corral holds, whose accepted socket's local
// address (getsockname) is mapped back to the name here. Stable for the run:
// a name keeps its address (and an address its name) until the map is gone.
//
//   IPv4: 198.18.0.0/15 (RFC 2544's benchmarking range: never a real
//         destination), x.y.z.1 .. x.y.z.254 in each /24 (no .0 or .255:
//         some programs treat those as network or broadcast addresses).
//   IPv6: fd63:6f72:7261:6c00::/64, a unique local /64 (RFC 4193; the global
//         ID spells "corral" in ASCII); the low 32 bits of a name's v6
//         address are its v4 address, so the two read as a pair.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "names/host.hpp"

namespace corral::capture {

inline constexpr std::array<std::uint8_t, 4> kSyntheticV4Base = {198, 18, 0, 0};
inline constexpr unsigned kSyntheticV4PrefixLength = 15;
inline constexpr std::array<std::uint8_t, 8> kSyntheticV6Prefix = {0xfd, 0x63, 0x6f, 0x72, 0x72, 0x61, 0x6c, 0x00};
inline constexpr unsigned kSyntheticV6PrefixLength = 64;
// The most names one run may be given addresses for. A wildcard grant
// ("*.example.com") covers endless names, and each costs an entry for the
// rest of the run: past this the stub answers REFUSED (reason
// synthetic_addresses_exhausted), the names already given keep working.
inline constexpr std::size_t kDefaultSyntheticNameLimit = 4096;
// How many addresses the /15 holds at 254 per /24: the hard ceiling of any limit.
inline constexpr std::size_t kSyntheticV4Capacity = 512 * 254;

struct SyntheticAddress {
    std::array<std::uint8_t, 4> v4{};
    std::array<std::uint8_t, 16> v6{};
};

// "198.18.0.0/15" and "fd63:6f72:7261:6c00::/64": the routes a box gets.
std::string synthetic_v4_range_text();
std::string synthetic_v6_range_text();

class SyntheticAddresses {
public:
    // Throws std::invalid_argument when limit is 0 or above kSyntheticV4Capacity.
    explicit SyntheticAddresses(std::size_t limit = kDefaultSyntheticNameLimit);

    // The name's address, given now if it has none yet; nullopt when the map
    // holds `limit` names already (the name gets none).
    std::optional<SyntheticAddress> assign(const names::HostName& name);
    // The name's address if it has one; gives none.
    std::optional<SyntheticAddress> find(const names::HostName& name) const;
    // The name an address stands for: `address` is an accepted socket's
    // local address, 4 bytes (IPv4) or 16 (IPv6; an IPv4-mapped one,
    // ::ffff:a.b.c.d, is read as its IPv4 part). nullptr for any address
    // not given out (outside the ranges, or not yet assigned).
    const names::HostName* name_of(std::span<const std::uint8_t> address) const;

    std::size_t size() const { return names_.size(); }
    std::size_t limit() const { return limit_; }

private:
    std::optional<std::size_t> index_of_v4(std::span<const std::uint8_t> v4) const;
    std::optional<std::size_t> index_of_v6(std::span<const std::uint8_t> v6) const;

    std::size_t limit_;
    std::vector<names::HostName> names_;                    // by index
    std::unordered_map<std::string, std::size_t> indexes_;  // normalised text -> index
};

// The address given to the index-th name (0-based), for the tests and the
// map alone.
SyntheticAddress synthetic_address_at(std::size_t index);

}  // namespace corral::capture
