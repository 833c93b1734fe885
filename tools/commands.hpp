// tools/commands.hpp — one entry point per `corral` subcommand.
// Each takes the arguments after the subcommand name (argv[0] is the
// subcommand itself) and returns the process exit status.
#pragma once

#include <functional>

#include "journal/shared_journal.hpp"
#include "run/agent_run.hpp"
#include "run/request.hpp"
#include "supervisor/sandbox.hpp"

namespace corral::cli {

int cmd_run(int argc, char** argv);       // tools/cmd_run.cpp
int cmd_ps(int argc, char** argv);        // tools/cmd_runs.cpp
int cmd_logs(int argc, char** argv);      // tools/cmd_runs.cpp
int cmd_stop(int argc, char** argv);      // tools/cmd_runs.cpp
int cmd_inspect(int argc, char** argv);   // tools/cmd_runs.cpp
int cmd_doctor(int argc, char** argv);    // tools/cmd_doctor.cpp
int cmd_gateway(int argc, char** argv);   // tools/cmd_gateway.cpp
int cmd_ca(int argc, char** argv);        // tools/cmd_ca.cpp
int cmd_validate(int argc, char** argv);  // tools/cmd_validate.cpp
int cmd_budget(int argc, char** argv);    // tools/cmd_budget.cpp
int cmd_image(int argc, char** argv);     // tools/cmd_image.cpp
int cmd_session(int argc, char** argv);   // tools/cmd_session.cpp
int cmd_exec(int argc, char** argv);      // tools/cmd_exec.cpp
int cmd_key(int argc, char** argv);       // tools/cmd_key.cpp
int cmd_journal(int argc, char** argv);   // tools/cmd_journal.cpp

// What runs at the hook point of run_in_sandbox: by default the request's
// command (start_command + supervise); a session serves its execs instead
// until it is stopped, and may rewrite run.json through `record_now`.
struct BodyContext {
    std::function<void()> record_now;      // run.json again, with what is known now
    const run::AgentRun* agent = nullptr;  // a session's agent (exec --prompt), when it has one
    std::string no_agent;                  // else why not
    journal::SharedJournal* journal = nullptr;  // the run's journal: a session's execs are recorded in it
};
struct SandboxBody {
    const char* prefix = nullptr;   // the lines' "corral run: " ("corral session")
    std::function<supervisor::SuperviseResult(supervisor::Sandbox& box, int interrupt_fd, const BodyContext& context)>
        serve;
};

// `corral run`'s whole life after parsing: run dir, run.json, plan, egress,
// launch, the body, teardown, exit status (tools/cmd_run.cpp).
int run_in_sandbox(const run::RunRequest& request, const SandboxBody& body);

}  // namespace corral::cli
