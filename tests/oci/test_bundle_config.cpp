// oci/bundle_config: config.json read strictly and mapped onto a box: the
// top level, process, root, annotations, hooks.
#include <doctest/doctest.h>

#include "base/sys_error.hpp"
#include "tests/oci/config_fixture.hpp"

using namespace corral::oci;
using namespace corral::oci::testing;
using nlohmann::json;

TEST_CASE("runc's default config maps onto a box, with what differs recorded") {
    const BundleConfig c = read_config(runc_spec_config());
    CHECK(c.oci_version == "1.0.2-dev");
    CHECK(c.process.args == std::vector<std::string>{"sh"});
    CHECK(c.process.cwd == "/");
    CHECK(c.process.terminal);
    REQUIRE(c.process.env.size() == 2);
    CHECK(c.process.env[1] == std::pair<std::string, std::string>{"TERM", "xterm"});
    CHECK(c.process.open_files == 1024u);
    CHECK(c.process.rlimits.empty());
    CHECK(c.root_path == "/srv/bundle/rootfs");
    CHECK(c.root_readonly);
    CHECK(c.hostname == "runc");
    CHECK(c.binds.empty());
    CHECK(c.shm_bytes == 64u << 20);
    CHECK(has_note(c, NoteKind::mapped, "process.user"));
    CHECK(has_note(c, NoteKind::reduced, "process.capabilities"));
    CHECK(has_note(c, NoteKind::replaced, "mounts"));
    CHECK(has_note(c, NoteKind::replaced, "linux.resources.devices"));
    // runc's default asks for no cgroup namespace (the host's): the box has its own.
    CHECK(has_note(c, NoteKind::replaced, "linux.namespaces"));
    // Its masks are all corral's own already: nothing reduced.
    CHECK_FALSE(has_note(c, NoteKind::reduced, "linux.maskedPaths[8]"));
    CHECK(has_note(c, NoteKind::replaced, "linux.maskedPaths"));
}

TEST_CASE("a config asking for root in the box is mapped to the leased UID, and says so") {
    const BundleConfig c = read_config(runc_spec_config());
    CHECK(c.process.asked_uid == 0);
    bool said = false;
    for (const auto& n : c.notes)
        if (n.field == "process.user") said = n.text.find("never as root") != std::string::npos;
    CHECK(said);
}

TEST_CASE("invalid JSON, duplicate keys and an oversize config are refused") {
    CHECK(refusal_of(json()).find("expected an object") != std::string::npos);
    try {
        read_bundle_config("/b", "{\"ociVersion\": ", {});
        FAIL("no error");
    } catch (const corral::UsageError& e) {
        CHECK(std::string(e.what()).find("config.json: not valid JSON") == 0);
    }
    CHECK_THROWS_WITH_AS(read_bundle_config("/b", R"({"ociVersion":"1.0.0","ociVersion":"1.0.0"})", {}),
                         doctest::Contains("not valid JSON"), corral::UsageError);
    CHECK_THROWS_WITH_AS(read_bundle_config("/b", std::string(kMaxConfigBytes + 1, ' '), {}),
                         doctest::Contains("at most"), corral::UsageError);
}

TEST_CASE("a wrong type is refused with its JSON path") {
    json j = runc_spec_config();
    j["process"]["args"] = "sh";
    CHECK(refusal_of(j) == "config.json: process.args: expected an array, got a string");
    j = runc_spec_config();
    j["process"]["args"][0] = 7;
    CHECK(refusal_of(j) == "config.json: process.args[0]: expected a string, got an integer (7)");
    j = runc_spec_config();
    j["process"]["user"]["uid"] = -1;
    CHECK(refusal_of(j).find("process.user.uid: expected an integer from 0") != std::string::npos);
    j = runc_spec_config();
    j["root"]["readonly"] = "yes";
    CHECK(refusal_of(j) == "config.json: root.readonly: expected true or false, got a string");
}

