// Unit tests of cli/: for every subcommand's option table, its --help is
// generated from the table (every option in it), and a misspelt option is
// refused with the table's suggestion; and the list gen_docs reads has them all.
#include <doctest/doctest.h>

#include <functional>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "base/sys_error.hpp"
#include "cli/action_front.hpp"
#include "cli/admin_args.hpp"
#include "cli/command_table.hpp"
#include "cli/image_args.hpp"
#include "cli/mcp_args.hpp"
#include "cli/runs_args.hpp"
#include "cli/session_args.hpp"
#include "cli/workspace_args.hpp"
#include "config/org_config.hpp"
#include "run/request.hpp"
#include "tools/subcommands.hpp"

using namespace corral;
using namespace corral::cli;

namespace {

struct Argv {
    std::vector<std::string> words;
    std::vector<char*> ptrs;
    Argv(std::initializer_list<std::string> w) : words(w) {
        for (auto& s : words) ptrs.push_back(s.data());
        ptrs.push_back(nullptr);
    }
    int argc() const { return static_cast<int>(words.size()); }
    char** argv() { return ptrs.data(); }
};

using Parser = std::function<void(int, char**)>;

std::string error_of(const Parser& parse, std::initializer_list<std::string> words) {
    Argv a(words);
    try {
        parse(a.argc(), a.argv());
    } catch (const UsageError& e) {
        return e.what();
    }
    return "(no error)";
}

// The command's --help names every option of its table, with its placeholder.
void check_help(const std::string& help, std::span<const OptionSpec> table) {
    for (const auto& o : table) {
        const std::string head = std::string(o.name) + (o.placeholder.empty() ? "" : " " + std::string(o.placeholder));
        CHECK_MESSAGE(help.find("  " + (o.short_name.empty() ? "" : std::string(o.short_name) + ", ") + head) !=
                          std::string::npos,
                      head);
    }
    CHECK(help.find("  -h, --help") != std::string::npos);
}

// "--state-dri" for "--state-dir": the last two letters swapped.
std::string misspelt(std::string_view name) {
    std::string m(name);
    std::swap(m[m.size() - 1], m[m.size() - 2]);
    return m;
}

// A misspelling of each long option of `table` is refused with it suggested.
void check_suggestions(const Parser& parse, std::span<const OptionSpec> table, std::initializer_list<std::string> before) {
    for (const auto& o : table) {
        if (o.name.size() < 6) continue;
        std::vector<std::string> words(before);
        words.push_back(misspelt(o.name));
        Argv a({});
        a.words = words;
        a.ptrs.clear();
        for (auto& s : a.words) a.ptrs.push_back(s.data());
        std::string e = "(no error)";
        try {
            parse(a.argc(), a.argv());
        } catch (const UsageError& u) {
            e = u.what();
        }
        CHECK_MESSAGE(e.starts_with("unknown option \"" + misspelt(o.name) + "\" (did you mean " + std::string(o.name) + "?)"),
                      e);
    }
}

}  // namespace

TEST_CASE("ps, logs, stop, inspect, session stop|ls: help from the table, suggestions") {
    for (std::string cmd : {"ps", "logs", "stop", "inspect", "session stop", "session ls"}) {
        INFO(cmd);
        if (!cmd.starts_with("session")) check_help(runs_help(cmd), runs_option_specs(cmd));
        check_suggestions([&](int c, char** v) { parse_runs_args(cmd, c, v); }, runs_option_specs(cmd), {cmd});
    }
    CHECK(error_of([](int c, char** v) { parse_runs_args("ps", c, v); }, {"ps", "--state-dir"}) ==
          "--state-dir: missing value; see `corral ps --help`");
    CHECK(error_of([](int c, char** v) { parse_runs_args("logs", c, v); }, {"logs", "--json"}) ==
          "unknown option \"--json\"; options are --follow, --state-dir, --help");
    CHECK(error_of([](int c, char** v) { parse_runs_args("stop", c, v); }, {"stop", "--grace", "soon"})
              .starts_with("--grace: "));
    Argv a({"ps", "-a", "--json", "x"});
    RunsArgs r = parse_runs_args("ps", a.argc(), a.argv());
    CHECK(r.all);
    CHECK(r.json_out);
    CHECK(r.positional == std::vector<std::string>{"x"});
}

