#include "gateway/ledger.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/log.hpp"
#include "base/terminal_text.hpp"
#include "base/sys_error.hpp"

namespace corral::gateway {
namespace {

// "2026-11-30T05:29:39.123Z". gmtime_r takes glibc's time zone lock, which
// the event-loop threads would contend for on every line: each thread keeps
// the text of the last second it formatted and only adds the milliseconds.
void append_rfc3339_ms(std::string& out, std::chrono::system_clock::time_point t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    long frac = static_cast<long>(ms % 1000);
    if (frac < 0) {
        frac += 1000;
        --secs;
    }
    thread_local std::time_t cached_secs = -1;
    thread_local char cached[32];
    thread_local int cached_len = 0;
    if (secs != cached_secs || cached_len <= 0) {
        std::tm tm{};
        gmtime_r(&secs, &tm);
        cached_len = std::snprintf(cached, sizeof cached, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        if (cached_len <= 0 || cached_len >= static_cast<int>(sizeof cached)) cached_len = 0;
        cached_secs = secs;
    }
    out.append(cached, static_cast<std::size_t>(cached_len));
    char tail[6] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                    static_cast<char>('0' + frac % 10), 'Z', 0};
    out.append(tail, 5);
}

std::string rfc3339_ms(std::chrono::system_clock::time_point t) {
    std::string s;
    append_rfc3339_ms(s, t);
    return s;
}

std::string redact(std::string s, const std::vector<std::string>& secrets) {
    for (const auto& secret : secrets) {
        if (secret.empty()) continue;
        for (auto pos = s.find(secret); pos != std::string::npos; pos = s.find(secret, pos + 10))
            s.replace(pos, secret.size(), "[redacted]");
    }
    return s;
}

bool contains_secret(std::string_view s, const std::vector<std::string>& secrets) {
    for (const auto& secret : secrets)
        if (!secret.empty() && s.find(secret) != std::string_view::npos) return true;
    return false;
}

// Bytes JSON carries verbatim (no escape, no UTF-8 question): printable
// ASCII except '"' and '\\'. Almost every ledger field is made of these.
bool json_verbatim(std::string_view s) {
    for (unsigned char ch : s)
        if (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\') return false;
    return true;
}

// One JSON object's members written in order, as nlohmann's dump() writes
// them: '{', members separated by ',', no spaces, then '}'.
class PlainObject {
public:
    explicit PlainObject(std::string& out) : out_(out) { out_ += '{'; }
    void key(std::string_view k) {
        if (!first_) out_ += ',';
        first_ = false;
        out_.append(1, '"').append(k).append("\":");
    }
    void string(std::string_view k, std::string_view v) {
        key(k);
        out_.append(1, '"').append(v).append(1, '"');
    }
    void number(std::string_view k, std::uint64_t v) {
        key(k);
        char digits[24];
        auto r = std::to_chars(digits, digits + sizeof digits, v);
        out_.append(digits, r.ptr);
    }
    void raw(std::string_view k, std::string_view json) {
        key(k);
        out_.append(json);
    }
    void counts(std::string_view k, const std::vector<std::pair<std::string, std::uint64_t>>& v) {
        key(k);
        PlainObject o(out_);
        for (const auto& [name, n] : v) o.number(name, n);
        o.close();
    }
    void close() { out_ += '}'; }

private:
    std::string& out_;
    bool first_ = true;
};

// Whether a set of member names written in this order gives the object
// nlohmann would: no name twice (the JSON tree keeps the last and its place).
bool names_distinct(std::initializer_list<std::string_view> fixed,
                    const std::vector<std::pair<std::string, std::uint64_t>>& v) {
    for (std::size_t i = 0; i < v.size(); ++i) {
        for (auto f : fixed)
            if (v[i].first == f) return false;
        for (std::size_t j = 0; j < i; ++j)
            if (v[i].first == v[j].first) return false;
    }
    return true;
}

// Whether a metering object can be written directly: every string verbatim
// and secret-free, every count's name too and distinct within its object.
bool metered_plain(const MeteredLine& m, const std::vector<std::string>& secrets, std::size_t& size) {
    const std::string_view strings[] = {m.api, m.model, m.usage_state, m.usage_reason, m.cost_state,
                                        m.cost_reason, m.price_source, m.price_date, m.limit};
    for (auto s : strings) {
        if (!json_verbatim(s) || contains_secret(s, secrets)) return false;
        size += s.size() + 16;
    }
    for (const auto* v : {&m.usage, &m.remaining, &m.worker_remaining, &m.overspent, &m.worker_overspent}) {
        for (const auto& [name, n] : *v) {
            if (!json_verbatim(name) || contains_secret(name, secrets)) return false;
            size += name.size() + 24;
        }
        if (!names_distinct({}, *v)) return false;
    }
    // usage's counts share the object with "state" and "reason".
    return names_distinct({"state", "reason"}, m.usage);
}

// The metering object, member for member as metered_json below builds it.
void append_metered_plain(PlainObject& line, std::string& out, const MeteredLine& m) {
    line.key("metering");
    PlainObject j(out);
    j.string("api", m.api);
    if (!m.model.empty()) j.string("model", m.model);
    if (!m.usage_state.empty()) {
        j.key("usage");
        PlainObject u(out);
        u.string("state", m.usage_state);
        if (!m.usage_reason.empty()) u.string("reason", m.usage_reason);
        for (const auto& [k, n] : m.usage) u.number(k, n);
        u.close();
    }
    if (!m.cost_state.empty()) {
        j.key("cost");
        PlainObject c(out);
        c.string("state", m.cost_state);
        if (m.cost_state == "computed") {
            // A double as the JSON library writes one (shortest round trip, ".0" on a whole number).
            c.raw("usd", nlohmann::json(static_cast<double>(m.usd_micros) / 1e6).dump());
            c.number("usd_micros", m.usd_micros);
        }
        if (!m.price_source.empty()) c.string("source", m.price_source);
        if (!m.price_date.empty()) c.string("date", m.price_date);
        if (!m.cost_reason.empty()) c.string("reason", m.cost_reason);
        c.close();
    }
    if (!m.remaining.empty()) j.counts("remaining", m.remaining);
    if (!m.worker_remaining.empty()) j.counts("worker_remaining", m.worker_remaining);
    if (m.over_reservation) j.raw("over_reservation", "true");
    if (!m.overspent.empty()) j.counts("overspent", m.overspent);
    if (!m.worker_overspent.empty()) j.counts("worker_overspent", m.worker_overspent);
    if (!m.limit.empty()) j.string("limit", m.limit);
    j.close();
}

// The same line nlohmann's dump gives, built directly (no JSON tree, no
// allocation per key) for entries whose string fields are all verbatim and
// hold no secret; std::nullopt otherwise, and the caller takes the general path.
std::optional<std::string> format_plain(const LedgerEntry& e, const std::vector<std::string>& secrets) {
    const std::string_view strings[] = {e.identity, e.role, e.mode, e.method, e.host, e.path, e.reason, e.credential, e.form};
    std::size_t size = 200;
    for (auto s : strings) {
        if (!json_verbatim(s) || contains_secret(s, secrets)) return std::nullopt;
        size += s.size();
    }
    if (e.status < 0) return std::nullopt;
    if (e.metered && !metered_plain(*e.metered, secrets, size)) return std::nullopt;
    std::string line;
    line.reserve(size);
    PlainObject o(line);
    o.key("time");
    line += '"';
    append_rfc3339_ms(line, e.time);
    line += '"';
    o.string("identity", e.identity);
    if (!e.role.empty()) o.string("role", e.role);
    o.string("mode", e.mode);
    o.string("method", e.method);
    o.string("host", e.host);
    o.number("port", e.port);
    o.string("path", e.path);
    o.string("decision", e.decision == Decision::allow ? "allow" : "refuse");
    o.string("reason", e.reason);
    o.number("status", static_cast<std::uint64_t>(e.status));
    o.number("bytes_up", e.bytes_up);
    o.number("bytes_down", e.bytes_down);
    o.number("duration_ms", e.duration_ms);
    o.string("credential", e.credential);
    if (e.refusals != 0) o.number("refusals", e.refusals);
    if (e.matches != 0) {
        o.string("form", e.form);
        o.number("matches", e.matches);
    }
    if (e.metered) append_metered_plain(o, line, *e.metered);
    o.close();
    return line;
}

}  // namespace

namespace {

nlohmann::ordered_json metered_json(const MeteredLine& m, const std::vector<std::string>& secrets) {
    nlohmann::ordered_json j;
    j["api"] = m.api;
    if (!m.model.empty()) j["model"] = redact(m.model, secrets);
    if (!m.usage_state.empty()) {
        auto& u = j["usage"];
        u["state"] = m.usage_state;
        if (!m.usage_reason.empty()) u["reason"] = redact(m.usage_reason, secrets);
        for (const auto& [k, n] : m.usage) u[k] = n;
    }
    if (!m.cost_state.empty()) {
        auto& c = j["cost"];
        c["state"] = m.cost_state;
        if (m.cost_state == "computed") {
            c["usd"] = static_cast<double>(m.usd_micros) / 1e6;
            c["usd_micros"] = m.usd_micros;
        }
        if (!m.price_source.empty()) c["source"] = redact(m.price_source, secrets);
        if (!m.price_date.empty()) c["date"] = m.price_date;
        if (!m.cost_reason.empty()) c["reason"] = redact(m.cost_reason, secrets);
    }
    auto limits = [](const std::vector<std::pair<std::string, std::uint64_t>>& v) {
        nlohmann::ordered_json o = nlohmann::ordered_json::object();
        for (const auto& [k, n] : v) o[k] = n;
        return o;
    };
    if (!m.remaining.empty()) j["remaining"] = limits(m.remaining);
    if (!m.worker_remaining.empty()) j["worker_remaining"] = limits(m.worker_remaining);
    if (m.over_reservation) j["over_reservation"] = true;
    if (!m.overspent.empty()) j["overspent"] = limits(m.overspent);
    if (!m.worker_overspent.empty()) j["worker_overspent"] = limits(m.worker_overspent);
    if (!m.limit.empty()) j["limit"] = m.limit;
    return j;
}

}  // namespace

std::string format_ledger_line(const LedgerEntry& e, const std::vector<std::string>& secrets) {
    std::string line;
    if (auto plain = format_plain(e, secrets)) {
        line = std::move(*plain);
    } else {
        // nlohmann::ordered_json keeps the documented key order, so lines diff and grep predictably.
        nlohmann::ordered_json j;
        j["time"] = rfc3339_ms(e.time);
        j["identity"] = redact(e.identity, secrets);
        if (!e.role.empty()) j["role"] = redact(e.role, secrets);
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
        if (e.refusals != 0) j["refusals"] = e.refusals;
        if (e.matches != 0) {
            j["form"] = redact(e.form, secrets);
            j["matches"] = e.matches;
        }
        if (e.metered) j["metering"] = metered_json(*e.metered, secrets);
        // Valid UTF-8 JSON (a byte that is not UTF-8 becomes U+FFFD), and
        // nothing a terminal acts on when the ledger is read with cat or
        // tail: C1 controls, DEL and bidi characters from a request become
        // \uXXXX escapes of the same value (base/terminal_text.hpp).
        line = terminal_json(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    }
    // Defence in depth: a secret split across fields or reintroduced by escaping cannot
    // be rebuilt from the line because each field was scrubbed; scrub the whole line too.
    if (contains_secret(line, secrets)) line = redact(std::move(line), secrets);
    line += '\n';
    return line;
}

namespace {

// The ledger file at `path`, opened for appending without following a link,
// or "" with the reason in *problem: a file someone else owns (planted first)
// or one with a second hard link would write the ledger where they choose.
// (A character device of our own, such as /dev/full in tests, is fine.)
Fd open_ledger_file(const std::string& path, std::string* problem) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    struct stat st {};
    if (!fd.valid()) {
        *problem = "open(" + path + "): " + errno_text(errno);
    } else if (::fstat(fd.get(), &st) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)) ||
               st.st_uid != ::geteuid() || (S_ISREG(st.st_mode) && st.st_nlink != 1)) {
        *problem = "open(" + path + "): not a file of our own with one link; refusing to append to it";
        return Fd();
    }
    return fd;
}

}  // namespace

