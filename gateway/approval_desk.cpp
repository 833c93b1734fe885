// gateway/approval_desk.cpp — see approval_desk.hpp.
#include "gateway/approval_desk.hpp"

#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include "approval/protocol.hpp"
#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "gateway/connection.hpp"
#include "gateway/upstream.hpp"
#include "journal/journal.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
using approval::State;
using SystemClock = approval::Clock;

namespace {

std::string always_key(const std::string& identity, const std::string& host, std::uint16_t port) {
    return identity + "|" + host + "|" + std::to_string(port);
}

}  // namespace

std::string user_of(uid_t uid) {
    passwd pw{};
    passwd* found = nullptr;
    char buf[1024];
    std::string name = ::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found ? found->pw_name : "uid";
    return name + " (uid " + std::to_string(uid) + ")";
}

std::string_view approval_reason(State s) {
    switch (s) {
        case State::denied: return reason::approval_denied;
        case State::cancelled: return reason::approval_cancelled;
        default: return reason::approval_timeout;
    }
}

ApprovalDesk::ApprovalDesk(Ledger& ledger) : ledger_(ledger) {
    queue_.on_decided([this](const std::string& id) { wake(id); });
}

void ApprovalDesk::record(const approval::Entry& e, const char* phase) {
    LedgerEntry line;
    line.identity = e.request.identity;
    line.method = e.request.method;
    line.host = e.request.host;
    line.port = e.request.port;
    line.path = e.request.path;
    ApprovalLine a;
    a.phase = phase;
    a.id = e.id;
    a.digest = e.digest;
    if (a.phase == "requested") {
        a.deadline = journal::utc_time(e.deadline);
    } else {
        a.state = approval::state_name(e.state);
        a.decided_by = e.decided_by;
        a.reason = e.reason;
        a.always = e.always;
        line.decision = e.state == State::approved ? Decision::allow : Decision::refuse;
        if (line.decision == Decision::refuse) line.reason = std::string(approval_reason(e.state));
    }
    line.approval = std::move(a);
    ledger_.append(line);
}

void ApprovalDesk::end_once(const approval::Entry& e) {
    std::unique_lock once(end_mutex_);
    {
        std::lock_guard lock(mutex_);
        if (!ended_recorded_.insert(e.id).second) return;
        ApprovalCounts& c = counts_[e.request.identity];
        switch (e.state) {
            case State::approved: ++c.approved; break;
            case State::denied: ++c.denied; break;
            case State::timed_out: ++c.timed_out; break;
            case State::cancelled: ++c.cancelled; break;
            default: break;
        }
    }
    record(e, "decided");
    once.unlock();
    // Outside the locks: a listener may look at the desk again.
    for (const auto& tell : ended_listeners_) tell(e);
}

void ApprovalDesk::wake(const std::string& id) {
    std::vector<std::shared_ptr<asio::steady_timer>> timers;
    {
        std::lock_guard lock(mutex_);
        auto [from, to] = waiters_.equal_range(id);
        for (auto it = from; it != to; ++it)
            if (auto t = it->second.lock()) timers.push_back(std::move(t));
        waiters_.erase(from, to);
    }
    // Each timer belongs to its connection's executor: cancelled there.
    for (auto& t : timers) asio::post(t->get_executor(), [t] { t->cancel(); });
}

approval::Entry ApprovalDesk::ask(const approval::Request& r, std::chrono::seconds timeout) {
    const auto now = SystemClock::now();
    // A daemon's queue must not grow with every request it ever held.
    queue_.forget_ended(now - approval::kMaxApprovalTimeout);
    approval::Entry e = queue_.ask(r, now, timeout);
    if (e.asked_at == now) {  // a new entry, not one this exact request already waits on
        {
            std::lock_guard lock(mutex_);
            ++counts_[r.identity].requested;
        }
        record(e, "requested");
        if (announce_)
            log::info("gateway: approval " + e.id + " asked for " + r.identity + ": " + r.method + " " + r.host +
                      ":" + std::to_string(r.port) + r.path + " (`corral approve " + e.id + "` or `corral deny " + e.id +
                      "`)");
        for (const auto& tell : asked_listeners_) tell(e);
    }
    return e;
}

void ApprovalDesk::on_asked(std::function<void(const approval::Entry&)> listener) {
    asked_listeners_.push_back(std::move(listener));
}

void ApprovalDesk::on_ended(std::function<void(const approval::Entry&)> listener) {
    ended_listeners_.push_back(std::move(listener));
}