TEST_CASE("mcp ls|trust: help from the tables, suggestions, SERVER/TOOL DIGEST checked") {
    check_help(mcp_help(), mcp_ls_option_specs());
    check_help(mcp_help(), mcp_trust_option_specs());
    const Parser p = [](int c, char** v) { parse_mcp_args(c, v); };
    check_suggestions(p, mcp_ls_option_specs(), {"ls", "--config", "/o"});
    check_suggestions(p, mcp_trust_option_specs(), {"trust", "--config", "/o"});
    const std::string d = "sha256:" + std::string(64, 'e');
    CHECK(error_of(p, {"ls"}) == "--config DIR is required");
    CHECK(error_of(p, {"ls", "--config", "/o", "x"}) == "unexpected argument \"x\"; corral mcp ls takes only options");
    CHECK(error_of(p, {"ls", "--config", "/o", "--force"}).starts_with("unknown option \"--force\""));
    CHECK(error_of(p, {"trust", "--config", "/o", "s/t"}) == "expected SERVER/TOOL DIGEST, got 1 argument(s)");
    CHECK(error_of(p, {"trust", "--config", "/o", "st", d}) == "\"st\" is not SERVER/TOOL");
    CHECK(error_of(p, {"trust", "--config", "/o", "s/t", "sha256:ABC"}).starts_with("\"sha256:ABC\" is not a digest"));
    CHECK(error_of(p, {"trust", "--config", "/o", "--json", "s/t", d}).starts_with("unknown option \"--json\""));
    CHECK(error_of(p, {"trust", "--config", "/o", "--all-quarantined", "s/t"}) ==
          "--all-quarantined takes no SERVER/TOOL DIGEST, got \"s/t\"");
    CHECK(error_of(p, {"trust", "--config", "/o", "--all-quarantined", "--force"}) ==
          "--force and --all-quarantined: give one");
    Argv a({"trust", "s/t", d, "--worker", "w1", "--force", "--config=/o"});
    McpArgs m = parse_mcp_args(a.argc(), a.argv());
    CHECK(m.key == "s/t");
    CHECK(m.digest == d);
    CHECK(m.worker == "w1");
    CHECK(m.force);
    CHECK(m.config_dir == "/o");
    Argv b({"ls", "--json", "--config", "/o", "--state-dir", "/s"});
    McpArgs l = parse_mcp_args(b.argc(), b.argv());
    CHECK(l.as_json);
    CHECK(l.state_dir == "/s");
}

TEST_CASE("prune: help from the table, suggestions, no positionals") {
    check_help(prune_help(), prune_option_specs());
    const Parser p = [](int c, char** v) { parse_prune_args(c, v); };
    check_suggestions(p, prune_option_specs(), {"prune"});
    CHECK(error_of(p, {"prune", "x"}) == "takes no arguments, got \"x\"");
    CHECK(error_of(p, {"prune", "--outcome", "won"}).starts_with("--outcome: unknown outcome \"won\""));
    Argv a({"prune", "-n", "--older-than=2d"});
    PruneArgs pa = parse_prune_args(a.argc(), a.argv());
    CHECK(pa.dry_run);
    CHECK(pa.rules.older_than == std::chrono::hours(48));
}

