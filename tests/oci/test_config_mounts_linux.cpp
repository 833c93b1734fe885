// oci/config_mounts, config_linux, config_resources: mounts, namespaces,
// devices, seccomp and resources mapped, replaced or refused.
#include <doctest/doctest.h>

#include "tests/oci/config_fixture.hpp"

using namespace corral::oci;
using namespace corral::oci::testing;
using nlohmann::json;

namespace {

json with_mount(json mount) {
    json j = runc_spec_config();
    j["mounts"].push_back(std::move(mount));
    return j;
}

}  // namespace

TEST_CASE("binds: source against the bundle, target checked as corral's --bind, options read") {
    json j = with_mount(json::parse(R"({"destination":"/data/","type":"bind","source":"data","options":["rbind","ro","nosuid","rprivate"]})"));
    j["mounts"].push_back(json::parse(R"({"destination":"/run/.containerenv","type":"none","source":"/var/lib/x/.containerenv","options":["bind","noexec"]})"));
    const BundleConfig c = read_config(j);
    REQUIRE(c.binds.size() == 2);
    CHECK(c.binds[0].source == "/srv/bundle/data");
    CHECK(c.binds[0].target == "/data");
    CHECK(c.binds[0].read_only);
    CHECK(c.binds[0].field == "mounts[7]");
    CHECK(c.binds[1].source == "/var/lib/x/.containerenv");
    CHECK(c.binds[1].noexec);
    CHECK_FALSE(c.binds[1].read_only);
}

TEST_CASE("the engine's /etc/hosts, hostname and resolv.conf are replaced by corral's own") {
    for (const char* f : {"/etc/hosts", "/etc/hostname", "/etc/resolv.conf"}) {
        const BundleConfig c =
            read_config(with_mount({{"destination", f}, {"type", "bind"}, {"source", "/var/run/x"}, {"options", {"rbind"}}}));
        CHECK(c.binds.empty());
        CHECK(has_note(c, NoteKind::replaced, "mounts[7]"));
    }
}

TEST_CASE("mounts corral refuses, each with its index named") {
    // Over /proc, in /proc, over /sys and /dev, a bind into /etc, a filesystem type.
    CHECK(refusal_of(with_mount(json::parse(R"({"destination":"/proc","type":"bind","source":"/tmp"})")))
              .find("config.json: mounts[7].destination: /proc is mounted twice") == 0);
    json j = runc_spec_config();
    j["mounts"][0] = json::parse(R"({"destination":"/proc","type":"bind","source":"/tmp","options":["bind"]})");
    CHECK(refusal_of(j).find("config.json: mounts[0]: type \"bind\" at /proc: corral mounts its own /proc") == 0);
    CHECK(refusal_of(with_mount(json::parse(R"({"destination":"/proc/sys","type":"tmpfs","source":"tmpfs"})")))
              .find("config.json: mounts[7]: a mount at /proc/sys: /proc is corral's own") == 0);
    CHECK(refusal_of(with_mount(json::parse(R"({"destination":"/dev/fuse","type":"bind","source":"/dev/fuse"})")))
              .find("mounts[7]: a mount at /dev/fuse: /dev is corral's own") != std::string::npos);
    CHECK(refusal_of(with_mount(json::parse(R"({"destination":"/etc/passwd","type":"bind","source":"/etc/passwd"})")))
              .find("config.json: mounts[7].destination: target \"/etc/passwd\": is at or below /etc") == 0);
    CHECK(refusal_of(with_mount(json::parse(R"({"destination":"/mnt","type":"ext4","source":"/dev/sda1"})")))
              .find("config.json: mounts[7].type: \"ext4\" at /mnt: corral mounts a config's binds and tmpfs only") == 0);
    CHECK(refusal_of(with_mount(json::parse(R"({"destination":"/mnt","type":"bind","source":"/srv","options":["bind","idmap"]})")))
              .find("config.json: mounts[7].options[1]: \"idmap\": not an option corral honours on a bind") == 0);
    CHECK(refusal_of(with_mount(json::parse(R"({"destination":"/mnt","type":"bind","source":"/srv","uidMappings":[{"containerID":0,"hostID":1000,"size":1}]})")))
              .find("config.json: mounts[7].uidMappings: ") == 0);
    CHECK(refusal_of(with_mount(json::parse(R"({"destination":"/mnt","type":"bind","source":"../escape"})")))
              .find("mounts[7].source: \"../escape\": a \"..\" component is not allowed") != std::string::npos);
    CHECK(refusal_of(with_mount(json::parse(R"({"destination":"/mnt","type":"bind"})")))
              .find("mounts[7].source: missing") != std::string::npos);
}

TEST_CASE("suid, dev and shared propagation are reduced, or refused under the strict policy") {
    json j = with_mount(json::parse(R"({"destination":"/mnt","type":"bind","source":"/srv","options":["rbind","suid","rshared"]})"));
    j["process"].erase("capabilities");  // the default set is a reduction too
    CHECK(has_note(read_config(j), NoteKind::reduced, "mounts[7].options"));
    MappingPolicy strict{true};
    CHECK(refusal_of(j, strict).find("config.json: mounts[7].options: options rshared suid not honoured") == 0);
}

