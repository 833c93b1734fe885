// Sessions: a sandbox that outlives one command. The lifecycle in the shape
// of an RL-environment harness (a service first, an agent that leaves a
// detached daemon, a verifier that sees the agent's files while no agent-UID
// process exists, then the verified teardown), each role isolated from the
// others, exec refused into what is not a live session (unknown, ended,
// a run, a non-root peer), a killed session supervisor, concurrent execs, an
// exec's deadline and its caller going away, and bad input for every option.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "base/fd.hpp"
#include "base/sha256.hpp"
#include "tests/support/ledger.hpp"
#include "tests/supervisor/sandbox/sandbox_support.hpp"
#include "tests/supervisor/sandbox/sessions_support.hpp"

namespace corral::test::sandbox {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// `corral exec OPTIONS ID -- sh` whose command writes without end to a
// stdout that is a pipe nobody reads (the caller's output fills it and
// stays full); the caller is reaped by end() or the destructor.
class UnreadCaller {
public:
    UnreadCaller(const Sessions& s, const std::string& id, const std::vector<std::string>& options,
                 const std::string& traps = "trap '' TERM; ") {
        std::vector<std::string> argv{corral_bin(), "exec", "--state-dir", s.state};
        argv.insert(argv.end(), options.begin(), options.end());
        argv.insert(argv.end(), {id, "--", "/bin/sh", "-c",
                                 traps + "while :; do echo filling-the-pipe-filling-the-pipe; done"});
        std::vector<char*> cargv;
        for (auto& a : argv) cargv.push_back(a.data());
        cargv.push_back(nullptr);
        int never_read[2];
        REQUIRE(pipe(never_read) == 0);
        pid_ = fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            dup2(never_read[1], 1);
            close(never_read[0]);
            close(never_read[1]);
            execv(cargv[0], cargv.data());
            _exit(127);
        }
        close(never_read[1]);
        read_end_ = never_read[0];
    }
    UnreadCaller(const UnreadCaller&) = delete;
    UnreadCaller& operator=(const UnreadCaller&) = delete;
    ~UnreadCaller() { end(); }
    // The caller's exit status (-1 if it was reaped already or did not exit).
    int end() {
        if (read_end_ >= 0) close(read_end_);
        read_end_ = -1;
        int status = 0;
        const bool exited = pid_ > 0 && waitpid(pid_, &status, 0) == pid_ && WIFEXITED(status);
        pid_ = -1;
        return exited ? WEXITSTATUS(status) : -1;
    }

private:
    pid_t pid_ = -1;
    int read_end_ = -1;
};

