// Unit tests of the pure parts of the sandbox API: the command's environment
// and the setup-step names the supervisor prints.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include <set>
#include <string>

#include "names/run_id.hpp"
#include "supervisor/sandbox.hpp"

using namespace corral::supervisor;

TEST_CASE("the command's environment is the documented few plus --env, later wins") {
    SandboxSpec spec;
    spec.rootfs.agent_name = "agent";
    auto env = command_environment(spec);
    CHECK(env == std::vector<std::string>{"PATH=" + std::string(kSandboxPath), "HOME=/home/agent", "USER=agent",
                                          "LOGNAME=agent", "LANG=C.UTF-8", "TERM=dumb"});
    spec.env = {{"FOO", "1"}, {"PATH", "/bin"}, {"FOO", "2"}};
    env = command_environment(spec);
    CHECK(env.front() == "PATH=/bin");
    CHECK(env.back() == "FOO=2");
    CHECK(env.size() == 7);
}

TEST_CASE("--tty: TERM is the caller's terminal type when it is a plain terminfo name") {
    SandboxSpec spec;
    spec.tty = true;
    spec.terminal_type = box_terminal_type("tmux-256color");
    auto env = command_environment(spec);
    CHECK(env.back() == "TERM=tmux-256color");
    spec.env = {{"TERM", "vt100"}};  // --env still has the last word
    CHECK(command_environment(spec).back() == "TERM=vt100");
    CHECK(box_terminal_type("xterm+256.color_x") == "xterm+256.color_x");
    // Unset, dumb (the caller is not a full-screen terminal), or not a name:
    // a terminal type every terminfo database has.
    const std::string too_long(65, 'x');
    for (const char* odd : {static_cast<const char*>(nullptr), "", "dumb", "../../etc/x", "xterm\n", "a b",
                            "xterm;rm", too_long.c_str()})
        CHECK(box_terminal_type(odd) == "xterm-256color");
}

TEST_CASE("an image's Env is the base: it sets PATH and its own names, never HOME/USER/LOGNAME; --env wins") {
    SandboxSpec spec;
    spec.rootfs.agent_name = "agent";
    spec.image_env = {{"PATH", "/usr/local/go/bin:/usr/bin"}, {"HOME", "/root"}, {"USER", "root"},
                      {"LOGNAME", "root"}, {"GOPATH", "/go"}, {"LANG", "de_DE.UTF-8"}};
    spec.env = {{"GOPATH", "/workspace/go"}};
    auto env = command_environment(spec);
    CHECK(env == std::vector<std::string>{"PATH=/usr/local/go/bin:/usr/bin", "HOME=/home/agent", "USER=agent",
                                          "LOGNAME=agent", "LANG=de_DE.UTF-8", "TERM=dumb", "GOPATH=/workspace/go"});
}

TEST_CASE("every setup step has its own name") {
    std::set<std::string> names;
    for (auto s = static_cast<std::uint32_t>(SetupStep::set_parent_death_signal);
         s <= static_cast<std::uint32_t>(SetupStep::exec_command); ++s) {
        std::string name(step_name(static_cast<SetupStep>(s)));
        CHECK(name != "unknown_step");
        names.insert(name);
    }
    CHECK(names.size() == static_cast<std::size_t>(SetupStep::exec_command) + 1);
    CHECK(step_name(SetupStep::enter_rootfs) == "enter_rootfs");
}

TEST_CASE("run ids are sortable timestamps (UTC, milliseconds) with a random suffix") {
    std::string a = make_run_id();
    std::string b = make_run_id();
    CHECK(a.size() == std::string("20261130T055114123Z-9ebbdd").size());
    CHECK(a[8] == 'T');
    CHECK(a[18] == 'Z');
    CHECK(a[19] == '-');
    // What the run index, the cgroups and the agent profiles accept as an id.
    CHECK(corral::names::is_drawn_run_id(a));
    CHECK(corral::names::is_run_id(a));
    CHECK(a != b);
    // Ids made later sort after (the millisecond stamp is fixed-width).
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    CHECK(make_run_id().substr(0, 18) > a.substr(0, 18));
}
