// tests/run/test_mcp_server_box.cpp — run/mcp_servers' server_box_spec: a
// stdio server's box is refused every --ro-bind and --rootfs DIR that
// overlaps what the agent can write, judged on disk (a symlink, a ".."
// after one, a parent given through an alias), and given the rest. The
// other mounts of one tree (bind mounts) are tests/rootfs/test_disk_overlap.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "base/sys_error.hpp"
#include "run/mcp_servers.hpp"
#include "tests/support/temp_dir.hpp"

using namespace corral;

namespace {

// DIR/ws (the workspace), DIR/tools (outside it), DIR/ws/tools, and links.
struct Layout {
    test::TempDir t{"corral-server-box"};
    std::string dir = t.path();
    Layout() {
        for (const char* d : {"ws", "ws/tools", "ws/tools/deep", "tools", "other", "links"})
            REQUIRE(mkdir((dir + "/" + d).c_str(), 0755) == 0);
    }
    void link(const std::string& target, const std::string& name) const {
        REQUIRE(symlink(target.c_str(), (dir + "/" + name).c_str()) == 0);
    }
    // The agent's spec with its workspace, and `source` as its one --ro-bind.
    supervisor::SandboxSpec agent_with_ro_bind(const std::string& source) const {
        supervisor::SandboxSpec s;
        s.run_id = "r1";
        s.rootfs.source = names::ImageRootfs{"img"};
        s.rootfs.workspace = dir + "/ws";
        s.rootfs.binds.push_back({source, "/opt/tools", true, "--ro-bind"});
        return s;
    }
};

// What server_box_spec says about `agent`, "" when it gives the box.
std::string refusal_of(const supervisor::SandboxSpec& agent) {
    try {
        (void)run::server_box_spec(agent, 0, mcp::StdioServer{{"/opt/tools/server"}, {}, {}, ""});
        return "";
    } catch (const UsageError& e) {
        return e.what();
    }
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("server_box_spec: a --ro-bind that is a symlink to the workspace is refused") {
    Layout l;
    l.link(l.dir + "/ws", "links/ws");
    const std::string why = refusal_of(l.agent_with_ro_bind(l.dir + "/links/ws"));
    CHECK_MESSAGE(contains(why, "--ro-bind " + l.dir + "/links/ws:/opt/tools: overlaps the workspace (" + l.dir +
                                    "/ws), which the agent can write: on disk " + l.dir + "/links/ws is " + l.dir + "/ws"),
                  why);
    CHECK(contains(why, "give the server its files from a directory that neither lies in nor contains the workspace"));
}

TEST_CASE("server_box_spec: a --ro-bind whose \"..\" follows a symlink into the workspace is refused") {
    Layout l;
    // Lexically DIR/links/deep/.. is DIR/links; the kernel resolves it to DIR/ws/tools.
    l.link(l.dir + "/ws/tools/deep", "links/deep");
    const std::string why = refusal_of(l.agent_with_ro_bind(l.dir + "/links/deep/.."));
    CHECK_MESSAGE(contains(why, "overlaps the workspace (" + l.dir + "/ws)"), why);
    CHECK_MESSAGE(contains(why, "lies inside " + l.dir + "/ws"), why);
}

TEST_CASE("server_box_spec: a \"..\" path into the workspace, not normalised, is refused") {
    Layout l;
    const std::string why = refusal_of(l.agent_with_ro_bind(l.dir + "/other/../ws/tools"));
    CHECK_MESSAGE(contains(why, "overlaps the workspace (" + l.dir + "/ws)"), why);
}

TEST_CASE("server_box_spec: a parent of the workspace, through a symlink, is refused (as --ro-bind and as --rootfs DIR)") {
    Layout l;
    l.link(l.dir, "links/up");
    std::string why = refusal_of(l.agent_with_ro_bind(l.dir + "/links/up"));
    CHECK_MESSAGE(contains(why, "contains " + l.dir + "/ws"), why);
    auto agent = l.agent_with_ro_bind(l.dir + "/tools");
    agent.rootfs.source = names::DirRootfs{l.dir + "/links/up", l.dir + "/links/up"};
    why = refusal_of(agent);
    CHECK_MESSAGE(contains(why, "--rootfs " + l.dir + "/links/up: overlaps the workspace"), why);
}

TEST_CASE("server_box_spec: a --bind and the agent's home count as writable; a home not made yet by where it will be") {
    Layout l;
    auto agent = l.agent_with_ro_bind(l.dir + "/tools");
    agent.rootfs.binds.push_back({l.dir + "/other", "/data", false, "--bind"});
    l.link(l.dir + "/other", "links/other");
    agent.rootfs.binds[0].source = l.dir + "/links/other";
    CHECK(contains(refusal_of(agent), "overlaps --bind " + l.dir + "/other:/data"));
    agent = l.agent_with_ro_bind(l.dir + "/other");
    agent.rootfs.home_dir = l.dir + "/other/run/home";   // neither it nor run/ exists yet
    CHECK(contains(refusal_of(agent), "overlaps the agent's home (not made yet, in " + l.dir + "/other)"));
    // A shown directory beside where the home will be is no overlap.
    agent = l.agent_with_ro_bind(l.dir + "/tools");
    agent.rootfs.home_dir = l.dir + "/other/run/home";
    CHECK(refusal_of(agent) == "");
}

TEST_CASE("server_box_spec: a --ro-bind beside the workspace is given to the box, the writable binds are not") {
    Layout l;
    auto agent = l.agent_with_ro_bind(l.dir + "/tools");
    agent.rootfs.binds.push_back({l.dir + "/other", "/data", false, "--bind"});
    const auto box = run::server_box_spec(agent, 1, mcp::StdioServer{{"/opt/tools/server"}, {}, {}, ""});
    CHECK(box.run_id == "r1-mcp-2");
    REQUIRE(box.rootfs.binds.size() == 1);
    CHECK(box.rootfs.binds[0].source == l.dir + "/tools");
    CHECK_FALSE(box.rootfs.workspace);
}