TEST_CASE("a session in the shape of an RL harness: service first, agent with a daemon, verifier after the agent is gone") {
    Sessions s;
    const std::string ws = fresh_dir("ws", 01777);
    const std::string id = s.start({"--name", "harness", "--workspace", ws});

    // A trusted service, first: a web server on the box's loopback that keeps
    // a private file. httpd daemonizes: the exec returns, the server lives on.
    Result svc = s.sh(id, "service",
                      "mkdir -m 700 /tmp/svc && echo service-secret > /tmp/svc/key && mkdir -p /tmp/www && "
                      "echo served-by-service > /tmp/www/index.html && httpd -p 127.0.0.1:8080 -h /tmp/www && "
                      "echo svc-uid=$(id -u)");
    INFO(transcript(svc));
    REQUIRE(svc.exit_code == 0);
    const uid_t service_uid = uid_of_exec(s.exec_record(id, 1));
    CHECK(field(svc.out, "svc-uid") == std::to_string(service_uid));

    // The agent reaches the service over loopback, cannot read its private
    // file, cannot signal it (kill -9 -1 reaches only its own UID), and
    // leaves a detached daemon behind.
    Result agent = s.sh(id, "agent",
                        "echo agent-uid=$(id -u); wget -Y off -qO- http://127.0.0.1:8080/index.html; "
                        "cat /tmp/svc/key 2>/dev/null && echo read-service-key=yes || echo read-service-key=no; "
                        "echo work-result > /workspace/result.txt; "
                        "( setsid sh -c 'exec 0</dev/null 1>/dev/null 2>&1; while :; do sleep 1; done' & ); "
                        "procs=$(ls -d /proc/[0-9]* | wc -l); echo procs-seen=$procs; echo done");
    INFO(transcript(agent));
    REQUIRE(agent.exit_code == 0);
    CHECK(agent.out.find("served-by-service") != std::string::npos);
    CHECK(field(agent.out, "read-service-key") == "no");
    const uid_t agent_uid = uid_of_exec(s.exec_record(id, 2));
    CHECK(field(agent.out, "agent-uid") == std::to_string(agent_uid));
    CHECK(agent_uid != service_uid);
    // The agent's daemon outlives its exec.
    CHECK_MESSAGE(!processes_of_uid(agent_uid).empty(), "the agent's detached daemon did not survive its exec");

    // Every role's traffic leaves through the session's bridge and gateway:
    // the proxy variables are the session's, and a host without a grant is
    // refused by the gateway (before any connection) and in its ledger, on a
    // line that names the role (the owner of the connecting socket).
    for (const char* role : {"agent", "service"}) {
        Result egress = s.sh(id, role, "echo proxy=$HTTPS_PROXY; wget -q -O- http://no-grant-" + std::string(role) +
                                           ".invalid/ 2>&1; echo wget-rc=$?");
        INFO(transcript(egress));
        CHECK(field(egress.out, "proxy") == "http://127.0.0.1:3128");
        CHECK(field(egress.out, "wget-rc") != "0");
        const json line = s.ledger_line(id, "no-grant-" + std::string(role) + ".invalid");
        INFO(line.dump());
        CHECK(line["identity"].get<std::string>().find('/') != std::string::npos);
        CHECK(line["role"] == role);
        CHECK(line["decision"] == "refuse");
    }

    Result kill_all = s.sh(id, "agent", "kill -9 -1; echo tried");
    CHECK(kill_all.out.find("tried") != std::string::npos);
    Result still_served = s.sh(id, "agent", "wget -Y off -qO- http://127.0.0.1:8080/index.html");
    CHECK_MESSAGE(still_served.out.find("served-by-service") != std::string::npos,
                  "the agent's kill -9 -1 reached the service: " << transcript(still_served));

    // The verifier: the agent's files are there, no agent-UID process is.
    Result verifier = s.sh(id, "verifier", "echo verifier-uid=$(id -u); cat /workspace/result.txt; "
                                           "wget -Y off -qO- http://127.0.0.1:8080/index.html; "
                                           "wget -q -O- http://no-grant-verifier.invalid/ >/dev/null 2>&1; true");
    INFO(transcript(verifier));
    REQUIRE(verifier.exit_code == 0);
    CHECK(verifier.out.find("work-result") != std::string::npos);
    CHECK(verifier.out.find("served-by-service") != std::string::npos);  // the service survived the agent's stop
    const json vrec = s.exec_record(id, 7);
    INFO(vrec.dump(2));
    CHECK(vrec["role"] == "verifier");
    CHECK(vrec["agent_stopped"]["invocations_killed"].get<int>() >= 1);  // the daemon's invocation at least
    CHECK(uid_of_exec(vrec) != agent_uid);
    CHECK(uid_of_exec(vrec) != service_uid);
    CHECK_MESSAGE(processes_of_uid(agent_uid).empty(), "agent processes exist after the verifier's start");
    CHECK(s.ledger_line(id, "no-grant-verifier.invalid")["role"] == "verifier");

    // ls and ps know it, by name too.
    Result ls = s.corral({"session", "ls", "--json"});
    json sessions = json::parse(ls.out);
    REQUIRE(sessions.size() == 1);
    CHECK(sessions[0]["id"] == id);
    CHECK(sessions[0]["name"] == "harness");
    CHECK(sessions[0]["execs"] == 7);
    Result by_name = s.exec("harness", {}, {"/bin/true"});
    CHECK(by_name.exit_code == 0);
    Result same_name = s.corral({"session", "start", "--rootfs", rootfs(), "--uid-range", uid_range(), "--name", "harness"});
    CHECK(same_name.exit_code == 2);
    CHECK(same_name.err.find("taken by running session " + id) != std::string::npos);

    s.stop_and_check(id, {agent_uid, service_uid, uid_of_exec(vrec)});
    // The session's supervisor told of each refused host in its own words.
    const std::string log = read_file(s.run_dir(id) + "/session.log");
    INFO(log);
    CHECK(log.find("corral session: refused") != std::string::npos);
    CHECK(log.find("corral run:") == std::string::npos);
}

