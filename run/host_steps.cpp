// run/host_steps.cpp — the real steps of a run (run/run.hpp RunSteps): the
// state and run directories, the journal's key, the rootfs and the agent's
// CLI in it, the trust files, and the kernel's sandbox. Each is the one
// function that owns the rule; this file only holds the box between them.
#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "base/fd.hpp"
#include "base/log.hpp"
#include "base/terminal_text.hpp"
#include "config/capacity_config.hpp"
#include "run/box_slots.hpp"
#include "run/outcome.hpp"
#include "run/prepare.hpp"
#include "run/run.hpp"
#include "run/run_index.hpp"
#include "run/run_journal.hpp"
#include "run/state_dir.hpp"
#include "run/trust.hpp"

namespace corral::run {

namespace {

using namespace corral::supervisor;

class HostRunSteps final : public RunSteps {
public:
    RunPlace reserve(const RunRequest& request) override {
        RunPlace place;
        place.state_dir = make_private_dir("--state-dir", request.state_dir ? *request.state_dir : default_state_dir(),
                                           DirRole::state);
        std::optional<std::string> given_run_dir;
        if (request.run_dir) given_run_dir = make_private_dir("--run-dir", *request.run_dir, DirRole::run);
        ReservedRun reserved = reserve_run(place.state_dir, given_run_dir, make_run_id);
        place.id = reserved.id;
        place.run_dir = reserved.run_dir;
        return place;
    }
    void write_record(const std::string& run_dir, const RunRecord& record, RecordSync sync) override {
        write_run_record(run_dir, record, sync);
    }
    std::vector<std::string> recover_lost_runs(const std::string& state_dir) override {
        return run::recover_lost_runs(state_dir);
    }
    void mark_ended(const std::string& state_dir, const std::string& id) override { mark_run_ended(state_dir, id); }
    void hold_box_slot(const RunRequest& request, const RunPlace& place, const Tell& tell) override {
        const auto capacity = config::load_capacity_config(place.state_dir + "/" + config::kCapacityFileName);
        if (!capacity.max_boxes) return;
        slot_request_ = SlotRequest{place.state_dir, *capacity.max_boxes, place.id, request.capacity_wait, tell};
        slots_.push_back(take_slot(request.session ? "session" : "run"));
    }
    std::unique_ptr<journal::SharedJournal> open_journal(const RunPlace& place) override {
        return open_run_journal(place.state_dir, place.run_dir);
    }
    RunInputs read_inputs(const RunRequest& request, const RunPlace& place) override {
        return read_run_inputs(request, place.id, place.run_dir, place.state_dir);
    }
    void check_can_start(const RunRequest& request, const RunInputs& inputs, const RunPlan& plan) override {
        check_run_can_start(request, inputs, plan);
    }
    std::unique_ptr<Egress> make_egress(const RunPlan& plan) override { return run::make_egress(plan); }
    AgentRun prepare_agent(const RunRequest& request, const RunInputs& inputs, const RunPlan& plan) override {
        return prepare_agent_run(request, inputs, plan);
    }
    TrustFiles find_trust(const RunPlan& plan, const std::string& ca_pem) override {
        return find_trust_files(plan, ca_pem);
    }
    // Each stdio MCP server's box holds a slot of its own, taken before any
    // is launched: a run that cannot have them all is refused whole.
    std::shared_ptr<StdioServerBoxes> launch_mcp_servers(const RunPlan& plan, const Tell& tell) override {
        if (slot_request_)
            for (const auto& [name, server] : plan.gateway.tools.servers)
                if (std::holds_alternative<mcp::StdioServer>(server.transport))
                    slots_.push_back(take_slot("mcp-server " + name));
        servers_ = StdioServerBoxes::launch(plan.spec, plan.gateway.tools, tell);
        return servers_;
    }
    // A failed launch tears the servers' boxes down too: the error carries
    // both teardowns, or becomes one when only the servers' failed.
    BoxFacts launch(SandboxSpec spec, const WhileInitBuilds& at_hook, const Tell& tell) override {
        try {
            box_.emplace(launch_sandbox(std::move(spec), at_hook, tell));
        } catch (SandboxSetupError& e) {
            if (servers_) {
                TeardownReport report = e.teardown() ? *e.teardown() : TeardownReport{};
                merge_teardown(report, servers_->tear_down(), "");
                e.attach_teardown(std::move(report));
            }
            throw;
        } catch (const std::exception& e) {
            if (!servers_) throw;
            TeardownReport report = servers_->tear_down();
            if (report.steps.empty()) throw;
            SandboxSetupError failed(SetupStep::wait_for_supervisor, EIO, e.what());
            failed.attach_teardown(std::move(report));
            throw failed;
        }
        BoxFacts facts{box_->uid(), box_->gid(), box_->idmapped_binds(), box_->unmapped_binds()};
        facts.review_upper = box_->take_review_upper();
        return facts;
    }
    SuperviseResult serve(const RunBody& body, int interrupt_fd, const BodyContext& context) override {
        if (body.serve) return body.serve(*box_, interrupt_fd, context);
        start_command(*box_);
        OutputSinks sinks{1, 2, interrupt_fd};
        sinks.questions = context.questions;
        return supervise(*box_, sinks);
    }
    TeardownReport teardown(CgroupUsage* usage) override {
        TeardownReport report = supervisor::teardown(*box_, usage);
        if (servers_) merge_teardown(report, servers_->tear_down(), "");
        return report;
    }

private:
    BoxSlot take_slot(const std::string& kind) {
        SlotRequest r = *slot_request_;
        r.holder += " " + kind;
        return take_box_slot(r);
    }

    std::optional<SlotRequest> slot_request_;     // set when the state dir has a max_boxes
    std::vector<BoxSlot> slots_;                  // let go last, after the teardown
    std::shared_ptr<StdioServerBoxes> servers_;   // before box_: torn down after it
    std::optional<Sandbox> box_;
};

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

std::unique_ptr<RunSteps> host_run_steps() { return std::make_unique<HostRunSteps>(); }

int run_as_supervisor(const RunRequest& request, RunBody body) {
    if (geteuid() != 0) {
        std::fprintf(stderr, "%s: %s\n", body.prefix, "must run as root (it creates namespaces and cgroups)");
        return kExitSetup;
    }
    ensure_stdio_open();
    signal(SIGPIPE, SIG_IGN);  // a closed terminal must not kill the supervisor mid-run
    if (const char* lvl = std::getenv("CORRAL_LOG"); lvl != nullptr && std::string_view(lvl) == "debug")
        log::set_level(log::Level::debug);
    // Ctrl-C, SIGTERM, SIGHUP: kill the sandbox and still tear it down and
    // verify (supervise() reads them from a signalfd). Blocked from here on;
    // the command starts with an empty signal mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop_signals, sig);
    sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
    Fd interrupts(signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK));
    std::unique_ptr<RunSteps> steps = host_run_steps();
    Run run(request, std::move(body), *steps);
    return run.execute(interrupts.get());
}

}  // namespace corral::run
