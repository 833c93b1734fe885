// names/gateway_address.cpp — `--gateway unix:PATH`, read once for every front.
#include "names/gateway_address.hpp"

#include "base/sys_error.hpp"

namespace corral::names {

std::string gateway_socket_path(std::string_view option, std::string_view value) {
    if (!value.starts_with("unix:/") || value.size() <= 6)
        throw UsageError(std::string(option) + ": got \"" + std::string(value) +
                         "\", expected unix:/ABSOLUTE/PATH of a `corral gateway` socket");
    return std::string(value.substr(5));
}

}  // namespace corral::names
