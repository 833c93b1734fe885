// supervisor/terminal_prompt.hpp — `corral run --tty`: a question for the
// operator (a request that waits for a person's approval) asked at the run's
// own terminal, between the box's output, answered y or n there
// (docs/approvals.md, "At the run's terminal (--tty)").
//
// The supervisor knows nothing of approvals: whoever keeps the questions
// (run/terminal_approvals.hpp wires the embedded gateway's) is a
// QuestionSource; the relay (terminal.hpp) shows one question at a time with
// a PromptDialog. While a question (or the notice that it ended elsewhere) is
// up the dialog is modal: the caller's keys are the dialog's, never the
// box's, and the box's output waits in its pty (not read, so not dropped:
// the box's writes block once the pty's buffer is full). The box's pty is
// never written by the dialog.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corral::supervisor {

// One question: its id and what it says, one line each. The lines may carry
// the box's bytes (a host, a path): the dialog escapes them
// (base/terminal_text.hpp) and cuts each to kMaxPromptLine bytes.
struct Question {
    std::string id;
    std::vector<std::string> lines;
};

inline constexpr std::size_t kMaxPromptLine = 400;

// Whoever keeps the questions. Called from the supervisor's thread only;
// the source is told of its questions' changes on its own threads and says
// so by making changes_fd() readable.
class QuestionSource {
public:
    virtual ~QuestionSource() = default;
    // Readable when something changed: a question was asked, or one ended
    // without the dialog (decided elsewhere, timed out, cancelled).
    virtual int changes_fd() const = 0;
    // Drains changes_fd().
    virtual void changes_seen() = 0;
    // The oldest question still open and not handed out yet, or nullopt.
    virtual std::optional<Question> next() = 0;
    // nullopt while `id` is open; else how it ended, in words.
    virtual std::optional<std::string> ended(const std::string& id) = 0;
    // The operator's answer to `id`: what came of it, in words (decided, or
    // not, and why: it ended meanwhile).
    virtual std::string answer(const std::string& id, bool yes) = 0;
};

// The dialog as bytes in, bytes to show out: pure, tested without a
// terminal. The relay writes what each call returns to the caller's
// terminal and asks the source what the dialog says it must.
class PromptDialog {
public:
    enum class State { idle, asking, answering, notice };

    // A question or a notice is up: keys are the dialog's, output waits.
    bool modal() const { return state_ != State::idle; }
    State state() const { return state_; }
    const std::string& shown_id() const { return id_; }

    // Shows `q` (idle only): on lines of its own (a fresh line first), each
    // escaped, attributes reset so the box cannot hide it, then "[y/n] ".
    std::string ask(const Question& q);

    // Keys typed while modal, as read (one read's chunk). Asking: y/Y is
    // yes, n/N is no, any other key is ignored; a notice: any key closes it.
    // Whatever else the chunk holds is the dialog's too and dropped: no key
    // typed at a question ever reaches the box.
    struct Keys {
        std::string show;              // the echo of the answer
        std::optional<bool> answer;    // given: the relay asks the source, then answered()
    };
    Keys keys(std::string_view typed);

    // What came of the answer (the source's words): closes the dialog.
    std::string answered(std::string_view outcome);

    // The question shown ended without the dialog (the source's words): a
    // notice that stays, modal, until a key, so the key the operator
    // meant for the question never reaches the box either.
    std::string ended_elsewhere(std::string_view how);

    // The run ends with the dialog up: closes it, with `why` if a question
    // was up ("" when idle, a fresh line after a notice).
    std::string close(std::string_view why);

private:
    State state_ = State::idle;
    std::string id_;
};

// One line of a question as the dialog shows it: escaped, at most
// kMaxPromptLine bytes (cut on a character's boundary, "..." said).
std::string prompt_line(std::string_view text);

}  // namespace corral::supervisor
