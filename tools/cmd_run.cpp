// tools/cmd_run.cpp — `corral run [OPTIONS] -- CMD [ARGS...]`.
//
// argv -> request (run/request.hpp) -> resolved plan (run/resolve.hpp) ->
// launch -> supervise -> teardown (supervisor/sandbox.hpp) -> corral's exit
// status (docs/architecture.md "Exit status"), and run.json. Every failure ends in exactly one "corral run: ..." line
// per problem on stderr.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <filesystem>
#include <string>

#include "base/fd.hpp"
#include "base/log.hpp"
#include "base/parse.hpp"
#include "base/terminal_text.hpp"
#include "base/sys_error.hpp"
#include "rootfs/host_paths.hpp"
#include "run/agent_run.hpp"
#include "run/egress.hpp"
#include "run/outcome.hpp"
#include "run/prepare.hpp"
#include "run/request.hpp"
#include "run/resolve.hpp"
#include "run/run_index.hpp"
#include "run/run_journal.hpp"
#include "run/state_dir.hpp"
#include "run/trust.hpp"
#include "supervisor/run_record.hpp"
#include "supervisor/sandbox.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

using namespace corral::supervisor;

using run::kExitNotFound;
using run::kExitSetup;
using run::kExitTeardown;
using run::kExitUsage;

// What corral tells the operator about a run also goes into its run.json
// ("messages"), so a record of a refused or failed run says why.
std::vector<std::string>* g_run_messages = nullptr;
const char* g_prefix = "corral run";   // "corral session" for a session's supervisor

void say(const std::string& line) {
    std::fprintf(stderr, "%s: %s\n", g_prefix, terminal_text(line).c_str());
    if (g_run_messages != nullptr) g_run_messages->push_back(line);
}

// A closed 0/1/2 would let the next pipe() land there and be mistaken for stdio.
void ensure_stdio_open() {
    for (int fd = 0; fd <= 2; ++fd)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int n = open("/dev/null", O_RDWR);
            if (n >= 0 && n != fd) {
                dup2(n, fd);
                close(n);
            }
        }
}

}  // namespace

int cmd_run(int argc, char** argv) {
    run::RunRequest request;
    try {
        request = run::parse_run_request(argc, argv);
    } catch (const UsageError& e) {
        say(e.what());
        return kExitUsage;
    }
    if (request.help) {
        std::fputs(run::run_help_text().c_str(), stdout);
        return 0;
    }
    try {
        if (request.tty) require_caller_terminal();
    } catch (const UsageError& e) {
        say(e.what());
        return kExitUsage;
    }
    return run_in_sandbox(request, SandboxBody{});
}

