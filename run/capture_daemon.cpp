// run/capture_daemon.cpp — capture through the node's gateway daemon
// (--gateway unix:PATH): the stub's question, the captured connections and
// the stub's refusals, each one daemon line (gateway/daemon_protocol.hpp).
#include <chrono>
#include <map>
#include <memory>
#include <utility>

#include "base/log.hpp"
#include "gateway/daemon_protocol.hpp"
#include "run/bridge.hpp"
#include "run/capture_service.hpp"

namespace corral::run {

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// How long the stub waits for the daemon's answer before a name gets NXDOMAIN.
constexpr std::chrono::milliseconds kDaemonQuestionTimeout{500};

// The daemon's answers by identity and name, each kept kGrantedAnswerFor:
// a program resolving one name again and again asks the daemon once.
struct GrantedAnswers {
    std::map<std::string, std::pair<std::chrono::steady_clock::time_point, std::vector<std::uint16_t>>> by_name;
};

std::vector<std::uint16_t> ask_granted(const std::string& socket_path, GrantedAnswers& cache,
                                       const gateway::Identity& id, const names::HostName& host) {
    const auto now = std::chrono::steady_clock::now();
    const std::string key = id.str() + " " + host.text();
    if (auto it = cache.by_name.find(key); it != cache.by_name.end() && now - it->second.first < kGrantedAnswerFor)
        return it->second.second;
    std::vector<std::uint16_t> ports;
    auto answer = ask_daemon(socket_path, gateway::granted_request(id, host), kDaemonQuestionTimeout);
    auto parsed = answer ? gateway::parse_granted_answer(*answer) : Checked<std::vector<std::uint16_t>>(Failed{answer.problem()});
    if (parsed)
        ports = *parsed;
    else
        log::warn("capture: the gateway daemon at " + socket_path + " did not say which ports " + host.text() +
                  " is granted (" + parsed.problem() + "); answered NXDOMAIN");
    if (cache.by_name.size() >= 4096) cache.by_name.clear();
    cache.by_name[key] = {now, ports};
    return ports;
}

// A plain coroutine (its parameters live in its frame, not in a lambda's).
asio::awaitable<void> relay_captured(tcp::socket s, std::string socket_path, gateway::Identity id,
                                     std::optional<names::Authority> target) {
    if (!target) {
        // Not an address the stub handed out: nothing to ask the daemon about.
        log::warn("capture: closed a connection of " + id.str() + " to an address no name stands for");
        co_return;
    }
    co_await relay_to_daemon(std::move(s), std::move(socket_path), gateway::captured_announcement(id, *target));
}

}  // namespace

CaptureEndpoint daemon_capture(std::string socket_path) {
    CaptureEndpoint e;
    auto cache = std::make_shared<GrantedAnswers>();
    e.granted_ports = [socket_path, cache](const gateway::Identity& id, const names::HostName& host) {
        return ask_granted(socket_path, *cache, id, host);
    };
    e.serve = [socket_path](tcp::socket s, gateway::Identity id, std::optional<names::Authority> target) {
        return relay_captured(std::move(s), socket_path, std::move(id), std::move(target));
    };
    e.record = [socket_path](const gateway::LedgerEntry& entry) {
        auto id = names::parse_identity(entry.identity);
        auto line = id ? gateway::dns_refusal_line(*id, entry.method, entry.host, entry.reason) : std::nullopt;
        if (!line) return;
        if (auto answer = ask_daemon(socket_path, *line, kDaemonQuestionTimeout); !answer)
            log::warn("capture: the gateway daemon at " + socket_path + " did not take a refused query's line (" +
                      answer.problem() + ")");
    };
    return e;
}

}  // namespace corral::run
