// image/extract.cpp — libarchive in, a tree written by fd out, nothing followed.
#include "image/extract.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "base/fd.hpp"
#include "base/remove_tree.hpp"
#include "base/sha256.hpp"
#include "base/sys_error.hpp"
#include "image/libarchive.hpp"
#include "image/manifest.hpp"
#include "image/whiteout.hpp"

namespace corral::image {

namespace {

// The source as libarchive reads it: every byte also goes into the digest,
// computed on a thread of its own so that hashing overlaps extraction. The
// blocks go round a ring of kBlocks buffers: a block is read into its buffer
// only once the hasher is done with the block that held it before, so the
// queue is bounded (kBlocks x kBlockSize) and the reader waits when the
// hasher lags. libarchive keeps only the last block it was given, which the
// ring never reuses before the next read.
class HashingSource {
public:
    static constexpr std::size_t kBlocks = 8;
    static constexpr std::size_t kBlockSize = 1 << 17;

    HashingSource(int fd, Sha256* digest, const Progress* progress) : fd_(fd), digest_(digest), progress_(progress) {
        hasher_ = std::thread([this] { hash_blocks(); });
    }
    ~HashingSource() { stop(); }
    HashingSource(const HashingSource&) = delete;
    HashingSource& operator=(const HashingSource&) = delete;

    // Reads the next block; its bytes stay at data() until the next call.
    ssize_t read_some() {
        const std::size_t slot = read_ % kBlocks;
        {
            std::unique_lock lk(mu_);
            cv_.wait(lk, [&] { return hashed_ + kBlocks > read_; });
        }
        for (;;) {
            ssize_t n = ::read(fd_, bufs_[slot].data(), kBlockSize);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                read_errno = errno;
                return -1;
            }
            if (n > 0) {
                {
                    std::lock_guard lk(mu_);
                    sizes_[slot] = static_cast<std::size_t>(n);
                    ++read_;
                }
                cv_.notify_all();
                bytes += static_cast<std::uint64_t>(n);
                if (progress_ && *progress_) (*progress_)(bytes);
            }
            last_ = slot;
            return n;
        }
    }
    const char* data() const { return bufs_[last_].data(); }

    // Waits for the hasher to take in every block read, and ends it.
    void finish() { stop(); }

    std::uint64_t bytes = 0;
    int read_errno = 0;

private:
    void hash_blocks() {
        for (;;) {
            std::size_t slot = 0, size = 0;
            {
                std::unique_lock lk(mu_);
                cv_.wait(lk, [&] { return hashed_ < read_ || stopping_; });
                if (hashed_ == read_) return;  // stopping, and nothing left
                slot = hashed_ % kBlocks;
                size = sizes_[slot];
            }
            digest_->update(bufs_[slot].data(), size);
            {
                std::lock_guard lk(mu_);
                ++hashed_;
            }
            cv_.notify_all();
        }
    }
    void stop() {
        if (!hasher_.joinable()) return;
        {
            std::lock_guard lk(mu_);
            stopping_ = true;
        }
        cv_.notify_all();
        hasher_.join();
    }

    int fd_;
    Sha256* digest_;
    const Progress* progress_;
    std::array<std::array<char, kBlockSize>, kBlocks> bufs_{};
    std::array<std::size_t, kBlocks> sizes_{};
    std::size_t last_ = 0;
    std::mutex mu_;
    std::condition_variable cv_;
    std::uint64_t read_ = 0;    // blocks read (guarded by mu_)
    std::uint64_t hashed_ = 0;  // blocks hashed (guarded by mu_)
    bool stopping_ = false;
    std::thread hasher_;
};

la_ssize_t read_callback(struct archive* a, void* ctx, const void** out) {
    auto* src = static_cast<HashingSource*>(ctx);
    ssize_t n = src->read_some();
    if (n < 0) {
        libarchive().archive_set_error(a, src->read_errno, "read: %s", std::strerror(src->read_errno));
        return -1;
    }
    *out = src->data();
    return n;
}


std::string entry_error(const std::string& what, const std::string& name, const std::string& why) {
    return what + ": entry \"" + name + "\" refused: " + why;
}

struct Split {
    std::string parent;  // "" = the root
    std::string leaf;
};
Split split(const std::string& path) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) return {"", path};
    return {path.substr(0, slash), path.substr(slash + 1)};
}

