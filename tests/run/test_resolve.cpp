// Unit tests (no root, no files) of resolve_run: every setting from the
// command line, else the worker (worker.toml, then org.toml), else the
// default, for an agent run and a `-- CMD` run alike; the gateway's config,
// the environment's order and the record's asked-for fields.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/sys_error.hpp"
#include "run/final_plan.hpp"
#include "run/prepare.hpp"
#include "run/request.hpp"
#include "run/resolve.hpp"
#include "names/host.hpp"
#include "tests/run/run_args.hpp"

namespace {

using corral::test::parse_run_args;

using namespace corral;
using run::RunInputs;
using run::RunRequest;


config::Grant grant(std::string host, config::GrantMode mode, std::string credential = "") {
    config::Grant g;
    g.host = names::builtin_host_pattern(host);
    g.mode = mode;
    g.credential = std::move(credential);
    g.where = "org.toml:1";
    return g;
}

// An organisation whose worker `w` sets memory, timeout, rootfs and [env];
// org.toml sets pids (and a memory the worker's replaces).
RunInputs worker_inputs(bool credential_available = true) {
    RunInputs in;
    in.run_id = "20261201-140000-abcdef";
    in.run_dir = "/var/lib/corral/runs/x";
    in.state_dir = "/var/lib/corral";
    config::OrgConfig org;
    org.dir = "/etc/corral/org";
    org.gateway.gateway.state_dir = "/var/lib/corral-gw";
    org.gateway.credentials["anthropic"] = config::CredentialSpec{.name = "anthropic"};
    org.gateway.credentials["unused"] = config::CredentialSpec{.name = "unused"};
    org.gateway.grants.push_back(grant("example.com", config::GrantMode::tunnel));
    in.org = org;
    config::ResolvedWorker w;
    w.name = "w";
    w.agent = config::AgentKind::claude;
    w.rootfs = names::DirRootfs{"/images/worker", "/images/worker"};
    w.limits.memory_bytes = 64ull << 20;
    w.limits.pids = 64;  // as if inherited from org.toml
    w.limits.timeout = std::chrono::seconds(2);
    w.limits.tmp_bytes = 8ull << 20;
    w.env = {{"WORKER_VAR", "from-worker"}, {"SHARED", "worker"}};
    w.grants = org.gateway.grants;
    in.worker = w;
    in.agent_credential.defined = true;
    in.agent_credential.available = credential_available;
    in.agent_credential.problem = credential_available ? "" : "file missing";
    return in;
}

std::string env_value(const run::EnvList& env, const std::string& key) {
    std::string v;
    for (const auto& [k, val] : env)
        if (k == key) v = val;  // later wins, as in the sandbox
    return v;
}

}  // namespace

TEST_CASE("a `-- CMD` run and an agent run of a worker get the same limits, rootfs and env from it") {
    for (bool agent : {false, true}) {
        CAPTURE(agent);
        std::vector<std::string> args{"--config", "/etc/corral/org", "--worker", "w"};
        if (agent) args.insert(args.end(), {"--prompt", "hi"});
        else args.insert(args.end(), {"--", "sh", "-c", "true"});
        auto plan = run::resolve_run(parse_run_args(args), worker_inputs());
        CHECK(plan.spec.limits.memory_bytes == 64ull << 20);
        CHECK(plan.spec.limits.pids == 64u);
        CHECK_FALSE(plan.spec.limits.cpus);
        CHECK(plan.spec.timeout == std::chrono::milliseconds(2000));
        CHECK(plan.spec.rootfs.tmp_size_bytes == 8ull << 20);
        CHECK(names::to_string(plan.spec.rootfs.source) == "/images/worker");
        CHECK(env_value(run::finish_plan(plan, {}).spec.env, "WORKER_VAR") == "from-worker");
        CHECK(plan.worker == "w");
        CHECK(plan.identity.str() == "w/20261201-140000-abcdef");
        CHECK(plan.agent.has_value() == agent);
        CHECK((plan.spec.stdout_log_name == "stdout.jsonl") == agent);
        CHECK((plan.spec.rootfs.home_dir == "/var/lib/corral/runs/x/home") == agent);
        CHECK(plan.spec.argv == (agent ? std::vector<std::string>{} : std::vector<std::string>{"sh", "-c", "true"}));
    }
}

