// base/shell_words.hpp — a command line written as a POSIX shell would need
// it typed: each argument that a shell would split, expand or glob is put in
// single quotes (a ' inside becomes '\''), so what `corral ps` shows can be
// pasted back. Terminal escaping is separate (base/terminal_text.hpp): quote
// first, escape the result for the terminal.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace corral {

// `arg` as one shell word: as is when it holds only characters no shell
// treats specially ([A-Za-z0-9_@%+=:,./-], not empty), else single-quoted.
std::string shell_word(std::string_view arg);

// The words joined by single spaces.
std::string shell_words(const std::vector<std::string>& argv);

}  // namespace corral