class Extractor {
public:
    Extractor(int dest_fd, std::string what, ExtractMode mode)
        : root_(dest_fd), what_(std::move(what)), mode_(mode), euid_(geteuid()), egid_(getegid()) {
        // What a create call leaves of a mode: umask() is the only way to
        // read the mask (set and put back at once). A default ACL on the
        // destination would replace the umask below it: then every mode is
        // set explicitly. Nothing this extractor writes sets an ACL.
        umask_ = umask(0);
        umask(umask_);
        char probe;
        acl_default_ = fgetxattr(dest_fd, "system.posix_acl_default", &probe, 0) >= 0 || (errno != ENODATA && errno != ENOTSUP);
    }

    void entry(struct archive* a, struct archive_entry* e, ExtractResult& result) {
        const char* raw = libarchive().archive_entry_pathname(e);
        if (raw == nullptr) throw ImageError(what_ + ": an entry without a name");
        const std::string name = normalize_entry_name(raw, what_);
        if (name.empty()) return;  // the archive's own root: the destination is it
        ++result.entries;
        auto [parent, leaf] = split(name);

        if (mode_ == ExtractMode::layer) {
            Whiteout w = classify_whiteout(leaf);
            if (w.kind == WhiteoutKind::opaque) {
                int dir = directory(parent, name, /*create=*/true);
                make_opaque(dir, what_ + ": " + name);
                return;
            }
            if (w.kind == WhiteoutKind::deletion) {
                int dir = directory(parent, name, true);
                remove_tree_at(dir, w.name);
                make_deletion(dir, w.name, what_ + ": " + name);
                return;
            }
        }

        const char* hardlink = libarchive().archive_entry_hardlink(e);
        const mode_t type = libarchive().archive_entry_filetype(e);
        if (hardlink != nullptr) return link(name, parent, leaf, hardlink);
        switch (type) {
            case AE_IFREG: return regular(a, e, name, parent, leaf);
            case AE_IFDIR: return directory_entry(e, name, parent, leaf);
            case AE_IFLNK: return symlink(e, name, parent, leaf);
            case AE_IFCHR:
            case AE_IFBLK: {
                const bool whiteout_device = type == AE_IFCHR && libarchive().archive_entry_rdevmajor(e) == 0 &&
                                             libarchive().archive_entry_rdevminor(e) == 0;
                if (whiteout_device && mode_ == ExtractMode::layer) {
                    // Already overlayfs's form of a deletion (some exporters write it so).
                    int dir = directory(parent, name, true);
                        remove_tree_at(dir, leaf);
                    make_deletion(dir, leaf, what_ + ": " + name);
                    return;
                }
                throw ImageError(entry_error(what_, name, std::string(type == AE_IFCHR ? "a character" : "a block") +
                                                              " device " + std::to_string(libarchive().archive_entry_rdevmajor(e)) + ":" +
                                                              std::to_string(libarchive().archive_entry_rdevminor(e)) +
                                                              "; images may not hold device nodes (the box gets its own /dev)"));
            }
            case AE_IFIFO:
                result.notes.push_back(what_ + ": skipped FIFO " + name + ": programs make their FIFOs at run time");
                return;
            case AE_IFSOCK:
                result.notes.push_back(what_ + ": skipped socket " + name + ": a socket is only meaningful while its server runs");
                return;
            default:
                throw ImageError(entry_error(what_, name, "an entry of unknown type"));
        }
    }

    // Every byte about to be written goes through `charge` first (it throws to refuse).
    void charge_writes(std::function<void(std::uint64_t)> charge) { charge_ = std::move(charge); }

