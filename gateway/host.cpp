#include "gateway/host.hpp"

#include <fstream>
#include <sstream>

#include "config/gateway_config.hpp"

namespace corral::gateway {

HostsTable load_hosts_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw config::ConfigError(path + ": cannot read hosts_file: " + errno_text(errno));
    HostsTable table;
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        std::istringstream words(line);
        std::string addr_text;
        if (!(words >> addr_text)) continue;
        auto where = path + ":" + std::to_string(lineno) + ": ";
        boost::system::error_code ec;
        auto addr = boost::asio::ip::make_address(addr_text, ec);
        if (ec || addr_text.find('%') != std::string::npos)
            throw config::ConfigError(where + "bad address \"" + addr_text +
                                      "\"; allowed: an IPv4 dotted quad or an IPv6 address");
        std::string name;
        int names = 0;
        while (words >> name) {
            auto h = normalize_host(name);
            if (!h.host || h.host->is_ip_literal())
                throw config::ConfigError(where + "bad host name \"" + name + "\" (" +
                                          (h.host ? std::string("an address") : h.reason) +
                                          "); allowed: a DNS name of [a-z0-9-_.] labels");
            table[h.host->text()].push_back(addr);
            ++names;
        }
        if (names == 0) throw config::ConfigError(where + "address \"" + addr_text + "\" without a name");
    }
    return table;
}

}  // namespace corral::gateway
