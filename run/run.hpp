// run/run.hpp — one run's life as named phases, the same object for
// `corral run` and for a session (another body):
//
//   reserve  → its id, run dir and run.json ("running")          Run::reserve
//   slot     → one of the state dir's max_boxes                  Run::hold_box_slot
//   admit    → its signed journal opened                         Run::open_journal
//   resolve  → the final plan: inputs read, resolve_run, the egress
//              prepared, the agent's CLI and the trust files      Run::resolve
//   admit    → the admission record, durable before the command  Run::admit
//   launch   → the sandbox, the egress started at its hook point Run::launch
//   body     → the command (or a session's execs), supervised    Run::serve_body
//   teardown → the box torn down and verified, the outcome        Run::tear_down
//   finish   → the terminal record, the final run.json, the line Run::finish
//
// Each phase either lets the run go on or ends it with a RunEnd (corral's
// exit status and the record's outcome); nothing is mapped from exceptions
// anywhere else. The steps that touch the kernel and the host (directories,
// the journal's key, the rootfs, clone3, the cgroup) are behind RunSteps:
// host_run_steps() are the real ones, tests put their own in place.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "journal/shared_journal.hpp"
#include "run/workspace_review.hpp"
#include "run/agent_run.hpp"
#include "run/egress.hpp"
#include "run/request.hpp"
#include "run/resolve.hpp"
#include "supervisor/outcome.hpp"
#include "supervisor/run_record.hpp"
#include "supervisor/sandbox.hpp"

namespace corral::run {

// How a run ended: corral's exit status (docs/architecture.md "Exit status")
// and run.json's "outcome".
struct RunEnd {
    int status = 0;
    supervisor::Outcome outcome = supervisor::Outcome::exited;
};

// What a session's body is given besides its box.
struct BodyContext {
    std::function<void()> record_now;           // run.json again, with what is known now
    const AgentRun* agent = nullptr;            // a session's agent (exec --prompt), when it has one
    std::string no_agent;                       // else why not
    journal::SharedJournal* journal = nullptr;  // the run's journal: a session's execs are recorded in it
    // --tty: what is asked at the run's terminal (the approvals), or null.
    supervisor::QuestionSource* questions = nullptr;
    // The gateway's refusals as they happen, for a session's execs' callers.
    RefusalListeners* refusals = nullptr;
    // A session's reviewed workspace: records an apply made while it runs
    // (SessionServerOptions::workspace_applied); null without --review.
    std::function<std::string(const nlohmann::json& applied)> workspace_applied;
};

// What runs at the hook point: by default the request's command
// (start_command + supervise); a session serves its execs instead until it
// is stopped.
struct RunBody {
    const char* prefix = "corral run";  // every line the run prints starts "PREFIX: "
    std::function<supervisor::SuperviseResult(supervisor::Sandbox& box, int interrupt_fd, const BodyContext& context)>
        serve;
};

// Where a reserved run lives.
struct RunPlace {
    std::string state_dir;  // checked (or made): root's alone
    std::string run_dir;    // its real path
    std::string id;
};

// What the box is, once launched, for run.json.
struct BoxFacts {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<std::string> idmapped_binds, unmapped_binds;
    Fd review_upper;  // --review: the box's upper layer (supervisor::Sandbox::take_review_upper)
};

// The steps of a run that touch the host. Each throws what the function it
// wraps throws; the Run maps that to its end.
class RunSteps {
public:
    virtual ~RunSteps() = default;
    // The state dir checked (or made), the run dir, the run's id reserved.
    virtual RunPlace reserve(const RunRequest& request) = 0;
    virtual void write_record(const std::string& run_dir, const supervisor::RunRecord& record,
                              supervisor::RecordSync sync) = 0;
    // One line per lost run of the state dir given its recovered record.
    virtual std::vector<std::string> recover_lost_runs(const std::string& state_dir) = 0;
    virtual void mark_ended(const std::string& state_dir, const std::string& id) = 0;
    // The box's slot of the state dir's max_boxes (run/box_slots.hpp), held
    // until the steps are destroyed; throws UsageError when none is free
    // within request.capacity_wait.
    // `tell`: the line saying it waits (--wait), when it does.
    virtual void hold_box_slot(const RunRequest& request, const RunPlace& place, const supervisor::Tell& tell) = 0;
    virtual std::unique_ptr<journal::SharedJournal> open_journal(const RunPlace& place) = 0;
    // What resolve_run needs from the host, read once.
    virtual RunInputs read_inputs(const RunRequest& request, const RunPlace& place) = 0;
    // The host's share of the resolve phase after resolve_run: the run can
    // start, its egress, the agent's CLI and home, the trust files.
    virtual void check_can_start(const RunRequest& request, const RunInputs& inputs, const RunPlan& plan) = 0;
    virtual std::unique_ptr<Egress> make_egress(const RunPlan& plan) = 0;
    virtual AgentRun prepare_agent(const RunRequest& request, const RunInputs& inputs, const RunPlan& plan) = 0;
    virtual TrustFiles find_trust(const RunPlan& plan, const std::string& ca_pem) = 0;
    // The worker's stdio MCP servers' boxes (run/mcp_servers.hpp), before
    // the agent's: launched and kept by the steps, torn down with the
    // agent's box (teardown, or a failed launch). Throws
    // supervisor::SandboxSetupError (with the teardown of what existed).
    virtual std::shared_ptr<StdioServerBoxes> launch_mcp_servers(const RunPlan& plan, const supervisor::Tell& tell) = 0;
    // clone3 and the init's setup; `at_hook` runs while the init builds the
    // rootfs. Throws supervisor::SandboxSetupError after the clone.
    // `tell`: the launch's lines for the user, as they happen (supervisor::Tell).
    virtual BoxFacts launch(supervisor::SandboxSpec spec, const supervisor::WhileInitBuilds& at_hook,
                            const supervisor::Tell& tell) = 0;
    virtual supervisor::SuperviseResult serve(const RunBody& body, int interrupt_fd, const BodyContext& context) = 0;
    virtual supervisor::TeardownReport teardown(supervisor::CgroupUsage* usage) = 0;
};

// The real steps: directories, the journal, the rootfs and the kernel.
std::unique_ptr<RunSteps> host_run_steps();

class Run {
public:
    Run(const RunRequest& request, RunBody body, RunSteps& steps);
    ~Run();
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    // Every phase in order; `interrupt_fd` is the signalfd of SIGINT, SIGTERM
    // and SIGHUP (supervisor::OutputSinks), -1 for none.
    int execute(int interrupt_fd);