    void drop_notes(ExtractResult& result) {
        for (const auto& x : dropped_xattrs_)
            result.notes.push_back(what_ + ": dropped xattr " + x + " (only user.* and security.capability are kept)");
    }

private:
    // The directory `parent` of the layer (each component a real directory of
    // the layer, reached without following anything), created on the way when
    // `create`. The fd stays owned by the extractor's cache.
    int directory(const std::string& parent, const std::string& entry, bool create) {
        if (cached_.valid() && cached_path_ == parent) return cached_.get();
        // From the cached directory when it is on the way (a tar lists a
        // directory, then what is in it), else from the layer's root.
        const bool below_cached = cached_.valid() && !cached_path_.empty() && parent.size() > cached_path_.size() &&
                                  parent.compare(0, cached_path_.size(), cached_path_) == 0 &&
                                  parent[cached_path_.size()] == '/';
        Fd cur(fcntl(below_cached ? cached_.get() : root_, F_DUPFD_CLOEXEC, 3));
        if (!cur.valid()) throw SysError("fcntl(F_DUPFD_CLOEXEC)", what_, errno);
        std::size_t pos = below_cached ? cached_path_.size() + 1 : 0;
        std::string walked = below_cached ? cached_path_ : std::string();
        while (pos < parent.size()) {
            std::size_t next = parent.find('/', pos);
            if (next == std::string::npos) next = parent.size();
            const std::string part = parent.substr(pos, next - pos);
            walked += (walked.empty() ? "" : "/") + part;
            Fd sub(openat(cur.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (!sub.valid() && errno == ENOENT && create) {
                if (mkdirat(cur.get(), part.c_str(), 0755) != 0 && errno != EEXIST)
                    throw SysError("mkdirat", what_ + ": " + walked, errno);
                sub.reset(openat(cur.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            }
            if (!sub.valid()) {
                const int err = errno;
                if (err == ELOOP)
                    throw ImageError(entry_error(what_, entry, walked + " is a symlink; writing through it could land outside the layer"));
                struct stat st {};
                if (err == ENOTDIR && fstatat(cur.get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                    throw ImageError(entry_error(what_, entry, walked + " is a symlink; writing through it could land outside the layer"));
                if (err == ENOTDIR)
                    throw ImageError(entry_error(what_, entry, walked + " is not a directory in this archive"));
                if (err == ENOENT)
                    throw ImageError(entry_error(what_, entry, walked + " does not exist in this archive"));
                throw SysError("openat", what_ + ": " + walked, err);
            }
            cur = std::move(sub);
            pos = next + 1;
        }
        cache(std::move(cur), parent);
        return cached_.get();
    }

    // The directory later entries are most likely in, and what a file created
    // in it gets: a set-GID directory hands its group (and, to a
    // subdirectory, its set-GID bit) to what is made in it.
    void cache(Fd dir, const std::string& path) {
        struct stat st {};
        if (fstat(dir.get(), &st) != 0) throw SysError("fstat", what_ + ": " + path, errno);
        cached_ = std::move(dir);
        cached_path_ = path;
        cached_setgid_ = (st.st_mode & S_ISGID) != 0;
    }

    // Whether what was just created in the cached directory (as euid and
    // egid, with `created` given to the create call) already has the
    // archive's owner, and its mode: the fchown or fchmod is then skipped.
    bool owner_is_creators(struct archive_entry* e) const {
        if (mode_ != ExtractMode::layer) return true;  // an image archive's files stay the creator's
        if (cached_setgid_) return false;
        return static_cast<uid_t>(libarchive().archive_entry_uid(e)) == euid_ && static_cast<gid_t>(libarchive().archive_entry_gid(e)) == egid_;
    }
    bool create_gave_mode(mode_t created, mode_t wanted) const {
        return !acl_default_ && !cached_setgid_ && (created & ~umask_) == wanted;
    }

    // Makes room for a new entry: whatever the name held before goes (a later
    // entry of the same name wins, as with tar -x). The cached directory is
    // the entry's parent, which this never removes, and the walk starts from
    // it only for paths below it: a directory replaced here by a symlink is
    // met again only by a walk from above it, which refuses it.
    void clear_slot(int dir, const std::string& leaf) { remove_tree_at(dir, leaf); }

    // Runs `create` (a call that fails with EEXIST rather than follow or
    // replace what is there: O_CREAT|O_EXCL, symlinkat, linkat), and when the
    // name is taken clears the slot and runs it again: a name met for the
    // first time, the usual case, costs no lookup before the create.
    template <class Create>
    int create_in_slot(int dir, const std::string& leaf, Create create) {
        int r = create();
        if (r < 0 && errno == EEXIST) {
            clear_slot(dir, leaf);
            r = create();
        }
        return r;
    }

    void set_owner(int fd_or_dir, const char* name, struct archive_entry* e, const std::string& where) {
        if (mode_ != ExtractMode::layer) return;
        const int flags = name[0] ? AT_SYMLINK_NOFOLLOW : AT_EMPTY_PATH;
        if (fchownat(fd_or_dir, name, static_cast<uid_t>(libarchive().archive_entry_uid(e)), static_cast<gid_t>(libarchive().archive_entry_gid(e)), flags) != 0)
            throw SysError("fchownat", where, errno);
    }
    mode_t kept_mode(struct archive_entry* e, mode_t container_mode) const {
        if (mode_ == ExtractMode::container) return container_mode;
        return libarchive().archive_entry_perm(e) & 07777;
    }
    void set_xattrs(int fd, struct archive_entry* e, const std::string& where) {
        if (mode_ != ExtractMode::layer) return;
        const char* xname = nullptr;
        const void* value = nullptr;
        std::size_t size = 0;
        libarchive().archive_entry_xattr_reset(e);
        while (libarchive().archive_entry_xattr_next(e, &xname, &value, &size) == ARCHIVE_OK) {
            const std::string n = xname ? xname : "";
            if (n.rfind("user.", 0) == 0 || n == "security.capability") {
                if (fsetxattr(fd, n.c_str(), value, size, 0) != 0) throw SysError("fsetxattr(" + n + ")", where, errno);
            } else {
                dropped_xattrs_.insert(n);
            }
        }
    }
    void set_mtime(int dir, const char* leaf, struct archive_entry* e) {
        if (!libarchive().archive_entry_mtime_is_set(e)) return;
        struct timespec t[2] = {{0, UTIME_OMIT}, {libarchive().archive_entry_mtime(e), libarchive().archive_entry_mtime_nsec(e)}};
        (void)utimensat(dir, leaf, t, AT_SYMLINK_NOFOLLOW);  // a missing mtime changes nothing the box relies on
    }

    void regular(struct archive* a, struct archive_entry* e, const std::string& name, const std::string& parent,
                 const std::string& leaf) {
        int dir = directory(parent, name, true);
        const mode_t wanted = kept_mode(e, 0644);
        const mode_t created = wanted & 0777;  // set-ID bits only after the chown (which clears them)
        Fd out(create_in_slot(dir, leaf, [&] {
            return openat(dir, leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, created);
        }));
        if (!out.valid()) throw SysError("openat(O_CREAT|O_EXCL)", what_ + ": " + name, errno);
        const void* buf = nullptr;
        std::size_t size = 0;
        la_int64_t offset = 0;
        for (;;) {
            int r = libarchive().archive_read_data_block(a, &buf, &size, &offset);
            if (r == ARCHIVE_EOF) break;
            if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
                throw ImageError(what_ + ": reading " + name + ": " + libarchive().archive_error_string(a));
            if (charge_) charge_(size);
            const char* p = static_cast<const char*>(buf);
            while (size > 0) {
                ssize_t n = pwrite(out.get(), p, size, offset);
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) throw SysError("pwrite", what_ + ": " + name, errno);
                p += n;
                size -= static_cast<std::size_t>(n);
                offset += n;
            }
        }
        // A sparse file's trailing hole (counted: the file's size is what a reader of it sees).
        if (libarchive().archive_entry_size_is_set(e) && libarchive().archive_entry_size(e) > offset) {
            if (charge_) charge_(static_cast<std::uint64_t>(libarchive().archive_entry_size(e) - offset));
            if (ftruncate(out.get(), libarchive().archive_entry_size(e)) != 0)
                throw SysError("ftruncate", what_ + ": " + name, errno);
        }
        const bool chowned = !owner_is_creators(e);
        if (chowned) set_owner(out.get(), "", e, what_ + ": " + name);
        if ((chowned && (wanted & 07000)) || !create_gave_mode(created, wanted))
            if (fchmod(out.get(), wanted) != 0) throw SysError("fchmod", what_ + ": " + name, errno);
        set_xattrs(out.get(), e, what_ + ": " + name);
        if (libarchive().archive_entry_mtime_is_set(e)) {
            struct timespec t[2] = {{0, UTIME_OMIT}, {libarchive().archive_entry_mtime(e), libarchive().archive_entry_mtime_nsec(e)}};
            (void)futimens(out.get(), t);
        }
    }

    void directory_entry(struct archive_entry* e, const std::string& name, const std::string& parent,
                         const std::string& leaf) {
        int dir = directory(parent, name, true);
        struct stat st {};
        if (fstatat(dir, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) clear_slot(dir, leaf);
        const mode_t wanted = kept_mode(e, 0755);
        const mode_t created = wanted & 01777;  // mkdir keeps the sticky bit, never set-ID bits
        bool fresh = true;
        if (mkdirat(dir, leaf.c_str(), created) != 0) {
            if (errno != EEXIST) throw SysError("mkdirat", what_ + ": " + name, errno);
            fresh = false;  // made on the way by an earlier entry, or listed twice: set it all
        }
        Fd d(openat(dir, leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!d.valid()) throw SysError("openat", what_ + ": " + name, errno);
        const bool chowned = !fresh || !owner_is_creators(e);
        if (chowned) set_owner(d.get(), "", e, what_ + ": " + name);
        if (!fresh || (chowned && (wanted & 07000)) || !create_gave_mode(created, wanted))
            if (fchmod(d.get(), wanted) != 0) throw SysError("fchmod", what_ + ": " + name, errno);
        set_xattrs(d.get(), e, what_ + ": " + name);
        // What follows in a tar is usually this directory's content.
        cache(std::move(d), name);
    }

    void symlink(struct archive_entry* e, const std::string& name, const std::string& parent, const std::string& leaf) {
        const char* target = libarchive().archive_entry_symlink(e);
        if (target == nullptr || *target == '\0') throw ImageError(entry_error(what_, name, "a symlink without a target"));
        int dir = directory(parent, name, true);
        // The link text is kept as written: nothing here ever follows it, and
        // in the box it resolves inside the box's own root.
        if (create_in_slot(dir, leaf, [&] { return symlinkat(target, dir, leaf.c_str()); }) != 0)
            throw SysError("symlinkat", what_ + ": " + name, errno);
        set_owner(dir, leaf.c_str(), e, what_ + ": " + name);
        set_mtime(dir, leaf.c_str(), e);
    }

    void link(const std::string& name, const std::string& parent, const std::string& leaf, const char* raw_target) {
        std::string target;
        try {
            target = normalize_entry_name(raw_target, what_);
        } catch (const ImageError&) {
            throw ImageError(entry_error(what_, name, std::string("a hard link to \"") + raw_target +
                                                          "\", outside the archive's tree"));
        }
        if (target.empty()) throw ImageError(entry_error(what_, name, "a hard link to the archive's root"));
        auto [tparent, tleaf] = split(target);
        // The target's directory must already be in this archive (no creation on the way).
        Fd tdir(fcntl(directory(tparent, name, false), F_DUPFD_CLOEXEC, 3));
        if (!tdir.valid()) throw SysError("fcntl(F_DUPFD_CLOEXEC)", what_, errno);
        struct stat st {};
        if (fstatat(tdir.get(), tleaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            throw ImageError(entry_error(what_, name, "a hard link to " + target + ", which this archive does not have (yet)"));
        if (S_ISDIR(st.st_mode)) throw ImageError(entry_error(what_, name, "a hard link to the directory " + target));
        int dir = directory(parent, name, true);
        // linkat without AT_SYMLINK_FOLLOW: a link to a symlink links the symlink itself.
        const char* from = tleaf.c_str();  // clang 14 does not capture a structured binding
        if (create_in_slot(dir, leaf, [&] { return linkat(tdir.get(), from, dir, leaf.c_str(), 0); }) != 0)
            throw SysError("linkat", what_ + ": " + name, errno);
    }

    int root_;
    std::string what_;
    ExtractMode mode_;
    uid_t euid_;
    gid_t egid_;
    mode_t umask_ = 022;
    bool acl_default_ = true;
    Fd cached_;
    std::string cached_path_;
    bool cached_setgid_ = false;  // the cached directory's set-GID bit
    std::set<std::string> dropped_xattrs_;
    std::function<void(std::uint64_t)> charge_;
};

}  // namespace

std::string normalize_entry_name(const std::string& name, const std::string& what) {
    if (!name.empty() && name.front() == '/')
        throw ImageError(entry_error(what, name, "an absolute name; every entry must stay inside its layer"));
    std::string out;
    std::size_t pos = 0, depth = 0;
    while (pos <= name.size()) {
        std::size_t next = name.find('/', pos);
        if (next == std::string::npos) next = name.size();
        const std::string part = name.substr(pos, next - pos);
        pos = next + 1;
        if (part.empty() || part == ".") continue;
        if (part == "..") throw ImageError(entry_error(what, name, "\"..\" in the name; every entry must stay inside its layer"));
        if (++depth > kMaxEntryDepth)
            throw ImageError(entry_error(what, name.substr(0, 64) + "...",
                                         "more than " + std::to_string(kMaxEntryDepth) +
                                             " directories deep; no real image nests that far"));
        out += (out.empty() ? "" : "/") + part;
    }
    return out;
}

void ExpansionBudget::charge(std::uint64_t n, std::uint64_t source_now, const std::string& what) {
    constexpr std::uint64_t kRatioSlack = 64u << 20;  // small archives of zeros (an empty disk image) stay fine
    const std::uint64_t after = written_ + n;
    const std::uint64_t read = source_done_ + source_now;
    if (limits_.max_bytes && after > limits_.max_bytes)
        throw ImageError(what + ": expands past " + std::to_string(limits_.max_bytes) +
                         " bytes; refused (`corral image import --max-expanded SIZE` raises the bound)");
    if (limits_.max_ratio && after > kRatioSlack && after / limits_.max_ratio > read)
        throw ImageError(what + ": expands " + std::to_string(after) + " bytes from " + std::to_string(read) +
                         " read, more than " + std::to_string(limits_.max_ratio) +
                         " times; refused as a decompression bomb (`corral image import --max-ratio N` raises the "
                         "bound, 0 lifts it)");
    written_ = after;
}

ExtractResult extract_archive(int source_fd, const std::string& what, int dest_fd, ExtractMode mode,
                              const Progress& progress, ExpansionBudget* budget) {
    Sha256 digest;
    auto src = std::make_unique<HashingSource>(source_fd, &digest, &progress);

    ArchiveReader a(libarchive().archive_read_new());
    if (!a) throw ImageError("archive_read_new failed");
    libarchive().archive_read_support_filter_all(a.get());
    libarchive().archive_read_support_format_tar(a.get());
    libarchive().archive_read_support_format_gnutar(a.get());
    if (libarchive().archive_read_open(a.get(), src.get(), nullptr, read_callback, nullptr) != ARCHIVE_OK)
        throw ImageError(what + ": not a readable tar archive: " + libarchive().archive_error_string(a.get()));

    ExtractResult result;
    Extractor x(dest_fd, what, mode);
    if (budget) x.charge_writes([budget, &what, source = src.get()](std::uint64_t n) { budget->charge(n, source->bytes, what); });
    for (;;) {
        struct archive_entry* e = nullptr;
        int r = libarchive().archive_read_next_header(a.get(), &e);
        if (r == ARCHIVE_EOF) break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
            throw ImageError(what + ": not a readable tar archive: " + libarchive().archive_error_string(a.get()));
        x.entry(a.get(), e, result);
    }
    x.drop_notes(result);
    // The digest covers the whole source, also what the tar reader did not
    // need (the end-of-archive blocks, padding, anything appended).
    while (src->read_some() > 0) {
    }
    if (src->read_errno != 0) throw SysError("read", what, src->read_errno);
    src->finish();
    result.sha256_hex = digest.finish_hex();
    result.source_bytes = src->bytes;
    if (budget) budget->archive_done(src->bytes);
    return result;
}

}  // namespace corral::image
