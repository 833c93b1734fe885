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
    {"diff", "show what a --review run changed in its workspace, with the diff's digest"},
    {"apply", "write a --review run's changes into its workspace as its owner (--expect DIGEST)"},
    {"discard", "drop a --review run's changes; the workspace stays untouched"},
    {"help", "explain corral, or one subcommand (corral help run)"},
};

// Docker's subcommands that corral has not, each answered with what corral
// has instead (a usage error, exit 2): never a guess from "did you mean"
// (`images` is one edit from `image`, whose bare form lists nothing).
struct SubcommandHabit {
    std::string_view name;
    std::string_view answer;
};

inline constexpr SubcommandHabit kDockerSubcommandHabits[] = {
    {"images", "corral has no images; `corral image ls` lists the imported images"},
    {"rmi", "corral has no rmi; `corral image rm NAME` removes an imported image"},
    {"rm", "corral has no rm: a box is removed when its command ends; `corral prune` removes ended runs and their "
           "run dirs, `corral session stop NAME` ends a session, `corral image rm NAME` removes an image"},
    {"pull", "corral does not pull images from registries: fetch one with `skopeo copy docker://IMAGE "
             "oci:/var/tmp/NAME:latest` (or `docker save IMAGE -o NAME.tar`), then `corral image import "
             "/var/tmp/NAME --name NAME` (or NAME.tar) and run it with --rootfs image:NAME (docs/images.md)"},
    {"load", "corral has no load; `corral image import FILE --name NAME` imports a `docker save` archive"},
    {"import", "corral has no import; `corral image import SOURCE --name NAME` imports an image or rootfs tarball"},
    {"build", "corral builds no images: build with docker, podman or buildah, then `corral image import` the saved "
              "image (docs/images.md)"},
    {"cp", "corral has no cp: the box sees the host's files only where you put them: --workspace DIR (at "
           "/workspace), --bind SRC:DST or --ro-bind SRC:DST; copy files there on the host"},
    {"kill", "corral has no kill; `corral stop ID` stops a run or session (SIGTERM, SIGKILL after --grace D)"},
    {"attach", "corral has no attach: `corral logs -f ID` follows a run's output; `corral exec --tty SESSION -- sh` "
               "opens a terminal in a session"},
    {"start", "corral has no start; `corral session start --name N` starts a box that outlives one command"},
    {"version", "corral has no version subcommand; `corral --version` prints it"},
};

// The answer for a Docker subcommand corral has not, or empty.
constexpr std::string_view docker_subcommand_habit(std::string_view name) {
    for (const auto& h : kDockerSubcommandHabits)
        if (h.name == name) return h.answer;
    return {};
}

}  // namespace corral::cli