TEST_CASE("each role is isolated: /proc shows only the exec's own processes, files, no capabilities") {
    Sessions s;
    const std::string id = s.start();
    // A service process that runs on; the agent's /proc never shows it.
    REQUIRE(s.sh(id, "service", "( setsid sh -c 'exec 0</dev/null 1>/dev/null 2>&1; exec sleep 1000' & ); "
                                "mkdir -m 700 /tmp/private; echo x > /tmp/private/f")
                .exit_code == 0);
    Result look = s.sh(id, "agent",
                       "for p in /proc/[0-9]*; do cat $p/comm; done | sort | tr '\\n' ' '; echo; "
                       "ls /tmp/private 2>/dev/null && echo private=readable || echo private=denied; "
                       "grep CapEff /proc/self/status; grep CapPrm /proc/self/status");
    INFO(transcript(look));
    CHECK(look.out.find("sleep") == std::string::npos);
    CHECK(field(look.out, "private") == "denied");
    CHECK(look.out.find("CapEff:\t0000000000000000") != std::string::npos);
    CHECK(look.out.find("CapPrm:\t0000000000000000") != std::string::npos);
    // A verifier has no capabilities either, and cannot write the service's file.
    Result v = s.sh(id, "verifier", "grep CapEff /proc/self/status; echo y > /tmp/private/f 2>/dev/null && echo w=yes || echo w=no");
    CHECK(v.out.find("CapEff:\t0000000000000000") != std::string::npos);
    CHECK(field(v.out, "w") == "no");
    // The service's and verifier's homes (and default cwd) are theirs alone:
    // the agent, who can write /tmp, can plant nothing there (a .pth, a
    // .gitconfig, a pytest.py the verifier would run).
    Result homes = s.sh(id, "verifier", "echo home=$HOME; echo cwd=$(pwd); ls -ld /tmp/corral-roles/verifier");
    INFO(transcript(homes));
    CHECK(field(homes.out, "home") == "/tmp/corral-roles/verifier");
    CHECK(field(homes.out, "cwd") == "/tmp/corral-roles/verifier");
    CHECK(homes.out.find("drwx------") != std::string::npos);
    Result plant = s.sh(id, "agent",
                        "echo x > /tmp/corral-roles/verifier/usercustomize.py 2>/dev/null && echo in-home=yes || echo in-home=no; "
                        "mkdir /tmp/corral-roles/evil 2>/dev/null && echo beside=yes || echo beside=no; "
                        "mv /tmp/corral-roles /tmp/moved 2>/dev/null && echo moved=yes || echo moved=no");
    INFO(transcript(plant));
    CHECK(field(plant.out, "in-home") == "no");
    CHECK(field(plant.out, "beside") == "no");
    CHECK(field(plant.out, "moved") == "no");
    // Three distinct UIDs, none root.
    std::set<uid_t> uids;
    for (int n = 1; n <= 3; ++n) uids.insert(uid_of_exec(s.exec_record(id, n)));
    CHECK(uids.size() == 3);
    CHECK(uids.count(0) == 0);
    s.stop_and_check(id, uids);
}

