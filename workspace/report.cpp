#include "workspace/report.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>

#include "base/fd.hpp"
#include "base/sha256.hpp"
#include "base/sys_error.hpp"
#include "workspace/child_process.hpp"
#include "workspace/unified_diff.hpp"

namespace corral::workspace {

namespace {

constexpr std::size_t kMaxTextBytes = 1u << 20;

const char* kind_letter(ChangeKind k) {
    switch (k) {
        case ChangeKind::added: return "A";
        case ChangeKind::modified: return "M";
        case ChangeKind::deleted: return "D";
        case ChangeKind::type_changed: return "T";
    }
    return "?";
}

// `rel` below `dir`, never through a symlink or out of dir. Invalid when absent.
Fd open_beneath(const std::string& dir, const std::string& rel) {
    Fd root(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) throw SysError("open", dir, errno);
    open_how how{};
    how.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return Fd(static_cast<int>(syscall(SYS_openat2, root.get(), rel.c_str(), &how, sizeof how)));
}

// The file's bytes when it is text (small enough, no NUL byte); nullopt else.
std::optional<std::string> text_of(int fd, std::uint64_t size) {
    if (size > kMaxTextBytes) return std::nullopt;
    std::string bytes(size, '\0');
    const ssize_t n = pread(fd, bytes.data(), bytes.size(), 0);
    if (n < 0) return std::nullopt;
    bytes.resize(static_cast<std::size_t>(n));
    if (bytes.find('\0') != std::string::npos) return std::nullopt;
    return bytes;
}

// For a pair too far apart for unified_diff_text: `diff -u` of the same bytes.
std::string diff_process(int before_fd, int after_fd, const std::string& label_a, const std::string& label_b) {
    Fd null_fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
    ChildRun run;
    run.argv = {"/usr/bin/diff", "-u", "--label", label_a, "--label", label_b, "/dev/fd/3", "/dev/fd/4"};
    run.extra_fds = {before_fd >= 0 ? before_fd : null_fd.get(), after_fd >= 0 ? after_fd : null_fd.get()};
    const ChildResult r = run_child(run);
    if (r.status != 0 && r.status != 1) return "(diff -u failed: exit " + std::to_string(r.status) + ")\n";
    return r.truncated ? r.out + "\n(diff cut at 4 MiB)\n" : r.out;
}

// The unified diff of the two sides' bytes; nullopt when either is not text.
std::optional<std::string> unified_diff(const Change& c, const ReportSides& sides) {
    const bool before_file = c.before && c.before->type == NodeType::regular;
    const bool after_file = c.after && c.after->type == NodeType::regular;
    if (!before_file && !after_file) return std::nullopt;
    Fd before = before_file ? open_beneath(sides.workspace_dir, c.path) : Fd();
    Fd after = after_file ? open_beneath(sides.upper_dir, c.path) : Fd();
    if ((before_file && !before.valid()) || (after_file && !after.valid())) return std::nullopt;
    const auto a = before_file ? text_of(before.get(), c.before->size) : std::optional<std::string>("");
    const auto b = after_file ? text_of(after.get(), c.after->size) : std::optional<std::string>("");
    if (!a || !b) return std::nullopt;
    const std::string label_a = before_file ? "a/" + c.path : "/dev/null";
    const std::string label_b = after_file ? "b/" + c.path : "/dev/null";
    if (auto text = unified_diff_text(*a, *b, label_a, label_b)) return text;
    return diff_process(before.get(), after.get(), label_a, label_b);
}

std::string side_words(const std::optional<Node>& n) {
    if (!n) return "none";
    if (n->type == NodeType::regular) return std::to_string(n->size) + " bytes sha256:" + n->sha256;
    if (n->type == NodeType::symlink) return "symlink -> " + n->target;
    return to_string(n->type);
}

std::string octal(mode_t m) {
    char text[16];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(m));
    return text;
}

}  // namespace

std::string diff_digest(const std::vector<Change>& changes) {
    std::string lines;
    for (const auto& c : changes)
        lines += std::to_string(c.path.size()) + ":" + c.path + " " + to_string(c.kind) + " " +
                 node_signature(c.before) + " | " + node_signature(c.after) + "\n";
    // Hashed once its size is known: a diff's lines are a few hundred bytes a
    // change, which libsodium hashes without OpenSSL's start-up (its
    // configuration read cost an apply 0.8 ms; base/sha256.hpp).
    Sha256 sha(lines.size());
    sha.update(lines.data(), lines.size());
    return "sha256:" + sha.finish_hex();
}

