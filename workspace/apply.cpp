#include "workspace/apply.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral::workspace {

namespace {

// `rel` below dir_fd: no symlink, no magic link, no mount crossed, no "..".
Fd beneath(int dir_fd, const std::string& rel, int flags) {
    open_how how{};
    // No O_NOFOLLOW: RESOLVE_NO_SYMLINKS refuses a link as the last component too (ELOOP).
    how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    int fd;
    do {
        fd = static_cast<int>(syscall(SYS_openat2, dir_fd, rel.c_str(), &how, sizeof how));
    } while (fd < 0 && (errno == EINTR || errno == EAGAIN));
    return Fd(fd);
}

std::string why(const std::string& call, int err) {
    if (err == ELOOP) return "refused: a symlink on the way (apply never follows a link out of DIR)";
    if (err == EXDEV) return "refused: a mount on the way";
    return call + ": " + errno_text(err);
}

bool own_stamp(const ReviewRecord& r, const std::string& path, std::int64_t sec, std::int64_t nsec) {
    auto it = r.applied_stamps.find(path);
    return it != r.applied_stamps.end() && it->second == AppliedStamp{sec, nsec};
}

class Applier {
public:
    // `sources`: the reviewed copies opened already (ReviewedCopies::live),
    // one per change in the order applied (invalid for what needs none).
    Applier(int dir_fd, int upper_fd, const ReviewRecord& r, const std::vector<Fd>* sources)
        : dir_(dir_fd), upper_(upper_fd), record_(r), sources_(sources) {}

