// supervisor/terminal_prompt: the --tty question dialog as bytes in and out
// (no terminal): what it shows, which keys answer, that the box's bytes in
// a question cannot drive the terminal, and the notice when a question
// ended elsewhere; then the TerminalRelay asking a source's questions on
// two pty pairs (no root): no key typed at a question reaches the box.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.hpp"
#include "supervisor/terminal.hpp"
#include "supervisor/terminal_prompt.hpp"

using namespace corral::supervisor;

namespace {

Question sample_question() { return Question{"ap-1-0a1b2c3d", {"the box asks: GET example.com:80/x", "approval ap-1-0a1b2c3d", "approve?"}}; }

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("prompt: a question is shown on lines of its own, attributes reset, ending in [y/n]") {
    PromptDialog d;
    CHECK_FALSE(d.modal());
    const std::string shown = d.ask(sample_question());
    CHECK(d.modal());
    CHECK(d.shown_id() == "ap-1-0a1b2c3d");
    CHECK(shown.rfind("\r\n\033[0m", 0) == 0);
    CHECK(has(shown, "corral: the box asks: GET example.com:80/x\r\n"));
    CHECK(has(shown, "        approval ap-1-0a1b2c3d\r\n"));
    CHECK(shown.size() >= 15);
    CHECK(shown.substr(shown.size() - 15) == "approve? [y/n] ");
    // One question at a time.
    CHECK(d.ask(sample_question()).empty());
}

TEST_CASE("prompt: y/Y approves, n/N denies, other keys are ignored, the rest of the chunk is the dialog's") {
    const std::pair<std::string, bool> cases[] = {{"y", true}, {"Y", true}, {"n", false}, {"xN", false},
                                                  {"q\033[Ay and more", true}};
    for (const auto& typed_and_answer : cases) {
        const std::string& typed = typed_and_answer.first;
        const bool yes = typed_and_answer.second;
        PromptDialog d;
        d.ask(sample_question());
        CHECK(d.keys("abc\r").answer == std::nullopt);
        CHECK(d.modal());
        auto k = d.keys(typed);
        REQUIRE(k.answer.has_value());
        CHECK(*k.answer == yes);
        CHECK(k.show == std::string(yes ? "y" : "n") + "\r\n");
        CHECK(d.modal());  // until the outcome is shown
        CHECK(d.keys("y").answer == std::nullopt);  // answered once
        const std::string out = d.answered("ap-1-0a1b2c3d: approved by root (uid 0) at the run's terminal");
        CHECK(out == "corral: ap-1-0a1b2c3d: approved by root (uid 0) at the run's terminal\r\n");
        CHECK_FALSE(d.modal());
    }
}

TEST_CASE("prompt: the box's bytes in a question are escaped, and a long line is cut") {
    PromptDialog d;
    const std::string shown = d.ask(Question{"ap-2", {"GET evil:80/\033]0;owned\007\r\n\x9b" "2J\xe2\x80\xae"}});
    CHECK_FALSE(has(shown, "\033]"));
    CHECK_FALSE(has(shown, "\007"));
    CHECK_FALSE(has(shown, "\x9b"));
    CHECK_FALSE(has(shown, "\xe2\x80\xae"));
    CHECK(has(shown, "\\x1b]0;owned\\x07\\r\\n"));
    const std::string longest = prompt_line(std::string(1000, 'a'));
    CHECK(longest.size() == kMaxPromptLine + 3);
    CHECK(longest.substr(kMaxPromptLine) == "...");
    // Cut on a character's boundary: no half of a two-byte letter.
    const std::string letters = prompt_line(std::string(kMaxPromptLine - 1, 'a') + "\xc3\xa9\xc3\xa9");
    CHECK(letters == std::string(kMaxPromptLine - 1, 'a') + "...");
}

TEST_CASE("prompt: a question that ended elsewhere leaves a notice that takes the next key, whatever it is") {
    PromptDialog d;
    d.ask(sample_question());
    const std::string notice = d.ended_elsewhere("ap-1-0a1b2c3d: approved by root (uid 0)");
    CHECK(has(notice, "corral: ap-1-0a1b2c3d: approved by root (uid 0)\r\n"));
    CHECK(has(notice, "press any key"));
    CHECK(d.state() == PromptDialog::State::notice);
    CHECK(d.modal());
    auto k = d.keys("y");
    CHECK_FALSE(k.answer.has_value());  // not an answer to a question that is gone
    CHECK_FALSE(d.modal());
    // Only a shown question can end elsewhere.
    CHECK(d.ended_elsewhere("x").empty());
}

TEST_CASE("prompt: closed when the run ends with it up; nothing to say when idle") {
    PromptDialog d;
    CHECK(d.close("the box is gone").empty());
    d.ask(sample_question());
    CHECK(d.close("the box is gone") == "\r\ncorral: the box is gone\r\n");
    CHECK_FALSE(d.modal());
}

// ---- The relay with a question source, on two pty pairs: the caller's
// terminal (the test types into its master and reads what corral shows)
// and the box's (the test reads what reached the box's input).

namespace {

struct RawPty {
    corral::Fd master, slave;
    RawPty() {
        master = corral::Fd(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
        REQUIRE(master.valid());
        REQUIRE(grantpt(master.get()) == 0);
        REQUIRE(unlockpt(master.get()) == 0);
        slave = corral::Fd(::open(ptsname(master.get()), O_RDWR | O_NOCTTY | O_CLOEXEC));
        REQUIRE(slave.valid());
        termios t{};
        REQUIRE(tcgetattr(slave.get(), &t) == 0);
        cfmakeraw(&t);  // byte by byte, no echo: as the relay's caller and a raw box
        REQUIRE(tcsetattr(slave.get(), TCSANOW, &t) == 0);
    }
    // What reached the slave's input: `want` bytes, or what came within a
    // hang guard of 5 s (a pty hands bytes on asynchronously).
    std::string input(std::size_t want) const {
        std::string out;
        for (int i = 0; i < 50 && out.size() < want; ++i) {
            pollfd p{slave.get(), POLLIN, 0};
            if (poll(&p, 1, 100) != 1) continue;
            char buf[256];
            const ssize_t n = read(slave.get(), buf, sizeof buf);
            if (n > 0) out.append(buf, static_cast<std::size_t>(n));
        }
        return out;
    }
};

class FakeSource final : public QuestionSource {
public:
    FakeSource() : changes_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) { REQUIRE(changes_.valid()); }
    int changes_fd() const override { return changes_.get(); }
    void changes_seen() override {
        std::uint64_t n = 0;
        (void)!read(changes_.get(), &n, sizeof n);
    }
    std::optional<Question> next() override {
        if (waiting_.empty()) return std::nullopt;
        Question q = waiting_.front();
        waiting_.pop_front();
        return q;
    }
    std::optional<std::string> ended(const std::string&) override { return std::exchange(ended_, std::nullopt); }
    std::string answer(const std::string& id, bool yes) override {
        answers.emplace_back(id, yes);
        return id + (yes ? ": approved" : ": denied");
    }
    void ask(Question q) {
        waiting_.push_back(std::move(q));
        wake();
    }
    void end_elsewhere(std::string how) {
        ended_ = std::move(how);
        wake();
    }
    std::vector<std::pair<std::string, bool>> answers;

private:
    void wake() {
        const std::uint64_t one = 1;
        REQUIRE(write(changes_.get(), &one, sizeof one) == 8);
    }
    corral::Fd changes_;
    std::deque<Question> waiting_;
    std::optional<std::string> ended_;
};

// One round of what supervise() does with the relay's own fds.
void relay_round(TerminalRelay& relay) {
    pollfd fds[TerminalRelay::kMaxPollFds];
    const int n = relay.add_poll_fds(fds);
    REQUIRE(poll(fds, static_cast<nfds_t>(n), 1000) > 0);
    relay.step(fds, n);
}

// What corral has shown on the caller's terminal since the last call.
std::string shown(int master) {
    std::string out;
    char buf[4096];
    pollfd p{master, POLLIN, 0};
    while (poll(&p, 1, 0) == 1) {
        ssize_t n = read(master, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

void type(int master, const std::string& keys) {
    REQUIRE(write(master, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size()));
}

}  // namespace

TEST_CASE("relay: keys typed at a question are the dialog's, never the box's; the box's input flows again after") {
    RawPty caller, box;
    FakeSource source;
    TerminalRelay relay(corral::Fd(dup(box.master.get())), corral::Fd(), caller.slave.get(), caller.slave.get());
    relay.ask_through(&source);

    type(caller.master.get(), "a");
    relay_round(relay);
    CHECK(box.input(1) == "a");

    source.ask(sample_question());
    relay_round(relay);
    CHECK(relay.output_paused());
    CHECK(has(shown(caller.master.get()), "approve? [y/n] "));

    type(caller.master.get(), "x\ry");
    relay_round(relay);
    REQUIRE(source.answers.size() == 1);
    CHECK(source.answers[0] == std::pair<std::string, bool>{"ap-1-0a1b2c3d", true});
    CHECK(has(shown(caller.master.get()), "y\r\ncorral: ap-1-0a1b2c3d: approved\r\n"));
    CHECK_FALSE(relay.output_paused());

    // The box's next input is what is typed after the answer, nothing before it.
    type(caller.master.get(), "b");
    relay_round(relay);
    CHECK(box.input(1) == "b");
}

TEST_CASE("relay: a question that ended elsewhere leaves a notice, and the next key closes it unsent") {
    RawPty caller, box;
    FakeSource source;
    TerminalRelay relay(corral::Fd(dup(box.master.get())), corral::Fd(), caller.slave.get(), caller.slave.get());
    relay.ask_through(&source);
    source.ask(sample_question());
    source.ask(Question{"ap-2-00000002", {"second"}});
    relay_round(relay);
    shown(caller.master.get());

    source.end_elsewhere("ap-1-0a1b2c3d: approved by root (uid 0)");
    relay_round(relay);
    CHECK(has(shown(caller.master.get()), "press any key"));
    CHECK(relay.output_paused());

    type(caller.master.get(), "y");
    relay_round(relay);
    CHECK(source.answers.empty());
    // The next question comes up at once.
    CHECK(has(shown(caller.master.get()), "corral: second [y/n] "));
    CHECK(relay.output_paused());
    type(caller.master.get(), "n");
    relay_round(relay);
    REQUIRE(source.answers.size() == 1);
    CHECK(source.answers[0].second == false);

    relay.end_questions();
    CHECK_FALSE(relay.output_paused());
    type(caller.master.get(), "z");
    relay_round(relay);
    CHECK(box.input(1) == "z");
}
