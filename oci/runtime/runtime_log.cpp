// oci/runtime/runtime_log.cpp — one line per message, appended.
#include "oci/runtime/runtime_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "base/fd.hpp"
#include "base/terminal_text.hpp"

namespace corral::oci {

namespace {

std::string log_entry(const GlobalArgs& g, std::string_view level, const std::string& message) {
    char when[64];
    std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
    const auto replace = nlohmann::json::error_handler_t::replace;
    if (g.log_format == LogFormat::json)
        return nlohmann::json{{"level", level}, {"msg", message}, {"time", when}}.dump(-1, ' ', true, replace) + "\n";
    return std::string("time=\"") + when + "\" level=" + std::string(level) +
           " msg=" + nlohmann::json(message).dump(-1, ' ', true, replace) + "\n";
}

void append_to_log(const GlobalArgs& g, std::string_view level, const std::string& message) {
    const std::string line = log_entry(g, level, message);
    Fd log(::open(g.log->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (log.valid()) (void)!::write(log.get(), line.data(), line.size());
}

}  // namespace

void log_error(const GlobalArgs& g, const std::string& message) {
    std::fprintf(stderr, "corral-oci: %s\n", terminal_text(message).c_str());
    if (g.log) append_to_log(g, "error", message);
}

void log_warning(const GlobalArgs& g, const std::string& message) {
    if (g.log) append_to_log(g, "warning", message);
    else std::fprintf(stderr, "corral-oci: %s\n", terminal_text(message).c_str());
}

}  // namespace corral::oci