    // "" when applied, else why not; `stamp` gets the host entry's ctime
    // once written (its directory's fd, opened once for both).
    std::string apply(const Change& c, std::size_t index, AppliedStamp& stamp) {
        index_ = index;
        const auto slash = c.path.rfind('/');
        const std::string parent_rel = slash == std::string::npos ? "." : c.path.substr(0, slash);
        const std::string name = slash == std::string::npos ? c.path : c.path.substr(slash + 1);
        Fd parent = beneath(dir_, parent_rel, O_PATH | O_DIRECTORY);
        if (!parent.valid()) return why("open its directory", errno);
        const std::string err = apply_one(c, parent.get(), name);
        struct stat st {};
        if (err.empty() && c.after && fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
            stamp = AppliedStamp{st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
        return err;
    }

private:
    std::string apply_one(const Change& c, int parent, const std::string& name) {
        if (auto conflict = check_host(parent, name, c); !conflict.empty()) return conflict;
        if (c.special) return "refused: a special file (FIFO, socket or device) is never applied";
        if (!c.after) return remove(parent, name, *c.before);
        switch (c.after->type) {
            case NodeType::directory: return make_dir(parent, name, c);
            case NodeType::regular: return replace_file(parent, name, c);
            case NodeType::symlink: return replace_link(parent, name, c);
            default: return "refused: a special file is never applied";
        }
    }

    int dir_, upper_;
    const ReviewRecord& record_;
    const std::vector<Fd>* sources_;
    std::size_t index_ = 0;
    unsigned serial_ = 0;

    std::string check_host(int parent, const std::string& name, const Change& c) {
        struct stat st {};
        const bool exists = fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (!exists && errno != ENOENT) return why("fstatat", errno);
        if (!c.before) return exists ? "conflict: created on the host since the diff was made" : "";
        if (!exists) return "conflict: gone from the host since the diff was made";
        if (S_ISDIR(st.st_mode) != (c.before->type == NodeType::directory))
            return "conflict: its type changed on the host since the diff was made";
        // A directory's own ctime moves with every entry added or removed in
        // it (by the host, or by this apply): a directory kept as one is
        // judged by its entries, a removed one by rmdir (refused when the
        // host added to it).
        const bool stays_or_goes_as_dir = S_ISDIR(st.st_mode) && (!c.after || c.after->type == NodeType::directory);
        if (!stays_or_goes_as_dir && changed_since(st.st_ctim.tv_sec, st.st_ctim.tv_nsec, record_.fence_ns) &&
            !own_stamp(record_, c.path, st.st_ctim.tv_sec, st.st_ctim.tv_nsec))
            return "conflict: changed on the host since the run started";
        return "";
    }

    std::string remove(int parent, const std::string& name, const Node& before) {
        const bool dir = before.type == NodeType::directory;
        if (unlinkat(parent, name.c_str(), dir ? AT_REMOVEDIR : 0) == 0) return "";
        if (dir && (errno == ENOTEMPTY || errno == EEXIST)) return "conflict: the host added files to it since the run started";
        return why("unlinkat", errno);
    }

    std::string temp_name() { return ".corral-apply." + std::to_string(getpid()) + "." + std::to_string(++serial_); }

    void set_xattrs(int fd, const Node& n) {
        for (const auto& [k, v] : n.xattrs) fsetxattr(fd, k.c_str(), v.data(), v.size(), 0);
    }

    // What the host has at `name` goes first when the new entry cannot be renamed over it.
    std::string clear_for(int parent, const std::string& name, const Change& c) {
        if (!c.before || c.before->type == c.after->type) return "";
        const bool dir = c.before->type == NodeType::directory;
        if (dir == (c.after->type == NodeType::directory)) return "";
        if (unlinkat(parent, name.c_str(), dir ? AT_REMOVEDIR : 0) == 0) return "";
        return why("unlinkat", errno);
    }

    std::string make_dir(int parent, const std::string& name, const Change& c) {
        if (auto e = clear_for(parent, name, c); !e.empty()) return e;
        if (mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST) return why("mkdirat", errno);
        Fd d = beneath(parent, name, O_RDONLY | O_DIRECTORY);
        if (!d.valid()) return why("open", errno);
        if (fchmod(d.get(), c.after->mode & 01777) != 0) return why("fchmod", errno);
        set_xattrs(d.get(), *c.after);
        return "";
    }

    std::string replace_file(int parent, const std::string& name, const Change& c) {
        Fd own;
        int src_fd = -1;
        if (sources_) {
            src_fd = (*sources_)[index_].get();
            if (src_fd < 0) return "refused: the reviewed copy could not be opened";
        } else {
            own = beneath(upper_, c.path, O_RDONLY);
            if (!own.valid()) return why("open the reviewed copy", errno);
            src_fd = own.get();
        }

        struct stat st {};
        if (fstat(src_fd, &st) != 0 || !S_ISREG(st.st_mode)) return "refused: the reviewed copy is not a file";
        const std::string tmp = temp_name();
        Fd out(openat(parent, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!out.valid()) return why("openat " + tmp, errno);
        std::string err;
        // From offset 0 by our own count: a descriptor root opened keeps its offset.
        off_t from = 0;
        for (off_t left = st.st_size; left > 0 && err.empty();) {
            const ssize_t n = sendfile(out.get(), src_fd, &from, static_cast<std::size_t>(std::min<off_t>(left, 1 << 30)));
            if (n <= 0) err = n < 0 ? why("sendfile", errno) : "the reviewed copy shrank";
            left -= n > 0 ? n : 0;
        }
        const timespec times[2] = {st.st_atim, st.st_mtim};
        if (err.empty() && fchmod(out.get(), c.after->mode & 01777) != 0) err = why("fchmod", errno);
        if (err.empty()) set_xattrs(out.get(), *c.after);
        if (err.empty() && futimens(out.get(), times) != 0) err = why("futimens", errno);
        if (err.empty()) err = clear_for(parent, name, c);
        if (err.empty() && renameat(parent, tmp.c_str(), parent, name.c_str()) != 0) err = why("renameat", errno);
        if (!err.empty()) unlinkat(parent, tmp.c_str(), 0);
        return err;
    }

    std::string replace_link(int parent, const std::string& name, const Change& c) {
        const std::string tmp = temp_name();
        if (symlinkat(c.after->target.c_str(), parent, tmp.c_str()) != 0) return why("symlinkat", errno);
        std::string err = clear_for(parent, name, c);
        if (err.empty() && renameat(parent, tmp.c_str(), parent, name.c_str()) != 0) err = why("renameat", errno);
        if (!err.empty()) unlinkat(parent, tmp.c_str(), 0);
        return err;
    }
};

// One result as the child writes it: "A|R<len>:<path><len>:<text>", lengths
// first so no path can forge one; an applied change's text is its stamp
// ("SEC NSEC"), a refused one's why.
std::string encode(bool applied, const std::string& path, const std::string& reason) {
    return std::string(applied ? "A" : "R") + std::to_string(path.size()) + ":" + path + std::to_string(reason.size()) +
           ":" + reason;
}

void decode(const std::string& bytes, ApplyOutcome& out) {
    std::size_t at = 0;
    auto field = [&](std::string& f) {
        const std::size_t colon = bytes.find(':', at);
        if (colon == std::string::npos) return false;
        const std::size_t len = std::stoul(bytes.substr(at, colon - at));
        f = bytes.substr(colon + 1, len);
        at = colon + 1 + len;
        return true;
    };
    while (at < bytes.size()) {
        const bool applied = bytes[at++] == 'A';
        std::string path, reason;
        if (!field(path) || !field(reason)) break;
        if (!applied) {
            out.refused.emplace_back(path, reason);
            continue;
        }
        out.applied.push_back(path);
        AppliedStamp stamp;
        if (std::sscanf(reason.c_str(), "%ld %ld", &stamp.ctime_sec, &stamp.ctime_nsec) == 2) out.stamps[path] = stamp;
    }
}

[[noreturn]] void child(const std::vector<Change>& ordered, int dir_fd, int upper_fd, const ReviewRecord& r,
                        const std::vector<Fd>* sources, int out_fd) {
    if (setgroups(0, nullptr) != 0 || setresgid(r.owner_gid, r.owner_gid, r.owner_gid) != 0 ||
        setresuid(r.owner_uid, r.owner_uid, r.owner_uid) != 0)
        _exit(126);
    umask(0);
    Applier applier(dir_fd, upper_fd, r, sources);
    for (std::size_t i = 0; i < ordered.size(); ++i) {
        const Change& c = ordered[i];
        std::string reason;
        AppliedStamp stamp;
        try {
            reason = applier.apply(c, i, stamp);
        } catch (const std::exception& e) {
            reason = e.what();
        }
        const std::string text = reason.empty() ? std::to_string(stamp.ctime_sec) + " " + std::to_string(stamp.ctime_nsec) : reason;
        const std::string rec = encode(reason.empty(), c.path, text);
        if (write(out_fd, rec.data(), rec.size()) != static_cast<ssize_t>(rec.size())) _exit(125);
    }
    _exit(0);
}

}  // namespace

std::vector<Change> changes_to_apply(const std::vector<Change>& all, const std::vector<std::string>& only) {
    std::vector<Change> out;
    for (const auto& c : all) {
        bool needed = only.empty();
        for (const auto& p : only)
            needed = needed || p == c.path || (p.size() < c.path.size() && c.path.starts_with(p) && c.path[p.size()] == '/') ||
                     (c.kind == ChangeKind::added && c.after->type == NodeType::directory && p.starts_with(c.path + "/"));
        if (needed) out.push_back(c);
    }
    return out;
}

void accept_own_applies(std::vector<Change>& changes, const ReviewRecord& r) {
    for (auto& c : changes)
        if (c.host_changed && c.before && own_stamp(r, c.path, c.before->ctime_sec, c.before->ctime_nsec))
            c.host_changed = false;
}

namespace {

// ReviewedCopies::live: each regular file's reviewed copy opened as root,
// below the layer with no link or mount followed, in the order applied.
// The soft limit on open files is raised to the hard one for them.
std::vector<Fd> open_reviewed_copies(const std::vector<Change>& ordered, int upper_fd) {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
    std::vector<Fd> sources;
    sources.reserve(ordered.size());
    for (const auto& c : ordered) {
        const bool file = c.after && c.after->type == NodeType::regular && !c.special;
        // O_NONBLOCK: a FIFO the agent put there since the diff must not hold the open.
        sources.push_back(file ? beneath(upper_fd, c.path, O_RDONLY | O_NOCTTY | O_NONBLOCK) : Fd());
    }
    return sources;
}

}  // namespace

ApplyOutcome apply_changes(const std::vector<Change>& changes, const std::string& upper_dir, const ReviewRecord& r,
                           ReviewedCopies copies) {
    Fd dir(open(r.workspace.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir.valid()) throw SysError("open", r.workspace, errno);
    struct stat st {};
    if (fstat(dir.get(), &st) != 0) throw SysError("fstat", r.workspace, errno);
    if (st.st_uid != r.owner_uid || st.st_gid != r.owner_gid)
        throw UsageError(r.workspace + ": its owner is " + std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid) +
                         " now, not " + std::to_string(r.owner_uid) + ":" + std::to_string(r.owner_gid) +
                         " as when the run started: nothing applied");
    if (r.owner_uid == 0) throw UsageError(r.workspace + ": owned by root: corral applies only as an unprivileged owner");
    Fd upper(open(upper_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!upper.valid()) throw SysError("open", upper_dir, errno);
    // Deletions deepest first (a directory after what was in it), then the rest parents first.
    std::vector<Change> ordered;
    for (auto it = changes.rbegin(); it != changes.rend(); ++it)
        if (it->kind == ChangeKind::deleted) ordered.push_back(*it);
    for (const auto& c : changes)
        if (c.kind != ChangeKind::deleted) ordered.push_back(c);
    std::vector<Fd> sources;
    if (copies == ReviewedCopies::live) sources = open_reviewed_copies(ordered, upper.get());
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) throw SysError("pipe2", "apply", errno);
    Fd read_end(p[0]), write_end(p[1]);
    const pid_t pid = fork();
    if (pid < 0) throw SysError("fork", "apply", errno);
    if (pid == 0)
        child(ordered, dir.get(), upper.get(), r, copies == ReviewedCopies::live ? &sources : nullptr, write_end.get());
    write_end.reset();
    const std::string bytes = read_to_end(read_end.get(), "the apply child's results");
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR) throw SysError("waitpid", "apply", errno);
    ApplyOutcome out;
    decode(bytes, out);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
        out.refused.emplace_back("", "the apply child ended with status " + std::to_string(WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws)) +
                                         " after " + std::to_string(out.applied.size() + out.refused.size()) + " changes");
    return out;
}

}  // namespace corral::workspace
