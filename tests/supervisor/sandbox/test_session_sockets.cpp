// Sessions: "the agent is gone" before a verifier covers the sockets the
// agent created, not only its processes. The agent parks listeners over
// SCM_RIGHTS in a service's Unix socket that never accepts (the queued
// message keeps them alive after the agent is killed); the verifier's
// connection to a parked TCP listener is refused, and a parked Unix socket,
// which the kernel cannot destroy, keeps the verifier from starting.
#include <doctest/doctest.h>

#include <string>

#include "tests/supervisor/sandbox/sandbox_support.hpp"
#include "tests/supervisor/sandbox/sessions_support.hpp"

namespace corral::test::sandbox {
namespace {

using nlohmann::json;

// A session whose service holds @corral-holder (never accepting) and whose
// agent parked a TCP listener on 127.0.0.1:9099 there (and, with
// `unix_name`, an abstract Unix listener); returns the session's id.
std::string session_with_parked_sockets(const Sessions& s, const std::string& unix_name) {
    std::string id = s.start();
    Result holder = s.sh(id, "service", "kernel-probe hold-unix corral-holder && echo holding");
    INFO(transcript(holder));
    REQUIRE(holder.exit_code == 0);
    Result agent = s.sh(id, "agent", "kernel-probe park corral-holder 9099 " + unix_name + " && connect-probe 127.0.0.1 9099");
    INFO(transcript(agent));
    REQUIRE(agent.exit_code == 0);
    CHECK(field(agent.out, "parked") == (unix_name.empty() ? "1" : "2"));
    // The agent's listener accepts while it lives: what the verifier must not meet.
    CHECK(agent.out.find("CONNECTED 127.0.0.1 9099") != std::string::npos);
    return id;
}

TEST_CASE("a TCP listener the agent parked over SCM_RIGHTS is destroyed before the verifier starts") {
    Sessions s;
    const std::string id = session_with_parked_sockets(s, "");
    Result verifier = s.exec(id, {"--role", "verifier"}, {"/bin/connect-probe", "127.0.0.1", "9099"});
    INFO(transcript(verifier));
    CHECK(verifier.out.find("connect-probe 127.0.0.1 9099: Connection refused") != std::string::npos);
    const json vrec = s.exec_record(id, 3);
    INFO(vrec.dump(2));
    CHECK(vrec["agent_stopped"].value("sockets_destroyed", -1) == 1);
    const uid_t agent_uid = uid_of_exec(s.exec_record(id, 2));
    s.stop_and_check(id, {agent_uid, uid_of_exec(s.exec_record(id, 1)), uid_of_exec(vrec)});
}

TEST_CASE("a Unix socket the agent parked keeps the verifier from starting: 125 and one line naming it") {
    Sessions s;
    const std::string id = session_with_parked_sockets(s, "corral-parked");
    const uid_t agent_uid = uid_of_exec(s.exec_record(id, 2));
    Result verifier = s.exec(id, {"--role", "verifier"}, {"/bin/connect-probe", "127.0.0.1", "9099"});
    INFO(transcript(verifier));
    CHECK(verifier.exit_code == 125);
    CHECK(verifier.out.find("CONNECTED") == std::string::npos);
    CHECK(verifier.err.find("the verifier did not start: the agent is not gone: 1 socket of uid " +
                            std::to_string(agent_uid) + " outlived its processes: Unix stream @corral-parked (listening) inode ") !=
          std::string::npos);
    // The refusal changes nothing else: the session stops clean.
    s.stop_and_check(id, {agent_uid, uid_of_exec(s.exec_record(id, 1))});
}

}  // namespace
}  // namespace corral::test::sandbox
