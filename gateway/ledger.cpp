#include "gateway/ledger.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "base/sys_error.hpp"

namespace corral::gateway {
namespace {

std::string rfc3339_ms(std::chrono::system_clock::time_point t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    long frac = static_cast<long>(ms % 1000);
    if (frac < 0) {
        frac += 1000;
        --secs;
    }
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
    return buf;
}

std::string redact(std::string s, const std::vector<std::string>& secrets) {
    for (const auto& secret : secrets) {
        if (secret.empty()) continue;
        for (auto pos = s.find(secret); pos != std::string::npos; pos = s.find(secret, pos + 10))
            s.replace(pos, secret.size(), "[redacted]");
    }
    return s;
}

}  // namespace

int status_for_reason(std::string_view code) {
    struct Row {
        std::string_view code;
        int status;
    };
    static constexpr Row rows[] = {
        {reason::none, 200},
        {reason::bad_request, 400},
        {reason::smuggling, 400},
        {reason::bad_host, 400},
        {reason::bad_path, 400},
        {reason::unsupported_method, 405},
        {reason::not_granted, 403},
        {reason::route_denied, 403},
        {reason::private_address, 403},
        {reason::mixed_answers, 403},
        {reason::numeric_host, 403},
        {reason::gateway_self, 403},
        {reason::sni_mismatch, 403},
        {reason::host_mismatch, 403},
        {reason::body_too_large, 413},
        {reason::headers_too_large, 431},
        {reason::budget_exhausted, 429},
        {reason::upstream_tls, 502},
        {reason::upstream_connect, 502},
        {reason::dns_failure, 502},
        {reason::ledger_unwritable, 503},
        {reason::too_many_connections, 503},
        {reason::timeout, 408},
    };
    for (const auto& r : rows)
        if (r.code == code) return r.status;
    return 500;
}

std::string format_ledger_line(const LedgerEntry& e, const std::vector<std::string>& secrets) {
    // nlohmann::ordered_json keeps the documented key order, so lines diff and grep predictably.
    nlohmann::ordered_json j;
    j["time"] = rfc3339_ms(e.time);
    j["identity"] = redact(e.identity, secrets);
    j["mode"] = redact(e.mode, secrets);
    j["method"] = redact(e.method, secrets);
    j["host"] = redact(e.host, secrets);
    j["port"] = e.port;
    j["path"] = redact(e.path, secrets);
    j["decision"] = e.decision == Decision::allow ? "allow" : "refuse";
    j["reason"] = redact(e.reason, secrets);
    j["status"] = e.status;
    j["bytes_up"] = e.bytes_up;
    j["bytes_down"] = e.bytes_down;
    j["duration_ms"] = e.duration_ms;
    j["credential"] = redact(e.credential, secrets);
    std::string line = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    // Defence in depth: a secret split across fields or reintroduced by escaping cannot
    // be rebuilt from the line because each field was scrubbed; scrub the whole line too.
    line = redact(std::move(line), secrets);
    line += '\n';
    return line;
}

Ledger::Ledger(const std::string& path) : path_(path) {
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        failure_ = "open(" + path + "): " + errno_text(errno);
    else
        fd_.reset(fd);
}

bool Ledger::healthy() const {
    std::lock_guard lock(mutex_);
    return failure_.empty();
}

std::string Ledger::failure() const {
    std::lock_guard lock(mutex_);
    return failure_;
}

void Ledger::register_secret(const std::string& secret) {
    if (secret.empty()) return;
    std::lock_guard lock(mutex_);
    secrets_.push_back(secret);
}

void Ledger::fail_locked(std::string what) {
    if (failure_.empty()) failure_ = std::move(what);
}

void Ledger::append(const LedgerEntry& e) {
    std::lock_guard lock(mutex_);
    ++requests_[e.identity];
    if (e.decision == Decision::refuse) ++refusals_[e.identity];
    if (!failure_.empty()) return;
    std::string line;
    try {
        line = format_ledger_line(e, secrets_);
    } catch (const std::exception& ex) {
        fail_locked(std::string("format ledger line: ") + ex.what());
        return;
    }
    ssize_t n;
    do {
        n = ::write(fd_.get(), line.data(), line.size());
    } while (n < 0 && errno == EINTR);
    if (n > 0) ++unsynced_;
    if (n < 0)
        fail_locked("write(" + path_ + "): " + errno_text(errno));
    else if (static_cast<std::size_t>(n) != line.size())
        fail_locked("write(" + path_ + "): short write (" + std::to_string(n) + " of " +
                    std::to_string(line.size()) + " bytes)");
}

void Ledger::sync() {
    // fdatasync can take milliseconds; appends must not wait behind it. The fd
    // stays open for the ledger's whole life, so using it unlocked is safe.
    int fd;
    {
        std::lock_guard lock(mutex_);
        fd = fd_.get();
        if (unsynced_ == 0) return;
        unsynced_ = 0;
    }
    if (fd < 0) return;
    if (::fdatasync(fd) < 0) {
        int err = errno;
        std::lock_guard lock(mutex_);
        fail_locked("fdatasync(" + path_ + "): " + errno_text(err));
    }
}

std::uint64_t Ledger::refusals(const std::string& identity) const {
    std::lock_guard lock(mutex_);
    auto it = refusals_.find(identity);
    return it == refusals_.end() ? 0 : it->second;
}

std::uint64_t Ledger::requests(const std::string& identity) const {
    std::lock_guard lock(mutex_);
    auto it = requests_.find(identity);
    return it == requests_.end() ? 0 : it->second;
}

}  // namespace corral::gateway
