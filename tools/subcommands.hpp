// tools/subcommands.hpp — the names and one-line summaries of `corral`'s
// subcommands: the dispatcher (main.cpp), `corral help`, the man page and the
// bash completion (gen_docs.cpp) read this one list.
#pragma once

#include <string_view>

namespace corral::cli {

struct SubcommandInfo {
    std::string_view name;
    std::string_view summary;
};

inline constexpr SubcommandInfo kSubcommandInfo[] = {
    {"run", "run a command or an agent in a fresh sandbox"},
    {"ps", "list the runs (running ones; -a: all) of the state dir"},
    {"logs", "print (-f: follow) a run's stdout and stderr logs"},
    {"stop", "stop a run: SIGTERM to its command, SIGKILL after the grace, verified teardown"},
    {"inspect", "print a run's run.json with its live state"},
    {"doctor", "check every kernel feature corral needs"},
    {"gateway", "run the egress gateway daemon"},
    {"ca", "manage corral's certificate authority (ca init)"},
    {"validate", "validate an organisation config and print the resolved workers"},
    {"budget", "show or reset a worker's budget across runs (kept by the gateway daemon)"},
    {"image", "import OCI / docker save images and tarballs; list, inspect, remove them"},
    {"session", "start a sandbox that outlives one command (session start|stop|ls)"},
    {"exec", "run a command in a session, as its agent, a service or its verifier"},
    {"key", "the journal's signing key: key init creates it, key show prints the public key"},
    {"journal", "verify a run's signed journal (journal verify FILE [--key PUBKEY])"},
    {"prune", "remove ended runs older than their retention (default 14d), with their run dirs"},
    {"mcp", "a worker's MCP servers and tool pins (mcp ls); accept a changed tool (mcp trust)"},
    {"approvals", "the requests waiting for a person's approval (-f: follow)"},
    {"approve", "approve a waiting request, once (--always: its host for the rest of the run)"},
    {"deny", "deny a waiting request (--reason TEXT: the box is told who and why)"},
    {"help", "explain corral, or one subcommand (corral help run)"},
};

}  // namespace corral::cli