TEST_CASE("exec is refused with one clear line into what is not a live session") {
    Sessions s;
    Result unknown = s.exec("20991231T000000000Z-abcdef", {}, {"/bin/true"});
    CHECK(unknown.exit_code == 125);
    CHECK(unknown.err.find("no run") != std::string::npos);

    // A plain run is not a session.
    CorralArgs run_args;
    run_args.flags = {"--state-dir", s.state};
    run_args.own_run_dir = false;
    CorralRun plain = corral_run({"/bin/true"}, run_args);
    REQUIRE(plain.result.exit_code == 0);
    std::string run_id;
    for (const auto& l : lines(plain.result.err))
        if (auto at = l.find("run 2"); at != std::string::npos) run_id = l.substr(at + 4, 26);
    REQUIRE(!run_id.empty());
    Result not_session = s.exec(run_id, {}, {"/bin/true"});
    CHECK(not_session.exit_code == 125);
    CHECK(not_session.err.find("is a run, not a session") != std::string::npos);

    // An ended session.
    const std::string id = s.start();
    const uid_t agent_uid = [&] {
        REQUIRE(s.exec(id, {}, {"/bin/true"}).exit_code == 0);
        return uid_of_exec(s.exec_record(id, 1));
    }();
    REQUIRE(s.corral({"session", "stop", id}).exit_code == 0);
    Result ended = s.exec(id, {}, {"/bin/true"});
    CHECK(ended.exit_code == 125);
    CHECK(ended.err.find("has ended") != std::string::npos);
    check_nothing_left(id, agent_uid);

    // Not root: the command refuses, and the session's socket refuses a
    // non-root peer even one that can reach it (CAP_DAC_OVERRIDE kept).
    const std::string live = s.start();
    const std::string sock = s.run_dir(live) + "/session.sock";
    int answer_pipe[2];
    REQUIRE(pipe(answer_pipe) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(answer_pipe[0]);
        prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
        if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(90);
        __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct data[2] = {};
        data[0].effective = data[0].permitted = 1u << CAP_DAC_OVERRIDE;
        if (syscall(SYS_capset, &hdr, data) != 0) _exit(91);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
        if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) _exit(92);
        char buf[512];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) (void)!write(answer_pipe[1], buf, static_cast<size_t>(n));
        _exit(0);
    }
    close(answer_pipe[1]);
    std::string answer;
    char buf[512];
    for (ssize_t n; (n = read(answer_pipe[0], buf, sizeof buf)) > 0;) answer.append(buf, static_cast<size_t>(n));
    close(answer_pipe[0]);
    int status = 0;
    waitpid(child, &status, 0);
    REQUIRE_MESSAGE(WIFEXITED(status), "the non-root peer died");
    CHECK_MESSAGE(WEXITSTATUS(status) == 0, "the non-root peer could not connect (exit " << WEXITSTATUS(status) << ")");
    CHECK_MESSAGE(answer.find("serves root only") != std::string::npos, "answer: " << answer);
    CHECK(answer.find("uid 65534") != std::string::npos);
    Result nonroot = run({"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", corral_bin(), "exec",
                          "--state-dir", s.state, live, "--", "/bin/true"});
    CHECK(nonroot.exit_code == 125);
    CHECK(nonroot.err.find("must run as root") != std::string::npos);
    s.stop_and_check(live, {});
}

TEST_CASE("a session whose supervisor is killed dies with it, shows as lost, and is cleaned at the next start") {
    Sessions s;
    const std::string id = s.start();
    REQUIRE(s.sh(id, "agent", "( setsid sh -c 'exec 0</dev/null 1>/dev/null 2>&1; exec sleep 1000' & )").exit_code == 0);
    const uid_t agent_uid = uid_of_exec(s.exec_record(id, 1));
    REQUIRE(!processes_of_uid(agent_uid).empty());
    const pid_t supervisor = s.record(id)["supervisor"]["pid"].get<pid_t>();
    REQUIRE(kill(supervisor, SIGKILL) == 0);
    auto left = wait_until_no_process_of_uid(agent_uid, 10s);
    CHECK_MESSAGE(left.empty(), "the sandbox outlived its session's supervisor:\n" << describe_processes(left));
    Result lost = s.exec(id, {}, {"/bin/true"});
    CHECK(lost.exit_code == 125);
    CHECK(lost.err.find("is lost") != std::string::npos);
    Result ls = s.corral({"session", "ls", "-a", "--json"});
    CHECK(json::parse(ls.out)[0]["state"] == "lost");
    // The next start removes what the killed supervisor left (cgroup, locks, scratch).
    const std::string next = s.start();
    CHECK(cgroup_dirs_of_run(id).empty());
    CHECK(access(scratch_path(id).c_str(), F_OK) != 0);
    // Its locks are gone; the next session may lease the same UID again (the
    // lowest free one), and then the lock names that session.
    if (access(lock_path(agent_uid).c_str(), F_OK) == 0)
        CHECK(read_file(lock_path(agent_uid)).find(id) == std::string::npos);
    s.stop_and_check(next, {});
}

