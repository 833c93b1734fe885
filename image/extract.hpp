// image/extract.hpp — unpacking an archive into a directory, safely, as root.
//
// Every archive is treated as hostile. Entries are written relative to the
// destination's fd, one path component at a time, never following a
// symlink: an entry whose name is absolute or holds "..", that goes through
// a symlink (or any non-directory) the archive made, or a hard link that
// points outside the archive's own tree, is refused (ImageError naming the
// entry and the reason) and nothing is written anywhere but below the
// destination. Device nodes are refused (the box gets its own /dev); FIFOs
// and sockets are skipped, each with a note. Owners, modes (set-ID bits
// included: the box's mounts are nosuid), mtimes of non-directories and the
// user.* and security.capability xattrs are kept; other xattrs (trusted.*
// would steer overlayfs) are dropped with a note.
//
// Reading goes through libarchive (any tar flavour; gzip, xz, zstd, bzip2
// detected from the bytes). The SHA-256 of the bytes read from the source is
// computed while reading, to the source's end, so the caller can check the
// digest the manifest promised before it keeps the tree.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace corral::image {

enum class ExtractMode {
    layer,      // an image layer: owners kept, OCI whiteouts turned into overlayfs's form
    container,  // an image archive (OCI archive, docker save): files only, owned by root, no set-ID bits
};

struct ExtractResult {
    std::string sha256_hex;           // of every byte of the source
    std::uint64_t source_bytes = 0;   // bytes read from the source (compressed size)
    std::uint64_t entries = 0;
    std::vector<std::string> notes;   // "skipped FIFO run/x: a layer's FIFO is not needed ..."
};

// Called with the number of source bytes read so far (for a progress display).
using Progress = std::function<void(std::uint64_t)>;

// How far one import may expand: a few KiB of compressed zeros can claim
// GiBs of the store's disk. Both bounds hold across every archive an import
// extracts (an image archive and each of its layers).
struct ExpansionLimits {
    std::uint64_t max_bytes = 32ull << 30;  // bytes written in all, sparse holes counted (0: no bound)
    std::uint64_t max_ratio = 200;          // bytes written per byte read, past the first 64 MiB (0: no bound)
};

// The running count an import keeps against its ExpansionLimits.
class ExpansionBudget {
public:
    explicit ExpansionBudget(ExpansionLimits limits) : limits_(limits) {}
    // `n` more bytes are about to be written while `source_now` bytes of the
    // current archive have been read. Throws ImageError naming `what` and the
    // bound when that would pass either.
    void charge(std::uint64_t n, std::uint64_t source_now, const std::string& what);
    // The current archive is done: `source_bytes` of it were read.
    void archive_done(std::uint64_t source_bytes) { source_done_ += source_bytes; }
    std::uint64_t written() const { return written_; }

private:
    ExpansionLimits limits_;
    std::uint64_t written_ = 0;
    std::uint64_t source_done_ = 0;
};

// Extracts the archive read from `source_fd` (its current offset to its end)
// into the existing empty directory `dest_fd`. `what` names the source in
// messages ("layer sha256:ab12…"). Throws ImageError for a refused or
// malformed archive, SysError for a failed system call; the caller removes
// the partly written destination.
ExtractResult extract_archive(int source_fd, const std::string& what, int dest_fd, ExtractMode mode,
                              const Progress& progress = {}, ExpansionBudget* budget = nullptr);


// How many components an entry's name may have: far past any real image
// (node_modules nests a few dozen deep), far below what would make the
// layer's tree costly to walk or remove.
inline constexpr std::size_t kMaxEntryDepth = 512;

// Checks and normalizes an entry's name: "./usr//bin/" -> "usr/bin"; "" for
// the archive's root. Throws ImageError for an absolute name, one with "..",
// or one more than kMaxEntryDepth components deep.
std::string normalize_entry_name(const std::string& name, const std::string& what);

}  // namespace corral::image
