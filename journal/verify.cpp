// journal/verify.cpp — the checks of verify.hpp, in the order a forger would
// have to pass them: the line's bytes, its fields, its place, its signature.
#include "journal/verify.hpp"

#include <set>

#include "base/sha256.hpp"
#include "journal/canonical.hpp"
#include "journal/covered_files.hpp"

namespace corral::journal {

std::string_view status_name(Status status) {
    switch (status) {
    case Status::valid: return "valid";
    case Status::incomplete: return "incomplete";
    case Status::invalid: return "invalid";
    }
    return "invalid";
}

namespace {

// Whether `record` (canonical, with its six fields) is signed by `key`.
bool signed_by(const nlohmann::json& record, const PublicKey& key) {
    std::string sig;
    try {
        sig = base64_decode(record["sig"].get<std::string>());
    } catch (const std::exception&) {
        return false;
    }
    nlohmann::json body = record;
    body.erase("sig");
    // body came from canonical text, so re-dumping it gives back the exact
    // bytes the writer signed.
    return key.verify(canonical_json(body), sig);
}

// The record, if `line` is record `at.next_seq`; else why it cannot be.
// Without a key (`key` null) the signature is not checked: how a journal
// whose first record does not verify is told apart (signed with another
// key, or changed). *bad_signature says the signature was what failed.
Checked<nlohmann::json> check_record(std::string_view line, const JournalPosition& at, const PublicKey* key,
                                     bool* bad_signature) {
    auto parsed = parse_canonical(line);
    if (!parsed) return parsed;
    nlohmann::json& record = *parsed;
    auto fail = [](std::string why) { return Failed{std::move(why)}; };
    if (!record.is_object()) return fail("not a JSON object");
    static const std::set<std::string> kFields = {"payload", "prev", "seq", "sig", "time", "type"};
    for (const auto& item : record.items())
        if (!kFields.count(item.key())) return fail("unexpected field \"" + item.key() + "\"");
    for (const auto& f : kFields)
        if (!record.contains(f)) return fail("field \"" + f + "\" is missing");
    if (!record["seq"].is_number_unsigned()) return fail("seq is not a positive integer");
    if (!record["prev"].is_string() || !record["time"].is_string() || !record["type"].is_string() ||
        !record["sig"].is_string())
        return fail("prev, time, type and sig must be strings");
    if (!record["payload"].is_object()) return fail("payload is not an object");
    std::uint64_t seq = record["seq"].get<std::uint64_t>();
    // A deleted, duplicated or moved line breaks the numbering or the chain.
    if (seq != at.next_seq)
        return fail("seq is " + std::to_string(seq) + ", expected " + std::to_string(at.next_seq) +
                    " (a record deleted, duplicated or moved)");
    if (record["prev"].get<std::string>() != at.prev_hash)
        return fail("prev does not match the SHA-256 of the line before (the chain is broken)");
    try {
        (void)base64_decode(record["sig"].get<std::string>());
    } catch (const std::exception& e) {
        return fail(std::string("sig: ") + e.what());
    }
    if (key && !signed_by(record, *key)) {
        *bad_signature = true;
        return fail("the signature does not verify with key " + key->fingerprint());
    }
    return parsed;
}

// What the verdict keeps of a good record: a decision's ledger lines, the
// files a record holds the digest of. Why it cannot.
Problem take_contents(const nlohmann::json& record, Verdict& v) {
    const std::uint64_t seq = record["seq"].get<std::uint64_t>();
    if (record["type"].get<std::string>() == kTypeDecision) {
        const auto& ls = record["payload"].contains("ledger_lines") ? record["payload"]["ledger_lines"] : nlohmann::json();
        bool good = ls.is_array() && !ls.empty();
        for (const auto& l : ls) good = good && l.is_string() && l.get<std::string>().find('\n') == std::string::npos;
        if (!good) return Failed{"a decision without ledger_lines (a non-empty array of one-line strings)"};
        for (const auto& l : ls) v.decisions.push_back({seq, l.get<std::string>()});
    }
    return collect_covered_files(record, v.files);
}

// How many of the journal's lines are records signed by `key`.
std::uint64_t records_signed_by(std::string_view text, const PublicKey& key) {
    std::uint64_t n = 0;
    for (std::size_t pos = 0, eol; pos < text.size(); pos = eol + 1) {
        eol = text.find('\n', pos);
        if (eol == std::string_view::npos) break;
        auto parsed = parse_canonical(text.substr(pos, eol - pos));
        if (parsed && parsed->is_object() && parsed->contains("sig") && (*parsed)["sig"].is_string() && signed_by(*parsed, key))
            ++n;
    }
    return n;
}

Verdict verify_lines(std::string_view text, const PublicKey* key);

// The "type" a line claims, "" when it is no record: what decides whether it
// may follow the terminal record, before the line is checked as a record.
std::string type_of(std::string_view line) {
    auto parsed = parse_canonical(line);
    if (!parsed || !parsed->is_object() || !parsed->contains("type") || !(*parsed)["type"].is_string()) return "";
    return (*parsed)["type"].get<std::string>();
}

// Why the first bad record's signature does not verify, told from what the
// rest of the journal shows: the records before it verify (so it was changed,
// or written by someone without the key); or none does, yet every record is
// well-formed and chained (so all were signed with another key); or the
// journal is broken elsewhere too, or a later record verifies (changed).
void explain_bad_signature(std::string_view text, const PublicKey& key, Verdict& v) {
    const std::string n = std::to_string(v.good_records + 1);
    if (v.good_records > 0) {
        v.reason += ": record " + n + " was changed after it was signed, or written without this key (records 1 to " +
                    std::to_string(v.good_records) + " verify with it)";
        return;
    }
    const std::uint64_t verifying = records_signed_by(text, key);
    const Verdict unsigned_check = verify_lines(text, nullptr);
    if (verifying > 0) {
        v.reason += ": record 1 was changed after it was signed (" + std::to_string(verifying) +
                    " later records verify with this key)";
    } else if (unsigned_check.status == Status::invalid) {
        v.reason += ": the journal was changed (no record verifies with this key, and line " +
                    std::to_string(unsigned_check.line.value_or(0)) + " is bad apart from its signature: " +
                    unsigned_check.reason + ")";
    } else if (unsigned_check.good_records == 1) {
        v.other_key = true;
        v.reason += ": its only record was signed with another key, or changed";
    } else {
        v.other_key = true;
        v.reason += ": the journal was signed with another key (none of its " +
                    std::to_string(unsigned_check.good_records) + " records verifies with this one, and they are "
                    "well-formed and chained)";
    }
}

Verdict verify_lines(std::string_view text, const PublicKey* key) {
    Verdict v;
    std::uint64_t line_no = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        ++line_no;
        std::size_t eol = text.find('\n', pos);
        if (!v.terminal.is_null() && !may_follow_terminal(type_of(text.substr(pos, eol - pos)))) {
            v.status = Status::invalid;
            v.line = line_no;
            v.reason = "a record after the terminal record (seq " + std::to_string(v.terminal["seq"].get<std::uint64_t>()) + ")";
            return v;
        }
        if (eol == std::string_view::npos) {
            v.status = Status::invalid;
            v.line = line_no;
            v.reason = "the last line has no newline (a truncated or torn write)";
            return v;
        }
        std::string_view line = text.substr(pos, eol - pos);
        bool bad_signature = false;
        auto checked = check_record(line, v.end, key, &bad_signature);
        if (!checked) {
            v.status = Status::invalid;
            v.line = line_no;
            v.reason = "record " + std::to_string(v.end.next_seq) + ": " + checked.problem();
            if (bad_signature) explain_bad_signature(text, *key, v);
            return v;
        }
        const nlohmann::json& record = *checked;
        ++v.good_records;
        v.end.next_seq++;
        v.end.prev_hash = sha256_hex(line);
        v.end.size += line.size() + 1;
        if (v.first.is_null()) v.first = record;
        if (auto bad = take_contents(record, v)) {
            v.status = Status::invalid;
            v.line = line_no;
            v.reason = "record " + std::to_string(v.end.next_seq - 1) + ": " + bad->problem;
            return v;
        }
        if (!v.terminal.is_null()) ++v.after_end;
        if (is_terminal_type(record["type"].get<std::string>())) v.terminal = record;
        pos = eol + 1;
    }
    if (v.terminal.is_null()) {
        v.status = Status::incomplete;
        v.reason = v.good_records == 0 ? "no records" :
                   "no terminal record after record " + std::to_string(v.good_records) +
                   " (the run has not ended, or its supervisor was lost and no corral has started since)";
        return v;
    }
    v.status = Status::valid;
    return v;
}

}  // namespace

