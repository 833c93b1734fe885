// tests/mcp_e2e/box_run.hpp — one `corral run` of a test worker whose box
// runs the SDK client (client.mjs) against the box's MCP listener, searched
// from the host while it is alive. Shared by the run tests of the remote and
// the stdio servers (test_corral_run.cpp, test_stdio_run.cpp).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/mcp_e2e/harness.hpp"

namespace corral::test::mcp_e2e {

// Each non-empty line of `text` parsed (a line that is not JSON: discarded value).
std::vector<nlohmann::json> json_lines(const std::string& text);

// The {"step": ...} lines client.mjs printed in `text`, in order.
std::vector<nlohmann::json> client_steps(const std::string& text);

// The box's shell (host pid), found by the marker on its command line; -1 if none.
pid_t find_box_shell(const std::string& marker);

// Our test server as mcp.test.invalid behind TLS, for a run test in `dir`
// (made 0711): a test CA named `ca_name` (DIR/ca.crt) and the server's leaf,
// `secret` in DIR/mcp.secret (0600; none when empty), and test_server.mjs
// with `extra` options (--calls-file, --drift-file ...).
HttpServer start_tls_test_server(const std::string& dir, const std::string& ca_name, const std::string& secret,
                                 const std::vector<std::string>& extra);

struct BoxRun {
    std::string out, corral_err, environ_text, scan_hits, run_dir;
    std::string marker;   // on the box shell's command line
    int exit_code = -1;
};

// corral run of worker w1 of DIR/org with DIR/ws/box.sh (node_modules and
// this folder bound read-only at /opt/mcp); at its "== ready" the live
// box's environment and tree are searched from the host for `secret`, then
// `at_ready(box shell's pid, run)` looks at whatever else it needs, then
// DIR/ws/done lets the box end. `extra_options` go to corral run before "--".
BoxRun run_box(const std::string& dir, const std::string& secret,
               const std::function<void(pid_t shell, BoxRun& run)>& at_ready,
               const std::vector<std::string>& extra_options = {});

}  // namespace corral::test::mcp_e2e
