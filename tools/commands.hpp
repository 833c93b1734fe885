// tools/commands.hpp — one entry point per `corral` subcommand.
// Each takes the arguments after the subcommand name (argv[0] is the
// subcommand itself) and returns the process exit status.
#pragma once

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
int cmd_approvals(int argc, char** argv); // tools/cmd_approvals.cpp
int cmd_approve(int argc, char** argv);   // tools/cmd_approvals.cpp
int cmd_deny(int argc, char** argv);      // tools/cmd_approvals.cpp
int cmd_image(int argc, char** argv);     // tools/cmd_image.cpp
int cmd_session(int argc, char** argv);   // tools/cmd_session.cpp
int cmd_exec(int argc, char** argv);      // tools/cmd_exec.cpp
int cmd_key(int argc, char** argv);       // tools/cmd_key.cpp
int cmd_journal(int argc, char** argv);   // tools/cmd_journal.cpp
int cmd_prune(int argc, char** argv);     // tools/cmd_prune.cpp
int cmd_mcp(int argc, char** argv);       // tools/cmd_mcp.cpp
int cmd_diff(int argc, char** argv);      // tools/cmd_workspace.cpp
int cmd_apply(int argc, char** argv);     // tools/cmd_workspace.cpp
int cmd_discard(int argc, char** argv);   // tools/cmd_workspace.cpp
// Hidden: `corral __complete KIND [ARG]`, the bash completion's source of run
// ids, session names, images and workers (tools/cmd_complete.cpp).
int cmd_complete(int argc, char** argv);
inline constexpr const char* kCompleteCommand = "__complete";


}  // namespace corral::cli