void log_ledger_unwritable(std::string_view failure) {
    log::error("ledger unwritable, refusing every new request: " + std::string(failure));
}

Ledger::Ledger(const std::string& path, std::uint64_t refusal_lines_per_identity)
    : path_(path),
      refusal_lines_per_identity_(refusal_lines_per_identity),
      secrets_(std::make_shared<const std::vector<std::string>>()) {
    std::string problem;
    Fd fd = open_ledger_file(path, &problem);
    if (!fd.valid()) fail_locked(std::move(problem));
    else fd_ = std::make_shared<const Fd>(std::move(fd));
}

std::string Ledger::reopen() {
    std::lock_guard lock(mutex_);
    flush_locked();
    // The lines written to the old file reach its disk before it is let go
    // (rare: the lock may be held for one fdatasync).
    if (fd_ && unsynced_ != 0 && ::fdatasync(fd_->get()) < 0) fail_locked("fdatasync(" + path_ + "): " + errno_text(errno));
    std::string problem;
    Fd fd = open_ledger_file(path_, &problem);
    if (!fd.valid()) {
        if (failure_.empty()) {
            fail_locked(std::move(problem));
            return "ledger " + path_ + " cannot be reopened, refusing every request: " + failure_;
        }
        return "ledger " + path_ + " still unusable (" + problem + "), refusing every request";
    }
    fd_ = std::make_shared<const Fd>(std::move(fd));
    unsynced_ = 0;
    if (failure_.empty()) return "ledger " + path_ + " reopened";
    std::string line = "ledger " + path_ + " reopened and writable again; it had failed (" + failure_ + ") and " +
                       std::to_string(lines_lost_) + " lines were lost since";
    failure_.clear();
    lines_lost_ = 0;
    healthy_.store(true, std::memory_order_release);
    return line;
}

