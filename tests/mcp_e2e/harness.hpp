// tests/mcp_e2e/harness.hpp — the real MCP components of the e2e tests
// (pinned in package.json, installed by tools/install-npm-deps.sh into the
// repo's node_modules/), our own test server (test_server.mjs) and the
// SDK-based driver (client.mjs), run as programs.
//
// Today the driver talks to the servers directly; the governed-tools tests
// will put corral's gateway between them and compare.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.hpp"

namespace corral::test::mcp_e2e {

using json = nlohmann::json;

// <source root>/node_modules/<package>/<relative>: a pinned package's file.
std::string package_file(const std::string& package, const std::string& relative);
// <source root>/tests/mcp_e2e/<name>.
std::string here(const std::string& name);
// The servers' entry points, run with node.
std::string filesystem_server();   // server-filesystem: argv = allowed directories
std::string everything_server();   // server-everything: argv[1] = stdio | streamableHttp

// "" when the suite can run here, else why not (node, a pinned package).
std::string missing_prerequisite();

// As root: moves this process into a network namespace of its own with only
// `lo` up, so nothing the suite starts can reach past loopback. "" on
// success, else what failed. Not root: does nothing and returns "".
std::string isolate_loopback();

// A fresh 0700 directory under /tmp, removed when the object dies (kept with
// CORRAL_KEEP_TEST_DIR set).
struct TempDir {
    explicit TempDir(const std::string& tag);
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir();
    std::string path;
};

// One run of client.mjs: `args` are its options and steps (and a trailing
// "--" COMMAND ... for stdio). Its output lines, parsed.
struct ClientRun {
    Result raw;
    json connected;                    // {"server":..,"protocol":..} or null
    std::vector<json> steps;           // {"step":..} lines, in order
    std::vector<json> server_requests; // server→client requests it answered
};
ClientRun run_client(const std::vector<std::string>& args, RunOptions options = {});

// A run's exit status and output, for a failed check's message.
inline std::string dump(const ClientRun& c) {
    return "exit " + std::to_string(c.raw.exit_code) + "\nstdout:\n" + c.raw.out + "\nstderr:\n" + c.raw.err;
}

// The first content item's text of a call step's result ("" if none).
std::string result_text(const json& step);
// The tool named `name` in a list step (null if absent).
json tool_named(const json& list_step, const std::string& name);

// A Streamable HTTP server on 127.0.0.1, killed when the object dies.
struct HttpServer {
    std::unique_ptr<Background> process;
    int port = 0;
    std::string url;  // http(s)://127.0.0.1:PORT/mcp
};
// test_server.mjs --http 0 `extra`... (https:// when `extra` has --tls-cert);
// waits for its ready line. Throws with the reason if it does not start.
HttpServer start_test_server(const std::vector<std::string>& extra);
// server-everything streamableHttp on a free port; waits until it listens.
HttpServer start_everything_http(const std::string& scratch_dir);

}  // namespace corral::test::mcp_e2e
