// Reading the credentials' secrets (the only place a secret is read from a
// file or the environment); never puts a secret into an error message.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "base/fd.hpp"
#include "config/checker.hpp"
#include "config/gateway_config.hpp"

namespace corral::config {

std::map<std::string, std::string> load_credential_secrets(const GatewayConfig& cfg) {
    std::map<std::string, std::string> secrets;
    for (const auto& [name, c] : cfg.credentials) {
        std::string secret;
        std::string origin;
        if (!c.file.empty()) {
            origin = "file " + c.file;
            int fd = ::open(c.file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            if (fd < 0)
                throw ConfigError(c.where + ": credentials." + name + ".file " + quote(c.file) + ": open: " +
                                  errno_text(errno) + " (allowed: a regular file, no symlink)");
            Fd owned(fd);
            struct stat st {};
            check_sys(::fstat(fd, &st), "fstat", c.file);
            if (!S_ISREG(st.st_mode))
                throw ConfigError(c.where + ": credentials." + name + ".file " + quote(c.file) +
                                  ": not a regular file, allowed: a regular file");
            if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
                char mode[8];
                std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
                throw ConfigError(c.where + ": credentials." + name + ".file " + quote(c.file) + ": owner uid " +
                                  std::to_string(st.st_uid) + ", mode " + mode + ", allowed: owner uid " +
                                  std::to_string(::geteuid()) + " and mode 0600 or 0400 (no group/other access)");
            }
            char buf[4096];
            ssize_t n;
            // One allocation: a growing string would leave copies in freed memory.
            secret.reserve(64 * 1024 + sizeof buf);
            while ((n = ::read(fd, buf, sizeof buf)) != 0) {
                if (n < 0) {
                    if (errno == EINTR) continue;
                    throw SysError("read", c.file, errno);
                }
                secret.append(buf, static_cast<std::size_t>(n));
                if (secret.size() > 64 * 1024)
                    throw ConfigError(c.where + ": credentials." + name + ".file " + quote(c.file) +
                                      ": larger than 64KiB, allowed: one secret");
            }
            explicit_bzero(buf, sizeof buf);
        } else {
            origin = "environment variable " + c.env;
            const char* v = std::getenv(c.env.c_str());
            if (!v)
                throw ConfigError(c.where + ": credentials." + name + ".env: variable " + c.env +
                                  " is not set, allowed: a set, non-empty variable");
            secret = v;
        }
        auto is_space = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; };
        while (!secret.empty() && is_space(secret.back())) secret.pop_back();
        std::size_t start = 0;
        while (start < secret.size() && is_space(secret[start])) ++start;
        secret.erase(0, start);
        if (secret.empty())
            throw ConfigError(c.where + ": credentials." + name + ": " + origin +
                              " holds an empty secret, allowed: a non-empty secret");
        for (char ch : secret) {
            auto u = static_cast<unsigned char>(ch);
            if (u <= 0x20 || u >= 0x7f)
                throw ConfigError(c.where + ": credentials." + name + ": " + origin +
                                  " holds a secret with whitespace, control or non-ASCII bytes inside, allowed: "
                                  "printable ASCII without spaces (it goes into an HTTP header)");
        }
        secrets[name] = std::move(secret);
    }
    return secrets;
}

}  // namespace corral::config
