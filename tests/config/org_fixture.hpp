// A throw-away organisation directory for config tests.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "config/org_config.hpp"

namespace corral::test {

struct OrgDir {
    std::filesystem::path path;
    OrgDir() {
        char tmpl[] = "/tmp/corral-org-XXXXXX";
        if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
        path = tmpl;
    }
    ~OrgDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    OrgDir(const OrgDir&) = delete;
    OrgDir& operator=(const OrgDir&) = delete;

    // Writes `content` to DIR/rel, creating parent directories.
    void write(const std::string& rel, const std::string& content) const {
        auto p = path / rel;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << content;
    }
    void org(const std::string& content) const { write("org.toml", content); }
    void worker(const std::string& name, const std::string& content) const {
        write("workers/" + name + "/worker.toml", content);
    }
    std::string str() const { return path.string(); }

    // Writes every "`PREFIX/REL`...:" + ```toml block of a markdown document
    // (docs/configuration.md's example organisation) to DIR/REL. Returns the
    // number of files written.
    int write_markdown_example(const std::string& markdown, const std::string& prefix) const {
        std::istringstream in(markdown);
        std::string line, rel;
        int written = 0;
        bool pending = false;
        while (std::getline(in, line)) {
            const std::string open = "`" + prefix + "/";
            if (line.rfind(open, 0) == 0 && !line.empty() && line.back() == ':') {
                auto close = line.find('`', open.size());
                if (close == std::string::npos) continue;
                rel = line.substr(open.size(), close - open.size());
                pending = true;
            } else if (pending && line == "```toml") {
                std::string body;
                while (std::getline(in, line) && line != "```") body += line + "\n";
                write(rel, body);
                ++written;
                pending = false;
            }
        }
        return written;
    }
    std::string file(const std::string& rel) const { return (path / rel).string(); }
};

// All error lines of check_org, joined, for "contains" checks with a readable failure.
inline std::string errors_of(const OrgDir& d) {
    auto c = config::check_org(d.str());
    std::string s;
    for (const auto& e : c.errors) s += e.text() + "\n";
    return s;
}

}  // namespace corral::test
