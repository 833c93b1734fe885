// Unit tests (no root) of parse_run_command: which arguments are the
// network/agent options, which go to parse_run_options, where CMD starts.
#include <doctest/doctest.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "base/sys_error.hpp"
#include "supervisor/run_options.hpp"
#include "tools/run_agent.hpp"

namespace {

using corral::cli::EgressOptions;
using corral::cli::parse_run_command;

struct Parsed {
    corral::supervisor::RunOptions opts;
    EgressOptions eg;
};

Parsed parse(std::vector<std::string> args) {
    args.insert(args.begin(), "run");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    Parsed p;
    p.opts = parse_run_command(static_cast<int>(argv.size()), argv.data(), p.eg);
    return p;
}

std::string usage_error(std::vector<std::string> args) {
    try {
        parse(std::move(args));
    } catch (const corral::UsageError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("an agent run has no CMD and takes its options anywhere before it") {
    auto p = parse({"--run-dir", "/r", "--config", "/org", "--timeout", "5s", "--worker", "w1", "--prompt", "do it"});
    CHECK(p.eg.agent());
    CHECK(*p.eg.config_dir == "/org");
    CHECK(*p.eg.worker == "w1");
    CHECK(*p.eg.prompt == "do it");
    CHECK(p.opts.command.empty());
    CHECK(*p.opts.run_dir == "/r");
    CHECK(!p.eg.rootfs_given);
}

TEST_CASE("every value option of `corral run --help` keeps its value, agent options after it still count") {
    // Taken from the help text, so an option added there without teaching
    // parse_run_command its value fails here (its value would start the CMD).
    const std::map<std::string, std::string> sample{{"DIR", "/d"},  {"host|DIR", "/d"}, {"SIZE", "64M"},
                                                    {"N", "5"},     {"FLOAT", "1"},     {"DURATION", "5s"},
                                                    {"K=V", "A=1"}, {"NAME", "h1"},     {"FIRST-LAST", "2000-2010"}};
    const std::regex value_option(R"(^  (--[a-z-]+) (\S+) )");
    std::istringstream help(corral::supervisor::run_help_text());
    int seen = 0;
    for (std::string line; std::getline(help, line);) {
        std::smatch m;
        if (!std::regex_search(line, m, value_option)) continue;
        ++seen;
        const std::string option = m[1], placeholder = m[2];
        INFO(option << " " << placeholder);
        REQUIRE_MESSAGE(sample.count(placeholder) == 1, "no sample value for the placeholder " << placeholder);
        auto p = parse({option, sample.at(placeholder), "--worker", "w1", "--config", "/org", "--prompt", "p"});
        CHECK(p.opts.command.empty());
        CHECK(p.eg.agent());
    }
    CHECK(seen >= 12);
}

TEST_CASE("an unknown option's message lists the agent options too") {
    std::string e = usage_error({"--memroy", "1G", "--", "true"});
    CHECK(e.starts_with("unknown option \"--memroy\"; options are --rootfs,"));
    for (const char* opt : {"--memory", "--config", "--worker", "--prompt", "--prompt-file", "--system-prompt-file",
                            "--gateway", "--help"})
        CHECK_MESSAGE(e.find(opt) != std::string::npos, opt);
}

TEST_CASE("a CMD run keeps its arguments, including ones that look like ours after --") {
    auto p = parse({"--rootfs", "/img", "--config", "/org", "--worker", "w1", "--", "echo", "--prompt", "x"});
    CHECK(!p.eg.agent());
    CHECK(p.eg.rootfs_given);
    CHECK(p.opts.rootfs == "/img");
    CHECK(p.opts.command == std::vector<std::string>{"echo", "--prompt", "x"});
    auto q = parse({"--timeout", "5s", "echo", "--worker", "x"});
    CHECK(!q.eg.worker);
    CHECK(q.opts.command == std::vector<std::string>{"echo", "--worker", "x"});
}

TEST_CASE("--gateway takes unix:/absolute/path only") {
    auto p = parse({"--gateway", "unix:/run/corral/gateway.sock", "--", "true"});
    CHECK(*p.eg.gateway == "/run/corral/gateway.sock");
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
    CHECK(usage_error({"--config"}).find("missing value") != std::string::npos);
    CHECK(usage_error({}).find("missing command") != std::string::npos);
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
    auto p = parse({"--config", "/org", "--worker", "w", "--env", "HTTPS_PROXY=http://127.0.0.1:1", "--", "true"});
    REQUIRE(p.opts.env.size() == 1);
    CHECK(p.opts.env[0].first == "HTTPS_PROXY");
}