TEST_CASE("--tty -- CLI, the worker's agent by name: an interactive agent run (its home, TERM, the CLI's args)") {
    auto plan = run::resolve_run(parse_run_args({"--tty", "--config", "/etc/corral/org", "--worker", "w", "--", "claude", "-c"}),
                                 worker_inputs());
    CHECK(plan.agent == config::AgentKind::claude);
    CHECK(plan.spec.tty);
    CHECK(plan.spec.rootfs.home_dir == "/var/lib/corral/runs/x/home");
    CHECK(plan.spec.stdout_log_name == "stdout.log");  // a terminal's output, not JSON lines
    CHECK(plan.spec.argv == std::vector<std::string>{"claude", "-c"});  // finish_plan puts the prepared CLI's argv in
    // Another command, or the agent's name without --tty: a plain `-- CMD` run of the worker.
    for (auto args : {std::vector<std::string>{"--tty", "--config", "/o", "--worker", "w", "--", "bash"},
                      std::vector<std::string>{"--config", "/o", "--worker", "w", "--", "claude"},
                      std::vector<std::string>{"--tty", "--config", "/o", "--worker", "w", "--", "/usr/bin/claude"}}) {
        CAPTURE(args.back());
        auto p = run::resolve_run(parse_run_args(args), worker_inputs());
        CHECK_FALSE(p.agent);
        CHECK_FALSE(p.spec.rootfs.home_dir);
    }
}

TEST_CASE("the command line wins over the worker; without --config only the command line and defaults count") {
    auto plan = run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--memory", "128M", "--pids", "5",
                                        "--cpus", "0.5", "--timeout", "30s", "--rootfs", "host", "--env", "SHARED=cli",
                                        "--", "true"}),
                                 worker_inputs());
    CHECK(plan.spec.limits.memory_bytes == 128ull << 20);
    CHECK(plan.spec.limits.pids == 5u);
    CHECK(plan.spec.limits.cpus == doctest::Approx(0.5));
    CHECK(plan.spec.timeout == std::chrono::milliseconds(30000));
    CHECK(std::holds_alternative<names::HostRootfs>(plan.spec.rootfs.source));
    CHECK(env_value(run::finish_plan(plan, {}).spec.env, "SHARED") == "cli");

    RunInputs bare;
    bare.run_id = "20261201-140000-abcdef";
    bare.run_dir = "/r";
    bare.state_dir = "/s";
    auto adhoc = run::resolve_run(parse_run_args({"--", "true"}), bare);
    CHECK(std::holds_alternative<names::HostRootfs>(adhoc.spec.rootfs.source));
    CHECK_FALSE(adhoc.spec.limits.memory_bytes);
    CHECK_FALSE(adhoc.spec.timeout);
    CHECK(adhoc.spec.env.empty());
    CHECK(adhoc.worker == "adhoc");
    CHECK(adhoc.spec.hostname == "corral-abcdef");
    CHECK(adhoc.spec.log_limit_bytes == run::kDefaultLogLimitBytes);
    // No grants: the embedded gateway keeps its CA in the state dir and intercepts nothing.
    CHECK(adhoc.gateway.grants.empty());
    CHECK(adhoc.gateway.gateway.state_dir == "/s");
    CHECK(adhoc.gateway.gateway.ledger == "/r/ledger.jsonl");
    CHECK_FALSE(adhoc.intercepts);
    CHECK_FALSE(adhoc.daemon_socket);
}

TEST_CASE("the environment's order: proxy first, then the worker's [env], the agent's, --env last") {
    auto plan = run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--env", "SHARED=cli", "--prompt", "p"}),
                                 worker_inputs());
    plan.agent_env = {{"HOME", "/home/agent"}, {"SHARED", "agent"}};
    auto env = run::compose_environment(plan, {{"HTTPS_PROXY", "http://127.0.0.1:3128"}, {"SHARED", "proxy"}});
    std::vector<std::string> order;
    for (const auto& kv : env) order.push_back(kv.first + "=" + kv.second);
    CHECK(order == std::vector<std::string>{"HTTPS_PROXY=http://127.0.0.1:3128", "SHARED=proxy", "SHARED=worker",
                                            "WORKER_VAR=from-worker", "HOME=/home/agent", "SHARED=agent", "SHARED=cli"});
}

