#include "workspace/change.hpp"

#include <cstdio>

namespace corral::workspace {

const char* to_string(NodeType type) {
    switch (type) {
        case NodeType::regular: return "file";
        case NodeType::directory: return "dir";
        case NodeType::symlink: return "symlink";
        case NodeType::fifo: return "fifo";
        case NodeType::socket: return "socket";
        case NodeType::char_device: return "char-device";
        case NodeType::block_device: return "block-device";
    }
    return "?";
}

const char* to_string(ChangeKind kind) {
    switch (kind) {
        case ChangeKind::added: return "added";
        case ChangeKind::modified: return "modified";
        case ChangeKind::deleted: return "deleted";
        case ChangeKind::type_changed: return "type-changed";
    }
    return "?";
}

bool is_git_internal(const std::string& path) {
    return path == ".git" || path.starts_with(".git/") || path.find("/.git/") != std::string::npos ||
           path.ends_with("/.git");
}

namespace {

bool is_special(NodeType t) {
    return t != NodeType::regular && t != NodeType::directory && t != NodeType::symlink;
}

bool executable(const Node& n) { return n.type == NodeType::regular && (n.mode & 0111) != 0; }

// The flags of a path present on both sides with the same type.
void compare_same_type(Change& c, const Node& b, const Node& a) {
    c.content = a.type == NodeType::regular && (a.size != b.size || a.sha256 != b.sha256);
    c.mode = a.type != NodeType::symlink && a.mode != b.mode;
    c.owner = a.uid != b.uid || a.gid != b.gid;
    c.target = a.type == NodeType::symlink && a.target != b.target;
    c.xattrs = a.xattrs != b.xattrs;
    c.exec_bit = a.type == NodeType::regular && ((a.mode ^ b.mode) & 0111) != 0;
    c.special = is_special(a.type) && a.rdev != b.rdev;
}

}  // namespace

bool changed_since(std::int64_t ctime_sec, std::int64_t ctime_nsec, std::int64_t fence_ns) {
    constexpr std::int64_t kNs = 1'000'000'000;
    if (ctime_nsec == 0) return ctime_sec >= fence_ns / kNs;
    return ctime_sec * kNs + ctime_nsec >= fence_ns - kFenceMarginNs;
}

std::optional<Change> classify(const std::string& path, const std::optional<Node>& before,
                               const std::optional<Node>& after, std::int64_t fence_ns) {
    if (!before && !after) return std::nullopt;
    Change c;
    c.path = path;
    c.before = before;
    c.after = after;
    c.git_internal = is_git_internal(path);
    c.host_changed = before && changed_since(before->ctime_sec, before->ctime_nsec, fence_ns);
    if (!before) {
        c.kind = ChangeKind::added;
        c.exec_bit = executable(*after);
        c.special = is_special(after->type);
    } else if (!after) {
        c.kind = ChangeKind::deleted;
    } else if (before->type != after->type) {
        c.kind = ChangeKind::type_changed;
        c.exec_bit = executable(*after) != executable(*before);
        c.special = is_special(after->type);
    } else {
        c.kind = ChangeKind::modified;
        compare_same_type(c, *before, *after);
        if (!c.content && !c.mode && !c.owner && !c.target && !c.xattrs && !c.special) return std::nullopt;
    }
    c.hard_link = after && after->type == NodeType::regular && after->nlink > 1;
    return c;
}

std::string node_signature(const std::optional<Node>& node) {
    if (!node) return "-";
    const Node& n = *node;
    char head[160];
    std::snprintf(head, sizeof head, "%s %04o %u:%u %llu %llu", to_string(n.type), static_cast<unsigned>(n.mode),
                  static_cast<unsigned>(n.uid), static_cast<unsigned>(n.gid),
                  static_cast<unsigned long long>(n.size), static_cast<unsigned long long>(n.rdev));
    std::string out = head;
    out += " sha256=" + n.sha256;
    // Lengths before texts: no link text or xattr value can forge a field boundary.
    out += " target=" + std::to_string(n.target.size()) + ":" + n.target;
    for (const auto& [k, v] : n.xattrs) out += " xattr=" + std::to_string(k.size()) + ":" + k + "=" + std::to_string(v.size()) + ":" + v;
    return out;
}

}  // namespace corral::workspace