void ApprovalDesk::wake_on_decision(const std::string& id, const std::shared_ptr<asio::steady_timer>& timer) {
    std::lock_guard lock(mutex_);
    waiters_.emplace(id, timer);
}

ApprovalDesk::Outcome ApprovalDesk::settle(const std::string& id) {
    const auto now = SystemClock::now();
    auto e = queue_.look(id, now);
    if (!e || e->state == State::pending) return {};
    if (e->state == State::approved) {
        if (!queue_.take(id, now)) return settle(id);  // it lapsed or was taken meanwhile
        end_once(*e);  // recorded before the exchange goes on, whoever decided
        if (e->always) {
            std::lock_guard lock(mutex_);
            always_.insert(always_key(e->request.identity, e->request.host, e->request.port));
        }
        return {true, e};
    }
    // Ended without an approval. A timeout has no decider to record it: the
    // first exchange to see it does.
    if (e->state == State::timed_out) end_once(*e);
    return {false, e};
}

bool ApprovalDesk::always_granted(const std::string& identity, const std::string& host, std::uint16_t port) const {
    std::lock_guard lock(mutex_);
    return always_.count(always_key(identity, host, port)) != 0;
}

std::vector<std::uint16_t> ApprovalDesk::always_ports(const std::string& identity, const std::string& host) const {
    const std::string prefix = identity + "|" + host + "|";  // always_key's spelling, the port cut off
    std::vector<std::uint16_t> ports;
    std::lock_guard lock(mutex_);
    for (auto it = always_.lower_bound(prefix); it != always_.end() && it->compare(0, prefix.size(), prefix) == 0; ++it)
        ports.push_back(static_cast<std::uint16_t>(std::stoul(it->substr(prefix.size()))));
    std::sort(ports.begin(), ports.end());
    return ports;
}

ApprovalCounts ApprovalDesk::counts(const std::string& identity) const {
    std::lock_guard lock(mutex_);
    auto it = counts_.find(identity);
    return it == counts_.end() ? ApprovalCounts{} : it->second;
}

void ApprovalDesk::cancel_all(const std::string& why) {
    for (const auto& e : queue_.cancel_all(why, SystemClock::now())) end_once(e);
}

std::string ApprovalDesk::control_answer(std::string_view line, uid_t peer_uid, const std::string& decider) {
    auto request = approval::parse_control_request(line);
    if (!request) return approval::error_answer("bad request: " + request.problem());
    const auto now = SystemClock::now();
    if (request->op == approval::ControlRequest::Op::list) return approval::list_answer(decider, queue_.pending(now));
    if (peer_uid != 0)
        return approval::error_answer("only root decides approvals; " + user_of(peer_uid) + " is not root");
    return approval::decide_answer(
        decide(request->id, request->approve, user_of(peer_uid), request->reason, request->always));
}

Checked<approval::Entry> ApprovalDesk::decide(const std::string& id, bool approve, const std::string& by,
                                              const std::string& reason, bool always) {
    auto decided = queue_.decide(id, approve, by, reason, always, SystemClock::now());
    if (decided) {
        end_once(*decided);
        if (announce_)
            log::info("gateway: approval " + decided->id + " " + approval::state_name(decided->state) + " by " +
                      decided->decided_by);
    }
    return decided;
}

asio::awaitable<std::optional<approval::Entry>> await_person(Conn& c, approval::Request r,
                                                            std::chrono::seconds timeout) {
    ApprovalDesk& desk = c.gw.approvals;
    // At most a few rounds: an approval another exchange of the same request
    // took (single-use) sends this one to ask again.
    std::optional<approval::Entry> last;
    for (int round = 0; round < 4; ++round) {
        const approval::Entry asked = desk.ask(r, timeout);
        auto timer = std::make_shared<asio::steady_timer>(c.client_socket().get_executor());
        desk.wake_on_decision(asked.id, timer);
        for (;;) {
            const auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(asked.deadline - SystemClock::now()),
                                       std::chrono::milliseconds(0));
            // The watchdog waits for the deadline too, and the answer after it.
            c.arm(left + kTimeoutGrace);
            timer->expires_after(left + std::chrono::milliseconds(5));
            co_await timer->async_wait(nothrow);
            ApprovalDesk::Outcome out = desk.settle(asked.id);
            if (out.approved) {
                c.arm(c.limits().read_timeout);
                co_return std::nullopt;
            }
            if (!out.entry && SystemClock::now() < asked.deadline + std::chrono::seconds(1)) {
                // Still pending: woken early (another waiter's wake-up), wait on.
                desk.wake_on_decision(asked.id, timer);
                continue;
            }
            if (!out.entry) {  // gone from the queue: it can only have lapsed
                out.entry = asked;
                out.entry->state = State::timed_out;
            }
            last = out.entry;
            break;
        }
        if (last->state != State::spent) break;  // spent: ask again
    }
    c.arm(c.limits().read_timeout);
    co_return last;
}