TEST_CASE("--capture-only: the proxy variables are left out of the box's environment, the CA's stay") {
    auto plan = run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--capture-only", "--prompt", "p"}),
                                 worker_inputs());
    CHECK(plan.spec.capture);
    auto env = run::compose_environment(plan, {{"HTTPS_PROXY", "http://127.0.0.1:3128"}, {"GIT_CONFIG_COUNT", "1"},
                                               {"SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt"}});
    std::vector<std::string> names;
    for (const auto& kv : env) names.push_back(kv.first);
    CHECK(std::find(names.begin(), names.end(), "HTTPS_PROXY") == names.end());
    CHECK(std::find(names.begin(), names.end(), "GIT_CONFIG_COUNT") == names.end());
    CHECK(std::find(names.begin(), names.end(), "SSL_CERT_FILE") != names.end());
}

TEST_CASE("the embedded gateway's config: the worker's grants, the agent's when its credential is there, only used credentials") {
    auto plan = run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--", "true"}), worker_inputs());
    auto has_host = [&](const std::string& h) {
        return std::any_of(plan.gateway.grants.begin(), plan.gateway.grants.end(),
                           [&](const config::Grant& g) { return g.host == h; });
    };
    CHECK(has_host("example.com"));
    CHECK(has_host("api.anthropic.com"));
    CHECK(plan.left_out.empty());
    CHECK(plan.intercepts);  // claude's model grant injects
    CHECK(plan.gateway.credentials.count("anthropic") == 1);
    CHECK(plan.gateway.credentials.count("unused") == 0);
    CHECK(plan.gateway.gateway.ledger == "/var/lib/corral/runs/x/ledger.jsonl");
    // Renumbered in order (run_gateway_config).
    for (std::size_t i = 0; i < plan.gateway.grants.size(); ++i) CHECK(plan.gateway.grants[i].index == i);

    auto without = run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--", "true"}), worker_inputs(false));
    CHECK(without.left_out == "worker w: credential 'anthropic' not available (file missing); the agent's model grants "
                              "are left out of this run");
    CHECK_FALSE(std::any_of(without.gateway.grants.begin(), without.gateway.grants.end(),
                            [](const config::Grant& g) { return g.host == "api.anthropic.com"; }));
    CHECK_FALSE(without.intercepts);
    CHECK(without.gateway.credentials.empty());
}

TEST_CASE("--gateway: the daemon holds the grants; the box trusts its CA from [gateway] state_dir") {
    auto plan = run::resolve_run(
        parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--gateway", "unix:/run/corral/gateway.sock", "--", "true"}),
        worker_inputs());
    REQUIRE(plan.daemon_socket);
    CHECK(*plan.daemon_socket == "/run/corral/gateway.sock");
    CHECK(plan.intercepts);
    CHECK(plan.gateway.gateway.state_dir == "/var/lib/corral-gw");
}

TEST_CASE("a workspace may not reach the run's dirs, the gateway's CA or the organisation") {
    auto plan = run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--workspace", "/ws", "--", "true"}),
                                 worker_inputs());
    const auto& p = plan.spec.rootfs.protected_dirs;
    for (const char* d : {"/var/lib/corral", "/var/lib/corral/runs/x", "/run/corral", "/proc", "/sys", "/dev",
                          "/var/lib/corral-gw", "/etc/corral/org"}) {
        CAPTURE(d);
        CHECK(std::find(p.begin(), p.end(), d) != p.end());
    }
    CHECK(plan.spec.rootfs.workspace == "/ws");
}

TEST_CASE("a worker's review = true reviews its --workspace as --review does, in a run or a session") {
    auto in = worker_inputs();
    const std::vector<std::string> base = {"--config", "/etc/corral/org", "--worker", "w", "--workspace", "/ws"};
    auto args = [&](std::vector<std::string> more) {
        auto all = base;
        all.insert(all.end(), more.begin(), more.end());
        return all;
    };
    CHECK_FALSE(run::resolve_run(parse_run_args(args({"--", "true"})), in).spec.rootfs.review);
    CHECK(run::resolve_run(parse_run_args(args({"--review", "--", "true"})), in).spec.rootfs.review);
    in.worker->review = true;
    CHECK(run::resolve_run(parse_run_args(args({"--", "true"})), in).spec.rootfs.review);
    // Nothing to review without a workspace.
    CHECK_FALSE(run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--", "true"}), in)
                    .spec.rootfs.review);
    auto session = parse_run_args(args({"--", "true"}));
    session.session = true;
    CHECK(run::resolve_run(session, in).spec.rootfs.review);
}

