// Unit tests (no root) of parse_run_request: the network and agent options
// among the sandbox's, where CMD starts, which options go together.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "base/sys_error.hpp"
#include "run/request.hpp"
#include "tests/run/run_args.hpp"

namespace {

using corral::test::parse_run_args;

using corral::run::RunRequest;


std::string usage_error(std::vector<std::string> args) {
    try {
        parse_run_args(std::move(args));
    } catch (const corral::UsageError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("an agent run has no CMD and takes its options anywhere before it") {
    auto p = parse_run_args({"--run-dir", "/r", "--config", "/org", "--timeout", "5s", "--worker", "w1", "--prompt", "do it"});
    CHECK(p.agent());
    CHECK(*p.config_dir == "/org");
    CHECK(*p.worker == "w1");
    CHECK(*p.prompt == "do it");
    CHECK(p.command.empty());
    CHECK(*p.run_dir == "/r");
    CHECK(!p.rootfs);
}

TEST_CASE("an unknown option's message lists the agent options too") {
    std::string e = usage_error({"--memroy", "1G", "--", "true"});
    CHECK(e.starts_with("unknown option \"--memroy\" (did you mean --memory?); options are --rootfs,"));
    for (const char* opt : {"--memory", "--config", "--worker", "--prompt", "--prompt-file", "--system-prompt-file",
                            "--gateway", "--help"})
        CHECK_MESSAGE(e.find(opt) != std::string::npos, opt);
}

TEST_CASE("a CMD run keeps its arguments, including ones that look like ours after --") {
    auto p = parse_run_args({"--rootfs", "/img", "--config", "/org", "--worker", "w1", "--", "echo", "--prompt", "x"});
    CHECK(!p.agent());
    CHECK(corral::names::to_string(*p.rootfs) == "/img");
    CHECK(p.command == std::vector<std::string>{"echo", "--prompt", "x"});
    auto q = parse_run_args({"--timeout", "5s", "echo", "--worker", "x"});
    CHECK(!q.worker);
    CHECK(q.command == std::vector<std::string>{"echo", "--worker", "x"});
}

TEST_CASE("--gateway takes unix:/absolute/path only") {
    auto p = parse_run_args({"--gateway", "unix:/run/corral/gateway.sock", "--", "true"});
    CHECK(*p.gateway == "/run/corral/gateway.sock");
    CHECK(usage_error({"--gateway", "tcp:127.0.0.1:3128", "--", "true"}).find("unix:/") != std::string::npos);
    CHECK(usage_error({"--gateway=unix:relative", "--", "true"}).find("--gateway") != std::string::npos);
}

TEST_CASE("inconsistent combinations are one-line usage errors naming the options") {
    CHECK(usage_error({"--prompt", "x"}).find("--worker") != std::string::npos);
    CHECK(usage_error({"--config", "/org", "--worker", "w", "--prompt", "x", "--", "ls"}).find("not both") !=
          std::string::npos);
    CHECK(usage_error({"--config", "/org", "--worker", "w", "--prompt", "x", "--prompt-file", "f"}).find("--prompt-file") !=
          std::string::npos);
    CHECK(usage_error({"--worker", "w", "--", "ls"}).find("--config") != std::string::npos);
    CHECK(usage_error({"--config", "/org", "--", "ls"}).find("--worker") != std::string::npos);
    CHECK(usage_error({"--system-prompt-file", "f", "--", "ls"}).find("--prompt") != std::string::npos);
    CHECK(usage_error({"--tty", "--stdin", "--", "sh"}) ==
          "--tty and --stdin: --tty already makes the terminal CMD's stdin; give one of them");
    CHECK(usage_error({"--tty", "--config", "/org", "--worker", "w", "--prompt", "x"}).starts_with(
        "--tty and --prompt: --prompt runs the agent non-interactively"));
    CHECK(usage_error({"--tty", "--config", "/org", "--worker", "w", "--", "claude"}).empty());
    CHECK(usage_error({"--tty=yes", "--", "sh"}).starts_with("--tty: takes no value"));
    CHECK(usage_error({"--config"}).find("missing value") != std::string::npos);
    CHECK(usage_error({}).find("missing command") != std::string::npos);
    CHECK(usage_error({"--review", "--", "sh"}) == "--review reviews the workspace: give --workspace DIR with it");
    CHECK(usage_error({"--review", "--workspace", "/w", "--", "sh"}).empty());
}

TEST_CASE("an agent run refuses an empty --prompt and --env names corral sets itself; a CMD run keeps --env") {
    CHECK(usage_error({"--config", "/org", "--worker", "w", "--prompt", ""}) == "--prompt: empty; the agent needs a task");
    for (const char* name : {"HOME", "HTTPS_PROXY", "https_proxy", "NODE_EXTRA_CA_CERTS", "ANTHROPIC_API_KEY",
                             "CLAUDE_CONFIG_DIR", "DISABLE_TELEMETRY"}) {
        CAPTURE(name);
        CHECK(usage_error({"--config", "/org", "--worker", "w", "--env", std::string(name) + "=x", "--prompt", "p"})
                  .find(std::string("--env ") + name + ": set by corral itself in an agent run") == 0);
    }
    CHECK(usage_error({"--config", "/org", "--worker", "w", "--env", "MY_SETTING=x", "--prompt", "p"}).empty());
    auto p = parse_run_args({"--config", "/org", "--worker", "w", "--env", "HTTPS_PROXY=http://127.0.0.1:1", "--", "true"});
    REQUIRE(p.env.size() == 1);
    CHECK(p.env[0].first == "HTTPS_PROXY");
}
