// tests/bridge_e2e/world.hpp — one loopback world shared by the bridge tests:
// a test CA and a leaf for api.anthropic.com (openssl CLI), the stand-in
// upstream (tests/gateway_e2e/upstream.js) on 127.0.0.1, an organisation whose
// grant sends api.anthropic.com to it via connect_to with the test CA as the
// grant's upstream trust store, and a root-only file with the real key.
// run_box() runs box.sh in a sandbox (curl and node with a placeholder key)
// and scans the live box from the host: the stand-in must see the real key,
// the box never.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/sha256.hpp"
#include "tests/support/process.hpp"

namespace corral::test::bridge {

using corral::sha256_hex;

using nlohmann::json;

constexpr const char* kPlaceholder = "corral-sentinel-box-placeholder";

// Why this machine cannot run the tests ("" = it can).
std::string missing_prerequisite();

struct World {
    std::string dir, org, workspace, gateway_toml, real_key;
    int upstream_port = 0, control_port = 0;
    std::unique_ptr<Background> upstream;
    // The git server (tests/support/git_https_standin.py) behind the inject
    // grant for git.capture.test; git_port 0 when git is not installed.
    int git_port = 0;
    std::string git_token;
    std::unique_ptr<Background> git;
    std::unique_ptr<Background> daemon;
    ~World() {
        daemon.reset();
        git.reset();
        upstream.reset();
        if (!dir.empty()) std::filesystem::remove_all(dir);
    }
};

// The world, made on first use and removed at exit.
World& world();

// Lines between "== NAME" and the next "== " marker.
std::string section(const std::string& out, const std::string& name);
// The test CA alone in a directory of its own, readable by a box (the
// world's dir also holds the real key): for --ro-bind DIR:/testca.
std::string test_ca_dir();
// The stand-in upstream's /stats: requests and what each one carried.
json upstream_stats();
// Every line of a JSONL ledger.
std::vector<json> ledger(const std::string& path);

struct BoxRun {
    std::string out, err, run_dir, run_id;   // err: the box's stderr.log
    std::string corral_err;                  // what corral itself wrote on its stderr
    int exit_code = -1;
    std::string environ_text;       // the box shell's /proc/PID/environ, read from the host
    std::string scan_hits;          // grep -rl of the real key over the box's tree (host side)
    int box_root_processes = 0;     // the init and the reaper, whose memory was searched
    std::string memory_hits;        // "<pid>" for each of them holding the real key in memory
    json record;
};

// Runs box.sh in a sandbox through `extra` options (--gateway ...), scanning
// the live box from the host at its "== ready" marker.
BoxRun run_box(const std::string& label, const std::vector<std::string>& extra, bool with_node);

// The real key is nowhere the box or its records could show it.
void check_no_secret_anywhere(const BoxRun& b);
// The probes of box.sh, each as expected; the box's environment too.
void check_box_probes(const BoxRun& b, const std::string& ledger_path);
// A refused agent run: no output log of either kind, no agent home.
void check_agent_never_started(const std::string& run_dir);
// Every entry of a tree (path, mode, link target or content hash), sorted.
std::string tree_digest(const std::string& root);
// A busybox image whose CA bundle is laid out as "debian" or "rhel" does it.
std::string make_image(const std::string& dir, const std::string& layout);

}  // namespace corral::test::bridge
