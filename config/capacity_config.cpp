// config/capacity_config.cpp — see capacity_config.hpp.
#include "config/capacity_config.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <vector>

#include "config/checker.hpp"
#include "config/toml_text.hpp"

namespace corral::config {

CapacityConfig load_capacity_config(const std::string& path) {
    CapacityConfig out;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return out;
    std::vector<Diagnostic> problems;
    Checker c(path, problems);
    if (Problem p = check_toml_file(path)) throw ConfigError(path + ": " + p->problem);
    TomlDocument doc = parse_toml_file(path);
    if (!doc.root) throw ConfigError(path + (doc.line ? ":" + std::to_string(doc.line) : "") + ": " + doc.problem);
    Table t(c, *doc.root, "", {"max_boxes"});
    if (auto n = t.integer("max_boxes", 1, kMaxBoxesCeiling)) out.max_boxes = static_cast<std::uint64_t>(*n);
    throw_if_any(problems);
    return out;
}

}  // namespace corral::config