TEST_CASE("required fields: ociVersion, root.path, process.args and cwd") {
    for (const char* key : {"ociVersion", "root", "process"}) {
        json j = runc_spec_config();
        j.erase(key);
        CHECK(refusal_of(j) == "config.json: " + std::string(key) + ": missing; the runtime spec requires it");
    }
    json j = runc_spec_config();
    j["process"]["args"] = json::array();
    CHECK(refusal_of(j).find("process.args: empty") != std::string::npos);
    j = runc_spec_config();
    j["process"]["cwd"] = "work";
    CHECK(refusal_of(j).find("process.cwd: \"work\": expected an absolute path") != std::string::npos);
}

TEST_CASE("ociVersion: 1.0 to 1.2 read, others refused") {
    for (const char* v : {"1.0.0", "1.0.2-dev", "1.1.0-rc.1", "1.2.0", "1.2.1"}) {
        json j = runc_spec_config();
        j["ociVersion"] = v;
        CHECK_MESSAGE(refusal_of(j) == "", v);
    }
    for (const char* v : {"invalid", "2.0.0", "1.3.0", "0.9.0", "1.0", "1.0.0x", ""}) {
        json j = runc_spec_config();
        j["ociVersion"] = v;
        CHECK_MESSAGE(refusal_of(j).find("config.json: ociVersion: ") == 0, v);
    }
}

TEST_CASE("root.path: relative to the bundle or absolute, never with ..") {
    json j = runc_spec_config();
    j["root"]["path"] = "/var/lib/containers/storage/overlay/abc/merged";
    CHECK(read_config(j).root_path == "/var/lib/containers/storage/overlay/abc/merged");
    j["root"]["path"] = "./rootfs/";
    CHECK(read_config(j).root_path == "/srv/bundle/rootfs");
    for (const char* bad : {"../rootfs", "rootfs/../../etc", "/var/../etc", "/.."}) {
        j["root"]["path"] = bad;
        CHECK_MESSAGE(refusal_of(j).find("config.json: root.path: ") == 0, bad);
        CHECK(refusal_of(j).find("\"..\"") != std::string::npos);
    }
    j["root"]["path"] = "/";
    CHECK(refusal_of(j).find("root.path: the host's /") != std::string::npos);
}

TEST_CASE("a writable root is mapped onto corral's scratch layer") {
    json j = runc_spec_config();
    j["root"]["readonly"] = false;
    const BundleConfig c = read_config(j);
    CHECK_FALSE(c.root_readonly);
    CHECK(has_note(c, NoteKind::mapped, "root.readonly"));
}

TEST_CASE("capabilities: the engines' default set is reduced to none, more is refused") {
    json j = runc_spec_config();
    j["process"]["capabilities"]["bounding"].push_back("CAP_SYS_ADMIN");
    CHECK(refusal_of(j).find("config.json: process.capabilities.bounding[3]: CAP_SYS_ADMIN: corral gives the box no "
                             "capability") == 0);
    j = runc_spec_config();
    j["process"]["capabilities"]["ambient"] = {"CAP_NOPE"};
    CHECK(refusal_of(j).find("process.capabilities.ambient[0]: \"CAP_NOPE\": not a capability name") !=
          std::string::npos);
    // Strict: towards less only, the default set refused too.
    CHECK(refusal_of(runc_spec_config(), MappingPolicy{true}).find("process.capabilities: asked for") !=
          std::string::npos);
}

TEST_CASE("rlimits: known types, soft <= hard, once each; NOFILE is corral's --nofile") {
    json j = runc_spec_config();
    j["process"]["rlimits"] = json::parse(R"([{"type":"RLIMIT_NOFILE","soft":512,"hard":4096},
                                             {"type":"RLIMIT_CORE","soft":0,"hard":0}])");
    BundleConfig c = read_config(j);
    CHECK(c.process.open_files == 512u);
    REQUIRE(c.process.rlimits.size() == 1);
    CHECK(c.process.rlimits[0].type == "RLIMIT_CORE");
    CHECK(has_note(c, NoteKind::reduced, "process.rlimits[0]"));
    j["process"]["rlimits"][1]["soft"] = 10;
    CHECK(refusal_of(j).find("process.rlimits[1]: RLIMIT_CORE: soft 10 above hard 0") != std::string::npos);
    j["process"]["rlimits"][1] = json::parse(R"({"type":"RLIMIT_NOFILE","soft":1,"hard":1})");
    CHECK(refusal_of(j).find("process.rlimits[1].type: RLIMIT_NOFILE given twice") != std::string::npos);
    j["process"]["rlimits"][1] = json::parse(R"({"type":"RLIMIT_FOO","soft":1,"hard":1})");
    CHECK(refusal_of(j).find("process.rlimits[1].type: \"RLIMIT_FOO\"") != std::string::npos);
}

