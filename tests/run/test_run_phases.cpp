// Unit tests (no root) of a run's phases (run/run.hpp): every way a run can
// end, and what each end leaves behind (corral's status, run.json's outcome
// and messages, the journal's records, the live entry cleared), with the
// kernel-facing steps replaced by a script. The directories, run.json and
// the signed journal are real files in a scratch directory.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "run/agent_run.hpp"
#include "run/final_plan.hpp"
#include "run/outcome.hpp"
#include "run/run.hpp"
#include "run/run_journal.hpp"
#include "run/trust.hpp"
#include "supervisor/setup_step.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

using namespace corral;
using supervisor::Outcome;
using test::TempDir;

// An egress that serves nothing: the run's phases call it as they would the
// embedded gateway; it never starts (no box exists to start it in).
class IdleEgress final : public run::Egress {
public:
    std::string prepare() override { return ""; }
    bool journal_decisions(gateway::LedgerMirror) override { return true; }
    void serve_stdio_servers(std::shared_ptr<run::StdioServerBoxes>) override {}
    nlohmann::json record_fields() const override { return {{"mode", "scripted"}}; }
    std::optional<gateway::metering::MeterTotals> model_totals() const override { return std::nullopt; }

protected:
    run::ConnectionHandler connection_handler() override { return {}; }
    void drain() override {}
    void run_loop() override {}
    std::vector<gateway::RefusalNotice> refusals_so_far() override { return {}; }
    gateway::GrantsFrom grants_from() const override { return gateway::GrantsFrom::run; }
    bool traffic_open() const override { return false; }
    run::CaptureEndpoint capture_endpoint() override { return {}; }  // the scripted box never captures
    const gateway::Identity& identity() const override { return id_; }
    gateway::Identity id_{"w", "r"};
};

// What the scripted trust step finds: corral's CA and the proxy's variables.
run::TrustFiles scripted_trust() {
    return run::TrustFiles{{{"/etc/corral/ca.crt", "-----BEGIN CERTIFICATE-----\n", 0644}},
                           {{"HTTPS_PROXY", "http://127.0.0.1:3128"}, {"SSL_CERT_FILE", "/etc/corral/ca.crt"}}};
}

// Where each step fails, if it does, and what the box "did".
struct Script {
    bool reserve_fails = false;
    bool journal_fails = false;
    std::function<void()> check_can_start;  // throws to refuse the run
    std::function<void()> find_trust;       // throws to refuse the run once its egress exists
    std::function<void()> launch;           // throws to fail the launch
    std::function<void()> launch_mcp_servers;   // throws to fail the stdio servers' launch
    std::vector<std::string> launch_notes;  // what the launch had to tell the user
    std::function<void()> body_throws;
    supervisor::SuperviseResult result;
    supervisor::TeardownReport teardown;
    supervisor::CgroupUsage usage;
    bool final_record_fails = false;
};

class ScriptedSteps final : public run::RunSteps {
public:
    ScriptedSteps(const Script& script, const TempDir& dir) : script_(script), dir_(dir) {}

    run::RunPlace reserve(const run::RunRequest&) override {
        if (script_.reserve_fails) throw std::runtime_error("--state-dir /nowhere: not a directory");
        run::RunPlace place{dir_ / "state", dir_ / "state/runs/r1", "r1"};
        std::filesystem::create_directories(place.run_dir);
        ::chmod(place.state_dir.c_str(), 0700);
        return place;
    }
    void write_record(const std::string& run_dir, const supervisor::RunRecord& record,
                      supervisor::RecordSync sync) override {
        if (script_.final_record_fails && record.state == "finished") throw std::runtime_error("disk full");
        supervisor::write_run_record(run_dir, record, sync);
        ++records_written;
    }
    std::vector<std::string> recover_lost_runs(const std::string&) override { return {}; }
    void mark_ended(const std::string&, const std::string& id) override { ended.push_back(id); }
    void hold_box_slot(const run::RunRequest&, const run::RunPlace&, const supervisor::Tell&) override {}
    std::unique_ptr<journal::SharedJournal> open_journal(const run::RunPlace& place) override {
        if (script_.journal_fails) throw std::runtime_error("the journal signing key must be root's");
        return run::open_run_journal(place.state_dir, place.run_dir);
    }
    run::RunInputs read_inputs(const run::RunRequest&, const run::RunPlace& place) override {
        run::RunInputs in;
        in.run_id = place.id;
        in.run_dir = place.run_dir;
        in.state_dir = place.state_dir;
        return in;
    }
    void check_can_start(const run::RunRequest&, const run::RunInputs&, const run::RunPlan& plan) override {
        resolved_spec = plan.spec;
        if (script_.check_can_start) script_.check_can_start();
    }
    std::unique_ptr<run::Egress> make_egress(const run::RunPlan&) override { return std::make_unique<IdleEgress>(); }
    run::AgentRun prepare_agent(const run::RunRequest&, const run::RunInputs&, const run::RunPlan&) override {
        throw std::logic_error("no agent in these runs");
    }
    run::TrustFiles find_trust(const run::RunPlan&, const std::string&) override {
        if (script_.find_trust) script_.find_trust();
        return scripted_trust();
    }
    std::shared_ptr<run::StdioServerBoxes> launch_mcp_servers(const run::RunPlan&, const supervisor::Tell&) override {
        if (script_.launch_mcp_servers) script_.launch_mcp_servers();
        return nullptr;
    }
    run::BoxFacts launch(supervisor::SandboxSpec spec, const supervisor::WhileInitBuilds&,
                         const supervisor::Tell& tell) override {
        launched_spec = std::move(spec);
        for (const auto& line : script_.launch_notes) tell(line);
        if (script_.launch) script_.launch();
        return run::BoxFacts{1900000000, 1900000000, {}, {}};
    }
    supervisor::SuperviseResult serve(const run::RunBody&, int, const run::BodyContext& context) override {
        served = true;
        CHECK(context.journal != nullptr);
        if (script_.body_throws) script_.body_throws();
        return script_.result;
    }
    supervisor::TeardownReport teardown(supervisor::CgroupUsage* usage) override {
        torn_down = true;
        *usage = script_.usage;
        return script_.teardown;
    }

