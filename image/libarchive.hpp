// image/libarchive.hpp — libarchive, loaded on first use.
//
// Only `corral image import` reads archives, yet a corral linked against
// libarchive loads it and the twelve libraries it brings (ICU, libxml2,
// nettle, the compressors, a second libstdc++) into every process: 1.5 ms
// of each `corral run` and `corral exec` start, measured (docs/benchmarks.md).
// So the import opens libarchive.so.13 with dlopen when it first needs it,
// as systemd does for its optional libraries. The functions keep the types
// <archive.h> declares (decltype), so a call is checked as a direct one.
//
//   const Libarchive& la = libarchive();   // throws if it cannot be loaded
//   la.archive_read_new();
#pragma once

#include <memory>

#include <archive.h>
#include <archive_entry.h>

namespace corral::image {

struct Libarchive {
#define CORRAL_LIBARCHIVE_FUNCTIONS(X)                                                                         \
    X(archive_error_string) X(archive_set_error) X(archive_read_new) X(archive_read_free)                    \
    X(archive_read_support_format_tar) X(archive_read_support_format_gnutar)                                  \
    X(archive_read_support_filter_all) X(archive_read_open) X(archive_read_open_filename)                     \
    X(archive_read_next_header) X(archive_read_data_block) X(archive_entry_pathname) X(archive_entry_symlink)  \
    X(archive_entry_hardlink) X(archive_entry_filetype) X(archive_entry_perm) X(archive_entry_uid)            \
    X(archive_entry_gid) X(archive_entry_size) X(archive_entry_size_is_set) X(archive_entry_mtime)            \
    X(archive_entry_mtime_nsec) X(archive_entry_mtime_is_set) X(archive_entry_rdevmajor)                      \
    X(archive_entry_rdevminor) X(archive_entry_xattr_reset) X(archive_entry_xattr_next)
#define CORRAL_LIBARCHIVE_MEMBER(name) decltype(&::name) name = nullptr;
    CORRAL_LIBARCHIVE_FUNCTIONS(CORRAL_LIBARCHIVE_MEMBER)
#undef CORRAL_LIBARCHIVE_MEMBER
};

// The loaded library, once per process (thread-safe). Throws UsageError
// naming the library, the package and dlerror's reason when it cannot be
// loaded or lacks one of the functions; nothing is imported then.
const Libarchive& libarchive();

// An archive being read, freed with archive_read_free.
struct ArchiveCloser {
    void operator()(struct archive* a) const { libarchive().archive_read_free(a); }
};
using ArchiveReader = std::unique_ptr<struct archive, ArchiveCloser>;

}  // namespace corral::image