TEST_CASE("tmpfs: capped, its size and mode read; /tmp is corral's own") {
    json j = with_mount(json::parse(R"({"destination":"/run","type":"tmpfs","source":"tmpfs","options":["nosuid","nodev","noexec","size=1m","mode=755","uid=0"]})"));
    j["mounts"].push_back(json::parse(R"({"destination":"/var/cache","type":"tmpfs","source":"tmpfs"})"));
    j["mounts"].push_back(json::parse(R"({"destination":"/tmp","type":"tmpfs","source":"tmpfs","options":["size=2g"]})"));
    const BundleConfig c = read_config(j);
    REQUIRE(c.tmpfs.size() == 2);
    CHECK(c.tmpfs[0].target == "/run");
    CHECK(c.tmpfs[0].size_bytes == 1u << 20);
    CHECK(c.tmpfs[0].mode == 0755u);
    CHECK(c.tmpfs[0].noexec);
    CHECK(has_note(c, NoteKind::mapped, "mounts[7].options[5]"));
    CHECK_FALSE(c.tmpfs[1].size_bytes);
    CHECK(has_note(c, NoteKind::mapped, "mounts[8]"));
    CHECK(c.tmp_bytes == 2ull << 30);
    CHECK(refusal_of(with_mount(json::parse(R"({"destination":"/run","type":"tmpfs","options":["size=lots"]})")))
              .find("config.json: mounts[7].options[0]: ") == 0);
    CHECK(refusal_of(with_mount(json::parse(R"({"destination":"/run","type":"tmpfs","options":["huge=always"]})")))
              .find("mounts[7].options[0]: \"huge=always\": not an option corral honours on a tmpfs") !=
          std::string::npos);
}

TEST_CASE("namespaces: corral's own set; an engine's network namespace replaced, a user namespace refused") {
    json j = runc_spec_config();
    j["linux"]["namespaces"][1]["path"] = "/var/run/netns/cni-1234";
    BundleConfig c = read_config(j);
    CHECK(has_note(c, NoteKind::replaced, "linux.namespaces[1]"));
    j["linux"]["namespaces"].push_back({{"type", "user"}});
    CHECK(refusal_of(j).find("config.json: linux.namespaces[5]: a user namespace: corral does not create one") == 0);
    j = runc_spec_config();
    j["linux"]["uidMappings"] = json::parse(R"([{"containerID":0,"hostID":100000,"size":65536}])");
    CHECK(refusal_of(j).find("config.json: linux.uidMappings: user namespace mappings") == 0);
    j = runc_spec_config();
    j["linux"]["namespaces"][0]["path"] = "/proc/1/ns/pid";
    CHECK(refusal_of(j).find("config.json: linux.namespaces[0].path: joining another pid namespace") == 0);
    j = runc_spec_config();
    j["linux"]["namespaces"].push_back({{"type", "pid"}});
    CHECK(refusal_of(j).find("linux.namespaces[5].type: pid given twice") != std::string::npos);
    j = runc_spec_config();
    j["linux"]["namespaces"].push_back({{"type", "net"}});
    CHECK(refusal_of(j).find("linux.namespaces[5].type: \"net\": not a namespace type") != std::string::npos);
}

TEST_CASE("devices: the box's own six as they are, any other refused") {
    json j = runc_spec_config();
    j["linux"]["devices"] = json::parse(R"([{"path":"/dev/null","type":"c","major":1,"minor":3,"fileMode":438}])");
    CHECK(has_note(read_config(j), NoteKind::replaced, "linux.devices[0]"));
    j["linux"]["devices"].push_back(json::parse(R"({"path":"/dev/fuse","type":"c","major":10,"minor":229})"));
    CHECK(refusal_of(j).find("config.json: linux.devices[1]: device \"/dev/fuse\": the box has /dev/null") == 0);
    j["linux"]["devices"][1] = json::parse(R"({"path":"/dev/null","type":"c","major":8,"minor":0})");
    CHECK(refusal_of(j).find("linux.devices[1]: device \"/dev/null\"") != std::string::npos);
}

TEST_CASE("seccomp: kept for stacking under corral's own; notification refused") {
    json j = runc_spec_config();
    j["linux"]["seccomp"] = json::parse(R"({"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86_64"],
                                           "syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]})");
    const BundleConfig c = read_config(j);
    REQUIRE(c.seccomp_profile);
    CHECK((*c.seccomp_profile)["defaultAction"] == "SCMP_ACT_ERRNO");
    CHECK(has_note(c, NoteKind::mapped, "linux.seccomp"));
    j["linux"]["seccomp"]["syscalls"][0]["action"] = "SCMP_ACT_NOTIFY";
    CHECK(refusal_of(j).find("config.json: linux.seccomp.syscalls[0].action: SCMP_ACT_NOTIFY") == 0);
    j = runc_spec_config();
    j["linux"]["seccomp"] = {{"defaultAction", "SCMP_ACT_ALLOW"}, {"listenerPath", "/run/agent.sock"}};
    CHECK(refusal_of(j).find("linux.seccomp.listenerPath: ") != std::string::npos);
}

