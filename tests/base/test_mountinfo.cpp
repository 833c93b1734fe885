#include <doctest/doctest.h>

#include "base/mountinfo.hpp"

using corral::unescape_mountinfo_field;

TEST_CASE("mountinfo fields: octal escapes for space, tab, newline and backslash are undone") {
    CHECK(unescape_mountinfo_field("/plain/path") == "/plain/path");
    CHECK(unescape_mountinfo_field("/a\\040b") == "/a b");
    CHECK(unescape_mountinfo_field("/t\\011x\\012y") == "/t\tx\ny");
    CHECK(unescape_mountinfo_field("/back\\134slash") == "/back\\slash");
}

TEST_CASE("mountinfo fields: a backslash without three octal digits is kept as written") {
    CHECK(unescape_mountinfo_field("/a\\08b") == "/a\\08b");
    CHECK(unescape_mountinfo_field("/end\\04") == "/end\\04");
    CHECK(unescape_mountinfo_field("\\") == "\\");
    CHECK(unescape_mountinfo_field("") == "");
}
