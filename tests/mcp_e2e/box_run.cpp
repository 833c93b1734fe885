// tests/mcp_e2e/box_run.cpp — see box_run.hpp.
#include "tests/mcp_e2e/box_run.hpp"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <sstream>

#include "tests/support/process.hpp"
#include "tests/support/test_pki.hpp"

namespace corral::test::mcp_e2e {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::vector<json> json_lines(const std::string& text) {
    std::vector<json> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(json::parse(line, nullptr, false));
    return out;
}

std::vector<json> client_steps(const std::string& text) {
    std::vector<json> out;
    for (auto& j : json_lines(text))
        if (j.is_object() && j.contains("step")) out.push_back(std::move(j));
    return out;
}

pid_t find_box_shell(const std::string& marker) {
    for (const auto& e : fs::directory_iterator("/proc")) {
        std::string name = e.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::string cmdline = read_file(e.path().string() + "/cmdline");
        if (cmdline.rfind("/bin/sh", 0) == 0 && cmdline.find(marker) != std::string::npos)
            return static_cast<pid_t>(std::stoi(name));
    }
    return -1;
}

BoxRun run_box(const std::string& dir, const std::string& secret,
               const std::function<void(pid_t shell, BoxRun& run)>& at_ready,
               const std::vector<std::string>& extra_options) {
    BoxRun b;
    b.run_dir = dir + "/run";
    b.marker = "marker-" + random_hex(8);
    const std::string& marker = b.marker;
    const std::string src = source_root();
    std::vector<std::string> argv = {corral_bin(), "run", "--config", dir + "/org", "--worker", "w1", "--rootfs", "host",
                                     "--workspace", dir + "/ws", "--run-dir", b.run_dir, "--state-dir", dir + "/runs",
                                     "--timeout", "120s", "--ro-bind", src + "/node_modules:/opt/mcp/node_modules",
                                     "--ro-bind", src + "/tests/mcp_e2e:/opt/mcp/client"};
    argv.insert(argv.end(), extra_options.begin(), extra_options.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "/workspace/box.sh", marker});
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = dir + "/runs";
    o.stderr_file = dir + "/corral.stderr";
    Background corral(argv, o);
    if (corral.wait_for_stdout("== ready\n", std::chrono::seconds(90))) {
        pid_t pid = find_box_shell(marker);
        if (pid > 0) {
            b.environ_text = read_file("/proc/" + std::to_string(pid) + "/environ");
            auto r = run({"grep", "-rlsF", "--exclude-dir=proc", "--exclude-dir=sys", "--exclude-dir=dev",
                          "--exclude-dir=usr", "--exclude-dir=node_modules", "-e", secret,
                          "/proc/" + std::to_string(pid) + "/root/"},
                         RunOptions{std::chrono::seconds(120), {}, {}, {}, {}});
            b.scan_hits = r.exit_code == 1 ? "" : "exit " + std::to_string(r.exit_code) + ": " + r.out + r.err;
            if (at_ready) at_ready(pid, b);
        } else {
            b.scan_hits = "box shell not found";
        }
    }
    write_file(dir + "/ws/done", "");
    b.exit_code = corral.wait_exit(std::chrono::seconds(60));
    b.out = corral.drain_stdout();
    b.corral_err = read_file(dir + "/corral.stderr");
    return b;
}


HttpServer start_tls_test_server(const std::string& dir, const std::string& ca_name, const std::string& secret,
                                 const std::vector<std::string>& extra) {
    ::chmod(dir.c_str(), 0711);
    make_test_ca(dir, ca_name);
    make_test_leaf(dir, "mcp", "DNS:mcp.test.invalid");
    if (!secret.empty()) write_file(dir + "/mcp.secret", secret + "\n", 0600);
    std::vector<std::string> args{"--tls-cert", dir + "/mcp.crt", "--tls-key", dir + "/mcp.key"};
    args.insert(args.end(), extra.begin(), extra.end());
    return start_test_server(args);
}

}  // namespace corral::test::mcp_e2e
