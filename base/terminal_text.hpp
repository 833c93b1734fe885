// base/terminal_text.hpp — the one rule for showing a string that came from a
// box (a request's target or host, a header, a path, argv, a name, a message
// carrying any of these) on the operator's terminal.
//
// A terminal acts on more than C0 controls: ESC sequences, the 8-bit C1
// controls CSI (0x9b) and OSC (0x9d) — as raw bytes, and in UTF-8 terminals
// also as the code points U+009B/U+009D — can move the cursor, retitle the
// window, write the clipboard or forge an earlier line; bidi overrides and
// invisible format characters make the line read differently from what it
// holds ("Trojan source"). So every such character is shown as an escape,
// never passed through:
//   - backslash                          \\   (so an escape is never ambiguous)
//   - tab, newline, carriage return      \t \n \r
//   - other C0 controls, DEL             \xNN
//   - bytes that are not valid UTF-8     \xNN (raw 0x80-0xff, overlong forms,
//     (raw C1 0x80-0x9f among them)           surrogates, past U+10FFFF, cut short)
//   - C1 controls U+0080-U+009F          \u0080 .. \u009f
//   - bidi controls and invisible format characters: U+061C, U+180E,
//     U+200B-U+200F, U+2028-U+202E, U+2060-U+206F, U+FEFF, U+FFF9-U+FFFB
//                                        \u061c, \u202e, ...
// Everything else (printable ASCII, letters and symbols of any script,
// emoji) is kept as it is: an operator's names need not be ASCII.
#pragma once

#include <string>
#include <string_view>

namespace corral {

// `s` made safe for one line of a terminal, by the rules above.
std::string terminal_text(std::string_view s);

// JSON text (as nlohmann's dump writes it) made safe for a terminal and kept
// valid JSON with the same value: each character the rules above escape
// (C0 but the newlines between lines, DEL, C1, bidi and format characters) becomes
// its \uXXXX JSON escape, and a byte that is not valid UTF-8 becomes \ufffd.
// Such characters can only be inside JSON strings, where \uXXXX means them.
std::string terminal_json(std::string_view json_text);

}  // namespace corral