TEST_CASE("concurrent execs into one session each get their own output, number and status") {
    Sessions s;
    const std::string id = s.start();
    constexpr int kExecs = 4;
    std::vector<Result> results(kExecs);
    std::vector<std::thread> threads;
    for (int i = 0; i < kExecs; ++i)
        threads.emplace_back([&, i] {
            results[i] = s.sh(id, "agent", "echo exec-" + std::to_string(i) + "; sleep 0.5; exit " + std::to_string(10 + i));
        });
    for (auto& t : threads) t.join();
    std::set<int> numbers;
    for (int i = 0; i < kExecs; ++i) {
        INFO(transcript(results[i]));
        CHECK(results[i].exit_code == 10 + i);
        CHECK(lines(results[i].out) == std::vector<std::string>{"exec-" + std::to_string(i)});
    }
    for (int n = 1; n <= kExecs; ++n) {
        json e = s.exec_record(id, n);
        numbers.insert(e["exec"].get<int>());
        CHECK(e["exit_code"].get<int>() >= 10);
        CHECK(read_file(s.run_dir(id) + "/execs/" + std::to_string(n) + "/stdout.log").rfind("exec-", 0) == 0);
    }
    CHECK(numbers.size() == kExecs);
    // `corral logs` of a session: every exec's output, in exec order (each after its header: test_session_io).
    Result logs = s.corral({"logs", id});
    INFO(transcript(logs));
    CHECK(logs.exit_code == 0);
    std::vector<std::string> expected;
    for (int n = 1; n <= kExecs; ++n) expected.push_back(lines(read_file(s.run_dir(id) + "/execs/" + std::to_string(n) + "/stdout.log")).at(0));
    CHECK(without_exec_headers(logs.out) == expected);
    s.stop_and_check(id, {uid_of_exec(s.exec_record(id, 1))});

    // The session's journal: an exec and an exec_end record per exec, signed
    // in the chain between the admission and the terminal record.
    const std::string journal = s.run_dir(id) + "/journal.jsonl";
    std::map<int, json> starts, ends;
    std::vector<std::string> order;
    for (const auto& l : lines(read_file(journal))) {
        json r = json::parse(l);
        order.push_back(r["type"].get<std::string>());
        if (r["type"] == "exec") starts[r["payload"]["exec"].get<int>()] = r;
        if (r["type"] == "exec_end") ends[r["payload"]["exec"].get<int>()] = r;
    }
    REQUIRE(order.size() >= 2 + 2 * kExecs + 1);
    CHECK(order[0] == "admission");
    CHECK(order[1] == "started");
    CHECK(order.back() == "terminal");
    REQUIRE(starts.size() == kExecs);
    REQUIRE(ends.size() == kExecs);
    for (int n = 1; n <= kExecs; ++n) {
        CAPTURE(n);
        const json e = s.exec_record(id, n);
        CHECK(starts[n]["seq"].get<int>() < ends[n]["seq"].get<int>());  // the start before the command ran
        CHECK(starts[n]["payload"]["role"] == "agent");
        CHECK(starts[n]["payload"]["argv"] == e["argv"]);
        CHECK(ends[n]["payload"]["exit_code"] == e["exit_code"]);
        CHECK(ends[n]["payload"]["uid"] == e["uid"]);
        CHECK(ends[n]["payload"]["output"]["stdout"]["log_sha256"] ==
              "sha256:" + corral::sha256_hex(read_file(s.run_dir(id) + "/execs/" + std::to_string(n) + "/stdout.log")));
    }
    Result verified = s.corral({"journal", "verify", journal, "--key", s.state + "/journal/signing.pub"});
    INFO(transcript(verified));
    CHECK(verified.exit_code == 0);
}

