// tests/supervisor/test_seccomp_cache.cpp — the compiled seccomp program kept
// between runs (supervisor/seccomp_cache.hpp): what is read back is exactly
// what was compiled, or nothing; the key follows what the program depends on.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "supervisor/seccomp_cache.hpp"
#include "supervisor/seccomp_policy.hpp"

using namespace corral::supervisor;
namespace fs = std::filesystem;

namespace {

bool same_program(const SeccompProgram& a, const SeccompProgram& b) {
    return a.instructions.size() == b.instructions.size() &&
           std::memcmp(a.instructions.data(), b.instructions.data(), a.instructions.size() * sizeof(sock_filter)) == 0;
}

std::string temp_dir() {
    char tmpl[] = "/tmp/corral-seccomp-cache-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    return tmpl;
}

}  // namespace

TEST_CASE("a kept program decodes to the program encoded, and any change to its bytes to nothing") {
    const SeccompProgram program = compile_seccomp(sandbox_seccomp_rules());
    const std::string bytes = encode_seccomp_program(program);
    CHECK(same_program(decode_seccomp_program(bytes), program));

    std::string flipped = bytes;
    flipped[flipped.size() - 3] ^= 0x01;  // one bit of the last instruction
    CHECK(decode_seccomp_program(flipped).instructions.empty());
    CHECK(decode_seccomp_program(bytes.substr(0, bytes.size() - 1)).instructions.empty());  // truncated
    CHECK(decode_seccomp_program(bytes + std::string(8, '\0')).instructions.empty());       // one more instruction
    CHECK(decode_seccomp_program("corral-seccomp-program 2\n" + bytes.substr(25)).instructions.empty());
    CHECK(decode_seccomp_program("").instructions.empty());
}

TEST_CASE("the key changes with what the program depends on, not with a rule's reason") {
    std::vector<SeccompRule> rules = sandbox_seccomp_rules();
    const std::string key = seccomp_cache_key(rules);
    CHECK(key.size() == 64);
    CHECK(seccomp_cache_key(rules) == key);

    auto reworded = rules;
    reworded.front().reason = "another explanation";
    CHECK(seccomp_cache_key(reworded) == key);

    auto more = rules;
    for (auto& r : inherited_terminal_rules()) more.push_back(r);
    CHECK(seccomp_cache_key(more) != key);

    auto other_value = rules;
    for (auto& r : other_value)
        if (!r.conditions.empty()) {
            r.conditions.front().value += 1;
            break;
        }
    CHECK(seccomp_cache_key(other_value) != key);

    auto other_action = rules;
    other_action.front().action = other_action.front().action == SeccompAction::deny_eperm ? SeccompAction::deny_enosys
                                                                                           : SeccompAction::deny_eperm;
    CHECK(seccomp_cache_key(other_action) != key);
}

TEST_CASE("the cache gives the compiled program, keeps it only in a private root directory, and ignores a damaged one") {
    const auto rules = sandbox_seccomp_rules();
    const SeccompProgram compiled = compile_seccomp(rules);
    const std::string dir = temp_dir();
    const std::string cache = dir + "/cache";
    const fs::path kept = fs::path(cache) / (seccomp_cache_key(rules) + ".bpf");

    CHECK(same_program(cached_seccomp_program(rules, cache), compiled));
    if (::geteuid() != 0) {
        // Not root: the directory it made is not root's, so nothing is kept in it.
        CHECK_FALSE(fs::exists(kept));
    } else {
        REQUIRE(fs::exists(kept));
        CHECK((fs::status(cache).permissions() & fs::perms::all) == fs::perms::owner_all);
        CHECK(same_program(cached_seccomp_program(rules, cache), compiled));  // read back

        // A damaged file is not used: the compiled program again, and the file rewritten.
        {
            std::fstream f(kept, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(-2, std::ios::end);
            f.put('\x7f');
        }
        CHECK(same_program(cached_seccomp_program(rules, cache), compiled));
        CHECK(decode_seccomp_program(std::string(std::istreambuf_iterator<char>(std::ifstream(kept, std::ios::binary).rdbuf()), {}))
                  .instructions.size() == compiled.instructions.size());

        // A directory others may read is not trusted: a planted program is not read.
        const std::string open_dir = dir + "/open";
        fs::create_directory(open_dir);
        ::chmod(open_dir.c_str(), 0755);
        std::ofstream(fs::path(open_dir) / kept.filename(), std::ios::binary)
            << encode_seccomp_program(SeccompProgram{{compiled.instructions.front()}});
        CHECK(same_program(cached_seccomp_program(rules, open_dir), compiled));
    }
    fs::remove_all(dir);
}