    const supervisor::RunRecord& record() const { return record_; }
    // The final plan (run/final_plan.hpp) once the resolve phase made it.
    const RunPlan* plan() const { return plan_ ? &*plan_ : nullptr; }

private:
    using Next = std::optional<RunEnd>;  // nullopt: go on to the next phase

    Next reserve();
    Next hold_box_slot();
    Next open_journal();
    Next resolve();
    std::string prepare_agent(const RunPlan& resolved);
    Next admit();
    Next launch();
    Next serve_body(int interrupt_fd);
    RunEnd tear_down(RunEnd so_far);
    int finish(RunEnd end);

    void say(const std::string& line);
    void update_record_fields();
    void write_running_record();
    void record_stop();
    // A session's apply made while it runs, recorded where the supervisor
    // alone writes until the end: review.json and the journal. "" or why not.
    std::string record_live_apply(const nlohmann::json& applied);
    RunEnd judge_command();

    const RunRequest& request_;
    RunBody body_;
    RunSteps& steps_;
    supervisor::RunRecord record_;
    RunPlace place_;
    std::string stdout_log_name_ = "stdout.log";
    // Declared before the resolution: the embedded gateway's ledger writes
    // into it until its egress is gone.
    std::unique_ptr<journal::SharedJournal> journal_;
    // What the resolve phase made, each kept as soon as it exists: run.json
    // names the worker, image and gateway of a run refused half-way too.
    // `resolved_` is resolve_run's plan; `plan_`, made from it by finish_plan
    // when the phase ends, is const: nothing after the phase writes into it.
    // The inputs hold the image's hold for the whole run.
    std::optional<RunInputs> inputs_;
    std::optional<RunPlan> resolved_;
    std::optional<const RunPlan> plan_;
    RefusalListeners refusal_listeners_;  // a session's execs'; declared first: it outlives egress_'s watcher
    std::unique_ptr<Egress> egress_;
    std::optional<AgentRun> agent_;
    bool decisions_journalled_ = false;  // the embedded gateway's ledger lines are decision records here
    supervisor::SuperviseResult result_;
    supervisor::CgroupUsage usage_;
    // --review: the box's upper layer and the review's record, from the
    // resolve phase (the plan borrows the layer's fd) to the end.
    std::optional<WorkspaceReview> review_;
    std::mutex review_mu_;  // review_ between a session's request threads and the end
};

// `corral run` and `corral session start`'s supervisor: refuses without root,
// makes this process a supervisor (stdio open, SIGPIPE ignored, the stop
// signals read from a signalfd) and runs the request with the real steps.
int run_as_supervisor(const RunRequest& request, RunBody body);

}  // namespace corral::run