TEST_CASE("linux fields corral cannot honour are refused by name") {
    for (const char* field : {"timeOffsets", "intelRdt", "personality", "netDevices"}) {
        json j = runc_spec_config();
        j["linux"][field] = {{"x", "1"}};
        CHECK_MESSAGE(refusal_of(j).find("config.json: linux." + std::string(field) + ": ") == 0, field);
    }
    json j = runc_spec_config();
    j["linux"]["sysctl"] = json::object();
    CHECK(refusal_of(j) == "");
    // podman's and containerd's default: not set, each named; strict refuses it.
    j["linux"]["sysctl"] = {{"net.ipv4.ping_group_range", "0 0"}};
    CHECK(has_note(read_config(j), NoteKind::reduced, "linux.sysctl.net.ipv4.ping_group_range"));
    json strict = j;
    strict["process"].erase("capabilities");  // runc's default set is itself a reduction
    CHECK(refusal_of(strict, MappingPolicy{true}).find("linux.sysctl.net.ipv4.ping_group_range") != std::string::npos);
    j["linux"]["sysctl"] = {{"kernel.shmmax", 1}};
    CHECK(refusal_of(j).find("config.json: linux.sysctl.kernel.shmmax: expected a string") == 0);
    j["linux"]["sysctl"] = json::object();
    j["linux"]["rootfsPropagation"] = "rshared";
    CHECK(has_note(read_config(j), NoteKind::reduced, "linux.rootfsPropagation"));
    j["linux"]["rootfsPropagation"] = "sideways";
    CHECK(refusal_of(j).find("linux.rootfsPropagation: \"sideways\"") != std::string::npos);
    j = runc_spec_config();
    j["process"].erase("capabilities");
    j["linux"]["maskedPaths"].push_back("/proc/interrupts");
    CHECK(has_note(read_config(j), NoteKind::reduced, "linux.maskedPaths[10]"));
    CHECK(refusal_of(j, MappingPolicy{true}).find("linux.maskedPaths[10]: /proc/interrupts") != std::string::npos);
}

TEST_CASE("linux.resources: memory, pids and CPU quota become corral's limits") {
    json j = runc_spec_config();
    j["linux"]["resources"]["memory"] = {{"limit", 268435456}, {"swap", 536870912}, {"reservation", 1000}};
    j["linux"]["resources"]["pids"] = {{"limit", 100}};
    j["linux"]["resources"]["cpu"] = {{"quota", 50000}, {"period", 100000}, {"shares", 512}};
    const BundleConfig c = read_config(j);
    CHECK(c.limits.memory_bytes == 268435456u);
    CHECK(c.limits.pids == 100u);
    REQUIRE(c.limits.cpus);
    CHECK(*c.limits.cpus == doctest::Approx(0.5));
    CHECK(has_note(c, NoteKind::reduced, "linux.resources.memory.swap"));
    CHECK(has_note(c, NoteKind::ignored, "linux.resources.memory.reservation"));
    CHECK(has_note(c, NoteKind::ignored, "linux.resources.cpu.shares"));
    j["linux"]["resources"]["pids"]["limit"] = -1;
    j["linux"]["resources"]["memory"] = {{"limit", -1}};
    const BundleConfig unlimited = read_config(j);
    CHECK_FALSE(unlimited.limits.pids);
    CHECK_FALSE(unlimited.limits.memory_bytes);
}

TEST_CASE("linux.resources corral cannot enforce are refused by name") {
    json j = runc_spec_config();
    j["linux"]["resources"]["cpu"] = {{"cpus", "0-1"}};
    CHECK(refusal_of(j).find("config.json: linux.resources.cpu.cpus: corral does not pin boxes") == 0);
    j = runc_spec_config();
    j["linux"]["resources"]["memory"] = {{"disableOOMKiller", true}};
    CHECK(refusal_of(j).find("linux.resources.memory.disableOOMKiller: ") != std::string::npos);
    j = runc_spec_config();
    j["linux"]["resources"]["blockIO"] = json::parse(R"({"weight":10,"throttleReadBpsDevice":[{"major":8,"minor":0,"rate":1}]})");
    CHECK(refusal_of(j).find("linux.resources.blockIO.throttleReadBpsDevice: ") != std::string::npos);
    j = runc_spec_config();
    j["linux"]["resources"]["unified"] = {{"memory.high", "1G"}};
    CHECK(refusal_of(j).find("config.json: linux.resources.unified[\"memory.high\"]: ") == 0);
    j = runc_spec_config();
    j["linux"]["resources"]["cpu"] = {{"quota", 1000}, {"period", 10}};
    CHECK(refusal_of(j).find("linux.resources.cpu.period: expected 1000 to 1000000") != std::string::npos);
}