std::vector<std::string> flag_words(const Change& c) {
    std::vector<std::string> w;
    if (c.content) w.push_back("content");
    if (c.mode) w.push_back("mode");
    if (c.owner) w.push_back("owner");
    if (c.target) w.push_back("symlink-target");
    if (c.xattrs) w.push_back("xattr");
    if (c.exec_bit) w.push_back("exec-bit");
    if (c.git_internal) w.push_back("git-internal");
    if (c.ignored) w.push_back("ignored");
    if (c.special) w.push_back("special-file");
    if (c.hard_link) w.push_back("hard-link");
    if (c.host_changed) w.push_back("host-changed");
    return w;
}

bool selected(const std::string& path, const std::vector<std::string>& chosen) {
    if (chosen.empty()) return true;
    for (const auto& s : chosen)
        if (path == s || (path.size() > s.size() && path.starts_with(s) && path[s.size()] == '/')) return true;
    return false;
}

std::string change_stat_line(const Change& c) {
    std::string line = std::string(kind_letter(c.kind)) + "  " + c.path;
    const auto flags = flag_words(c);
    if (!flags.empty()) {
        line += "  [";
        for (std::size_t i = 0; i < flags.size(); ++i) line += (i ? ", " : "") + flags[i];
        line += "]";
    }
    if (!c.renamed_from.empty()) line += "  (renamed from " + c.renamed_from + ")";
    if (!c.renamed_to.empty()) line += "  (renamed to " + c.renamed_to + ")";
    return line + "\n";
}

std::string change_text(const Change& c, const ReportSides& sides) {
    std::string out = change_stat_line(c);
    if (c.mode && c.before && c.after)
        out += std::string("    mode ") + octal(c.before->mode) + " -> " + octal(c.after->mode) + "\n";
    if (c.owner && c.before && c.after)
        out += "    owner " + std::to_string(c.before->uid) + ":" + std::to_string(c.before->gid) + " -> " +
               std::to_string(c.after->uid) + ":" + std::to_string(c.after->gid) + "\n";
    if (c.kind == ChangeKind::added && c.after && c.after->type != NodeType::regular)
        out += "    " + side_words(c.after) + "\n";
    if (c.target || c.kind == ChangeKind::type_changed)
        out += "    " + side_words(c.before) + " -> " + side_words(c.after) + "\n";
    const bool file_bytes = c.content || (c.kind == ChangeKind::added && c.after->type == NodeType::regular) ||
                            (c.kind == ChangeKind::deleted && c.before->type == NodeType::regular);
    if (!file_bytes) return out;
    // A rename's content is the same on both sides: said once, not shown as all removed and all added.
    if (!c.renamed_from.empty() || !c.renamed_to.empty())
        return out + "    same content: " + side_words(c.kind == ChangeKind::added ? c.after : c.before) + "\n";
    if (auto text = unified_diff(c, sides)) return out + *text;
    return out + "    binary: " + side_words(c.before) + " -> " + side_words(c.after) + "\n";
}

nlohmann::json change_json(const Change& c, const ReportSides& sides, bool with_diff) {
    auto side = [](const std::optional<Node>& n) -> nlohmann::json {
        if (!n) return nullptr;
        nlohmann::json j = {{"type", to_string(n->type)}, {"mode", octal(n->mode)}, {"uid", n->uid}, {"gid", n->gid}};
        if (n->type == NodeType::regular) {
            j["size"] = n->size;
            j["sha256"] = n->sha256;
        }
        if (n->type == NodeType::symlink) j["target"] = n->target;
        if (!n->xattrs.empty()) j["xattrs"] = n->xattrs;
        return j;
    };
    nlohmann::json j = {{"path", c.path}, {"kind", to_string(c.kind)}, {"flags", flag_words(c)},
                        {"before", side(c.before)}, {"after", side(c.after)}};
    if (!c.renamed_from.empty()) j["renamed_from"] = c.renamed_from;
    if (!c.renamed_to.empty()) j["renamed_to"] = c.renamed_to;
    if (with_diff) {
        auto text = unified_diff(c, sides);
        j["diff"] = text ? nlohmann::json(*text) : nlohmann::json(nullptr);
    }
    return j;
}

}  // namespace corral::workspace