TEST_CASE("the record states what is enforced once resolved, what was asked before") {
    auto request = parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--pids", "9", "--", "true"});
    supervisor::RunRecord early;
    early.id = "20261201-140000-abcdef";
    run::record_requested(early, request, nullptr);
    CHECK(early.rootfs == "host");
    CHECK(early.limits.pids == 9u);
    CHECK_FALSE(early.limits.memory_bytes);
    CHECK(early.hostname == "corral-abcdef");
    auto plan = run::resolve_run(request, worker_inputs());
    supervisor::RunRecord late;
    run::record_requested(late, request, &plan.spec);
    CHECK(late.rootfs == "/images/worker");
    CHECK(late.limits.pids == 9u);
    CHECK(late.limits.memory_bytes == 64ull << 20);
    CHECK(late.timeout == std::chrono::milliseconds(2000));
    CHECK(late.argv == std::vector<std::string>{"true"});
}

TEST_CASE("an identity that is not WORKER/RUN-ID of [A-Za-z0-9._-] is refused") {
    auto in = worker_inputs();
    in.run_id = "bad id";
    CHECK_THROWS_AS(run::resolve_run(parse_run_args({"--config", "/o", "--worker", "w", "--", "true"}), in), UsageError);
}

TEST_CASE("image:NAME: the image's layers, Env, WorkingDir and Entrypoint+Cmd; the command and --workspace win") {
    RunInputs in;
    in.run_id = "20261201-140000-abcdef";
    in.run_dir = "/var/lib/corral/runs/x";
    in.state_dir = "/var/lib/corral";
    image::StoredImage im;
    im.name = "go";
    im.layers = {"sha256:" + std::string(64, 'a'), "sha256:" + std::string(64, 'b')};
    im.config.env = {"PATH=/usr/local/go/bin:/usr/bin:/bin", "GOPATH=/go", "EMPTY="};
    im.config.working_dir = "/go/src/app/";
    im.config.entrypoint = {"/usr/bin/tini", "--"};
    im.config.cmd = {"go", "version"};
    im.config.ignored = {"User \"1000\" is ignored: the command runs as corral's unprivileged agent"};
    in.image = im;
    in.image_layer_dirs = {"/var/lib/corral/images/layers/sha256/aaa", "/var/lib/corral/images/layers/sha256/bbb"};

    auto plan = run::resolve_run(parse_run_args({"--rootfs", "image:go"}), in);
    CHECK(plan.spec.rootfs.source == names::RootfsSource(names::ImageRootfs{"go"}));
    CHECK(plan.spec.rootfs.image_layers == in.image_layer_dirs);
    CHECK(plan.spec.argv == std::vector<std::string>{"/usr/bin/tini", "--", "go", "version"});
    CHECK(plan.spec.cwd == "/go/src/app");
    CHECK(plan.spec.rootfs.image_working_dir == "/go/src/app");
    CHECK(plan.spec.image_env == std::vector<std::pair<std::string, std::string>>{
                                     {"PATH", "/usr/local/go/bin:/usr/bin:/bin"}, {"GOPATH", "/go"}, {"EMPTY", ""}});
    CHECK(plan.notes == std::vector<std::string>{"image go: User \"1000\" is ignored: the command runs as corral's unprivileged agent"});

    auto given = run::resolve_run(parse_run_args({"--rootfs", "image:go", "--workspace", "/srv/ws", "--", "sh", "-c", "x"}), in);
    CHECK(given.spec.argv == std::vector<std::string>{"sh", "-c", "x"});  // no entrypoint prefix
    CHECK(given.spec.cwd == "/workspace");
    CHECK(given.spec.rootfs.image_working_dir.empty());

    in.image->config.entrypoint.clear();
    in.image->config.cmd.clear();
    CHECK_THROWS_WITH_AS(run::resolve_run(parse_run_args({"--rootfs", "image:go"}), in),
                         "--rootfs image:go: the image has no Entrypoint or Cmd; give the command: "
                         "`corral run --rootfs image:go -- CMD [ARGS...]`",
                         UsageError);
    // Without image:, a missing command is still refused when parsing.
    CHECK_THROWS_WITH_AS(parse_run_args({"--rootfs", "/srv/img"}), "missing command: expected `corral run [OPTIONS] -- CMD [ARGS...]`",
                         UsageError);
}