TEST_CASE("two starts racing for one --name: one session gets it, the other is refused") {
    Sessions s;
    // The shared rootfs is made on first use: before the threads.
    const std::vector<std::string> start = {"session", "start", "--rootfs", rootfs(), "--uid-range", uid_range(),
                                            "--name", "race"};
    Result results[2];
    std::thread racers[2];
    for (int i = 0; i < 2; ++i) racers[i] = std::thread([&, i] { results[i] = s.corral(start); });
    for (auto& t : racers) t.join();
    INFO(transcript(results[0]) << "\n" << transcript(results[1]));
    // (Two starts rarely meet in the window between the name check and the
    // winner's run.json; the lock that closes it is checked below.)
    const int winner = results[0].exit_code == 0 ? 0 : 1;
    const Result& won = results[winner];
    const Result& lost = results[1 - winner];
    REQUIRE(won.exit_code == 0);
    std::string id = won.out.substr(0, won.out.find('\n'));
    s.started.push_back(id);
    CHECK(lost.exit_code == 2);
    CHECK(lost.err.find("--name race: taken by running session " + id) != std::string::npos);
    Result ls = s.corral({"session", "ls", "--json"});
    CHECK(json::parse(ls.out).size() == 1);
    s.stop_and_check(id, {});

    // A named start waits for session-names.lock before its check: while the
    // test holds the lock, the start does not get past it.
    corral::Fd lock(::open((s.state + "/session-names.lock").c_str(), O_RDWR | O_CLOEXEC));
    REQUIRE(lock.valid());
    REQUIRE(::flock(lock.get(), LOCK_EX) == 0);
    std::atomic<bool> done{false};
    Result held;
    std::thread waiter([&] {
        held = s.corral({"session", "start", "--rootfs", rootfs(), "--uid-range", uid_range(), "--name", "held"});
        done = true;
    });
    std::this_thread::sleep_for(1500ms);  // a start takes ~30 ms; it must still be waiting
    CHECK_FALSE(done.load());
    ::flock(lock.get(), LOCK_UN);
    waiter.join();
    INFO(transcript(held));
    REQUIRE(held.exit_code == 0);
    std::string held_id = held.out.substr(0, held.out.find('\n'));
    s.started.push_back(held_id);
    s.stop_and_check(held_id, {});
}

TEST_CASE("an exec's deadline and its caller going away stop its command with the grace") {
    Sessions s;
    const std::string id = s.start();
    Result late = s.exec(id, {"--timeout", "1s", "--grace", "200ms"}, {"/bin/sh", "-c", "trap 'echo got-term; exit 3' TERM; sleep 30 & wait"});
    INFO(transcript(late));
    CHECK(late.exit_code == 124);
    CHECK(late.out.find("got-term") != std::string::npos);
    CHECK(s.exec_record(id, 1)["outcome"] == "deadline");

    // The caller killed: the command gets SIGTERM (its trap writes a file).
    const std::string ws_probe = "/tmp/caller-gone";
    Background caller({corral_bin(), "exec", "--state-dir", s.state, "--grace", "2s", id, "--", "/bin/sh", "-c",
                       "trap 'echo stopped > " + ws_probe + "; exit 0' TERM; echo up; sleep 30 & wait"});
    for (int i = 0; i < 100 && access((s.run_dir(id) + "/execs/2/stdout.log").c_str(), F_OK) != 0; ++i)
        std::this_thread::sleep_for(50ms);
    std::this_thread::sleep_for(300ms);
    caller.signal(SIGKILL);
    caller.wait_exit(5s);
    json rec;
    for (int i = 0; i < 100; ++i) {
        std::this_thread::sleep_for(100ms);
        if (access((s.run_dir(id) + "/execs/2/exec.json").c_str(), F_OK) == 0) break;
    }
    rec = s.exec_record(id, 2);
    INFO(rec.dump(2));
    CHECK(rec["caller_gone"] == true);
    CHECK(rec["outcome"] == "caller_gone");
    CHECK(rec["exit_code"] == 0);  // its TERM trap ran
    Result probe = s.sh(id, "agent", "cat " + ws_probe);
    CHECK(probe.out.find("stopped") != std::string::npos);
    s.stop_and_check(id, {uid_of_exec(rec)});
}

