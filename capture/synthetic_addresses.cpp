#include "capture/synthetic_addresses.hpp"

#include <algorithm>
#include <stdexcept>

namespace corral::capture {
namespace {

constexpr std::size_t kPerBlock = 254;  // x.y.z.1 .. x.y.z.254

constexpr std::array<std::uint8_t, 12> kV4MappedPrefix = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

}  // namespace

std::string synthetic_v4_range_text() {
    return std::to_string(kSyntheticV4Base[0]) + "." + std::to_string(kSyntheticV4Base[1]) + "." +
           std::to_string(kSyntheticV4Base[2]) + "." + std::to_string(kSyntheticV4Base[3]) + "/" +
           std::to_string(kSyntheticV4PrefixLength);
}

std::string synthetic_v6_range_text() {
    return "fd63:6f72:7261:6c00::/" + std::to_string(kSyntheticV6PrefixLength);
}

SyntheticAddress synthetic_address_at(std::size_t index) {
    // The /15's 512 blocks of 256: block b is 198.(18 + b / 256).(b % 256).
    std::size_t block = index / kPerBlock;
    SyntheticAddress a;
    a.v4 = {kSyntheticV4Base[0], static_cast<std::uint8_t>(kSyntheticV4Base[1] + block / 256),
            static_cast<std::uint8_t>(block % 256), static_cast<std::uint8_t>(index % kPerBlock + 1)};
    std::copy(kSyntheticV6Prefix.begin(), kSyntheticV6Prefix.end(), a.v6.begin());
    std::copy(a.v4.begin(), a.v4.end(), a.v6.begin() + 12);
    return a;
}

SyntheticAddresses::SyntheticAddresses(std::size_t limit) : limit_(limit) {
    if (limit == 0 || limit > kSyntheticV4Capacity)
        throw std::invalid_argument("synthetic address limit " + std::to_string(limit) + ": allowed 1 to " +
                                    std::to_string(kSyntheticV4Capacity));
}

std::optional<SyntheticAddress> SyntheticAddresses::assign(const names::HostName& name) {
    if (auto known = find(name)) return known;
    if (names_.size() >= limit_) return std::nullopt;
    indexes_.emplace(name.text(), names_.size());
    names_.push_back(name);
    return synthetic_address_at(names_.size() - 1);
}

std::optional<SyntheticAddress> SyntheticAddresses::find(const names::HostName& name) const {
    auto it = indexes_.find(name.text());
    if (it == indexes_.end()) return std::nullopt;
    return synthetic_address_at(it->second);
}

std::optional<std::size_t> SyntheticAddresses::index_of_v4(std::span<const std::uint8_t> v4) const {
    if (v4[0] != kSyntheticV4Base[0] || (v4[1] & 0xfe) != kSyntheticV4Base[1]) return std::nullopt;
    if (v4[3] == 0 || v4[3] == 255) return std::nullopt;
    std::size_t block = static_cast<std::size_t>(v4[1] - kSyntheticV4Base[1]) * 256 + v4[2];
    return block * kPerBlock + (v4[3] - 1);
}

std::optional<std::size_t> SyntheticAddresses::index_of_v6(std::span<const std::uint8_t> v6) const {
    if (!std::equal(kSyntheticV6Prefix.begin(), kSyntheticV6Prefix.end(), v6.begin())) return std::nullopt;
    // Only the addresses handed out: bytes 8..11 are zero, the rest a v4 address of the range.
    if (v6[8] != 0 || v6[9] != 0 || v6[10] != 0 || v6[11] != 0) return std::nullopt;
    return index_of_v4(v6.subspan(12, 4));
}

const names::HostName* SyntheticAddresses::name_of(std::span<const std::uint8_t> address) const {
    std::optional<std::size_t> index;
    if (address.size() == 4) {
        index = index_of_v4(address);
    } else if (address.size() == 16) {
        if (std::equal(kV4MappedPrefix.begin(), kV4MappedPrefix.end(), address.begin()))
            index = index_of_v4(address.subspan(12, 4));
        else
            index = index_of_v6(address);
    }
    if (!index || *index >= names_.size()) return nullptr;
    return &names_[*index];
}

}  // namespace corral::capture
