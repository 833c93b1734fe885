#include "names/box_hosts.hpp"

namespace corral::names {

std::vector<BoxHostsLine> box_hosts(std::string_view hostname) {
    std::vector<BoxHostsLine> lines = {
        {"127.0.0.1", {"localhost"}},
        {"::1", {"localhost", "ip6-localhost", "ip6-loopback"}},
    };
    if (!hostname.empty()) lines.push_back({"127.0.1.1", {std::string(hostname)}});
    return lines;
}

std::string box_hosts_text(std::string_view hostname) {
    std::string text;
    for (const auto& line : box_hosts(hostname)) {
        text += line.address;
        char sep = '\t';
        for (const auto& name : line.names) {
            text += sep;
            text += name;
            sep = ' ';
        }
        text += '\n';
    }
    return text;
}

}  // namespace corral::names
