#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <variant>

#include "names/rootfs_source.hpp"

using namespace corral::names;

namespace {

RootfsSource parsed(const std::string& text, const std::string& relative_to = "/cwd") {
    RootfsParse p = parse_rootfs_source(text, relative_to);
    REQUIRE_MESSAGE(std::holds_alternative<RootfsSource>(p), text);
    return std::get<RootfsSource>(p);
}

std::optional<RootfsProblem> problem_of(const std::string& text) {
    RootfsParse p = parse_rootfs_source(text, "/cwd");
    const auto* problem = std::get_if<RootfsProblem>(&p);
    CHECK_MESSAGE(problem != nullptr, text);
    if (problem == nullptr) return std::nullopt;
    return *problem;
}

}  // namespace

TEST_CASE("host, image:NAME and DIR each parse to their alternative and print back as given") {
    CHECK(std::holds_alternative<HostRootfs>(parsed("host")));
    CHECK(to_string(parsed("host")) == "host");
    CHECK(parsed("image:base-12") == RootfsSource(ImageRootfs{"base-12"}));
    CHECK(to_string(parsed("image:tools.v2")) == "image:tools.v2");
    CHECK(parsed("/srv/img") == RootfsSource(DirRootfs{"/srv/img", "/srv/img"}));
    CHECK(to_string(parsed("/srv/img")) == "/srv/img");
    CHECK(to_string(RootfsSource{}) == "host");  // the default
}

TEST_CASE("a relative DIR is made absolute against the given directory and normalised; its text is kept") {
    RootfsSource d = parsed("images/../img/./debian", "/org");
    REQUIRE(std::holds_alternative<DirRootfs>(d));
    CHECK(std::get<DirRootfs>(d).path == "/org/img/debian");
    CHECK(std::get<DirRootfs>(d).given == "images/../img/./debian");
    CHECK(to_string(d) == "/org/img/debian");
    CHECK(text_as_given(d) == "images/../img/./debian");
    CHECK(text_as_given(parsed("image:x")) == "image:x");
    CHECK(text_as_given(parsed("host")) == "host");
    // An absolute DIR is normalised too, the other directory ignored.
    CHECK(to_string(parsed("/a/./b/../c", "/org")) == "/a/c");
    // Words that only look like the others are directories: case matters, and
    // "image" without the colon names a directory.
    CHECK(to_string(parsed("HOST")) == "/cwd/HOST");
    CHECK(to_string(parsed("image")) == "/cwd/image");
    CHECK(to_string(parsed("./host")) == "/cwd/host");
}

TEST_CASE("bad text: empty, image: without a NAME, a NAME outside [A-Za-z0-9][A-Za-z0-9._-]{0,127}") {
    CHECK(problem_of("") == RootfsProblem::empty);
    CHECK(problem_of("image:") == RootfsProblem::bad_image_name);
    for (const char* bad : {"image:../x", "image:.hidden", "image:-x", "image:_x", "image:a/b", "image:a b",
                            "image:a:b", "image:ä"})
        CHECK_MESSAGE(problem_of(bad) == RootfsProblem::bad_image_name, bad);
    CHECK(to_string(parsed("image:" + std::string(128, 'a'))) == "image:" + std::string(128, 'a'));
    CHECK(problem_of("image:" + std::string(129, 'a')) == RootfsProblem::bad_image_name);
}

TEST_CASE("is_image_name: the store's names") {
    for (const char* ok : {"a", "Z9", "base-12", "tools.v2", "a_b", "0"}) CHECK_MESSAGE(is_image_name(ok), ok);
    for (const char* bad : {"", ".", "..", ".a", "-a", "_a", "a/b", "a b", "a:b"}) CHECK_MESSAGE(!is_image_name(bad), bad);
}
