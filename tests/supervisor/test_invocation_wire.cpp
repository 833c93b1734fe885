// The exec request the session's init decodes (invocation_wire.hpp): what the
// supervisor encodes comes out whole, and every malformed, oversized or
// root-identity request is refused with its errno (the init never starts it).
#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "supervisor/invocation_wire.hpp"

using namespace corral::supervisor;

namespace {

ExecImage sample() {
    ExecImage im;
    im.uid = 1900000003;
    im.gid = 1900000003;
    im.task_limit = 4096;
    im.open_file_limit = 1024;
    im.cwd = "/workspace";
    im.argv = {"/bin/sh", "-c", "echo hi"};
    im.env = {"PATH=/bin", "HOME=/home/agent"};
    im.candidates = {"/bin/sh"};
    return im;
}

std::vector<char*> slots(std::size_t n) { return std::vector<char*>(n, nullptr); }

}  // namespace

TEST_CASE("an encoded exec request decodes to the same command, environment, identity and limits") {
    std::vector<char> buf = encode_exec_request(sample());
    auto s = slots(kMaxExecStrings);
    DecodedExec d;
    REQUIRE(decode_exec_request(buf.data(), buf.size(), s.data(), s.size(), d) == 0);
    CHECK(d.uid == 1900000003u);
    CHECK(d.gid == 1900000003u);
    CHECK(d.task_limit == 4096);
    CHECK(d.open_file_limit == 1024);
    CHECK(std::strcmp(d.cwd, "/workspace") == 0);
    CHECK(std::strcmp(d.argv[0], "/bin/sh") == 0);
    CHECK(std::strcmp(d.argv[2], "echo hi") == 0);
    CHECK(d.argv[3] == nullptr);
    CHECK(std::strcmp(d.envp[1], "HOME=/home/agent") == 0);
    CHECK(d.envp[2] == nullptr);
    CHECK(std::strcmp(d.candidates[0], "/bin/sh") == 0);
    CHECK(d.candidates[1] == nullptr);
}

TEST_CASE("a terminal request carries its flag and window size; a plain one has neither") {
    auto s = slots(kMaxExecStrings);
    DecodedExec d;
    ExecImage im = sample();
    auto plain = encode_exec_request(im);
    REQUIRE(decode_exec_request(plain.data(), plain.size(), s.data(), s.size(), d) == 0);
    CHECK_FALSE(d.tty);
    CHECK(d.rows == 0);
    im.tty = true;
    im.rows = 50;
    im.cols = 132;
    auto tty = encode_exec_request(im);
    REQUIRE(decode_exec_request(tty.data(), tty.size(), s.data(), s.size(), d) == 0);
    CHECK(d.tty);
    CHECK(d.rows == 50);
    CHECK(d.cols == 132);
}

TEST_CASE("a stdio server's request carries the flag that makes its stdout socket its stdin too") {
    auto s = slots(kMaxExecStrings);
    DecodedExec d;
    ExecImage im = sample();
    auto plain = encode_exec_request(im);
    REQUIRE(decode_exec_request(plain.data(), plain.size(), s.data(), s.size(), d) == 0);
    CHECK_FALSE(d.stdin_is_stdout);
    im.stdin_is_stdout = true;
    auto stdio = encode_exec_request(im);
    REQUIRE(decode_exec_request(stdio.data(), stdio.size(), s.data(), s.size(), d) == 0);
    CHECK(d.stdin_is_stdout);
    CHECK_FALSE(d.tty);
    // corral exec --stdin: the caller's stdin, a fourth fd.
    im.stdin_is_stdout = false;
    im.own_stdin = true;
    auto own = encode_exec_request(im);
    REQUIRE(decode_exec_request(own.data(), own.size(), s.data(), s.size(), d) == 0);
    CHECK(d.own_stdin);
    CHECK_FALSE(d.stdin_is_stdout);
}

TEST_CASE("the start gate goes with any one stdin; two stdins are still refused") {
    auto s = slots(kMaxExecStrings);
    DecodedExec d;
    ExecImage im = sample();
    im.gated = true;
    for (int stdin_kind = 0; stdin_kind < 4; ++stdin_kind) {
        im.tty = stdin_kind == 1;
        im.stdin_is_stdout = stdin_kind == 2;
        im.own_stdin = stdin_kind == 3;
        auto buf = encode_exec_request(im);
        REQUIRE(decode_exec_request(buf.data(), buf.size(), s.data(), s.size(), d) == 0);
        CHECK(d.gated);
        CHECK(d.tty == (stdin_kind == 1));
        CHECK(d.own_stdin == (stdin_kind == 3));
    }
    // Two stdins with the gate: the encoder refuses them, and so does the
    // init (the flags patched into a gated terminal request's header).
    im.tty = true;
    im.own_stdin = true;
    CHECK_THROWS(encode_exec_request(im));
    im.own_stdin = false;
    auto two = encode_exec_request(im);
    ExecRequestHeader h{};
    std::memcpy(&h, two.data(), sizeof h);
    h.flags |= kExecStdin;
    std::memcpy(two.data(), &h, sizeof h);
    CHECK(decode_exec_request(two.data(), two.size(), s.data(), s.size(), d) == EINVAL);
    im = sample();
    auto plain = encode_exec_request(im);
    REQUIRE(decode_exec_request(plain.data(), plain.size(), s.data(), s.size(), d) == 0);
    CHECK_FALSE(d.gated);
}