asio::awaitable<std::optional<Refusal>> hold_for_approval(Conn& c, const Target& t, const std::string& method,
                                                          const std::string& path) {
    approval::Request r;
    r.kind = approval::Request::Kind::egress;
    r.identity = c.id_text;
    r.method = method;
    r.host = t.host.text();
    r.port = t.port;
    r.path = path;
    if (c.gw.approvals.always_granted(r.identity, r.host, r.port)) co_return std::nullopt;
    const std::optional<approval::Entry> ended = co_await await_person(c, r, t.grant->approval_timeout);
    if (!ended) co_return std::nullopt;
    co_return Refusal{std::string(approval_reason(ended->state)),
                      approval::refusal_sentence(*ended) + " [approval " + ended->id + "]"};
}

namespace {

asio::awaitable<void> answer_control_client(asio::local::stream_protocol::socket s, ApprovalDesk& desk,
                                            std::string decider) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(s.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) co_return;
    asio::streambuf in(approval::kMaxControlLine + 1);
    asio::steady_timer deadline(s.get_executor(), std::chrono::seconds(5));
    deadline.async_wait([&s](boost::system::error_code ec) {
        if (!ec) {
            boost::system::error_code ignored;
            s.cancel(ignored);
        }
    });
    auto [ec, n] = co_await asio::async_read_until(s, in, '\n', nothrow);
    deadline.cancel();
    std::string answer;
    if (ec) {
        answer = approval::error_answer("bad request: no line of at most " +
                                        std::to_string(approval::kMaxControlLine) + " bytes within 5 s");
    } else {
        std::string line(asio::buffers_begin(in.data()), asio::buffers_begin(in.data()) + static_cast<long>(n - 1));
        answer = desk.control_answer(line, cred.uid, decider);
    }
    co_await asio::async_write(s, asio::buffer(answer), nothrow);
}

}  // namespace

asio::awaitable<void> serve_approval_control(asio::local::stream_protocol::acceptor& acceptor, ApprovalDesk& desk,
                                             std::string decider) {
    for (;;) {
        asio::local::stream_protocol::socket s(acceptor.get_executor());
        auto [ec] = co_await acceptor.async_accept(s, nothrow);
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        if (ec) {
            log::warn("gateway: approvals control socket: accept failed: " + ec.message());
            asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(100));
            co_await pause.async_wait(nothrow);
            continue;
        }
        auto ex = s.get_executor();
        asio::co_spawn(ex, answer_control_client(std::move(s), desk, decider), asio::detached);
    }
}

void bind_root_only_socket(asio::local::stream_protocol::acceptor& acceptor, const std::string& path, std::string_view what) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) throw UsageError(std::string(what) + " " + path + " exists and is not a socket; refusing to replace it");
        check_sys(::unlink(path.c_str()), "unlink", path);
    }
    asio::local::stream_protocol::endpoint ep(path);
    acceptor.open(ep.protocol());
    const mode_t old = ::umask(0177);
    boost::system::error_code ec;
    acceptor.bind(ep, ec);
    ::umask(old);
    if (ec) throw SysError("bind", path, ec.value());
    check_sys(::chmod(path.c_str(), 0600), "chmod", path);
    acceptor.listen(asio::socket_base::max_listen_connections);
}

}  // namespace corral::gateway

namespace corral::gateway {

void listen_for_approvals(asio::local::stream_protocol::acceptor& acceptor, const std::string& path) {
    const std::string dir = path.substr(0, path.rfind('/'));
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw SysError("mkdir", dir, errno);
    struct stat st {};
    check_sys(::lstat(dir.c_str(), &st), "lstat", dir);
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0077) != 0)
        throw UsageError("approvals directory " + dir + " must be a directory of root's that only root can use "
                         "(mode 0700, not a symlink); it is not: refusing to listen there");
    bind_root_only_socket(acceptor, path, "approvals control socket");
}

}  // namespace corral::gateway