Verdict verify_journal(std::string_view text, const PublicKey& key) { return verify_lines(text, &key); }

std::optional<RunIdentity> run_identity(const Verdict& verdict) {
    const nlohmann::json& first = verdict.first;
    if (!first.is_object() || !first["payload"].contains("id") || !first["payload"]["id"].is_string()) return std::nullopt;
    RunIdentity who{first["payload"]["id"].get<std::string>(), std::nullopt};
    if (first["type"] == std::string(kTypeAdmission)) who.admitted = first["time"].get<std::string>();
    return who;
}

std::vector<std::string> compare_run_json(const Verdict& verdict, const nlohmann::json& run_json) {
    std::vector<std::string> out;
    auto compare = [&](const nlohmann::json& record, const char* field) {
        if (!record.is_object() || !record["payload"].contains(field)) return;
        const nlohmann::json& want = record["payload"][field];
        const nlohmann::json& have = run_json.contains(field) ? run_json[field] : nlohmann::json();
        if (want != have)
            out.push_back(std::string("run.json \"") + field + "\" is " + have.dump() + "; record " +
                          std::to_string(record["seq"].get<std::uint64_t>()) + " (" +
                          record["type"].get<std::string>() + ") says " + want.dump());
    };
    if (!run_json.is_object()) {
        out.push_back("run.json is not a JSON object");
        return out;
    }
    for (const char* f : {"id", "argv", "worker"}) compare(verdict.first, f);
    if (verdict.terminal.is_object() && verdict.terminal["type"] == std::string(kTypeTerminal))
        for (const char* f : {"id", "exit_code", "signal", "outcome", "status", "deadline_hit"})
            compare(verdict.terminal, f);
    if (verdict.terminal.is_object() && verdict.terminal["payload"].contains("teardown") &&
        run_json.contains("teardown") && run_json["teardown"].is_object()) {
        const auto& want = verdict.terminal["payload"]["teardown"];
        const auto& have = run_json["teardown"].value("verdict", nlohmann::json());
        if (want != have)
            out.push_back("run.json teardown verdict is " + have.dump() + "; the terminal record says " + want.dump());
    }
    if (verdict.terminal.is_object() && verdict.terminal["type"] == std::string(kTypeRecovered) && run_json.contains("outcome") &&
        run_json["outcome"] == "ok")
        out.push_back("run.json says outcome \"ok\" but the journal's run was lost (recovered record)");
    return out;
}