TEST_CASE("a session's stop never waits on an exec whose caller reads nothing") {
    Sessions s;
    const std::string id = s.start({"--grace", "500ms"});
    // The caller's stdout is a pipe nobody reads: the exec's output fills it.
    // Its command dies of the stop's SIGTERM (no trap).
    UnreadCaller caller(s, id, {}, "");
    for (int i = 0; i < 100 && access((s.run_dir(id) + "/execs/1/stdout.log").c_str(), F_OK) != 0; ++i)
        std::this_thread::sleep_for(50ms);
    std::this_thread::sleep_for(500ms);  // the pipe is full by now
    Result stop = s.corral({"session", "stop", id}, 30s);
    INFO(transcript(stop));
    CHECK_MESSAGE(!stop.timed_out, "session stop hung on an exec whose caller reads nothing");
    CHECK(stop.exit_code == 0);
    CHECK(s.record(id)["teardown"]["verdict"] == "clean");
    // The caller still gets its command's status, as docs/sessions.md promises.
    CHECK(caller.end() == 143);
    CHECK(s.exec_record(id, 1)["status"] == 143);
}

TEST_CASE("an exec's --timeout stops its command even while its caller reads nothing") {
    Sessions s;
    const std::string id = s.start();
    const uid_t agent = s.record(id)["uid"].get<uid_t>();
    UnreadCaller caller(s, id, {"--timeout", "1s", "--grace", "200ms"});
    // The deadline (1 s) and the grace (0.2 s) pass while the exec waits on
    // the full pipe: the command is killed all the same (bounded wait).
    for (int i = 0; i < 100 && access((s.run_dir(id) + "/execs/1/stdout.log").c_str(), F_OK) != 0; ++i)
        std::this_thread::sleep_for(50ms);
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
        std::this_thread::sleep_for(50ms);
        gone = processes_of_uid(agent).empty();
    }
    CHECK_MESSAGE(gone, "the exec's command outlived its --timeout while its caller read nothing");
    s.stop_and_check(id, {agent});
    caller.end();
    // Its record says the deadline ended it (the caller, which read
    // nothing, was cut off by the session's stop).
    const json rec = s.exec_record(id, 1);
    INFO(rec.dump(2));
    CHECK(rec["deadline_hit"] == true);
    CHECK(rec["outcome"] == "deadline");
    CHECK(rec["stop"]["killed"] == true);
}

TEST_CASE("session start takes relative --workspace and --state-dir against the caller's directory, as corral run does") {
    const std::string here = fresh_dir("caller", 0755);
    const std::string ws = here + "/proj";
    REQUIRE(::mkdir(ws.c_str(), 0755) == 0);
    write_file(ws + "/marker", "relative-workspace\n");
    RunOptions from_here{60s};
    from_here.cwd = here;
    // The state dir given relative too.
    const std::string state = here + "/state";
    REQUIRE(::mkdir(state.c_str(), 0700) == 0);
    Result r = run({corral_bin(), "session", "start", "--rootfs", rootfs(), "--uid-range", uid_range(), "--workspace",
                    "proj", "--state-dir", "state"},
                   from_here);
    INFO(transcript(r));
    REQUIRE(r.exit_code == 0);
    std::string id = r.out.substr(0, r.out.find('\n'));
    Result cat = run({corral_bin(), "exec", "--state-dir", state, id, "--", "/bin/cat", "/workspace/marker"}, RunOptions{60s});
    CHECK(cat.out == "relative-workspace\n");
    Result stop = run({corral_bin(), "session", "stop", "--grace", "0", "--state-dir", state, id}, RunOptions{60s});
    CHECK(stop.exit_code == 0);
}

