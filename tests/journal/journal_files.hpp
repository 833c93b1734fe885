// tests/journal/journal_files.hpp — what the journal tests need of the file
// system: the tests' scratch directory, and a file read whole.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace corral::journal::test {

// The scratch directory of every corral test (removed with its contents).
using corral::test::TempDir;

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace corral::journal::test
