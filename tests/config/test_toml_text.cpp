// config/toml_text: UTF-8 is checked before toml11 sees the text, and every
// problem is one line with where it is.
#include <doctest/doctest.h>

#include <string>

#include "config/toml_text.hpp"

using namespace corral::config;

TEST_CASE("first_invalid_utf8 accepts UTF-8 and finds the first bad byte") {
    CHECK(first_invalid_utf8("") == std::string::npos);
    CHECK(first_invalid_utf8("plain = \"ascii\"") == std::string::npos);
    CHECK(first_invalid_utf8("name = \"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x90\x8E\"") == std::string::npos);
    CHECK(first_invalid_utf8("a\xFF") == 1);               // never a UTF-8 byte
    CHECK(first_invalid_utf8("ab\x80") == 2);              // a lone continuation byte
    CHECK(first_invalid_utf8("\xC0\xAF") == 0);            // overlong '/'
    CHECK(first_invalid_utf8("\xE0\x80\xAF") == 0);        // overlong three-byte form
    CHECK(first_invalid_utf8("\xED\xA0\x80") == 0);        // a UTF-16 surrogate
    CHECK(first_invalid_utf8("\xF4\x90\x80\x80") == 0);    // above U+10FFFF
    CHECK(first_invalid_utf8("x\xE2\x82") == 1);           // cut short at the end
    CHECK(first_invalid_utf8("x\xE2\x28\xA1") == 1);       // a bad second byte
}

TEST_CASE("invalid UTF-8 is refused with line and column before toml11 parses it") {
    // A literal key with 0xFF inside: toml11 3.7 reads outside its buffer on
    // this (the fuzz/corpus/worker_toml input of the same shape).
    const std::string text = "description = \"x\"\n[sandbox]\n'med\xFF\xFFvi' = 1\n";
    TomlDocument doc = parse_toml_text(text, "w.toml");
    CHECK_FALSE(doc.root);
    CHECK(doc.line == 3);
    CHECK(doc.problem == "not valid UTF-8 at column 5 (byte 32), allowed: a UTF-8 text file");
}

TEST_CASE("a syntax error is one line with the line toml11 pictured") {
    TomlDocument doc = parse_toml_text("a = 1\nb = = 2\n", "x.toml");
    CHECK_FALSE(doc.root);
    CHECK(doc.line == 2);
    CHECK(doc.problem.rfind("TOML syntax error: ", 0) == 0);
    CHECK(doc.problem.find('\n') == std::string::npos);
}

TEST_CASE("a good document parses") {
    TomlDocument doc = parse_toml_text("[gateway]\nname = \"g\"\n", "x.toml");
    REQUIRE(doc.root);
    CHECK(doc.problem.empty());
    CHECK(toml::find<std::string>(*doc.root, "gateway", "name") == "g");
}

TEST_CASE("a path that is not a regular file is said so") {
    CHECK(parse_toml_file("/nonexistent-corral/x.toml").problem == "does not exist, allowed: a regular TOML file");
    CHECK(parse_toml_file("/").problem == "is a directory, allowed: a regular TOML file");
    CHECK(parse_toml_file("/dev/null").problem == "is not a regular file, allowed: a regular TOML file");
}
