// Unit tests of `corral run` option parsing: every option, every error form,
// and the option table that the parser and --help share.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <optional>

#include "base/sys_error.hpp"
#include "run/request.hpp"
#include "run/resolve.hpp"
#include "supervisor/run_record.hpp"

using corral::UsageError;
using corral::run::parse_run_request;
using corral::run::RunRequest;

namespace {

RunRequest parse(std::vector<std::string> args) {
    args.insert(args.begin(), "run");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    return parse_run_request(static_cast<int>(args.size()), argv.data());
}

std::string error_of(std::vector<std::string> args) {
    try {
        parse(std::move(args));
    } catch (const UsageError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("defaults: no rootfs given (the worker's, else host), no limits, default uid range, command kept verbatim") {
    auto o = parse({"--", "/bin/sh", "-c", "echo --memory"});
    CHECK_FALSE(o.rootfs);
    CHECK_FALSE(o.workspace);
    CHECK_FALSE(o.memory_bytes);
    CHECK_FALSE(o.pids);
    CHECK_FALSE(o.cpus);
    CHECK_FALSE(o.timeout);
    CHECK_FALSE(o.pass_stdin);
    CHECK(o.log_limit_bytes == 256ull << 20);
    CHECK(o.uid_range.first == 1900000000u);
    CHECK(o.uid_range.last == 1900000999u);
    CHECK(o.command == std::vector<std::string>{"/bin/sh", "-c", "echo --memory"});
}

TEST_CASE("every option, in both --opt VALUE and --opt=VALUE form") {
    auto o = parse({"--rootfs", "/img", "--workspace=/ws", "--run-dir", "/rd", "--state-dir=/sd", "--memory", "64M",
                    "--pids=100", "--cpus", "0.5", "--timeout=2s", "--env", "A=1", "--env=B=x=y", "--hostname",
                    "box1", "--stdin", "--uid-range", "2000-2010", "--log-limit=1M", "--", "true"});
    CHECK(*o.rootfs == corral::names::RootfsSource(corral::names::DirRootfs{"/img", "/img"}));
    CHECK(*o.workspace == "/ws");
    CHECK(*o.run_dir == "/rd");
    CHECK(*o.state_dir == "/sd");
    CHECK(*o.memory_bytes == 64ull * 1024 * 1024);
    CHECK(*o.pids == 100);
    CHECK(*o.cpus == doctest::Approx(0.5));
    CHECK(o.timeout->count() == 2000);
    REQUIRE(o.env.size() == 2);
    CHECK(o.env[1].first == "B");
    CHECK(o.env[1].second == "x=y");
    CHECK(*o.hostname == "box1");
    CHECK(o.pass_stdin);
    CHECK(o.uid_range.first == 2000u);
    CHECK(o.uid_range.last == 2010u);
    CHECK(o.log_limit_bytes == 1024 * 1024);
    CHECK(o.command == std::vector<std::string>{"true"});
}

TEST_CASE("the first non-option starts the command; later dashes belong to it") {
    auto o = parse({"--pids", "5", "ls", "--help"});
    CHECK(o.command == std::vector<std::string>{"ls", "--help"});
    CHECK_FALSE(o.help);
}

TEST_CASE("--help needs no command") {
    CHECK(parse({"--help"}).help);
    std::string help = corral::run::run_help_text();
    for (const char* opt : {"--rootfs", "--workspace", "--run-dir", "--state-dir", "--memory", "--pids", "--cpus",
                            "--timeout", "--env", "--hostname", "--stdin", "--tty", "--uid-range", "--log-limit", "--help", "124", "125",
                            "126", "127", "--config", "--worker", "--prompt", "--prompt-file", "--system-prompt-file",
                            "--gateway"})
        CHECK_MESSAGE(help.find(opt) != std::string::npos, opt);
}

TEST_CASE("--help explains every option of the table, with its placeholder, once") {
    const std::string& help = corral::run::run_help_text();
    std::set<std::string> names;
    for (const auto& o : corral::run::run_option_table()) {
        std::string head = "\n  " + std::string(o.name) + (o.placeholder.empty() ? "" : " " + std::string(o.placeholder)) + " ";
        CAPTURE(head);
        CHECK(names.insert(std::string(o.name)).second);
        auto at = help.find(head);
        REQUIRE(at != std::string::npos);
        CHECK(help.find(head, at + 1) == std::string::npos);
        // The first line of its explanation follows on the same line.
        std::string first(o.help.substr(0, o.help.find('\n')));
        CHECK(help.find(first, at) == help.find_first_not_of(' ', at + head.size()));
    }
    CHECK(names.size() >= 21);
}

TEST_CASE("every option of the table parses in both forms; a switch refuses a value") {
    // A sample per placeholder: an option added to the table with a new
    // placeholder fails here until it gets one.
    const std::map<std::string, std::string> sample{{"DIR", "/d"},  {"host|DIR|image:NAME", "/d"}, {"SIZE", "64M"},
                                                    {"N", "5"},     {"FLOAT", "1"},     {"DURATION", "5s"},
                                                    {"K=V", "A=1"}, {"NAME", "h1"},     {"FIRST-LAST", "2000-2010"},
                                                    {"TEXT", "p"},  {"F", "/f"},        {"unix:PATH", "unix:/s.sock"},
                                                    {"SRC:DST", "/s:/d"}, {"HOST[:PORT]", "example.com"}};
    // What the option needs beside it to be a valid command line.
    auto context = [](std::string_view name) -> std::vector<std::string> {
        if (name == "--prompt" || name == "--prompt-file") return {"--config", "/org", "--worker", "w1"};
        if (name == "--system-prompt-file") return {"--config", "/org", "--worker", "w1", "--prompt", "p"};
        if (name == "--config") return {"--worker", "w1", "--", "true"};
        if (name == "--worker") return {"--config", "/org", "--", "true"};
        if (name == "--review") return {"--workspace", "/d", "--", "true"};
        return {"--", "true"};
    };
    for (const auto& o : corral::run::run_option_table()) {
        std::string name(o.name);
        CAPTURE(name);
        auto ctx = context(o.name);
        if (o.placeholder.empty()) {
            std::vector<std::string> args{name};
            args.insert(args.end(), ctx.begin(), ctx.end());
            CHECK_NOTHROW(parse(args));
            std::vector<std::string> with_value{name + "=x"};
            with_value.insert(with_value.end(), ctx.begin(), ctx.end());
            CHECK(error_of(with_value).starts_with(name + ": takes no value"));
            continue;
        }
        REQUIRE_MESSAGE(sample.count(std::string(o.placeholder)) == 1, "no sample value for " << o.placeholder);
        const std::string value = sample.at(std::string(o.placeholder));
        std::vector<std::string> split{name, value}, joined{name + "=" + value};
        split.insert(split.end(), ctx.begin(), ctx.end());
        joined.insert(joined.end(), ctx.begin(), ctx.end());
        auto a = parse(split), b = parse(joined);
        // The value never starts the command.
        CHECK(a.command == b.command);
        CHECK(a.command.size() <= 1);
        CHECK(error_of({name}).starts_with(name + ": missing value"));
    }
}

TEST_CASE("malformed values name the option, the text and the accepted form") {
    auto mem = error_of({"--memory", "12XB", "--", "true"});
    CHECK(mem.starts_with("--memory: invalid size \"12XB\""));
    CHECK(mem.find("expected") != std::string::npos);
    CHECK(error_of({"--timeout", "soon", "--", "true"}).starts_with("--timeout: invalid duration \"soon\""));
    CHECK(error_of({"--timeout", "0s", "--", "true"}).starts_with("--timeout: invalid duration \"0s\""));
    CHECK(error_of({"--env", "1X=2", "--", "true"}).starts_with("--env: invalid environment pair \"1X=2\""));
    CHECK(error_of({"--pids", "-3", "--", "true"}).starts_with("--pids: invalid count \"-3\""));
    CHECK(error_of({"--pids", "0", "--", "true"}).starts_with("--pids: invalid count \"0\""));
    CHECK(error_of({"--nofile", "0", "--", "true"}).starts_with("--nofile: invalid count \"0\""));
    CHECK(*parse({"--nofile", "100", "--", "true"}).open_files == 100);
    CHECK_FALSE(parse({"--", "true"}).open_files);
    CHECK(error_of({"--cpus", "lots", "--", "true"}).starts_with("--cpus: invalid CPU count \"lots\""));
    CHECK(error_of({"--cpus", "0", "--", "true"}).starts_with("--cpus: invalid CPU count \"0\""));
    CHECK(error_of({"--cpus", "0.001", "--", "true"}) ==
          "--cpus: invalid CPU count \"0.001\": expected a number of CPUs from 0.01 to 1024, such as 0.5, 1 or 2.5");
    CHECK(error_of({"--hostname", "bad host", "--", "true"}).starts_with("--hostname: invalid hostname \"bad host\""));
    CHECK(error_of({"--uid-range", "5", "--", "true"}).starts_with("--uid-range: "));
    CHECK(error_of({"--memory", "100", "--", "true"}).starts_with("--memory: invalid size \"100\""));
    CHECK(error_of({"--log-limit", "0", "--", "true"}).starts_with("--log-limit: invalid size \"0\""));
    CHECK(error_of({"--log-limit", "lots", "--", "true"}).starts_with("--log-limit: invalid size \"lots\""));
}

TEST_CASE("usage errors: unknown option, missing value, missing command, value on a flag") {
    CHECK(error_of({"--bogus", "--", "true"}) ==
          "unknown option \"--bogus\"; options are --rootfs, --workspace, --review, --run-dir, --state-dir, --memory, --pids, --nofile, "
          "--cpus, --timeout, --wait, --grace, --quiet, --bind, --ro-bind, --scratch-size, --tmp-size, --env, --hostname, --stdin, "
          "--tty, --log-limit, --sync-record, --uid-range, --config, --worker, --prompt, --prompt-file, --system-prompt-file, "
          "--allow, --ask, --capture, --capture-only, --no-capture, --gateway, --help");
    CHECK(error_of({"--memory"}).starts_with("--memory: missing value"));
    CHECK(error_of({"--pids", "3"}).starts_with("missing command"));
    CHECK(error_of({"--"}).starts_with("missing command"));
    CHECK(error_of({"--stdin=yes", "--", "true"}).starts_with("--stdin: takes no value"));
    CHECK(error_of({"--rootfs=", "--", "true"}).starts_with("--rootfs: empty path"));
}

TEST_CASE("--capture-only is --capture without proxy variables; a --no-capture after it is refused, one before it loses") {
    auto r = parse({"--capture-only", "--", "true"});
    CHECK(r.capture == true);
    CHECK(r.capture_only);
    CHECK(error_of({"--capture-only", "--no-capture", "--", "true"}).starts_with("--capture-only and --no-capture"));
    CHECK(error_of({"--no-capture", "--capture-only", "--", "true"}) == "(no error)");
}

TEST_CASE("--rootfs is parsed once into its kind: host, image:NAME, DIR made absolute against the caller's directory") {
    using namespace corral::names;
    CHECK(*parse({"--rootfs", "host", "--", "true"}).rootfs == RootfsSource(HostRootfs{}));
    CHECK(*parse({"--rootfs=image:base-12"}).rootfs == RootfsSource(ImageRootfs{"base-12"}));  // no command needed
    const std::string cwd = std::filesystem::current_path().string();
    auto rel = parse({"--rootfs", "imgs/../debian", "--", "true"});
    CHECK(*rel.rootfs == RootfsSource(DirRootfs{cwd + "/debian", "imgs/../debian"}));
    // The record of a run refused before its plan names it as given, as
    // before; once resolved, the absolute path.
    corral::supervisor::RunRecord early;
    early.id = "20261201-140000-abcdef";
    corral::run::record_requested(early, rel, nullptr);
    CHECK(early.rootfs == "imgs/../debian");
    // A session anchors the text itself (its supervisor leaves the caller's
    // directory before the record is written).
    std::vector<std::string> session_args{"session", "start", "--rootfs", "imgs/debian"};
    std::vector<char*> argv;
    for (auto& a : session_args) argv.push_back(a.data());
    auto session = corral::run::parse_session_request(static_cast<int>(argv.size()) - 1, argv.data() + 1);
    CHECK(*session.rootfs == RootfsSource(DirRootfs{cwd + "/imgs/debian", cwd + "/imgs/debian"}));
}

TEST_CASE("a bad image NAME in --rootfs image:NAME is a usage error when parsed, in the store's words") {
    // Before, the parse took any text after "image:" and the image store
    // refused it once the run dir was made (exit 125, a refused run.json).
    CHECK(error_of({"--rootfs", "image:../x"}) ==
          "image ../x: not a valid image name (A-Z a-z 0-9 . _ -, starting with a letter or digit)");
    CHECK(error_of({"--rootfs", "image:", "--", "true"}) ==
          "image : not a valid image name (A-Z a-z 0-9 . _ -, starting with a letter or digit)");
    CHECK(error_of({"--rootfs=", "--", "true"}) == "--rootfs: empty path; expected a directory");
}

TEST_CASE("a mistyped option gets one suggestion when one is close, none otherwise") {
    CHECK(error_of({"--memroy", "1G", "--", "true"}).starts_with("unknown option \"--memroy\" (did you mean --memory?); "));
    CHECK(error_of({"--workspce", "/w", "--", "true"}).starts_with("unknown option \"--workspce\" (did you mean --workspace?); "));
    CHECK(error_of({"--ro-bnd=/a:/b", "--", "true"}).starts_with("unknown option \"--ro-bnd=/a:/b\" (did you mean --ro-bind?); "));
    CHECK(error_of({"--bogus", "--", "true"}).starts_with("unknown option \"--bogus\"; options are "));
}

TEST_CASE("Docker's flags are answered with corral's equivalent, never accepted") {
    CHECK(error_of({"-e", "A=1", "--", "true"}) == "corral run has no -e; use --env K=V");
    CHECK(error_of({"-v", "/a:/b", "--", "true"}).starts_with("corral run has no -v; use --bind SRC:DST"));
    CHECK(error_of({"--volume=/a:/b", "--", "true"}).starts_with("corral run has no --volume; use --bind SRC:DST"));
    CHECK(error_of({"-it", "--", "sh"}).starts_with("corral run has no -it; use --tty"));
    CHECK(error_of({"-w", "/src", "--", "true"}).find("--workspace DIR") != std::string::npos);
    CHECK(error_of({"--rm", "--", "true"}).starts_with("corral run has no --rm"));
    CHECK(error_of({"--network", "host", "--", "true"}).find("--allow HOST[:PORT]") != std::string::npos);
    // Docker run flags with an answer: what corral has instead, or never and why.
    CHECK(error_of({"-d", "--", "true"}).find("`corral session start --name N`, then `corral exec N -- CMD`") !=
          std::string::npos);
    CHECK(error_of({"--detach", "--", "true"}).starts_with("corral run has no --detach: "));
    CHECK(error_of({"--read-only", "--", "true"}).find("--ro-bind SRC:DST") != std::string::npos);
    for (std::string never : {"--privileged", "--cap-add=SYS_ADMIN"}) {
        const std::string e = error_of({never, "--", "true"});
        CAPTURE(e);
        CHECK(e.find("and never will: CMD runs with no capability in any set") != std::string::npos);
        CHECK(e.find("docs/security.md") != std::string::npos);
    }
    CHECK(error_of({"--entrypoint", "sh", "--", "true"}).find("the command is what follows --") != std::string::npos);
    CHECK(error_of({"--init", "--", "true"}).find("corral's own init is always PID 1") != std::string::npos);
    CHECK(error_of({"--ulimit", "nofile=1024", "--", "true"}).find("use --nofile N for open files") != std::string::npos);
    CHECK(error_of({"--ulimit=nofile=1024", "--", "true"}).find("use --nofile N") != std::string::npos);
    CHECK(error_of({"--env-file", ".env", "--", "true"}).find("use --env K=V for each variable, or a worker's [env]") !=
          std::string::npos);
    // Each answer names an option corral has (--tty comes with the terminal mode).
    for (std::string flag : {"-e", "-v", "-w", "-m", "--tmpfs", "--mount", "--ulimit", "--env-file", "--read-only"}) {
        std::string e = error_of({flag, "x", "--", "true"});
        CAPTURE(e);
        bool names_one = false;
        for (const auto& o : corral::run::run_option_table()) names_one = names_one || e.find(std::string(o.name)) != std::string::npos;
        CHECK(names_one);
    }
}

TEST_CASE("--bind and --ro-bind: SRC:DST, DST absolute, normalised and not one of the box's own mounts") {
    auto r = parse({"--bind", "/h/a:/data/./a/", "--ro-bind=/h/.git:/h/.git", "--", "true"});
    REQUIRE(r.binds.size() == 2);
    CHECK(r.binds[0].source == "/h/a");
    CHECK(r.binds[0].target == "/data/a");
    CHECK_FALSE(r.binds[0].read_only);
    CHECK(r.binds[1].target == "/h/.git");
    CHECK(r.binds[1].read_only);
    CHECK(parse({"--bind", "/a:/b:c", "--", "true"}).binds[0].target == "/b:c");  // DST may hold ':'
    CHECK(error_of({"--bind", "/a", "--", "true"}).starts_with("--bind: got \"/a\", expected SRC:DST"));
    CHECK(error_of({"--bind", ":/b", "--", "true"}).starts_with("--bind: got \":/b\", expected SRC:DST"));
    CHECK(error_of({"--bind", "/a:", "--", "true"}).starts_with("--bind: got \"/a:\", expected SRC:DST"));
    CHECK(error_of({"--bind", "/a:b", "--", "true"}).starts_with("--bind: target \"b\": expected an absolute path"));
    CHECK(error_of({"--ro-bind", "/a:/", "--", "true"}).starts_with("--ro-bind: target \"/\": the box's root cannot be replaced"));
    CHECK(error_of({"--bind", "/a:/b/..", "--", "true"}).starts_with("--bind: target \"/b/..\": the box's root"));
    CHECK(parse({"--bind", "/a:/tmp/repo/.git", "--", "true"}).binds[0].target == "/tmp/repo/.git");  // below the box's /tmp
    for (std::string dst : {"/proc", "/proc/sys", "/sys", "/dev/shm", "/tmp", "/tmp/", "/etc", "/etc/ssl", "/workspace",
                            "/workspace/sub", "/root", "/home/agent", "/home/agent/.ssh", "/home", "/tmp/../etc"}) {
        CAPTURE(dst);
        CHECK(error_of({"--bind", "/a:" + dst, "--", "true"}).starts_with("--bind: target \"" + dst + "\": "));
    }
    CHECK(error_of({"--bind", "/a:/b:ro", "--", "true"}).find("use --ro-bind SRC:DST") != std::string::npos);
}

TEST_CASE("--allow HOST[:PORT]: the host as a grant's, the port 1..65535, default 443") {
    auto r = parse({"--allow", "API.Example.com.", "--allow=127.0.0.1:8443", "--allow", "[::1]:9", "--allow", "*.github.com",
                    "--", "true"});
    REQUIRE(r.allow.size() == 4);
    CHECK(r.allow[0].host.text() == "api.example.com");
    CHECK(r.allow[0].port == 443);
    CHECK(r.allow[1].host.text() == "127.0.0.1");
    CHECK(r.allow[1].port == 8443);
    CHECK(r.allow[2].host.text() == "::1");
    CHECK(r.allow[2].port == 9);
    CHECK(r.allow[3].host.is_wildcard());
    for (std::string bad : {"", "a..b", "*.com", "0x7f.1", "127.1", "::1", "[::1", "[::1]x", "a b", "x.com:", "x.com:0",
                            "x.com:65536", "x.com:08", "x.com:-1", "x.com:http", "[::1]:"}) {
        CAPTURE(bad);
        CHECK(error_of({"--allow", bad, "--", "true"}).starts_with("--allow: "));
    }
    CHECK(error_of({"--allow", "x.com", "--gateway", "unix:/s", "--", "true"}).starts_with("--allow x.com: a `corral gateway` daemon"));
}

TEST_CASE("--scratch-size and --tmp-size: sizes from 1M to 64G") {
    auto r = parse({"--scratch-size", "512M", "--tmp-size=1G", "--", "true"});
    CHECK(*r.scratch_bytes == 512ull << 20);
    CHECK(*r.tmp_bytes == 1ull << 30);
    CHECK(*parse({"--tmp-size", "64G", "--", "true"}).tmp_bytes == 64ull << 30);
    CHECK(*parse({"--tmp-size", "1M", "--", "true"}).tmp_bytes == 1ull << 20);
    for (std::string bad : {"0", "1023K", "65G", "1T", "lots", "-1M", ""}) {
        CAPTURE(bad);
        CHECK(error_of({"--scratch-size", bad, "--", "true"}).starts_with("--scratch-size: invalid size \"" + bad + "\""));
        CHECK(error_of({"--tmp-size", bad, "--", "true"}).starts_with("--tmp-size: invalid size \"" + bad + "\""));
    }
}

TEST_CASE("an option given twice is refused unless its row is repeatable; --help stops the reading") {
    CHECK(error_of({"--memory", "1G", "--memory=2G", "--", "true"}) == "--memory: given twice; give it once");
    CHECK(error_of({"--quiet", "--quiet", "--", "true"}) == "--quiet: given twice; give it once");
    auto o = parse({"--env", "A=1", "--env", "B=2", "--bind", "/a:/a", "--bind", "/b:/b", "--allow", "x.example",
                    "--allow", "y.example", "--ro-bind", "/c:/c", "--ro-bind", "/d:/d", "--", "true"});
    CHECK(o.env.size() == 2);
    CHECK(o.binds.size() == 4);
    CHECK(o.allow.size() == 2);
    CHECK(parse({"--help", "--bogus"}).help);
    CHECK(parse({"-h", "--memory"}).help);
}

namespace {
// `corral session start ARGS`: the request, or the usage error's text.
std::string session_error_of(std::vector<std::string> args, corral::run::RunRequest* out = nullptr) {
    args.insert(args.begin(), "start");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    try {
        auto r = corral::run::parse_session_request(static_cast<int>(argv.size()), argv.data());
        if (out) *out = std::move(r);
    } catch (const corral::UsageError& e) {
        return e.what();
    }
    return "(no error)";
}
}  // namespace

TEST_CASE("a session's --name is a row of its table: both forms, once, and a misspelling gets its suggestion") {
    corral::run::RunRequest r;
    CHECK(session_error_of({"--name", "harness", "--memory", "1G"}, &r) == "(no error)");
    CHECK(r.session_name == std::optional<std::string>("harness"));
    CHECK(session_error_of({"--name=h2"}, &r) == "(no error)");
    CHECK(r.session_name == std::optional<std::string>("h2"));
    // Before, --name was taken out by hand ahead of the table: a misspelling
    // was suggested some run option, and a second --name replaced the first.
    CHECK(session_error_of({"--nmae", "x"}).find("did you mean --name?") != std::string::npos);
    CHECK(session_error_of({"--name", "a", "--name", "b"}) == "--name: given twice; give it once");
    CHECK(session_error_of({"--name", "Bad_Name"}) ==
          "--name \"Bad_Name\": expected a lower-case letter or digit, then up to 39 of [a-z0-9-]");
    CHECK(session_error_of({"--name"}) == "--name: missing value; see `corral session start --help`");
    // `corral run` has no --name: the Docker habit's answer, as before.
    CHECK(error_of({"--name", "x", "--", "true"}) ==
          "corral run has no --name: each run gets a run id (--hostname NAME names the box)");
}