TEST_CASE("diff, apply, discard: help from the tables, suggestions, RUN required, apply's repeatable --only") {
    for (const char* cmd : {"diff", "apply", "discard"}) {
        CAPTURE(cmd);
        check_help(workspace_help(cmd), workspace_option_specs(cmd));
        const Parser p = [cmd](int c, char** v) { parse_workspace_args(cmd, c, v); };
        check_suggestions(p, workspace_option_specs(cmd), {cmd});
        CHECK(error_of(p, {cmd}) == std::string("missing RUN: expected `corral ") + cmd + " RUN`");
    }
    Argv d({"diff", "--stat", "RUN", "src", "docs/a.md"});
    WorkspaceArgs da = parse_workspace_args("diff", d.argc(), d.argv());
    CHECK(da.stat);
    CHECK(da.run == "RUN");
    CHECK(da.paths == std::vector<std::string>{"src", "docs/a.md"});
    Argv a({"apply", "--only", "a", "--only=b", "--expect", "sha256:x", "RUN"});
    WorkspaceArgs aa = parse_workspace_args("apply", a.argc(), a.argv());
    CHECK(aa.paths == std::vector<std::string>{"a", "b"});
    CHECK(*aa.expect == "sha256:x");
    const Parser apply = [](int c, char** v) { parse_workspace_args("apply", c, v); };
    CHECK(error_of(apply, {"apply", "RUN", "src"}).starts_with("takes one RUN, got also \"src\""));
}

TEST_CASE("ca, key, budget: help from the table, suggestions, what each action takes") {
    check_help(ca_help(), ca_option_specs());
    check_help(key_help(), key_option_specs());
    check_help(budget_help(), budget_option_specs());
    CHECK(budget_help().find(std::string(config::default_gateway_socket)) != std::string::npos);
    const Parser ca = [](int c, char** v) { parse_state_dir_args("corral ca", c, v); };
    check_suggestions(ca, ca_option_specs(), {"init"});
    CHECK(error_of(ca, {"init", "--state-dir", ""}) == "--state-dir: empty path; expected a directory");
    CHECK(error_of(ca, {"init", "x"}) == "unexpected argument \"x\"; expected: --state-dir DIR");
    const Parser budget = [](int c, char** v) { parse_budget_args(c, v); };
    check_suggestions(budget, budget_option_specs(), {"show", "w"});
    CHECK(error_of(budget, {"show"}) == "missing WORKER");
    CHECK(error_of(budget, {"show", "w", "v"}) == "unexpected argument \"v\"; expected: WORKER [--gateway unix:PATH]");
    CHECK(error_of(budget, {"show", "w", "--gateway", "tcp:1"}) == "--gateway: got \"tcp:1\", expected unix:/ABSOLUTE/PATH of a `corral gateway` socket");
    Argv a({"show", "--gateway=unix:/s", "w"});
    BudgetArgs b = parse_budget_args(a.argc(), a.argv());
    CHECK(b.worker == "w");
    CHECK(b.socket == "/s");
}

TEST_CASE("doctor, gateway, journal, validate: help from the table, suggestions") {
    check_help(doctor_help(), doctor_option_specs());
    check_help(gateway_help(), gateway_option_specs());
    check_help(journal_help(), journal_option_specs());
    check_help(validate_help(), validate_option_specs());
    check_suggestions([](int c, char** v) { parse_doctor_args(c, v); }, doctor_option_specs(), {"doctor"});
    check_suggestions([](int c, char** v) { parse_gateway_args(c, v); }, gateway_option_specs(), {"gateway"});
    check_suggestions([](int c, char** v) { parse_journal_args(c, v); }, journal_option_specs(), {"verify", "j"});
    check_suggestions([](int c, char** v) { parse_validate_args(c, v); }, validate_option_specs(), {"validate"});
    const Parser gw = [](int c, char** v) { parse_gateway_args(c, v); };
    CHECK(error_of(gw, {"gateway", "--org"}) == "--org: missing value; see `corral gateway --help`");
    CHECK(error_of(gw, {"gateway"}) == "--config FILE or --org DIR is required");
    CHECK(error_of(gw, {"gateway", "--config", "x", "--threads", "0"}) == "--threads \"0\": expected a number from 1 to 64");
    const Parser journal = [](int c, char** v) { parse_journal_args(c, v); };
    CHECK(error_of(journal, {"verify"}) == "missing FILE (a run's journal.jsonl)");
    CHECK(error_of(journal, {"verify", "a", "b"}) == "one FILE only; got \"a\" and \"b\"");
    CHECK(error_of([](int c, char** v) { parse_validate_args(c, v); }, {"validate"}) == "--config DIR is required");
}

