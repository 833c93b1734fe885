// run/run.cpp — the phases of a run (run/run.hpp), each ending the run or
// letting it go on. Every failure ends in exactly one "PREFIX: ..." line per
// problem on stderr, kept in run.json's "messages" too, so the record of a
// refused or failed run says why.
#include "run/run.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "base/log.hpp"
#include "base/parse.hpp"
#include "base/terminal_text.hpp"
#include "run/final_plan.hpp"
#include "run/outcome.hpp"
#include "run/prepare.hpp"
#include "run/run_journal.hpp"

namespace corral::run {

namespace {

using steady = std::chrono::steady_clock;
using supervisor::Outcome;

std::string ms_since(steady::time_point t) {
    return std::to_string(std::chrono::duration<double, std::milli>(steady::now() - t).count()) + "ms";
}

RunEnd setup_failed() { return RunEnd{kExitSetup, Outcome::setup_failed}; }

// How a stop (the deadline, a signal, `corral stop`) went, in the operator's words.
std::string stop_line(const supervisor::StopRecord& stop, const std::optional<std::chrono::milliseconds>& timeout,
                      int interrupted_by) {
    const std::string how = stop_how(stop.grace, stop.killed, stop.second_signal, "sandbox");
    if (stop.cause == "deadline")
        return "deadline of " + (timeout ? format_duration(*timeout) : std::string("?")) + " reached; " + how;
    if (stop.cause == "corral stop") return "stopped by `corral stop`; " + how;
    return std::string("interrupted by SIG") + sigabbrev_np(interrupted_by) + "; " + how;
}

}  // namespace

Run::Run(const RunRequest& request, RunBody body, RunSteps& steps)
    : request_(request), body_(std::move(body)), steps_(steps) {}

Run::~Run() = default;

void Run::say(const std::string& line) {
    std::fprintf(stderr, "%s: %s\n", body_.prefix, terminal_text(line).c_str());
    record_.messages.push_back(line);
}

void Run::update_record_fields() {
    record_.extra = run_record_fields(
        request_, record_.id,
        RunSoFar{inputs_ ? &*inputs_ : nullptr, plan_ ? &*plan_ : resolved_ ? &*resolved_ : nullptr, egress_.get(),
                 agent_ ? &*agent_ : nullptr});
}

// run.json while the run is alive: what is known so far, "state": "running".
void Run::write_running_record() {
    update_record_fields();
    steps_.write_record(place_.run_dir, record_,
                        request_.sync_record ? supervisor::RecordSync::durable : supervisor::RecordSync::visible);
}

int Run::execute(int interrupt_fd) {
    if (auto end = reserve()) return end->status;  // no run.json to finish
    for (auto phase : {&Run::hold_box_slot, &Run::open_journal, &Run::resolve, &Run::admit, &Run::launch})
        if (auto end = (this->*phase)()) return finish(*end);
    const Next body_failed = serve_body(interrupt_fd);
    return finish(tear_down(body_failed.value_or(RunEnd{})));
}

// The run's id is reserved by its entry in STATE_DIR/runs (run/run_index.hpp):
// concurrent runs never share one. run.json says "running" from here on.
Run::Next Run::reserve() {
    record_.started_at = std::chrono::system_clock::now();
    try {
        place_ = steps_.reserve(request_);
        record_.id = place_.id;
        record_.supervisor = supervisor::this_supervisor();
    } catch (const std::exception& e) {
        say(e.what());
        return setup_failed();
    }
    record_requested(record_, request_, nullptr);
    try {
        write_running_record();
    } catch (const std::exception& e) {
        say(std::string("writing run.json: ") + e.what());
        return setup_failed();
    }
    for (const auto& line : steps_.recover_lost_runs(place_.state_dir)) say(line);
    return std::nullopt;
}

// One of the state dir's max_boxes (run/box_slots.hpp), before anything
// else of the run exists: a run past the limit ends here, recorded.
Run::Next Run::hold_box_slot() {
    try {
        steps_.hold_box_slot(request_, place_, [this](const std::string& line) { say(line); });
    } catch (const std::exception& e) {
        say(e.what());
        return setup_failed();
    }
    return std::nullopt;
}

// RUN_DIR/journal.jsonl (docs/journal.md): its admission is durable before
// the command starts, its terminal record before corral exits.
Run::Next Run::open_journal() {
    const auto t_journal = steady::now();
    try {
        journal_ = steps_.open_journal(place_);
        log::debug("timing: journal: key loaded, journal created " + ms_since(t_journal));
    } catch (const std::exception& e) {
        say(std::string("journal: ") + e.what());
        return setup_failed();
    }
    if (!request_.quiet)
        std::fprintf(stderr, "%s: %s %s, run dir %s\n", body_.prefix, request_.session ? "session" : "run",
                     record_.id.c_str(), place_.run_dir.c_str());
    return std::nullopt;
}

// Everything that can refuse the run (a missing credential, a bad prompt, an
// agent CLI not in the rootfs) fails here, before anything starts. The plan
// is final when this phase ends: nothing after it writes into it.
Run::Next Run::resolve() {
    const auto t_prep = steady::now();
    try {
        inputs_ = steps_.read_inputs(request_, place_);
        if (inputs_->org)
            for (const auto& w : inputs_->org->warnings) say("warning: " + w.text());
        resolved_ = resolve_run(request_, *inputs_);
        steps_.check_can_start(request_, *inputs_, *resolved_);
        if (const auto& rootfs = resolved_->spec.rootfs; rootfs.review)
            review_.emplace(begin_review(rootfs.workspace.value_or(""), rootfs.scratch_size_bytes, place_.run_dir));
        egress_ = steps_.make_egress(*resolved_);
        if (request_.tty) {
            egress_->hold_refusal_lines_until_stop();  // printed once the terminal is the caller's again
            egress_->ask_approvals_at_terminal();
        }
        egress_->tell_refusals_to([prefix = body_.prefix](const std::string& line) {
            std::fprintf(stderr, "%s: %s\n", prefix, line.c_str());
        });
        if (request_.session) egress_->deliver_refusals_to(&refusal_listeners_);
        const std::string ca_pem = egress_->prepare();
        decisions_journalled_ = egress_->journal_decisions(journal_->decision_sink());
        if (!resolved_->left_out.empty()) say(resolved_->left_out);
        for (const auto& note : resolved_->notes) say(note);
        LateFacts late;
        if (resolved_->agent) late.session_agent_missing = prepare_agent(*resolved_);
        late.agent = agent_ ? &*agent_ : nullptr;
        late.trust = steps_.find_trust(*resolved_, ca_pem);
        plan_.emplace(finish_plan(std::move(*resolved_), late));
        resolved_.reset();
    } catch (const AgentProgramNotFound& e) {
        say(e.what());
        return RunEnd{kExitNotFound, Outcome::not_found};
    } catch (const PromptError& e) {
        say(e.what());
        return RunEnd{kExitUsage, Outcome::usage_error};
    } catch (const std::exception& e) {
        say(e.what());
        return setup_failed();
    }
    if (agent_)
        for (const auto& m : agent_->messages) say(m);
    // The record states what is enforced: the command line's, the worker's or
    // the organisation's limits, rootfs and timeout.
    record_requested(record_, request_, &plan_->spec);
    update_record_fields();  // the worker, agent and image are known now: the admission names them
    log::debug("timing: run preparation " + ms_since(t_prep));
    return std::nullopt;
}

// The agent's CLI, profile and home. A session runs commands without its
// agent's CLI; only `corral exec --prompt` needs it, and is refused then:
// returns why ("" = the agent is there).
std::string Run::prepare_agent(const RunPlan& resolved) {
    try {
        agent_ = steps_.prepare_agent(request_, *inputs_, resolved);
    } catch (const AgentProgramNotFound& e) {
        if (!request_.session) throw;
        say(std::string("corral exec --prompt is refused in this session: ") + e.what());
        return e.what();
    }
    return "";
}

// The admission record: written now, its fdatasync overlapping the sandbox's
// construction, waited for before the command's first process exists.
Run::Next Run::admit() {
    nlohmann::json admission;
    try {
        admission = admission_payload(record_, plan_->spec);
    } catch (const std::exception& e) {
        say(std::string("journal: the admission record cannot be made: ") + e.what());
        return setup_failed();
    }
    // Where the gateway's decisions are: in this journal (its ledger lines),
    // or in the `corral gateway` daemon's journal.
    admission["decisions"] = decisions_journalled_ ? "this_journal" : "gateway_daemon";
    try {
        const auto t_admission = steady::now();
        journal_->append_syncing_in_background(journal::kTypeAdmission, admission);
        log::debug("timing: journal: admission signed and written " + ms_since(t_admission));
    } catch (const std::exception& e) {
        say(std::string("journal: the admission record was not written, the command does not start: ") + e.what());
        return setup_failed();
    }
    return std::nullopt;
}

// The bridge listeners (in the box's netns) and the gateway threads start
// while the init builds the rootfs: the box cannot connect before its command
// runs, and that is after "ready".
Run::Next Run::launch() {
    const auto t_launch = steady::now();
    const RunPlan& plan = *plan_;
    stdout_log_name_ = plan.spec.stdout_log_name;
    const std::string agent_home = agent_ ? plan.spec.rootfs.home_dir.value_or("") : std::string();
    Egress& egress = *egress_;
    BoxFacts box;
    const supervisor::Tell tell = [this](const std::string& line) { say(line); };
    try {
        // The stdio MCP servers' boxes first: every clone before the gateway's threads.
        if (auto servers = steps_.launch_mcp_servers(plan, tell)) egress.serve_stdio_servers(std::move(servers));
        box = steps_.launch(plan.spec, [&](const supervisor::Sandbox& b) {
            if (!agent_home.empty()) hand_agent_home(agent_home, b.uid(), b.gid());
            egress.start(b);
        }, tell);
    } catch (const supervisor::SandboxSetupError& e) {
        // A step failed after the clone: launch tore the sandbox down (verified).
        say(e.what());
        if (e.teardown()) {
            record_.teardown = *e.teardown();
            for (const auto& n : record_.teardown.notes) say(n);
            if (!record_.teardown.clean()) {
                for (const auto& p : record_.teardown.problems) say("teardown failed: " + p);
                return RunEnd{kExitTeardown, Outcome::teardown_failed};
            }
        }
        return setup_failed();
    } catch (const std::exception& e) {
        // Failed before the clone: the owners undid what existed (cgroup
        // removed, UID lease released); nothing ran.
        say(e.what());
        return setup_failed();
    }
    record_.uid = box.uid;
    record_.gid = box.gid;
    record_.idmapped_binds = std::move(box.idmapped_binds);
    record_.unmapped_binds = std::move(box.unmapped_binds);
    if (review_) {
        review_->upper = std::move(box.review_upper);
        try {
            if (review_->upper.valid()) publish_live_upper(*review_, record_.uid, record_.gid);
        } catch (const std::exception& e) {
            say(std::string("the review's live layer cannot be shown while the box runs: ") + e.what());
        }
    }
    try {
        write_running_record();  // now with the UID, hostname and limits the box has
    } catch (const std::exception& e) {
        say(std::string("writing run.json: ") + e.what() + " (tried again at the end)");
    }
    log::debug("timing: sandbox ready (hook point) after " + ms_since(t_launch));
    return std::nullopt;
}

// The hook point: the sandbox exists, lo is up, the bridge listens, the
// command has not started. The admission is durable and the started record
// written before it does (fail closed); a failure here still tears down.
Run::Next Run::serve_body(int interrupt_fd) {
    const auto t_cmd = steady::now();
    try {
        const auto t_durable = steady::now();
        journal_->wait_durable();
        log::debug("timing: journal: waited for the admission's fdatasync " + ms_since(t_durable));
    } catch (const std::exception& e) {
        say(std::string("journal: the admission record was not written, the command does not start: ") + e.what());
        return setup_failed();
    }
    try {
        journal_->append(journal::kTypeStarted, {{"uid", record_.uid}, {"gid", record_.gid}}, journal::Commit::group);
    } catch (const std::exception& e) {
        // The journal failed closed: nothing after this could be signed.
        say(std::string("journal: the started record was not written, the command does not start: ") + e.what());
        return setup_failed();
    }
    try {
        BodyContext context;
        context.record_now = [this] { write_running_record(); };
        context.agent = agent_ ? &*agent_ : nullptr;
        context.no_agent = plan_->no_session_agent;
        context.journal = journal_.get();
        context.questions = request_.tty ? egress_->terminal_questions() : nullptr;
        context.refusals = &refusal_listeners_;
        if (review_) context.workspace_applied = [this](const nlohmann::json& a) { return record_live_apply(a); };
        result_ = steps_.serve(body_, interrupt_fd, context);
        log::debug("timing: supervise returned after " + ms_since(t_cmd));
    } catch (const std::exception& e) {
        say(e.what());
        return setup_failed();
    }
    return std::nullopt;
}

std::string Run::record_live_apply(const nlohmann::json& a) {
    std::lock_guard<std::mutex> lock(review_mu_);
    if (!review_ || !journal_) return "the session's review has ended";
    workspace::ReviewRecord& r = review_->record;
    for (const auto& p : a["applied"]) r.applied.push_back(p.get<std::string>());
    for (const auto& [path, s] : a["stamps"].items())
        r.applied_stamps[path] = workspace::AppliedStamp{s[0].get<std::int64_t>(), s[1].get<std::int64_t>()};
    r.applied_digest = a["digest"].get<std::string>();
    try {
        write_review_record(place_.run_dir, r);
        journal_->append(journal::kTypeWorkspaceApply, a["payload"], journal::Commit::durable);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

// run.json's "stop" and the operator's line about it, when the command was stopped.
void Run::record_stop() {
    if (!result_.stop_grace) return;
    supervisor::StopRecord stop;
    stop.cause = result_.deadline_hit && !result_.interrupted_by ? "deadline"
                 : result_.stopped_by_request                     ? "corral stop"
                                                                  : "signal";
    stop.signal = result_.interrupted_by;
    stop.grace = *result_.stop_grace;
    stop.killed = result_.stop_killed;
    stop.second_signal = result_.second_signal;
    record_.stop = stop;
    say(stop_line(stop, record_.timeout, result_.interrupted_by.value_or(0)));
}

// The command's end, as corral's status and outcome (run/outcome.hpp).
RunEnd Run::judge_command() {
    CommandOutcome o = command_outcome(result_, usage_.oom_killed);
    if (o.message) say(*o.message);
    if (o.outcome == Outcome::killed && !record_.signal) record_.signal = SIGKILL;  // the OOM kill the cgroup counted
    return RunEnd{o.status, o.outcome};
}

// After the body: the egress stopped, the box torn down and verified, what
// the cgroup counted. An unclean teardown outranks every other end.
RunEnd Run::tear_down(RunEnd so_far) {
    egress_->stop();
    record_stop();
    for (const auto& n : result_.notes) say(n);
    if (result_.stdout_reader_gone) say("stdout was closed by its reader; CMD's stdout was closed too (EPIPE/SIGPIPE)");
    if (result_.stderr_reader_gone) say("stderr was closed by its reader; CMD's stderr was closed too (EPIPE/SIGPIPE)");
    const auto t_down = steady::now();
    record_.teardown = steps_.teardown(&usage_);
    for (const auto& n : record_.teardown.notes) say(n);
    log::debug("timing: teardown took " + ms_since(t_down));
    record_.peak_memory_bytes = usage_.peak_memory_bytes;
    record_.peak_pids = usage_.peak_pids;
    record_.oom_killed = usage_.oom_killed;
    record_.pids_limit_hits = usage_.pids_limit_hits;
    record_.cpu_usec = usage_.cpu_usec;
    record_.stdout_reader_gone = result_.stdout_reader_gone;
    record_.stderr_reader_gone = result_.stderr_reader_gone;
    record_.deadline_hit = result_.deadline_hit;
    record_.stdout_bytes = result_.stdout_bytes;
    record_.stdout_logged = result_.stdout_logged;
    record_.stderr_bytes = result_.stderr_bytes;
    record_.stderr_logged = result_.stderr_logged;
    if (result_.wait_status) {
        const int ws = *result_.wait_status;
        if (WIFEXITED(ws)) record_.exit_code = WEXITSTATUS(ws);
        if (WIFSIGNALED(ws)) record_.signal = WTERMSIG(ws);
    }
    RunEnd end = so_far;  // a body that failed has said so already
    if (!record_.teardown.clean()) {
        for (const auto& p : record_.teardown.problems) say("teardown failed: " + p);
        end = RunEnd{kExitTeardown, Outcome::teardown_failed};
    } else if (so_far.status == 0) {
        end = judge_command();
    }
    if (usage_.oom_killed) say("the sandbox reached its memory limit; the kernel killed a process (OOM)");
    if (usage_.pids_limit_hits > 0)
        say("the sandbox reached its process limit (" +
            (record_.limits.pids ? std::to_string(*record_.limits.pids) + " pids" : std::string("pids")) + "): " +
            std::to_string(usage_.pids_limit_hits) + " fork" + (usage_.pids_limit_hits == 1 ? "" : "s") +
            " refused (EAGAIN); raise --pids if CMD needs more");
    return end;
}

// The terminal record (signed, durable), the final run.json, the run's
// entry in STATE_DIR/live gone, the one summary line. A run whose ending
// cannot be signed or recorded is not a success.
int Run::finish(RunEnd end) {
    std::unique_lock<std::mutex> review_lock(review_mu_);
    if (review_) {
        // The box is gone (or never ran): its upper layer is what it wrote.
        for (const auto& line : finish_review(*review_, record_.uid, record_.gid)) say(line);
        record_.extra["workspace_review"] = {{"state", review_->record.state},
                                             {"dir", workspace::review_dir(place_.run_dir)}};
        review_.reset();
    }
    review_lock.unlock();
    if (egress_) {
        Egress& egress = *egress_;
        egress.stop();  // no decision is journalled after this
        if (journal_) journal_->stop_group_commits();
        for (const auto& m : egress.take_stop_messages()) say(m);
        // The run's model traffic in one line (run.json has the numbers).
        if (auto t = egress.model_totals(); t && (t->requests || t->budget_refusals || t->policy_refusals))
            std::fprintf(stderr, "%s: %s\n", body_.prefix, terminal_text(gateway::metering::totals_summary(*t)).c_str());
    }
    update_record_fields();
    record_.status = end.status;
    record_.outcome = end.outcome;
    record_.state = "finished";
    record_.ended_at = std::chrono::system_clock::now();
    // What the host attests of the run, from the record as it stands now.
    record_.extra["attested"] = attested_record(record_, egress_ ? egress_->agent_report() : std::nullopt);
    if (journal_ && !journal_->terminated()) {
        try {
            journal_->append(journal::kTypeTerminal, terminal_payload(record_, place_.run_dir, stdout_log_name_),
                             journal::Commit::durable);
        } catch (const std::exception& e) {
            say(std::string("journal: the terminal record was not written: ") + e.what());
            if (end.status == 0) end.status = kExitSetup;
            record_.status = end.status;
        }
    }
    try {
        steps_.write_record(place_.run_dir, record_,
                            request_.sync_record ? supervisor::RecordSync::durable : supervisor::RecordSync::visible);
    } catch (const std::exception& e) {
        say(std::string("writing run.json: ") + e.what());
        if (end.status == 0) end.status = kExitSetup;
    }
    steps_.mark_ended(place_.state_dir, record_.id);  // no later start need look at it again
    if (!request_.quiet)
        std::fprintf(stderr, "%s: %s\n", body_.prefix, terminal_text(run_summary_line(record_, place_.run_dir)).c_str());
    return end.status;
}

}  // namespace corral::run