TEST_CASE("bad input to session start, stop, ls and exec: exit 2 with the option named") {
    Sessions s;
    struct Case {
        std::vector<std::string> argv;
        std::string says;
    };
    const std::vector<Case> cases = {
        {{"session", "start", "--", "/bin/true"}, "a session takes no command"},
        {{"session", "start", "--name", "Bad_Name"}, "--name"},
        {{"session", "start", "--name"}, "--name"},
        {{"session", "start", "--tty"}, "--tty"},
        {{"session", "start", "--stdin"}, "--stdin"},
        {{"session", "start", "--prompt", "hi"}, "--prompt"},
        {{"session", "start", "--memory", "lots"}, "--memory"},
        {{"session", "bogus"}, "unknown subcommand"},
        {{"session", "ls", "--bogus"}, "unknown option \"--bogus\""},
        {{"session", "ls", "--jsno"}, "(did you mean --json?)"},
        {{"session", "stop", "--grcae", "1s", "x"}, "(did you mean --grace?)"},
        {{"session", "stop"}, "expected one run id"},
        {{"exec"}, "missing session"},
        {{"exec", "someid"}, "missing command"},
        {{"exec", "--role", "admin", "someid", "--", "true"}, "--role admin"},
        {{"exec", "--timeout", "0", "someid", "--", "true"}, "--timeout"},
        {{"exec", "--timeout", "soon", "someid", "--", "true"}, "--timeout"},
        {{"exec", "--grace", "x", "someid", "--", "true"}, "--grace"},
        {{"exec", "--timeout", "400d", "someid", "--", "true"}, "at most 30 days"},
        {{"exec", "someid", "--", "printf", "\xff\xfe"}, "not valid UTF-8"},
        {{"exec", "--env", "=v", "someid", "--", "true"}, "--env"},
        {{"exec", "--cwd", "relative", "someid", "--", "true"}, "--cwd"},
        {{"exec", "--bogus", "someid", "--", "true"}, "unknown option"},
        {{"exec", "someid", "--", ""}, "empty command name"},
        {{"exec", "--prompt", " ", "someid"}, "--prompt: empty"},
        {{"exec", "--prompt", "task", "someid", "--", "true"}, "not both"},
        {{"exec", "--prompt", "task", "--prompt-file", "/dev/null", "someid"}, "give one of them"},
        {{"exec", "--role", "verifier", "--prompt", "task", "someid"}, "--role verifier cannot take it"},
        {{"exec", "--prompt-file", "/nonexistent/prompt.txt", "someid"}, "--prompt-file /nonexistent/prompt.txt"},
    };
    for (const auto& c : cases) {
        Result r = s.corral(c.argv);
        std::string shown;
        for (const auto& a : c.argv) shown += a + " ";
        INFO(shown << "\n" << transcript(r));
        CHECK(r.exit_code == 2);
        CHECK(r.err.find(c.says) != std::string::npos);
        CHECK(lines(r.err).size() == 1);
    }
    // A session started without a worker has no agent: a prompt is refused
    // by the session (exit 2, why), and the session goes on serving commands.
    const std::string id = s.start();
    Result prompt = s.corral({"exec", "--prompt", "do the task", id});
    INFO(transcript(prompt));
    CHECK(prompt.exit_code == 2);
    CHECK(prompt.err.find("--prompt: the session has no worker (start it with --config DIR --worker NAME)") !=
          std::string::npos);
    CHECK(s.exec(id, {}, {"/bin/true"}).exit_code == 0);
    s.stop_and_check(id, {});
}

}  // namespace
}  // namespace corral::test::sandbox
