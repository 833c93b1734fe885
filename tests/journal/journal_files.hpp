// tests/journal/journal_files.hpp — what the journal tests need of the file
// system: a private temporary directory, and a file read whole.
#pragma once

#include <doctest/doctest.h>

#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace corral::journal::test {

struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/corral-journal-test-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        path = tmpl;
    }
    ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
};

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace corral::journal::test