TEST_CASE("--allow adds a tunnel grant after the organisation's; an address is allowed even if private; sizes from the CLI win") {
    auto plan = run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--allow", "api.example.org",
                                        "--allow", "127.0.0.1:8443", "--allow", "example.com", "--tmp-size", "16M",
                                        "--scratch-size", "512M", "--", "true"}),
                                 worker_inputs());
    const auto& grants = plan.gateway.grants;
    auto find = [&](const std::string& host, std::uint16_t port) -> const config::Grant* {
        for (const auto& g : grants)
            if (g.host == host && g.port == port) return &g;
        return nullptr;
    };
    const config::Grant* name = find("api.example.org", 443);
    REQUIRE(name);
    CHECK(name->mode == config::GrantMode::tunnel);
    CHECK_FALSE(name->allow_private);
    CHECK(name->where == "--allow api.example.org");
    CHECK(name->identities.empty());
    const config::Grant* addr = find("127.0.0.1", 8443);
    REQUIRE(addr);
    CHECK(addr->allow_private);
    // The organisation's own grant for example.com:443 is kept, not doubled.
    CHECK(std::count_if(grants.begin(), grants.end(), [](const config::Grant& g) { return g.host == "example.com"; }) == 1);
    CHECK(find("example.com", 443)->where == "org.toml:1");
    CHECK(plan.spec.rootfs.tmp_size_bytes == 16ull << 20);
    CHECK(plan.spec.rootfs.scratch_size_bytes == 512ull << 20);
    // Without --config the run has only the command line's grants.
    RunInputs bare;
    bare.run_id = "20261201-140000-abcdef";
    bare.run_dir = "/r";
    bare.state_dir = "/s";
    auto adhoc = run::resolve_run(parse_run_args({"--allow", "x.example.net:8080", "--", "true"}), bare);
    REQUIRE(adhoc.gateway.grants.size() == 1);
    CHECK(adhoc.gateway.grants[0].port == 8080);
    CHECK_FALSE(adhoc.intercepts);  // a tunnel: the box keeps its own trust store
}

TEST_CASE("scratch_size and tmp_size come from the worker without the command-line options") {
    auto in = worker_inputs();
    in.worker->limits.scratch_bytes = 1ull << 30;
    auto plan = run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--", "true"}), in);
    CHECK(plan.spec.rootfs.scratch_size_bytes == 1ull << 30);
    CHECK(plan.spec.rootfs.tmp_size_bytes == 8ull << 20);
    auto bare = run::resolve_run(parse_run_args({"--", "true"}), RunInputs{.run_id = "20261201-140000-abcdef", .run_dir = "/r", .state_dir = "/s"});
    CHECK(bare.spec.rootfs.scratch_size_bytes == 256ull << 20);
}

TEST_CASE("an egress-only worker: its grants and limits, no model grants, nothing left out; --prompt refused") {
    auto in = worker_inputs(/*credential_available=*/false);
    in.worker->egress_only = true;
    in.worker->agent_source = "workers/w/worker.toml:1";
    in.agent_credential = {};
    auto plan = run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--", "curl", "x"}), in);
    CHECK(plan.left_out.empty());
    CHECK_FALSE(plan.agent);
    REQUIRE(plan.gateway.grants.size() == 1);
    CHECK(plan.gateway.grants[0].host == "example.com");
    CHECK(plan.spec.limits.memory_bytes == 64ull << 20);
    // With a pi/claude worker whose credential is missing the same run says what is left out.
    CHECK_FALSE(run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--", "true"}),
                                 worker_inputs(false)).left_out.empty());
    std::string e;
    try {
        run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--prompt", "hi"}), in);
    } catch (const UsageError& x) {
        e = x.what();
    }
    CHECK(e == "worker w has no agent (agent = \"none\" at workers/w/worker.toml:1): run a command with `corral run "
               "--config DIR --worker w -- CMD`, or give it an agent to use --prompt");
}