std::uint64_t Ledger::lines_lost() const {
    std::lock_guard lock(mutex_);
    return lines_lost_;
}

Ledger::~Ledger() {
    flush();
    {
        std::lock_guard lock(mutex_);
        journal_stopping_ = true;
    }
    journal_wake_.notify_all();
    if (journal_thread_.joinable()) journal_thread_.join();  // it mirrors and writes what queued first
}

std::string Ledger::failure() const {
    std::lock_guard lock(mutex_);
    return failure_;
}

void Ledger::register_secret(const std::string& secret) {
    if (secret.empty()) return;
    std::lock_guard lock(mutex_);
    auto next = std::make_shared<std::vector<std::string>>(*secrets_.load());
    next->push_back(secret);
    secrets_.store(std::move(next));
}

void Ledger::fail_locked(std::string what) {
    if (!failure_.empty()) return;
    failure_ = std::move(what);
    healthy_.store(false, std::memory_order_release);
    lines_lost_ += static_cast<std::uint64_t>(std::count(pending_.begin(), pending_.end(), '\n'));
    pending_.clear();
}

std::string Ledger::format(const LedgerEntry& e) const {
    auto secrets = secrets_.load();
    return format_ledger_line(e, *secrets);
}

bool Ledger::append_batched(const LedgerEntry& e) {
    // Formatting is most of the work: done before taking the lock, so the
    // event-loop threads do not queue behind each other's JSON.
    std::string line;
    std::string format_error;
    try {
        line = format(e);
    } catch (const std::exception& ex) {
        format_error = std::string("format ledger line: ") + ex.what();
    }
    std::lock_guard lock(mutex_);
    const bool reflected = e.reason == reason::secret_reflected;
    if (reflected) ++reflected_[e.identity];
    else ++requests_[e.identity];
    std::uint64_t refused = e.decision == Decision::refuse && !reflected ? ++refusals_[e.identity] : 0;
    if (refused) note_refusal_locked(e);
    if (!failure_.empty()) {
        ++lines_lost_;
        return false;
    }
    if (auto cap_code = refusal_cap_line(refused); !cap_code.empty()) {
        // Past the cap this refusal's own line is dropped; at most a summary
        // line takes its place. Rare, so formatted under the lock.
        LedgerEntry summary;
        summary.time = e.time;
        summary.identity = e.identity;
        summary.decision = Decision::refuse;
        summary.reason = std::string(cap_code);
        summary.refusals = refused;
        try {
            line = format(summary);
            format_error.clear();
        } catch (const std::exception& ex) {
            format_error = std::string("format ledger line: ") + ex.what();
        }
    } else if (refused > refusal_lines_per_identity_ && refusal_lines_per_identity_ != 0) {
        return false;
    }
    if (!format_error.empty()) {
        fail_locked(std::move(format_error));
        return false;
    }
    bool first = pending_.empty();
    pending_ += line;
    return first;
}

