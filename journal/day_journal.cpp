// journal/day_journal.cpp — see day_journal.hpp.
#include "journal/day_journal.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <regex>

#include "base/fd.hpp"
#include "base/sha256.hpp"
#include "base/sys_error.hpp"

namespace corral::journal {

namespace {

struct DayFile {
    std::string day;
    unsigned n = 0;
    std::string name;
};

// The day journals in `dir`, oldest first (by day, then N: "10" after "9").
std::vector<DayFile> day_files(const std::string& dir) {
    static const std::regex name_re(R"((\d{4}-\d{2}-\d{2})\.([1-9]\d{0,8})\.jsonl)");
    std::vector<DayFile> out;
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
    if (!d) throw SysError("opendir", dir, errno);
    while (dirent* e = ::readdir(d.get())) {
        std::cmatch m;
        if (std::regex_match(e->d_name, m, name_re))
            out.push_back({m[1].str(), static_cast<unsigned>(std::stoul(m[2].str())), e->d_name});
    }
    std::sort(out.begin(), out.end(), [](const DayFile& a, const DayFile& b) {
        return a.day != b.day ? a.day < b.day : a.n < b.n;
    });
    return out;
}

std::string file_name(const std::string& day, unsigned n) { return day + "." + std::to_string(n) + ".jsonl"; }

}  // namespace

std::vector<std::string> day_journal_files(const std::string& dir) {
    std::vector<std::string> out;
    for (auto& f : day_files(dir)) out.push_back(std::move(f.name));
    return out;
}

std::string utc_day(std::chrono::system_clock::time_point t) { return utc_time(t).substr(0, 10); }

std::unique_ptr<DayJournal> DayJournal::open(const std::string& dir, const SigningKey& key, nlohmann::json admission,
                                             std::vector<std::string>& notes, WriterOptions options, Clock clock) {
    if (::mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST) throw SysError("mkdir", dir, errno);
    struct stat st {};
    check_sys(::lstat(dir.c_str(), &st), "lstat", dir);
    if (!S_ISDIR(st.st_mode) || (st.st_mode & 077) != 0 || st.st_uid != ::geteuid())
        throw UsageError(dir + ": the daemon's journal directory must be a directory of the effective user, mode 0700");

    std::unique_ptr<DayJournal> j(new DayJournal());
    j->dir_ = dir;
    j->key_ = key;
    j->admission_ = std::move(admission);
    j->options_ = options;
    j->clock_ = std::move(clock);

    auto files = day_files(dir);
    for (const auto& f : files) {
        const std::string path = dir + "/" + f.name;
        if (ends_with_terminal_record(path)) continue;
        try {
            if (append_recovered(path, key, "gateway daemon lost", {{"found_by", "corral gateway"}}))
                notes.push_back("journal " + path + " had no terminal record (its daemon was killed): recovered record added");
        } catch (const std::exception& e) {
            notes.push_back("journal " + path + " had no terminal record and could not be ended: " + e.what());
        }
    }
    const std::string today = utc_day(j->clock_());
    unsigned n = 1;
    for (const auto& f : files)
        if (f.day == today) n = std::max(n, f.n + 1);
    std::string previous, previous_last;
    if (!files.empty()) {
        previous = files.back().name;
        previous_last = last_whole_line(dir + "/" + previous).value_or("");
    }
    JournalWriter first = j->start_file(today, n, previous, previous_last);
    j->shared_ = std::make_unique<SharedJournal>(
        std::move(first), [raw = j.get()](JournalWriter& current) { return raw->rotate_if_due(current); });
    return j;
}

JournalWriter DayJournal::start_file(const std::string& day, unsigned n, const std::string& previous,
                                     const std::string& previous_last_line) {
    JournalWriter w = JournalWriter::create(dir_ + "/" + file_name(day, n), *key_, options_);
    nlohmann::json payload = admission_;
    payload["journal"] = {{"day", day},
                          {"n", n},
                          {"previous", previous.empty() ? nlohmann::json() : nlohmann::json(previous)},
                          {"previous_last_sha256",
                           previous_last_line.empty() ? nlohmann::json() : nlohmann::json(sha256_hex(previous_last_line))}};
    w.append(kTypeAdmission, payload, Commit::durable);
    day_ = day;
    n_ = n;
    return w;
}

std::optional<JournalWriter> DayJournal::rotate_if_due(JournalWriter& current) {
    const std::string today = utc_day(clock_());
    // Room for the batch being journalled and the next admission: the
    // rotation happens well before the bound would refuse a decision.
    const bool full = current.size() + (1u << 20) > options_.max_bytes - options_.terminal_reserve;
    if (today == day_ && !full) return std::nullopt;
    const unsigned next_n = today == day_ ? n_ + 1 : 1;
    const std::string next = file_name(today, next_n);
    const std::string name = file_name(day_, n_);
    std::string last = current.append(kTypeTerminal, {{"outcome", "rotated"}, {"next", next}}, Commit::durable);
    return start_file(today, next_n, name, last);
}

void DayJournal::end(const std::string& outcome, nlohmann::json details) {
    shared_->stop_group_commits();
    details["outcome"] = outcome;
    shared_->append(kTypeTerminal, details, Commit::durable);
}

}  // namespace corral::journal
