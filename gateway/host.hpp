// gateway/host.hpp — host names as the gateway compares them.
//
// The rule itself is names/host.hpp (normalize_host, split_authority, the
// grant's HostPattern), shared with config/: everything a client names
// (CONNECT authority, Host header, SNI, absolute-form URL host) is normalised
// once with it before any grant is looked up, and a grant's host was
// normalised with it at load.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "names/host.hpp"

namespace corral::gateway {

using names::Authority;
using names::AuthorityCheck;
using names::HostCheck;
using names::HostName;
using names::normalize_host;
using names::split_authority;

// The gateway's own name table ([gateway].hosts_file), consulted before DNS.
// /etc/hosts format: "ADDRESS NAME [NAME...]", '#' comments, blank lines.
// Several lines for one name add answers (that is how tests build mixed answers).
// Names are normalised with normalize_host. Throws config::ConfigError
// "FILE:LINE: ..." for an unreadable file, a bad address or a bad name.
using HostsTable = std::map<std::string, std::vector<boost::asio::ip::address>>;
HostsTable load_hosts_file(const std::string& path);

}  // namespace corral::gateway