void Ledger::note_refusal_locked(const LedgerEntry& e) {
    auto& notices = notices_[e.identity];
    for (auto& n : notices)
        if (n.port == e.port && n.host == e.host) {
            ++n.count;
            return;
        }
    if (notices.size() < kRefusalNoticesPerIdentity)
        notices.push_back(RefusalNotice{e.host, e.port, e.method, e.mode, e.reason, e.status, 1});
}

std::vector<RefusalNotice> Ledger::refusal_notices(const std::string& identity) const {
    std::lock_guard lock(mutex_);
    auto it = notices_.find(identity);
    return it == notices_.end() ? std::vector<RefusalNotice>{} : it->second;
}

std::string_view Ledger::refusal_cap_line(std::uint64_t refused) const {
    const std::uint64_t cap = refusal_lines_per_identity_;
    if (cap == 0 || refused <= cap) return {};
    if (refused == cap + 1) return reason::ledger_refusal_cap_reached;
    if (refused % cap == 0 && std::has_single_bit(refused / cap)) return reason::ledger_refusals_suppressed;
    return {};
}

void Ledger::append(const LedgerEntry& e) {
    append_batched(e);
    flush();
}

bool Ledger::flush() {
    std::lock_guard lock(mutex_);
    return flush_locked();
}

void Ledger::mirror_to(LedgerMirror mirror) {
    std::lock_guard lock(mutex_);
    mirror_ = std::move(mirror);
}