Problem compare_ledger(const Verdict& verdict, std::string_view ledger_text) {
    std::size_t n = 0;  // ledger lines read
    std::size_t pos = 0;
    while (pos < ledger_text.size()) {
        std::size_t eol = ledger_text.find('\n', pos);
        std::string_view line = ledger_text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
        ++n;
        const std::string at = "ledger line " + std::to_string(n);
        if (n > verdict.decisions.size())
            return Failed{at + " has no decision record in the journal (" + std::to_string(verdict.decisions.size()) +
                          " decisions): it was added to the ledger, not written by the gateway"};
        const auto& d = verdict.decisions[n - 1];
        if (line != d.ledger_line)
            return Failed{at + " differs from record " + std::to_string(d.seq) + " (decision " + std::to_string(n) +
                          "): the ledger was edited, or a line removed or moved"};
        if (eol == std::string_view::npos) return Failed{at + " has no newline (a torn write)"};
        pos = eol + 1;
    }
    if (n < verdict.decisions.size() && verdict.status == Status::valid)
        return Failed{"the ledger has " + std::to_string(n) + " lines, the journal " +
                      std::to_string(verdict.decisions.size()) + " decisions: record " +
                      std::to_string(verdict.decisions[n].seq) + " (decision " + std::to_string(n + 1) +
                      ") is missing from the ledger (removed, or the ledger was cut short)"};
    return std::nullopt;
}

std::optional<std::string> check_day_chain(const std::vector<ChainFile>& files, std::string* note) {
    for (std::size_t i = 0; i < files.size(); ++i) {
        const ChainFile& f = files[i];
        if (f.verdict.status == Status::invalid)
            return f.name + ": invalid: line " + std::to_string(f.verdict.line.value_or(0)) + ": " + f.verdict.reason;
        if (f.verdict.status == Status::incomplete && i + 1 < files.size())
            return f.name + ": has no terminal record, yet " + files[i + 1].name +
                   " follows it (a daemon's file ends before the next begins; recovered at the next start)";
        const nlohmann::json& first = f.verdict.first;
        if (!first.is_object() || first.value("type", "") != kTypeAdmission || !first["payload"].contains("journal") ||
            !first["payload"]["journal"].is_object())
            return f.name + ": its first record is not a daemon's admission with a \"journal\" object";
        const nlohmann::json& link = first["payload"]["journal"];
        const nlohmann::json previous = link.value("previous", nlohmann::json());
        const nlohmann::json previous_sha = link.value("previous_last_sha256", nlohmann::json());
        if (i == 0) {
            if (!previous.is_null() && note)
                *note = f.name + " follows " + previous.dump() + ", which is not here (removed or archived)";
            continue;
        }
        const ChainFile& before = files[i - 1];
        if (previous != before.name)
            return f.name + ": its admission names " + previous.dump() + " as the file before it, not \"" +
                   before.name + "\" (a file was removed, added or renamed between them)";
        if (previous_sha != sha256_hex(before.last_line))
            return f.name + ": its admission's previous_last_sha256 " + previous_sha.dump() + " is not the SHA-256 of " +
                   before.name + "'s last line (" + before.name + " was changed or cut after " + f.name + " began)";
    }
    return std::nullopt;
}

}  // namespace corral::journal
