// Unit tests of base/shell_words: a command line shown as a shell would need it.
#include <doctest/doctest.h>

#include "base/shell_words.hpp"

using corral::shell_word;
using corral::shell_words;

TEST_CASE("plain words stay as they are; anything a shell would touch is single-quoted") {
    CHECK(shell_word("/bin/true") == "/bin/true");
    CHECK(shell_word("--log-limit=1M") == "--log-limit=1M");
    CHECK(shell_word("") == "''");
    CHECK(shell_word("two words") == "'two words'");
    CHECK(shell_word("$HOME") == "'$HOME'");
    CHECK(shell_word("*.c") == "'*.c'");
    CHECK(shell_word("it's") == "'it'\\''s'");
    CHECK(shell_word("a\nb") == "'a\nb'");
    CHECK(shell_words({"sh", "-c", "echo hi; exit 3"}) == "sh -c 'echo hi; exit 3'");
    CHECK(shell_words({}) == "");
}