bool Ledger::flush_locked() {
    if (pending_.empty() || !failure_.empty()) return false;
    if (!mirror_) return write_locked(std::exchange(pending_, {}));
    // The journal first: the batch waits for the journal thread, which
    // writes it to the file once the mirror has it. Started here, on a
    // gateway thread: a supervisor is single-threaded until its sandbox's
    // clone, which is over before any request.
    if (!journal_thread_.joinable()) journal_thread_ = std::thread([this] { journal_loop(); });
    journalling_ += pending_;
    pending_.clear();
    journal_wake_.notify_one();
    return false;
}

void Ledger::journal_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        journal_wake_.wait(lock, [&] { return journal_stopping_ || !journalling_.empty(); });
        if (journalling_.empty()) return;
        // Lines of the next few milliseconds share the batch (and so the
        // journal's records): one signature for many requests.
        if (!journal_stopping_ && journal_waiters_ == 0)
            journal_wake_.wait_for(lock, kJournalBatchDelay, [&] { return journal_stopping_ || journal_waiters_ != 0; });
        std::string batch = std::exchange(journalling_, {});
        journal_busy_ = true;
        lock.unlock();
        std::string error;
        try {
            mirror_(batch);
        } catch (const std::exception& e) {
            error = std::string("journal: ") + e.what();
        }
        lock.lock();
        journal_busy_ = false;
        const auto lines = static_cast<std::uint64_t>(std::count(batch.begin(), batch.end(), '\n'));
        const bool was_healthy = failure_.empty();
        if (!error.empty()) {
            fail_locked(std::move(error));
            lines_lost_ += lines;
        } else if (!was_healthy) {
            lines_lost_ += lines;  // journalled, but the file failed meanwhile
        } else {
            write_locked(batch);
        }
        journal_idle_.notify_all();
        if (was_healthy && !failure_.empty()) {
            const std::string failure = failure_;
            lock.unlock();
            log_ledger_unwritable(failure);
            lock.lock();
        }
    }
}

bool Ledger::write_locked(std::string_view lines) {
    const auto count = static_cast<std::uint64_t>(std::count(lines.begin(), lines.end(), '\n'));
    ssize_t n;
    do {
        n = ::write(fd_->get(), lines.data(), lines.size());
    } while (n < 0 && errno == EINTR);
    if (n > 0) unsynced_ += count;
    if (n < 0) {
        const int err = errno;
        lines_lost_ += count;
        fail_locked("write(" + path_ + "): " + errno_text(err));
        return true;
    }
    if (static_cast<std::size_t>(n) != lines.size()) {
        lines_lost_ += count;
        fail_locked("write(" + path_ + "): short write (" + std::to_string(n) + " of " +
                    std::to_string(lines.size()) + " bytes)");
        return true;
    }
    return false;
}

void Ledger::sync() {
    // fdatasync can take milliseconds; appends must not wait behind it. The
    // shared descriptor stays open while this call holds it, even if reopen()
    // replaces it meanwhile.
    std::shared_ptr<const Fd> fd;
    {
        std::unique_lock lock(mutex_);
        flush_locked();
        if (journal_thread_.joinable()) {
            ++journal_waiters_;
            journal_wake_.notify_all();
            journal_idle_.wait(lock, [&] { return journalling_.empty() && !journal_busy_; });
            --journal_waiters_;
        }
        fd = fd_;
        if (unsynced_ == 0) return;
        unsynced_ = 0;
    }
    if (!fd) return;
    if (::fdatasync(fd->get()) < 0) {
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

std::uint64_t Ledger::secrets_reflected(const std::string& identity) const {
    std::lock_guard lock(mutex_);
    auto it = reflected_.find(identity);
    return it == reflected_.end() ? 0 : it->second;
}

}  // namespace corral::gateway
