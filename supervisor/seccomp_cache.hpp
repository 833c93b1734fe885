// supervisor/seccomp_cache.hpp — a run's compiled seccomp program, kept
// between runs by its policy's digest.
//
// Compiling the policy with libseccomp (resolving every rule's syscall name,
// building and exporting the tree) costs each run ~0.5 ms of its start, for a
// program that is the same on every run with the same policy and the same
// corral, libseccomp and kernel. The compiled program is kept in a root-only
// directory on /run (a tmpfs: gone at reboot), named by the digest of all
// that it depends on, and read back instead of compiled. What is read is
// checked (owner, mode, its own SHA-256, its length) and anything that fails
// a check is compiled afresh: the cache can make a run faster, never give it
// another filter.
#pragma once

#include <string>
#include <vector>

#include "supervisor/seccomp_policy.hpp"

namespace corral::supervisor {

inline constexpr const char* kDefaultSeccompCacheDir = "/run/corral/seccomp";

// The key a compiled program is kept under: SHA-256 (hex) of the rules'
// syscall names, actions, conditions and fallback numbers (not their
// reasons), the running corral executable's identity (device, inode, size,
// change time: any rebuild is a new key), libseccomp's version and the
// kernel's release. Pure apart from one stat and one uname.
std::string seccomp_cache_key(const std::vector<SeccompRule>& rules);

// The file's bytes for a compiled program, and the program back from them
// (nullopt-like: empty instructions when the bytes fail any check). Pure.
std::string encode_seccomp_program(const SeccompProgram& program);
SeccompProgram decode_seccomp_program(const std::string& bytes);

// compile_seccomp(rules), through the cache in `cache_dir`: the kept program
// when one is there and passes every check, else compiled and kept (written
// atomically; the directory made 0700 if missing). A cache directory that is
// not root's and private is neither read nor written. Never throws for the
// cache's sake: only what compile_seccomp throws.
SeccompProgram cached_seccomp_program(const std::vector<SeccompRule>& rules,
                                      const std::string& cache_dir = kDefaultSeccompCacheDir);

}  // namespace corral::supervisor