namespace {

// The worker of worker_inputs() with a remote MCP server (credential
// "mcpcred") and, with `stdio`, a stdio one (secret_env from "ghcred").
RunInputs mcp_inputs(bool stdio) {
    auto in = worker_inputs();
    in.org->gateway.credentials["mcpcred"] = config::CredentialSpec{.name = "mcpcred"};
    in.org->gateway.credentials["ghcred"] = config::CredentialSpec{.name = "ghcred"};
    mcp::HttpServer h;
    h.url = "https://mcp.example.com/mcp", h.host = "mcp.example.com", h.path = "/mcp", h.credential = "mcpcred";
    in.worker->tools.servers["search"] = mcp::Server{"search", "workers/w/worker.toml:3", h, false};
    if (stdio) {
        mcp::StdioServer s;
        s.argv = {"/usr/bin/node", "/opt/fs.js"};
        s.secret_env = {{"GITHUB_TOKEN", "ghcred"}};
        in.worker->tools.servers["files"] = mcp::Server{"files", "org.toml:9", s, false};
    }
    for (const auto& [name, s] : in.worker->tools.servers) in.worker->tools.policy.servers.insert(name);
    return in;
}

}  // namespace

TEST_CASE("MCP: the embedded gateway gets the worker's tools and keeps the credentials its servers name") {
    auto plan = run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--", "true"}),
                                 mcp_inputs(true));
    CHECK(plan.gateway.tools.servers.size() == 2);
    CHECK(plan.gateway.tools.servers.count("search") == 1);
    CHECK(plan.gateway.credentials.count("mcpcred") == 1);
    CHECK(plan.gateway.credentials.count("ghcred") == 1);
    CHECK(plan.gateway.credentials.count("unused") == 0);
    // Without MCP servers nothing of theirs is kept.
    auto none = run::resolve_run(parse_run_args({"--config", "/etc/corral/org", "--worker", "w", "--", "true"}),
                                 worker_inputs());
    CHECK(none.gateway.tools.empty());
    CHECK(none.gateway.credentials.count("mcpcred") == 0);
}

TEST_CASE("MCP: what a run cannot serve is refused before it starts: a stdio server with --gateway") {
    const auto remote = mcp_inputs(false).worker->tools;
    const auto both = mcp_inputs(true).worker->tools;
    CHECK(run::mcp_not_served("w", remote, false).empty());
    CHECK(run::mcp_not_served("w", both, false).empty());   // the run starts its stdio server in a box of its own
    CHECK(run::mcp_not_served("w", mcp::ToolsConfig{}, true).empty());
    // The daemon serves remote servers; a stdio one it refuses, saying so.
    CHECK(run::mcp_not_served("w", remote, true).empty());
    auto daemon = run::mcp_not_served("w", both, true);
    REQUIRE(daemon.size() == 1);
    CHECK(daemon[0] == "worker w: MCP server files (org.toml:9) is a stdio server, and the gateway daemon serves "
                       "remote Streamable HTTP servers only (url = \"https://...\"), not stdio servers: run it without "
                       "--gateway (the run's embedded gateway starts it in a box of its own), or remove it from the "
                       "worker's [mcp.servers]");
}

TEST_CASE("MCP: tool_calls_per_worker is refused in a run of the embedded gateway, never silently unenforced; the daemon keeps it") {
    auto tools = mcp_inputs(false).worker->tools;
    tools.budgets.per_run = 5;
    CHECK(run::mcp_not_served("w", tools, false).empty());
    tools.budgets.per_worker = 100;
    auto refused = run::mcp_not_served("w", tools, false);
    REQUIRE(refused.size() == 1);
    CHECK(refused[0] == "worker w: [mcp.budget] tool_calls_per_worker (a tool-call budget across the worker's runs) "
                        "is kept by the gateway daemon: run with --gateway unix:PATH against `corral gateway --org "
                        "DIR`, or leave tool_calls_per_worker out and use tool_calls_per_run (per run)");
    CHECK(refused[0] == run::tool_calls_per_worker_refusal("w"));
    CHECK(run::mcp_not_served("w", tools, true).empty());
    CHECK(run::mcp_not_served("w", mcp::ToolsConfig{}, false).empty());
}
