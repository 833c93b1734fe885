// Whether a credential's secret can be read now, and what to do when not:
// the same rules as the gateway (load_credential_secrets), the secret dropped
// at once.
#include <unistd.h>

#include <cstring>

#include "config/org_config.hpp"

namespace corral::config {

CredentialStatus credential_status(const GatewayConfig& gw, const std::string& name) {
    CredentialStatus s;
    auto it = gw.credentials.find(name);
    if (it == gw.credentials.end()) {
        s.problem = "not defined in org.toml";
        return s;
    }
    s.defined = true;
    s.kind = it->second.kind;
    s.source = it->second.env.empty() ? "file " + it->second.file : "env " + it->second.env;
    // Same rules as the gateway itself, so "available" here means the gateway
    // will accept it; the secret read is dropped at once.
    GatewayConfig one;
    one.credentials.emplace(name, it->second);
    try {
        auto secrets = load_credential_secrets(one);
        s.available = secrets.count(name) == 1;
        for (auto& [n, secret] : secrets) explicit_bzero(secret.data(), secret.size());
        if (!s.available) s.problem = "no secret read";
    } catch (const std::exception& e) {
        s.problem = e.what();
    }
    if (!s.available) {
        const auto& c = it->second;
        const std::string euid = std::to_string(::geteuid());
        if (!c.env.empty())
            s.fix = "set " + c.env + " to the secret (non-empty, no spaces) in the environment corral runs in, "
                    "or use file = \"/etc/corral/" + name + ".key\" instead (owned by uid " + euid +
                    ", mode 0600)";
        else
            s.fix = "put the secret alone in " + c.file + ", a regular file (not a symlink) owned by uid " + euid +
                    " (the user corral runs as) with mode 0600 or 0400: chown " + euid + " " + c.file +
                    " && chmod 600 " + c.file;
    }
    return s;
}

}  // namespace corral::config
