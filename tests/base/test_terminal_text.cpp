// terminal_text / terminal_json: what a box's string can still do on the
// operator's terminal once corral shows it (nothing but print).
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "base/terminal_text.hpp"

using namespace corral;

TEST_CASE("terminal_text keeps printable text of any script as it is") {
    CHECK(terminal_text("example.com:443") == "example.com:443");
    CHECK(terminal_text("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\x8d") == "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\x8d");
    CHECK(terminal_text("") == "");
}

TEST_CASE("terminal_text escapes C0 controls, DEL and the backslash") {
    CHECK(terminal_text("a\x1b[2Jb") == "a\\x1b[2Jb");
    CHECK(terminal_text(std::string("nul\0x", 5)) == "nul\\x00x");
    CHECK(terminal_text("line\nforged\r\tx") == "line\\nforged\\r\\tx");
    CHECK(terminal_text("del\x7f") == "del\\x7f");
    CHECK(terminal_text("a\\x1b") == "a\\\\x1b");  // a literal "\x1b" cannot pass for an escape
}

TEST_CASE("terminal_text escapes C1 controls as raw bytes and as UTF-8 code points") {
    CHECK(terminal_text("\x9b" "31mred") == "\\x9b31mred");               // raw CSI (not UTF-8)
    CHECK(terminal_text("\x9d" "0;t\x9c") == "\\x9d0;t\\x9c");            // raw OSC ... ST
    CHECK(terminal_text("\xc2\x9b" "2J") == "\\u009b2J");                 // U+009B CSI
    CHECK(terminal_text("\xc2\x9d" "52;c;eA==\xc2\x9c") == "\\u009d52;c;eA==\\u009c");  // OSC 52 (clipboard)
    CHECK(terminal_text("\xc2\x80\xc2\x9f") == "\\u0080\\u009f");
    CHECK(terminal_text("\xc2\xa0") == "\xc2\xa0");                       // U+00A0 is printable
}

TEST_CASE("terminal_text escapes every byte that is not valid UTF-8") {
    CHECK(terminal_text("\xff\xfe") == "\\xff\\xfe");
    CHECK(terminal_text("\xc0\xaf") == "\\xc0\\xaf");                     // overlong '/'
    CHECK(terminal_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");            // a surrogate
    CHECK(terminal_text("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");   // past U+10FFFF
    CHECK(terminal_text("ok\xe2\x82") == "ok\\xe2\\x82");                 // cut short
    CHECK(terminal_text("\xc2" "A") == "\\xc2A");                          // a lead byte without its tail
}

TEST_CASE("terminal_text escapes bidi controls and invisible format characters") {
    CHECK(terminal_text("evil\xe2\x80\xae" "gpj.exe") == "evil\\u202egpj.exe");  // RLO
    CHECK(terminal_text("\xe2\x81\xa6x\xe2\x81\xa9") == "\\u2066x\\u2069");     // LRI .. PDI
    CHECK(terminal_text("a\xe2\x80\x8b" "b") == "a\\u200bb");                   // zero width space
    CHECK(terminal_text("\xef\xbb\xbf") == "\\ufeff");
    CHECK(terminal_text("\xe2\x80\xa8") == "\\u2028");                          // line separator
    CHECK(terminal_text("\xd8\x9c") == "\\u061c");
}

TEST_CASE("terminal_json keeps the JSON value and leaves nothing a terminal acts on") {
    const std::string hostile = "x\xc2\x9b" "2J\x7f\xe2\x80\xae\x1b]0;t\x07y";
    nlohmann::json j{{"host", hostile}, {"name", "caf\xc3\xa9"}};
    const std::string shown = terminal_json(j.dump(2));
    CHECK(shown.find("\xc2\x9b") == std::string::npos);
    CHECK(shown.find('\x7f') == std::string::npos);
    CHECK(shown.find('\x1b') == std::string::npos);
    CHECK(shown.find("\\u009b") != std::string::npos);
    CHECK(shown.find("caf\xc3\xa9") != std::string::npos);
    CHECK(nlohmann::json::parse(shown) == j);  // the same value, still valid JSON
    CHECK(terminal_json("\"a\xff\"") == "\"a\\ufffd\"");
}