TEST_CASE("image and exec: help from the table, suggestions; exec's ID and command") {
    check_help(image_help(), image_option_specs());
    check_help(exec_help(), exec_option_specs());
    check_suggestions([](int c, char** v) { parse_image_args(c, v); }, image_option_specs(), {"image", "ls"});
    check_suggestions([](int c, char** v) { parse_exec_args(c, v); }, exec_option_specs(), {"exec"});
    const Parser exec = [](int c, char** v) { parse_exec_args(c, v); };
    CHECK(error_of(exec, {"exec", "-it", "id"}) == "corral exec has no -it; use --tty for a terminal");
    CHECK(error_of(exec, {"exec", "--role", "admin"}) == "--role admin: expected agent, service or verifier");
    Argv a({"exec", "--tty", "id", "sh", "--tty", "-c", "x"});
    ExecArgs x = parse_exec_args(a.argc(), a.argv());
    CHECK(x.key == "id");
    CHECK(x.request.tty);
    CHECK(x.request.argv == std::vector<std::string>{"sh", "--tty", "-c", "x"});
    Argv b({"image", "--json", "ls", "--state-dir", "/s"});
    ImageArgs i = parse_image_args(b.argc(), b.argv());
    CHECK(i.verb == "ls");
    CHECK(i.json);
    CHECK(i.state_dir == "/s");
}

TEST_CASE("the list gen_docs reads: every subcommand but help, run's table first, each option of a table once") {
    std::set<std::string_view> covered;
    for (const auto& t : command_tables()) {
        covered.insert(t.subcommand);
        std::set<std::string_view> names;
        for (const auto& o : t.options()) CHECK_MESSAGE(names.insert(o.name).second, o.name);
    }
    for (const auto& s : kSubcommandInfo)
        if (s.name != "help") CHECK_MESSAGE(covered.count(s.name) == 1, s.name);
    CHECK(command_tables().front().options().data() == run::run_option_specs().data());
    // session start: run's options less a command's own, and --name.
    std::set<std::string_view> start;
    for (const auto& o : session_start_option_specs()) start.insert(o.name);
    CHECK(start.count("--name") == 1);
    CHECK(start.count("--memory") == 1);
    CHECK(start.count("--prompt") == 0);
    CHECK(start.count("--tty") == 0);
}

TEST_CASE("Docker's subcommands corral has not are answered with what it has; no habit hides a subcommand") {
    CHECK(docker_subcommand_habit("images").find("`corral image ls`") != std::string_view::npos);
    CHECK(docker_subcommand_habit("rmi").find("`corral image rm NAME`") != std::string_view::npos);
    CHECK(docker_subcommand_habit("rm").find("`corral prune`") != std::string_view::npos);
    CHECK(docker_subcommand_habit("pull").find("skopeo copy docker://IMAGE") != std::string_view::npos);
    CHECK(docker_subcommand_habit("pull").find("corral image import") != std::string_view::npos);
    CHECK(docker_subcommand_habit("cp").find("--bind SRC:DST") != std::string_view::npos);
    CHECK(docker_subcommand_habit("run").empty());
    CHECK(docker_subcommand_habit("frobnicate").empty());
    for (const auto& h : kDockerSubcommandHabits) {
        CAPTURE(h.name);
        for (const auto& s : kSubcommandInfo) CHECK(h.name != s.name);
        // Each answer names a corral command or option that exists.
        bool names_one = false;
        for (const auto& s : kSubcommandInfo)
            names_one = names_one || h.answer.find("corral " + std::string(s.name)) != std::string_view::npos;
        CHECK((names_one || h.answer.find("--") != std::string_view::npos));
    }
}