int run_in_sandbox(const run::RunRequest& request, const SandboxBody& body) {
    if (body.prefix != nullptr) g_prefix = body.prefix;
    if (geteuid() != 0) {
        say("must run as root (it creates namespaces and cgroups)");
        return kExitSetup;
    }
    ensure_stdio_open();
    signal(SIGPIPE, SIG_IGN);  // a closed terminal must not kill the supervisor mid-run
    if (const char* lvl = std::getenv("CORRAL_LOG"); lvl != nullptr && std::string_view(lvl) == "debug")
        log::set_level(log::Level::debug);
    using steady = std::chrono::steady_clock;
    auto t0 = steady::now();
    auto ms_since = [](steady::time_point t) {
        return std::to_string(std::chrono::duration<double, std::milli>(steady::now() - t).count()) + "ms";
    };

    // Ctrl-C, SIGTERM, SIGHUP: kill the sandbox and still tear it down and
    // verify (supervise() reads them from a signalfd). Blocked from here on;
    // the command starts with an empty signal mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_signals, sig);
    sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
    Fd interrupts(signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK));

    auto t_prep = steady::now();

    RunRecord record;
    g_run_messages = &record.messages;
    record.started_at = std::chrono::system_clock::now();

    // The run's id is reserved by its entry in STATE_DIR/runs (run/run_index.hpp):
    // concurrent runs never share one.
    std::string state_dir, run_dir;
    try {
        state_dir = run::make_private_dir("--state-dir", request.state_dir ? *request.state_dir : run::default_state_dir(),
                                          run::DirRole::state);
        std::optional<std::string> given_run_dir;
        if (request.run_dir) given_run_dir = run::make_private_dir("--run-dir", *request.run_dir, run::DirRole::run);
        run::ReservedRun reserved = run::reserve_run(state_dir, given_run_dir, make_run_id);
        record.id = reserved.id;
        run_dir = reserved.run_dir;
        record.supervisor = this_supervisor();
    } catch (const std::exception& e) {
        say(e.what());
        return kExitSetup;
    }
    const RecordSync record_sync = request.sync_record ? RecordSync::durable : RecordSync::visible;

    // What exists of the run so far: each is made once, in this order, and
    // run.json is written from whatever got made. First the journal
    // (RUN_DIR/journal.jsonl, docs/journal.md), opened once run.json exists:
    // its admission is durable before the command starts, its terminal
    // record before corral exits. It is declared before `egress` because
    // the ledger's journal thread writes to it until the egress is gone.
    std::unique_ptr<journal::SharedJournal> run_journal;
    run::RunInputs inputs;
    std::optional<run::RunPlan> plan;
    std::unique_ptr<run::Egress> egress;  // the box's bridge + gateway (embedded or a daemon)
    std::optional<run::AgentRun> agent;   // with --prompt: the worker's agent CLI

    std::string stdout_log_name = "stdout.log";
    bool decisions_journalled = false;  // the embedded gateway's ledger lines are decision records here

    int status = 0;
    // run.json while the run is alive: what is known so far, "state": "running".
    // run.json's fields of the layers above the sandbox, from what exists now.
    auto update_record_fields = [&]() {
        record.extra = run::run_record_fields(request, record.id, inputs.worker, egress.get(), agent ? &*agent : nullptr,
                                              inputs.image ? &*inputs.image : nullptr);
    };
    auto write_running_record = [&]() {
        update_record_fields();
        write_run_record(run_dir, record, record_sync);
    };
    auto finish = [&](int st, supervisor::Outcome outcome) {
        if (egress) {
            egress->stop();  // no decision is journalled after this
            if (run_journal) run_journal->stop_group_commits();
            for (const auto& m : egress->take_stop_messages()) say(m);
            // The run's model traffic in one line (run.json has the numbers).
            if (auto t = egress->model_totals(); t && (t->requests || t->budget_refusals || t->policy_refusals))
                std::fprintf(stderr, "%s: %s\n", g_prefix, terminal_text(gateway::metering::totals_summary(*t)).c_str());
        }
        update_record_fields();
        record.status = st;
        record.outcome = outcome;
        record.state = "finished";
        record.ended_at = std::chrono::system_clock::now();
        if (run_journal && !run_journal->terminated()) {
            try {
                run_journal->append(journal::kTypeTerminal, run::terminal_payload(record, run_dir, stdout_log_name),
                                    journal::Commit::durable);
            } catch (const std::exception& e) {
                // No signed ending: the run cannot count as a success.
                say(std::string("journal: the terminal record was not written: ") + e.what());
                if (st == 0) st = kExitSetup;
                record.status = st;
            }
        }
        try {
            write_run_record(run_dir, record, record_sync);
        } catch (const std::exception& e) {
            say(std::string("writing run.json: ") + e.what());
            if (st == 0) st = kExitSetup;  // a run without its record is not a success
        }
        run::mark_run_ended(state_dir, record.id);  // no later start need look at it again
        if (!request.quiet) std::fprintf(stderr, "%s: %s\n", g_prefix, terminal_text(run::run_summary_line(record, run_dir)).c_str());
        return st;
    };

    // argv -> request -> resolved plan: everything that can refuse the run
    // (a missing credential, a bad prompt, an agent CLI not in the rootfs)
    // fails here, before anything starts.
    run::record_requested(record, request, nullptr);
    try {
        write_running_record();
    } catch (const std::exception& e) {
        say(std::string("writing run.json: ") + e.what());
        return kExitSetup;
    }
    for (const auto& line : run::recover_lost_runs(state_dir)) log::info(line);
    const auto t_journal = steady::now();
    try {
        run_journal = run::open_run_journal(state_dir, run_dir);
        log::debug("timing: journal: key loaded, journal created " + ms_since(t_journal));
    } catch (const std::exception& e) {
        say(std::string("journal: ") + e.what());
        return finish(kExitSetup, supervisor::Outcome::setup_failed);
    }
    if (!request.quiet)
        std::fprintf(stderr, "%s: %s %s, run dir %s\n", g_prefix, request.session ? "session" : "run", record.id.c_str(),
                     run_dir.c_str());
    try {
        inputs = run::read_run_inputs(request, record.id, run_dir, state_dir);
        plan = run::resolve_run(request, inputs);
        run::check_run_can_start(request, inputs, *plan);
        egress = run::make_egress(*plan);
        if (request.tty) egress->hold_refusal_lines_until_stop();  // printed once the terminal is the caller's again
        std::string ca_pem = egress->prepare();
        decisions_journalled = egress->journal_decisions(run_journal->decision_sink());
        if (!plan->left_out.empty()) log::info(plan->left_out);
        for (const auto& note : plan->notes) say(note);
        if (plan->agent) {
            try {
                agent = run::prepare_agent_run(request, inputs, *plan);
            } catch (const run::AgentProgramNotFound& e) {
                if (!request.session) throw;
                // A session runs commands without its agent's CLI; only a prompt needs it.
                plan->no_session_agent = e.what();
                say(std::string("corral exec --prompt is refused in this session: ") + e.what());
                plan->agent.reset();
                plan->spec.rootfs.home_dir.reset();
            }
        }
        run::add_trust_and_proxy(*plan, ca_pem);
    } catch (const run::AgentProgramNotFound& e) {
        say(e.what());
        return finish(kExitNotFound, supervisor::Outcome::not_found);
    } catch (const run::PromptError& e) {
        say(e.what());
        return finish(kExitUsage, supervisor::Outcome::usage_error);
    } catch (const std::exception& e) {
        say(e.what());
        return finish(kExitSetup, supervisor::Outcome::setup_failed);
    }
    if (agent)
        for (const auto& m : agent->messages) say(m);
    // The record states what is enforced: the command line's, the worker's or
    // the organisation's limits, rootfs and timeout.
    run::record_requested(record, request, &plan->spec);
    update_record_fields();  // the worker, agent and image are known now: the admission names them

    log::debug("timing: run dir and run preparation " + ms_since(t_prep));
    nlohmann::json admission;
    try {
        admission = run::admission_payload(record, plan->spec);
    } catch (const std::exception& e) {
        say(std::string("journal: the admission record cannot be made: ") + e.what());
        return finish(kExitSetup, supervisor::Outcome::setup_failed);
    }
    // Where the gateway's decisions are: in this journal (its ledger lines),
    // or in the `corral gateway` daemon's journal.
    admission["decisions"] = decisions_journalled ? "this_journal" : "gateway_daemon";
    try {
        // Written now; its fdatasync overlaps the sandbox's construction
        // and is waited for before the command's first process exists.
        const auto t_admission = steady::now();
        run_journal->append_syncing_in_background(journal::kTypeAdmission, admission);
        log::debug("timing: journal: admission signed and written " + ms_since(t_admission));
    } catch (const std::exception& e) {
        say(std::string("journal: the admission record was not written, the command does not start: ") + e.what());
        return finish(kExitSetup, supervisor::Outcome::setup_failed);
    }
    stdout_log_name = plan->spec.stdout_log_name;
    std::optional<Sandbox> box;
    try {
        // The bridge listeners (in the box's netns) and the gateway threads
        // start while the init builds the rootfs: the box cannot connect
        // before its command runs, and that is after "ready".
        const std::string agent_home = agent ? plan->spec.rootfs.home_dir.value_or("") : std::string();
        box.emplace(launch_sandbox(std::move(plan->spec), [&](const Sandbox& b) {
            if (agent) run::hand_agent_home(agent_home, b.uid(), b.gid());
            egress->start(b);
        }));
    } catch (const SandboxSetupError& e) {
        // A step failed after the clone: launch tore the sandbox down (verified).
        say(e.what());
        if (e.teardown()) {
            record.teardown = *e.teardown();
            if (!record.teardown.clean()) {
                for (const auto& p : record.teardown.problems) say("teardown failed: " + p);
                return finish(kExitTeardown, supervisor::Outcome::teardown_failed);
            }
        }
        return finish(kExitSetup, supervisor::Outcome::setup_failed);
    } catch (const std::exception& e) {
        // Failed before the clone: the owners undid what existed (cgroup
        // removed, UID lease released); nothing ran.
        say(e.what());
        return finish(kExitSetup, supervisor::Outcome::setup_failed);
    }
    record.uid = box->uid();
    record.gid = box->gid();
    record.idmapped_binds = box->idmapped_binds();
    record.unmapped_binds = box->unmapped_binds();
    try {
        write_running_record();  // now with the UID, hostname and limits the box has
    } catch (const std::exception& e) {
        say(std::string("writing run.json: ") + e.what() + " (tried again at the end)");
    }
    log::debug("timing: sandbox ready (hook point) after " + ms_since(t0));
    auto t_cmd = steady::now();

    // ── hook point: the sandbox exists, lo is up, the bridge listens, the command has not started.
    try {
        // Durable before the command's first process exists (fail closed).
        const auto t_durable = steady::now();
        run_journal->wait_durable();
        log::debug("timing: journal: waited for the admission's fdatasync " + ms_since(t_durable));
    } catch (const std::exception& e) {
        say(std::string("journal: the admission record was not written, the command does not start: ") + e.what());
        status = kExitSetup;
    }
    if (status == 0) try {
        const auto t_started = steady::now();
        run_journal->append(journal::kTypeStarted, {{"uid", record.uid}, {"gid", record.gid}}, journal::Commit::group);
        log::debug("timing: journal: started record " + ms_since(t_started));
    } catch (const std::exception& e) {
        // The journal failed closed: nothing after this could be signed.
        say(std::string("journal: the started record was not written, the command does not start: ") + e.what());
        status = kExitSetup;
    }
    SuperviseResult result;
    if (status == 0) try {
        if (body.serve) {
            BodyContext context;
            context.record_now = [&] { write_running_record(); };
            context.agent = agent ? &*agent : nullptr;
            context.no_agent = plan->no_session_agent;
            context.journal = run_journal.get();
            result = body.serve(*box, interrupts.get(), context);
        } else {
            start_command(*box);
            result = supervise(*box, OutputSinks{1, 2, interrupts.get()});
        }
        log::debug("timing: supervise returned after " + ms_since(t_cmd));
    } catch (const std::exception& e) {
        say(e.what());
        status = kExitSetup;
    }
    egress->stop();
    if (result.stop_grace) {
        StopRecord stop;
        stop.cause = result.deadline_hit && !result.interrupted_by ? "deadline"
                     : result.stopped_by_request                    ? "corral stop"
                                                                    : "signal";
        stop.signal = result.interrupted_by;
        stop.grace = *result.stop_grace;
        stop.killed = result.stop_killed;
        record.stop = stop;
        std::string how = stop.grace.count() == 0 ? "sandbox killed"
                          : stop.killed ? "CMD got SIGTERM and was still running after the " + format_duration(stop.grace) +
                                              " grace; sandbox killed"
                                        : "CMD got SIGTERM and ended within the " + format_duration(stop.grace) + " grace";
        if (stop.cause == "deadline")
            say("deadline of " + (record.timeout ? format_duration(*record.timeout) : std::string("?")) + " reached; " + how);
        else if (stop.cause == "corral stop")
            say("stopped by `corral stop`; " + how);
        else
            say(std::string("interrupted by SIG") + sigabbrev_np(*result.interrupted_by) + "; " + how);
    }
    if (result.stdout_reader_gone) log::info("stdout was closed by its reader; CMD's stdout was closed too (EPIPE/SIGPIPE)");
    if (result.stderr_reader_gone) log::info("stderr was closed by its reader; CMD's stderr was closed too (EPIPE/SIGPIPE)");

    log::debug("timing: command ran for " + ms_since(t_cmd));
    auto t_down = steady::now();
    CgroupUsage usage;
    record.teardown = teardown(*box, &usage);
    log::debug("timing: teardown took " + ms_since(t_down));
    record.peak_memory_bytes = usage.peak_memory_bytes;
    record.peak_pids = usage.peak_pids;
    record.oom_killed = usage.oom_killed;
    record.pids_limit_hits = usage.pids_limit_hits;
    record.cpu_usec = usage.cpu_usec;
    record.stdout_reader_gone = result.stdout_reader_gone;
    record.stderr_reader_gone = result.stderr_reader_gone;
    record.deadline_hit = result.deadline_hit;
    record.stdout_bytes = result.stdout_bytes;
    record.stdout_logged = result.stdout_logged;
    record.stderr_bytes = result.stderr_bytes;
    record.stderr_logged = result.stderr_logged;
    if (result.wait_status) {
        int ws = *result.wait_status;
        if (WIFEXITED(ws)) record.exit_code = WEXITSTATUS(ws);
        if (WIFSIGNALED(ws)) record.signal = WTERMSIG(ws);
    }

    supervisor::Outcome outcome = supervisor::Outcome::setup_failed;
    if (!record.teardown.clean()) {
        for (const auto& p : record.teardown.problems) say("teardown failed: " + p);
        status = kExitTeardown;
        outcome = supervisor::Outcome::teardown_failed;
    } else if (status != 0) {
        // supervise() itself failed; already reported.
    } else {
        run::CommandOutcome o = run::command_outcome(result, usage.oom_killed);
        if (o.message) say(*o.message);
        status = o.status;
        outcome = o.outcome;
        if (o.outcome == supervisor::Outcome::killed && !record.signal) record.signal = SIGKILL;  // the OOM kill the cgroup counted
    }
    if (usage.oom_killed) say("the sandbox reached its memory limit; the kernel killed a process (OOM)");
    if (usage.pids_limit_hits > 0)
        say("the sandbox reached its process limit (" +
            (record.limits.pids ? std::to_string(*record.limits.pids) + " pids" : std::string("pids")) + "): " +
            std::to_string(usage.pids_limit_hits) + " fork" + (usage.pids_limit_hits == 1 ? "" : "s") +
            " refused (EAGAIN); raise --pids if CMD needs more");
    return finish(status, outcome);
}

}  // namespace corral::cli
