#include "run/mcp_pin_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "base/atomic_file.hpp"
#include "base/bounded_lock.hpp"
#include "base/fd.hpp"
#include "base/strict_json.hpp"
#include "base/sys_error.hpp"
#include "mcp/message.hpp"
#include "rootfs/host_paths.hpp"
#include "supervisor/run_record.hpp"

namespace corral::run {

using nlohmann::json;

namespace {

constexpr std::size_t kPinStoreMaxBytes = 4u << 20;
constexpr const char* kPinStoreFile = "pins.json";

bool is_pin_digest(const std::string& d) {
    constexpr std::string_view head = "sha256:";
    if (d.size() != head.size() + 64 || d.compare(0, head.size(), head) != 0) return false;
    for (std::size_t i = head.size(); i < d.size(); ++i)
        if (!((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f'))) return false;
    return true;
}

bool is_pin_key(const std::string& key) {
    auto slash = key.find('/');
    return slash != std::string::npos && mcp::valid_tool_name(key.substr(0, slash)) &&
           mcp::valid_tool_name(key.substr(slash + 1));
}

// Reads one record's object, refusing what the writer never writes.
class PinRecordReader {
public:
    PinRecordReader(const std::string& path, const std::string& key) : where_(path + ": tools." + json_quoted(key)) {}

    [[noreturn]] void bad(const std::string& problem) const {
        throw UsageError(where_ + ": " + problem +
                         "; restore the file, or remove it (every tool is then trusted again on its next first sight)");
    }
    void only(const json& o, std::initializer_list<const char*> allowed) const {
        if (!o.is_object()) bad("not an object");
        for (const auto& [k, v] : o.items()) {
            bool known = false;
            for (const char* a : allowed) known = known || k == a;
            if (!known) bad("unknown member " + json_quoted(k));
        }
    }
    std::string text(const json& o, const char* member, bool digest) const {
        if (!o.contains(member) || !o[member].is_string()) bad(std::string("\"") + member + "\" missing or not a string");
        std::string v = o[member].get<std::string>();
        if (digest && !is_pin_digest(v)) bad(std::string("\"") + member + "\" is not \"sha256:<64 lowercase hex>\"");
        return v;
    }

private:
    std::string where_;
};

PinRecord read_pin_record(const std::string& path, const std::string& key, const json& o) {
    PinRecordReader r(path, key);
    if (!is_pin_key(key)) r.bad("the key is not SERVER/TOOL (1..128 of A-Z a-z 0-9 _ . - each)");
    r.only(o, {"trusted", "first_seen", "run", "quarantined"});
    PinRecord p;
    p.trusted = r.text(o, "trusted", true);
    p.first_seen = r.text(o, "first_seen", false);
    p.run = r.text(o, "run", false);
    if (o.contains("quarantined")) {
        const json& q = o["quarantined"];
        r.only(q, {"digest", "at", "run"});
        p.quarantined = r.text(q, "digest", true);
        p.quarantined_at = r.text(q, "at", false);
        p.quarantined_run = r.text(q, "run", false);
    }
    return p;
}

}  // namespace

std::string pin_records_text(const PinRecords& records) {
    json tools = json::object();
    for (const auto& [key, p] : records) {
        json o = {{"trusted", p.trusted}, {"first_seen", p.first_seen}, {"run", p.run}};
        if (!p.quarantined.empty())
            o["quarantined"] = {{"digest", p.quarantined}, {"at", p.quarantined_at}, {"run", p.quarantined_run}};
        tools[key] = std::move(o);
    }
    return json{{"version", 1}, {"tools", std::move(tools)}}.dump() + "\n";
}

PinRecords parse_pin_records(std::string_view text, const std::string& path) {
    const std::string fix = "; restore the file, or remove it (every tool is then trusted again on its next first sight)";
    StrictJson parsed = parse_strict_json(text, StrictJsonLimits{kPinStoreMaxBytes, 8});
    if (!parsed.ok()) throw UsageError(path + ": not the MCP pins store's JSON (" + parsed.problem->detail + ")" + fix);
    const json& doc = parsed.value;
    if (!doc.is_object() || doc.size() != 2 || !doc.contains("version") || !doc.contains("tools") ||
        !doc["tools"].is_object())
        throw UsageError(path + ": expected {\"version\": 1, \"tools\": {...}}" + fix);
    if (doc["version"] != 1)
        throw UsageError(path + ": version " + doc["version"].dump() + " is not one this corral reads (1)" + fix);
    PinRecords out;
    for (const auto& [key, o] : doc["tools"].items()) out.emplace(key, read_pin_record(path, key, o));
    return out;
}

bool merge_sights(PinRecords& records, const std::vector<mcp::PinEntry>& seen,
                  const std::map<std::string, std::string>& config_pins, const std::string& run_id,
                  const std::string& now) {
    bool changed = false;
    for (const auto& e : seen) {
        const std::string key = e.server + "/" + e.tool;
        if (e.seen.empty() || config_pins.count(key)) continue;
        auto it = records.find(key);
        if (it == records.end()) {
            PinRecord p{e.trusted.empty() ? e.seen : e.trusted, now, run_id, {}, {}, {}};
            if (e.seen != p.trusted) p.quarantined = e.seen, p.quarantined_at = now, p.quarantined_run = run_id;
            records.emplace(key, std::move(p));
            changed = true;
            continue;
        }
        PinRecord& p = it->second;
        if (e.seen == p.trusted) {
            if (p.quarantined.empty()) continue;
            p.quarantined.clear(), p.quarantined_at.clear(), p.quarantined_run.clear();
        } else {
            if (p.quarantined == e.seen) continue;
            p.quarantined = e.seen, p.quarantined_at = now, p.quarantined_run = run_id;
        }
        changed = true;
    }
    return changed;
}

std::string pin_store_now() { return supervisor::format_rfc3339_ms(std::chrono::system_clock::now()); }

PinStore::PinStore(std::string dir) : dir_(std::move(dir)), path_(dir_ + "/" + kPinStoreFile) {}

PinRecords PinStore::read() const {
    auto text = read_whole_file(WholeFileRead{path_, kPinStoreMaxBytes, AT_FDCWD, /*no_follow=*/true});
    if (!text) return {};
    return parse_pin_records(*text, path_);
}

void PinStore::update(const std::function<bool(PinRecords&)>& change, std::chrono::milliseconds bound) {
    const std::string lock_path = dir_ + "/.lock";
    Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!lock.valid()) throw SysError("open", lock_path, errno);
    lock_within(lock.get(), lock_path, LockKind::exclusive, bound);
    PinRecords records = read();
    if (change(records))
        write_file_atomically(AtomicFileWrite{dir_, kPinStoreFile, 0600, Durability::durable}, pin_records_text(records));
}

std::string open_pin_store_dir(const std::string& option, const std::string& state_dir, const std::string& worker,
                               bool create) {
    std::string dir = state_dir;
    for (const std::string& part : {std::string("mcp"), worker}) {
        dir += "/" + part;
        struct stat st {};
        if (!create && ::lstat(dir.c_str(), &st) != 0) {
            if (errno == ENOENT) return {};
            throw SysError("lstat", option + " " + dir, errno);
        }
        rootfs::RootOnlyDir d = rootfs::open_root_only_dir(option, dir, 0700);
        if (::fstat(d.fd.get(), &st) != 0) throw SysError("fstat", dir, errno);
        if (st.st_mode & 077)
            throw UsageError(option + " " + dir + ": the MCP pins store's directory must be root's alone (mode 0700)");
        dir = d.real_path;
    }
    return dir;
}

std::pair<std::string, std::string> split_pin_key(const std::string& key) {
    auto slash = key.find('/');
    if (slash == std::string::npos) return {key, ""};
    return {key.substr(0, slash), key.substr(slash + 1)};
}

}  // namespace corral::run