    std::optional<supervisor::SandboxSpec> resolved_spec, launched_spec;
    bool served = false, torn_down = false;
    int records_written = 0;
    std::vector<std::string> ended;

private:
    const Script& script_;
    const TempDir& dir_;
};

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// One run of `-- /bin/true` through the phases with `script`.
struct Ended {
    int status;
    supervisor::RunRecord record;
    std::string run_json, journal;
};

struct PhaseRun {
    Script script;
    TempDir dir{"corral-run-phases"};
    ScriptedSteps steps{script, dir};

    Ended go() {
        run::RunRequest request;
        request.command = {"/bin/true"};
        request.quiet = true;
        run::Run r(request, run::RunBody{}, steps);
        const int status = r.execute(-1);
        return Ended{status, r.record(), read_text(dir / "state/runs/r1/run.json"),
                        read_text(dir / "state/runs/r1/journal.jsonl")};
    }
};

int exited(int code) { return (code & 0xff) << 8; }

bool has_message(const supervisor::RunRecord& r, const std::string& part) {
    for (const auto& m : r.messages)
        if (m.find(part) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_CASE("a run whose command exits 3 ends 3, exited, with admission, started and terminal records signed") {
    PhaseRun p;
    p.script.result.wait_status = exited(3);
    auto o = p.go();
    CHECK(o.status == 3);
    CHECK(o.record.outcome == Outcome::exited);
    CHECK(o.run_json.find("\"state\": \"finished\"") != std::string::npos);
    CHECK(o.journal.find("\"admission\"") != std::string::npos);
    CHECK(o.journal.find("\"started\"") != std::string::npos);
    CHECK(o.journal.find("\"terminal\"") != std::string::npos);
    CHECK(p.steps.ended == std::vector<std::string>{"r1"});
    CHECK(p.steps.torn_down);
    CHECK(o.record.uid == 1900000000u);
}

TEST_CASE("what the launch, the body and the teardown had to say is said once each, in order, and kept in run.json") {
    PhaseRun p;
    p.script.result.wait_status = exited(0);
    p.script.launch_notes = {"warning: /workspace: bound without ID mapping", "stale cleanup: removed run x"};
    p.script.result.notes = {"warning: stdout.log reached --log-limit (65536 bytes)"};
    p.script.teardown.notes = {"warning: reading the run's cgroup usage: ENOENT"};
    auto o = p.go();
    CHECK(o.status == 0);
    std::vector<std::string> said;
    for (const auto& m : o.record.messages)
        if (m.rfind("warning: ", 0) == 0 || m.rfind("stale cleanup: ", 0) == 0) said.push_back(m);
    CHECK(said == std::vector<std::string>{"warning: /workspace: bound without ID mapping", "stale cleanup: removed run x",
                                           "warning: stdout.log reached --log-limit (65536 bytes)",
                                           "warning: reading the run's cgroup usage: ENOENT"});
    CHECK(o.run_json.find("reached --log-limit") != std::string::npos);
}

TEST_CASE("what a failed launch told before it failed, and its teardown's notes, are said with its error") {
    PhaseRun p;
    p.script.launch_notes = {"warning: uid 12 is used by processes outside corral; skipping it"};
    supervisor::TeardownReport clean;
    clean.notes = {"stale cleanup: removed run y"};
    p.script.launch = [clean] {
        supervisor::SandboxSetupError e(supervisor::SetupStep::wait_for_supervisor, EIO, "setting up the sandbox: boom");
        e.attach_teardown(clean);
        throw e;
    };
    auto o = p.go();
    CHECK(o.status == 125);
    CHECK(has_message(o.record, "setting up the sandbox: boom"));
    CHECK(has_message(o.record, "stale cleanup: removed run y"));
    CHECK(has_message(o.record, "warning: uid 12 is used by processes outside corral"));
}

TEST_CASE("the spec the launch step receives is the final plan: finish_plan of resolve_run's, with nothing written after") {
    PhaseRun p;
    p.script.result.wait_status = exited(0);
    run::RunRequest request;
    request.command = {"/bin/true"};
    request.quiet = true;
    request.env = {{"FROM_CLI", "1"}};
    run::Run r(request, run::RunBody{}, p.steps);
    REQUIRE(r.execute(-1) == 0);
    REQUIRE(p.steps.launched_spec);
    REQUIRE(r.plan() != nullptr);
    // The same plan, made again from the same request, inputs and facts.
    run::RunInputs in;
    in.run_id = "r1";
    in.run_dir = p.dir / "state/runs/r1";
    in.state_dir = p.dir / "state";
    run::LateFacts late;
    late.trust = scripted_trust();
    const run::RunPlan expected = run::finish_plan(run::resolve_run(request, in), late);
    const supervisor::SandboxSpec& launched = *p.steps.launched_spec;
    for (const supervisor::SandboxSpec* spec : {&launched, &r.plan()->spec}) {
        CHECK(spec->argv == expected.spec.argv);
        CHECK(spec->env == expected.spec.env);
        CHECK(spec->hostname == expected.spec.hostname);
        CHECK(spec->run_dir == expected.spec.run_dir);
        CHECK(spec->rootfs.source == expected.spec.rootfs.source);
        CHECK(spec->rootfs.protected_dirs == expected.spec.rootfs.protected_dirs);
        REQUIRE(spec->rootfs.extra_files.size() == 1);
        CHECK(spec->rootfs.extra_files[0].path_in_box == "/etc/corral/ca.crt");
    }
    // Composed once, in one order: the proxy's variables, then --env.
    CHECK(launched.env == run::EnvList{{"HTTPS_PROXY", "http://127.0.0.1:3128"},
                                       {"SSL_CERT_FILE", "/etc/corral/ca.crt"},
                                       {"FROM_CLI", "1"}});
    // resolve_run's own plan has no environment yet: the composition is finish_plan's alone.
    CHECK(run::resolve_run(request, in).spec.env.empty());
}

TEST_CASE("a run that cannot be reserved ends 125 and leaves no record") {
    PhaseRun p;
    p.script.reserve_fails = true;
    auto o = p.go();
    CHECK(o.status == run::kExitSetup);
    CHECK(o.run_json.empty());
    CHECK(p.steps.ended.empty());
    CHECK(!p.steps.launched_spec);
}

TEST_CASE("a journal that cannot be opened ends the run 125, setup_failed, recorded and its live entry cleared") {
    PhaseRun p;
    p.script.journal_fails = true;
    auto o = p.go();
    CHECK(o.status == run::kExitSetup);
    CHECK(o.record.outcome == Outcome::setup_failed);
    CHECK(has_message(o.record, "journal: the journal signing key must be root's"));
    CHECK(o.run_json.find("setup_failed") != std::string::npos);
    CHECK(p.steps.ended == std::vector<std::string>{"r1"});
    CHECK(!p.steps.launched_spec);
}

TEST_CASE("refusals while resolving: an agent CLI not found is 127, a bad prompt 2, anything else 125; nothing launches") {
    struct Case {
        std::function<void()> refuse;
        int status;
        Outcome outcome;
    };
    for (const Case& c : {Case{[] { throw run::AgentProgramNotFound("claude: not in the rootfs"); }, run::kExitNotFound,
                               Outcome::not_found},
                          Case{[] { throw run::PromptError("--prompt: empty"); }, run::kExitUsage, Outcome::usage_error},
                          Case{[] { throw std::runtime_error("ANTHROPIC_API_KEY is not set"); }, run::kExitSetup,
                               Outcome::setup_failed}}) {
        PhaseRun p;
        p.script.check_can_start = c.refuse;
        auto o = p.go();
        CHECK(o.status == c.status);
        CHECK(o.record.outcome == c.outcome);
        CHECK(!p.steps.launched_spec);
        CHECK(!p.steps.torn_down);
        CHECK(o.journal.find("\"terminal\"") != std::string::npos);
        CHECK(o.journal.find("\"admission\"") == std::string::npos);
    }
}

TEST_CASE("a run refused once its egress exists still records that egress in run.json") {
    PhaseRun p;
    p.script.find_trust = [] { throw std::runtime_error("/etc/ssl/certs: unreadable"); };
    auto o = p.go();
    CHECK(o.status == run::kExitSetup);
    CHECK(o.run_json.find("\"mode\": \"scripted\"") != std::string::npos);
    CHECK(has_message(o.record, "/etc/ssl/certs: unreadable"));
}

TEST_CASE("a launch that fails before the clone is 125; after it, an unclean teardown makes it 126") {
    {
        PhaseRun p;
        p.script.launch = [] { throw std::runtime_error("no free UID range"); };
        auto o = p.go();
        CHECK(o.status == run::kExitSetup);
        CHECK(o.record.outcome == Outcome::setup_failed);
        CHECK(!p.steps.served);
    }
    {
        PhaseRun p;
        p.script.launch = [] {
            supervisor::SandboxSetupError e(supervisor::SetupStep{}, EPERM, "setup step mount_proc failed");
            supervisor::TeardownReport report;
            report.problems = {"cgroup not empty: 1 process"};
            e.attach_teardown(report);
            throw e;
        };
        auto o = p.go();
        CHECK(o.status == run::kExitTeardown);
        CHECK(o.record.outcome == Outcome::teardown_failed);
        CHECK(has_message(o.record, "teardown failed: cgroup not empty: 1 process"));
    }
}

TEST_CASE("stdio MCP servers' boxes that fail to launch end the run before the agent's box: 126 when unclean") {
    PhaseRun p;
    p.script.launch_mcp_servers = [] {
        supervisor::SandboxSetupError e(supervisor::SetupStep{}, EPERM, "MCP server files's box: setup step mount_proc failed");
        supervisor::TeardownReport report;
        run::merge_teardown(report, supervisor::TeardownReport{{{"cgroup_empty", false, "1 process"}}, {"cgroup not empty: 1 process"}, {}},
                            "files");
        e.attach_teardown(report);
        throw e;
    };
    auto o = p.go();
    CHECK(o.status == run::kExitTeardown);
    CHECK(o.record.outcome == Outcome::teardown_failed);
    CHECK(has_message(o.record, "MCP server files's box: setup step mount_proc failed"));
    CHECK(has_message(o.record, "teardown failed: mcp files: cgroup not empty: 1 process"));
    REQUIRE(o.record.teardown.steps.size() == 1);
    CHECK(o.record.teardown.steps[0].step == "mcp files: cgroup_empty");
    CHECK(!p.steps.launched_spec);
    CHECK(!p.steps.served);
}

TEST_CASE("a body that fails is 125 and the box is still torn down; an unclean teardown outranks any end") {
    {
        PhaseRun p;
        p.script.body_throws = [] { throw std::runtime_error("epoll_wait: EBADF"); };
        auto o = p.go();
        CHECK(o.status == run::kExitSetup);
        CHECK(o.record.outcome == Outcome::setup_failed);
        CHECK(p.steps.torn_down);
    }
    {
        PhaseRun p;
        p.script.result.wait_status = exited(0);
        p.script.teardown.problems = {"uid 1900000000 still has a process"};
        auto o = p.go();
        CHECK(o.status == run::kExitTeardown);
        CHECK(o.record.outcome == Outcome::teardown_failed);
    }
}

TEST_CASE("a deadline is 124 with its stop recorded; an OOM kill with no report is 137, killed, SIGKILL") {
    {
        PhaseRun p;
        p.script.result.deadline_hit = true;
        p.script.result.stop_grace = std::chrono::milliseconds(0);
        p.script.result.wait_status = SIGKILL;
        auto o = p.go();
        CHECK(o.status == run::kExitDeadline);
        CHECK(o.record.outcome == Outcome::deadline);
        REQUIRE(o.record.stop);
        CHECK(o.record.stop->cause == "deadline");
        CHECK(has_message(o.record, "reached; sandbox killed"));
    }
    {
        PhaseRun p;
        p.script.usage.oom_killed = true;
        auto o = p.go();
        CHECK(o.status == 128 + SIGKILL);
        CHECK(o.record.outcome == Outcome::killed);
        CHECK(o.record.signal == SIGKILL);
        CHECK(has_message(o.record, "memory limit"));
    }
}

TEST_CASE("a run whose final run.json cannot be written is not a success") {
    PhaseRun p;
    p.script.result.wait_status = exited(0);
    p.script.final_record_fails = true;
    auto o = p.go();
    CHECK(o.status == run::kExitSetup);
    CHECK(p.steps.ended == std::vector<std::string>{"r1"});
}
