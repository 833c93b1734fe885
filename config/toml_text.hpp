// config/toml_text.hpp — the one door TOML text comes in by: every org.toml,
// worker.toml and stand-alone gateway file is read and parsed here.
//
// toml11 (3.7) is handed only valid UTF-8: on an invalid sequence inside a
// literal string it rewinds an iterator of one buffer into another and reads
// outside the heap block (found by fuzz/worker_toml.cpp). TOML documents must
// be UTF-8 anyway, so the check is also the rule, with its own clear error.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "base/checked.hpp"

#include <toml.hpp>

namespace corral::config {

// Where `text` stops being well-formed UTF-8 (overlong forms, surrogates and
// code points above U+10FFFF are not), or npos if it all is.
std::size_t first_invalid_utf8(std::string_view text);

struct TomlDocument {
    std::optional<toml::value> root;   // set when the text parsed
    std::size_t line = 0;              // where the problem is (1-based), 0 if unknown
    std::string problem;               // one line, e.g. "TOML syntax error: ..."; empty when root is set
};

// The document `text` (named `file` in toml11's own locations), or the one
// problem that stopped it: invalid UTF-8 (line and column), or toml11's
// syntax error cut to its first line.
TomlDocument parse_toml_text(std::string_view text, const std::string& file);

// Why `path` cannot be read as a TOML file ("is a directory, allowed: a
// regular TOML file", "does not exist, ..."); none if it is a regular file.
Problem check_toml_file(const std::string& path);

// parse_toml_text on the file at `path`; a file that cannot be read is a
// problem with line 0 ("cannot read: <errno text>").
TomlDocument parse_toml_file(const std::string& path);

}  // namespace corral::config
