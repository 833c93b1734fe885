// supervisor/terminal_prompt.cpp — see terminal_prompt.hpp.
#include "supervisor/terminal_prompt.hpp"

#include "base/terminal_text.hpp"

namespace corral::supervisor {

namespace {

// A fresh line, then the attributes and character set a terminal starts
// with: whatever the box left set (concealed text, black on black, the DEC
// line-drawing set) must not hide or garble corral's own words. The box's
// full-screen program redraws itself after the dialog (the relay's window
// nudge); a line-oriented one goes on from the next line.
constexpr std::string_view kFreshLine = "\r\n\033[0m\017\033(B";

std::string corral_line(std::string_view text) { return "corral: " + prompt_line(text) + "\r\n"; }

}  // namespace

std::string prompt_line(std::string_view text) {
    std::string shown = terminal_text(text);
    if (shown.size() <= kMaxPromptLine) return shown;
    std::size_t cut = kMaxPromptLine;
    // Back to the start of a UTF-8 character (terminal_text's output is valid UTF-8).
    while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;
    shown.resize(cut);
    return shown + "...";
}

std::string PromptDialog::ask(const Question& q) {
    if (state_ != State::idle) return {};
    state_ = State::asking;
    id_ = q.id;
    std::string out(kFreshLine);
    for (std::size_t i = 0; i < q.lines.size(); ++i) {
        out += i == 0 ? "corral: " : "        ";
        out += prompt_line(q.lines[i]);
        out += i + 1 < q.lines.size() ? "\r\n" : " ";
    }
    if (q.lines.empty()) out += "corral: " + prompt_line(q.id) + " ";
    return out + "[y/n] ";
}

PromptDialog::Keys PromptDialog::keys(std::string_view typed) {
    Keys k;
    if (state_ == State::notice) {
        if (!typed.empty()) {
            state_ = State::idle;
            id_.clear();
            k.show = "\r\n";
        }
        return k;
    }
    if (state_ != State::asking) return k;
    for (char c : typed) {
        if (c == 'y' || c == 'Y' || c == 'n' || c == 'N') {
            k.answer = c == 'y' || c == 'Y';
            k.show = std::string(*k.answer ? "y" : "n") + "\r\n";
            state_ = State::answering;
            break;
        }
    }
    return k;
}

std::string PromptDialog::answered(std::string_view outcome) {
    if (state_ != State::answering) return {};
    state_ = State::idle;
    id_.clear();
    return corral_line(outcome);
}

std::string PromptDialog::ended_elsewhere(std::string_view how) {
    if (state_ != State::asking) return {};
    state_ = State::notice;
    return std::string("\r\n") + corral_line(how) + "corral: press any key to go back to the box ";
}

std::string PromptDialog::close(std::string_view why) {
    if (state_ == State::idle) return {};
    // A notice has said all there was to say about its question.
    const bool asking = state_ != State::notice;
    state_ = State::idle;
    id_.clear();
    return asking ? std::string("\r\n") + corral_line(why) : std::string("\r\n");
}

}  // namespace corral::supervisor
