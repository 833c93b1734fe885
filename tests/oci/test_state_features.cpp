// oci/state and oci/features: the spec's state and features documents, the
// container id rule.
#include <doctest/doctest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "oci/features.hpp"
#include "oci/state.hpp"

using namespace corral::oci;
using nlohmann::json;

TEST_CASE("state JSON: the spec's fields in its order, pid only while the process exists") {
    ContainerState s;
    s.id = "c1";
    s.status = ContainerStatus::created;
    s.pid = 4242;
    s.bundle = "/srv/bundle";
    s.annotations["io.corral.worker"] = "ci";
    const std::string text = state_json(s);
    const json j = json::parse(text);
    CHECK(j["ociVersion"] == "1.2.0");
    CHECK(j["status"] == "created");
    CHECK(j["pid"] == 4242);
    CHECK(j["annotations"]["io.corral.worker"] == "ci");
    CHECK(text.find("\"ociVersion\"") < text.find("\"id\""));
    CHECK(text.find("\"status\"") < text.find("\"pid\""));
    s.status = ContainerStatus::stopped;
    CHECK_FALSE(json::parse(state_json(s)).contains("pid"));
}

TEST_CASE("state JSON reads back, and a bad record names its field") {
    ContainerState s;
    s.id = "abc.1_x-y";
    s.status = ContainerStatus::running;
    s.pid = 7;
    s.bundle = "/b";
    auto back = parse_state_json(state_json(s));
    REQUIRE(back);
    CHECK(back->id == s.id);
    CHECK(back->status == ContainerStatus::running);
    CHECK(back->pid == 7);
    CHECK(parse_state_json(R"({"ociVersion":"1.2.0","id":"a","status":"running","bundle":"/b"})").problem() ==
          "pid: missing; required while running");
    CHECK(parse_state_json(R"({"ociVersion":"1.2.0","id":"a","status":"paused","bundle":"/b"})")
              .problem()
              .find("status: \"paused\"") == 0);
    CHECK(parse_state_json(R"({"ociVersion":"1.2.0","id":"a/b","status":"stopped","bundle":"/b"})")
              .problem()
              .find("id: container id \"a/b\"") == 0);
    CHECK(parse_state_json(R"({"id":"a","status":"stopped","bundle":"/b"})").problem() == "ociVersion: missing");
    CHECK(parse_state_json("[").problem().find("not valid JSON") == 0);
}

TEST_CASE("container ids: runc's characters, bounded, never . or ..") {
    for (const char* ok : {"a", "c1", "4f1e2d3c", "my_box.v2-1", "A"}) CHECK_MESSAGE(!check_container_id(ok), ok);
    for (const char* bad : {"", ".", "..", "a/b", "a b", "a\nb", "ä", "a:b", "a+b"})
        CHECK_MESSAGE(check_container_id(bad), bad);
    CHECK_FALSE(check_container_id(std::string(kMaxContainerIdLength, 'x')));
    CHECK(check_container_id(std::string(kMaxContainerIdLength + 1, 'x')));
}

TEST_CASE("features: what the config reader accepts, and nothing it refuses") {
    const json f = json::parse(features_json("0.1.0"));
    CHECK(f["ociVersionMin"] == "1.0.0");
    CHECK(f["ociVersionMax"] == "1.2.0");
    CHECK(f["hooks"].empty());
    const auto& options = f["mountOptions"];
    for (const char* o : {"bind", "rbind", "ro", "nosuid", "size", "mode", "rprivate"})
        CHECK_MESSAGE(std::find(options.begin(), options.end(), o) != options.end(), o);
    CHECK(std::find(options.begin(), options.end(), "idmap") == options.end());
    const auto& ns = f["linux"]["namespaces"];
    CHECK(std::find(ns.begin(), ns.end(), "user") == ns.end());
    CHECK(std::find(ns.begin(), ns.end(), "network") != ns.end());
    const auto& caps = f["linux"]["capabilities"];
    CHECK(std::find(caps.begin(), caps.end(), "CAP_SYS_ADMIN") == caps.end());
    CHECK(std::find(caps.begin(), caps.end(), "CAP_CHOWN") != caps.end());
    CHECK(f["linux"]["apparmor"]["enabled"] == false);
    CHECK(f["potentiallyUnsafeConfigAnnotations"].size() == 2);
    CHECK(f["annotations"]["io.corral.version"] == "0.1.0");
}