TEST_CASE("the init refuses a malformed, truncated, oversized or root request") {
    std::vector<char> good = encode_exec_request(sample());
    auto s = slots(kMaxExecStrings);
    DecodedExec d;
    SUBCASE("truncated anywhere") {
        for (std::size_t cut = 0; cut < good.size(); ++cut) {
            std::vector<char> b(good.begin(), good.begin() + static_cast<long>(cut));
            CHECK_MESSAGE(decode_exec_request(b.data(), b.size(), s.data(), s.size(), d) != 0, "cut at " << cut);
        }
    }
    SUBCASE("trailing bytes") {
        good.push_back('x');
        CHECK(decode_exec_request(good.data(), good.size(), s.data(), s.size(), d) != 0);
    }
    SUBCASE("a wrong magic") {
        good[0] ^= 1;
        CHECK(decode_exec_request(good.data(), good.size(), s.data(), s.size(), d) == EINVAL);
    }
    SUBCASE("UID or GID 0: no role runs as root") {
        ExecImage root = sample();
        root.uid = 0;
        auto b = encode_exec_request(root);
        CHECK(decode_exec_request(b.data(), b.size(), s.data(), s.size(), d) == EPERM);
        root = sample();
        root.gid = 0;
        b = encode_exec_request(root);
        CHECK(decode_exec_request(b.data(), b.size(), s.data(), s.size(), d) == EPERM);
        // -1 makes setresuid/setresgid keep what the process has: root.
        root = sample();
        root.uid = static_cast<uid_t>(-1);
        b = encode_exec_request(root);
        CHECK(decode_exec_request(b.data(), b.size(), s.data(), s.size(), d) == EPERM);
        root = sample();
        root.gid = static_cast<gid_t>(-1);
        b = encode_exec_request(root);
        CHECK(decode_exec_request(b.data(), b.size(), s.data(), s.size(), d) == EPERM);
    }
    SUBCASE("no limits") {
        ExecImage im = sample();
        im.task_limit = 0;
        auto b = encode_exec_request(im);
        CHECK(decode_exec_request(b.data(), b.size(), s.data(), s.size(), d) == EINVAL);
    }
    SUBCASE("a relative cwd") {
        ExecImage im = sample();
        im.cwd = "workspace";
        auto b = encode_exec_request(im);
        CHECK(decode_exec_request(b.data(), b.size(), s.data(), s.size(), d) == EINVAL);
    }
    SUBCASE("a flag the init does not know, or a reserved field set") {
        ExecRequestHeader h{};
        std::memcpy(&h, good.data(), sizeof h);
        h.flags = 1u << 7;
        std::memcpy(good.data(), &h, sizeof h);
        CHECK(decode_exec_request(good.data(), good.size(), s.data(), s.size(), d) == EINVAL);
        h.flags = 0;
        h.reserved = 1;
        std::memcpy(good.data(), &h, sizeof h);
        CHECK(decode_exec_request(good.data(), good.size(), s.data(), s.size(), d) == EINVAL);
    }
    SUBCASE("a stdio socket with a terminal: refused when encoded and when decoded") {
        ExecImage im = sample();
        im.tty = true;
        im.stdin_is_stdout = true;
        CHECK_THROWS_AS(encode_exec_request(im), std::invalid_argument);
        ExecRequestHeader h{};
        std::memcpy(&h, good.data(), sizeof h);
        h.flags = kExecTty | kExecStdinIsStdout;
        std::memcpy(good.data(), &h, sizeof h);
        CHECK(decode_exec_request(good.data(), good.size(), s.data(), s.size(), d) == EINVAL);
        // The caller's stdin with either: one stdin only.
        for (std::uint32_t other : {kExecTty, kExecStdinIsStdout}) {
            h.flags = kExecStdin | other;
            std::memcpy(good.data(), &h, sizeof h);
            CHECK(decode_exec_request(good.data(), good.size(), s.data(), s.size(), d) == EINVAL);
        }
        im.tty = false;
        im.own_stdin = true;
        CHECK_THROWS_AS(encode_exec_request(im), std::invalid_argument);
    }
    SUBCASE("more strings than the init's slots") {
        auto few = slots(4);
        CHECK(decode_exec_request(good.data(), good.size(), few.data(), few.size(), d) == EMSGSIZE);
    }
    SUBCASE("counts that claim more strings than the bytes hold") {
        good[12] = 9;  // argc
        CHECK(decode_exec_request(good.data(), good.size(), s.data(), s.size(), d) == EINVAL);
    }
}

TEST_CASE("the supervisor refuses to encode what the init would refuse") {
    ExecImage im = sample();
    im.argv.clear();
    CHECK_THROWS_AS(encode_exec_request(im), std::invalid_argument);
    im = sample();
    im.argv.push_back(std::string("a\0b", 3));
    CHECK_THROWS_AS(encode_exec_request(im), std::invalid_argument);
    im = sample();
    im.env.assign(1, std::string(kMaxExecRequestBytes, 'x'));
    CHECK_THROWS_AS(encode_exec_request(im), std::length_error);
    im = sample();
    im.env.assign(kMaxExecStrings, "K=V");
    CHECK_THROWS_AS(encode_exec_request(im), std::length_error);
}