TEST_CASE("env entries are NAME=VALUE") {
    json j = runc_spec_config();
    j["process"]["env"].push_back("EMPTY=");
    CHECK(read_config(j).process.env.back() == std::pair<std::string, std::string>{"EMPTY", ""});
    j["process"]["env"].push_back("NOVALUE");
    CHECK(refusal_of(j).find("process.env[3]: \"NOVALUE\": expected NAME=VALUE") != std::string::npos);
}

TEST_CASE("process fields corral answers its own way are recorded; the ones it cannot honour refused") {
    json j = runc_spec_config();
    j["process"]["noNewPrivileges"] = false;
    j["process"]["oomScoreAdj"] = -500;
    j["process"]["apparmorProfile"] = "containers-default-0.50.0";
    j["process"]["user"]["additionalGids"] = {10, 11};
    const BundleConfig c = read_config(j);
    CHECK(has_note(c, NoteKind::mapped, "process.noNewPrivileges"));
    CHECK(has_note(c, NoteKind::mapped, "process.oomScoreAdj"));
    CHECK(has_note(c, NoteKind::replaced, "process.apparmorProfile"));
    CHECK(has_note(c, NoteKind::reduced, "process.user.additionalGids"));
    j = runc_spec_config();
    j["process"]["ioPriority"] = {{"class", "IOPRIO_CLASS_IDLE"}, {"priority", 0}};
    CHECK(refusal_of(j).find("config.json: process.ioPriority: ") == 0);
}

TEST_CASE("hooks are refused, empty hook lists are fine") {
    json j = runc_spec_config();
    j["hooks"] = {{"prestart", json::array()}, {"poststop", json::array()}};
    CHECK(refusal_of(j) == "");
    j["hooks"]["prestart"].push_back({{"path", "/usr/bin/true"}});
    CHECK(refusal_of(j).find("config.json: hooks.prestart: corral runs no hook") == 0);
}

TEST_CASE("unknown properties are ignored with a note; unknown annotations kept") {
    json j = runc_spec_config();
    j["unknown"] = "unknown";
    j["process"]["futureField"] = 1;
    j["annotations"] = {{"org.example.anything", ""}};
    const BundleConfig c = read_config(j);
    CHECK(has_note(c, NoteKind::ignored, "unknown"));
    CHECK(has_note(c, NoteKind::ignored, "process.futureField"));
    CHECK(c.annotations.at("org.example.anything") == "");
    j["windows"] = {{"layerFolders", {"C:\\x"}}};
    CHECK(refusal_of(j).find("config.json: windows: corral runs Linux containers only") == 0);
}

TEST_CASE("annotations io.corral.worker and io.corral.config choose the worker") {
    json j = runc_spec_config();
    j["annotations"] = {{"io.corral.worker", "ci-runner"}, {"io.corral.config", "/etc/corral/"}};
    const BundleConfig c = read_config(j);
    CHECK(c.worker == "ci-runner");
    CHECK(c.config_dir == "/etc/corral");
    j["annotations"]["io.corral.worker"] = "../x";
    CHECK(refusal_of(j).find("config.json: annotations[\"io.corral.worker\"]: ") == 0);
    j["annotations"]["io.corral.worker"] = "ci";
    j["annotations"]["io.corral.config"] = "etc/corral";
    CHECK(refusal_of(j).find("annotations[\"io.corral.config\"]: \"etc/corral\": expected an absolute path") !=
          std::string::npos);
    j["annotations"] = {{"x", 1}};
    CHECK(refusal_of(j).find("annotations[\"x\"]: expected a string") != std::string::npos);
}
