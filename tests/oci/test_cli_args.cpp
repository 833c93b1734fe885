// oci/cli_args: the runc-shaped command line, as conmon (podman) and
// containerd's runc shim (go-runc) write it.
#include <doctest/doctest.h>

#include <csignal>
#include <string>
#include <vector>

#include "base/sys_error.hpp"
#include "oci/cli_args.hpp"

using namespace corral::oci;

namespace {

OciArgs parse(std::vector<std::string> words) {
    words.insert(words.begin(), "corral-oci");
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    return parse_oci_args(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> words) {
    try {
        parse(std::move(words));
    } catch (const corral::UsageError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("conmon's create: global runtime args, then create --bundle --pid-file [--console-socket] ID") {
    const OciArgs a = parse({"--systemd-cgroup", "--log-format=json", "--log", "/run/x/oci-log", "create", "--bundle",
                             "/var/lib/c/userdata", "--pid-file", "/run/c/pidfile", "--no-pivot", "--no-new-keyring",
                             "--console-socket", "/tmp/cs.sock", "f00dcafe"});
    CHECK(a.command == OciCommand::create);
    CHECK(a.global.systemd_cgroup);
    CHECK(a.global.log_format == LogFormat::json);
    CHECK(a.global.log == "/run/x/oci-log");
    CHECK(a.global.root == kDefaultStateRoot);
    CHECK(a.bundle == "/var/lib/c/userdata");
    CHECK(a.pid_file == "/run/c/pidfile");
    CHECK(a.console_socket == "/tmp/cs.sock");
    CHECK(a.no_pivot);
    CHECK(a.no_new_keyring);
    CHECK(a.id == "f00dcafe");
}

TEST_CASE("containerd's shim (go-runc): --root --log --log-format json, then each command") {
    const std::vector<std::string> global = {"--root", "/run/containerd/runc/k8s.io", "--log", "/run/b/log.json",
                                             "--log-format", "json"};
    auto with = [&](std::vector<std::string> tail) {
        std::vector<std::string> w = global;
        w.insert(w.end(), tail.begin(), tail.end());
        return parse(w);
    };
    OciArgs a = with({"create", "--bundle", "/run/b", "--pid-file", "/run/b/init.pid", "--preserve-fds", "2", "c1"});
    CHECK(a.global.root == "/run/containerd/runc/k8s.io");
    CHECK(a.preserve_fds == 2);
    CHECK(with({"start", "c1"}).command == OciCommand::start);
    a = with({"exec", "--process", "/tmp/p.json", "--detach", "--pid-file", "/run/b/e.pid", "c1"});
    CHECK(a.command == OciCommand::exec);
    CHECK(a.process_file == "/tmp/p.json");
    CHECK(a.detach);
    a = with({"kill", "--all", "c1", "9"});
    CHECK(a.all);
    CHECK(a.signal == SIGKILL);
    a = with({"delete", "--force", "c1"});
    CHECK(a.force);
    a = with({"ps", "--format", "json", "c1"});
    CHECK(a.json);
    CHECK(with({"state", "c1"}).command == OciCommand::state);
}

TEST_CASE("exec with ARGS after the ID, and its refusals") {
    OciArgs a = parse({"exec", "-t", "-e", "A=1", "--cwd", "/w", "c1", "--", "ls", "-l"});
    CHECK(a.tty);
    CHECK(a.cwd == "/w");
    CHECK(a.env == std::vector<std::pair<std::string, std::string>>{{"A", "1"}});
    CHECK(a.exec_args == std::vector<std::string>{"ls", "-l"});
    a = parse({"exec", "c1", "ls", "-l"});
    CHECK(a.exec_args == std::vector<std::string>{"ls", "-l"});
    CHECK(error_of({"exec", "c1"}) == "exec: no process: give --process FILE or ARGS after the ID");
    CHECK(error_of({"exec", "-p", "p.json", "c1", "ls"}) == "exec: --process and ARGS both given; give the process one way");
}

TEST_CASE("kill: signals by name, with or without SIG, or number; SIGTERM by default") {
    CHECK(parse({"kill", "c1"}).signal == SIGTERM);
    CHECK(parse({"kill", "c1", "KILL"}).signal == SIGKILL);
    CHECK(parse({"kill", "c1", "SIGHUP"}).signal == SIGHUP);
    CHECK(parse({"kill", "c1", "sigusr1"}).signal == SIGUSR1);
    CHECK(parse({"kill", "c1", "15"}).signal == SIGTERM);
    for (const char* bad : {"0", "65", "NOPE", "SIG", "999"})
        CHECK_MESSAGE(error_of({"kill", "c1", bad}).find("signal") != std::string::npos, bad);
    CHECK(error_of({"kill", "c1", "-9"}).find("unknown option \"-9\"") == 0);
    CHECK(error_of({"kill", "c1", "9", "x"}).find("kill: unexpected argument \"x\"") == 0);
}

TEST_CASE("version, features, list and help") {
    CHECK(parse({"--version"}).command == OciCommand::version);
    CHECK(parse({"-v"}).command == OciCommand::version);
    CHECK(parse({"features"}).command == OciCommand::features);
    const OciArgs l = parse({"list", "-q", "--format", "json"});
    CHECK(l.quiet);
    CHECK(l.json);
    CHECK(parse({"--help"}).command == OciCommand::help);
    const OciArgs h = parse({"create", "--help"});
    CHECK(h.command == OciCommand::create);
    CHECK(h.help);
    CHECK(oci_help_text().find("not implemented yet") != std::string::npos);
    CHECK(oci_command_help(OciCommand::create).find("--console-socket SOCKET") != std::string::npos);
}

TEST_CASE("pause and resume parse, and have a refusal to answer with") {
    CHECK(parse({"pause", "c1"}).command == OciCommand::pause);
    CHECK(unsupported_command_reason(OciCommand::resume).find("does not freeze") != std::string::npos);
    CHECK(unsupported_command_reason(OciCommand::create).empty());
}

TEST_CASE("bad command lines name what is wrong") {
    CHECK(error_of({}).find("a command is missing; commands are create, start") == 0);
    CHECK(error_of({"run", "c1"}).find("unknown command \"run\"") == 0);
    CHECK(error_of({"create"}).find("create: the container ID is missing") == 0);
    CHECK(error_of({"start", "a/b"}).find("start: container id \"a/b\"") == 0);
    CHECK(error_of({"features", "x"}) == "features: takes no argument, got \"x\"");
    CHECK(error_of({"--log-format", "xml", "state", "c"}) == "--log-format: \"xml\": expected text or json");
    CHECK(error_of({"--cgroup-manager", "disabled", "state", "c"}).find("--cgroup-manager: \"disabled\"") == 0);
    CHECK(error_of({"--rootless", "true", "state", "c"}).find("--rootless: \"true\"") == 0);
    CHECK(error_of({"create", "--bundel", "b", "c"}).find("unknown option \"--bundel\" (did you mean --bundle?)") == 0);
    CHECK(error_of({"create", "--preserve-fds", "x", "c"}).find("--preserve-fds: \"x\"") == 0);
    CHECK(parse({"--cgroup-manager", "systemd", "state", "c"}).global.systemd_cgroup);
}

TEST_CASE("ps: options end at the ID; what follows is ps's own") {
    OciArgs a = parse({"ps", "--format", "json", "c1"});
    CHECK(a.json);
    CHECK(a.id == "c1");
    CHECK(a.ps_options.empty());
    a = parse({"ps", "c1", "-e", "-o", "pid,args"});
    CHECK_FALSE(a.json);
    CHECK(a.ps_options == std::vector<std::string>{"-e", "-o", "pid,args"});
    CHECK(parse({"ps", "c1", "--", "-ef"}).ps_options == std::vector<std::string>{"-ef"});
}

TEST_CASE("node settings: --allow-config repeatable, --default-config and --default-worker") {
    const OciArgs a = parse({"--allow-config", "/etc/corral/a", "--allow-config", "/etc/corral/b", "--default-config",
                             "/etc/corral/node", "--default-worker", "agents", "state", "c1"});
    CHECK(a.global.allowed_configs == std::vector<std::string>{"/etc/corral/a", "/etc/corral/b"});
    CHECK(a.global.default_config == std::optional<std::string>("/etc/corral/node"));
    CHECK(a.global.default_worker == std::optional<std::string>("agents"));
    CHECK(error_of({"--default-config", "etc/corral", "state", "c1"}).find("expected an absolute path") != std::string::npos);
}
