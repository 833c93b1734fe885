// tests/support/temp_dir.hpp — a scratch directory for one test.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace corral::test {

// A new directory /tmp/<prefix>.XXXXXX, removed with everything in it when the
// object goes out of scope.
class TempDir {
public:
    explicit TempDir(const std::string& prefix = "corral-test") {
        std::string tmpl = "/tmp/" + prefix + ".XXXXXX";
        if (::mkdtemp(tmpl.data()) == nullptr)
            throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

    // Writes `text` to <path>/<rel> (parents created) with `mode`; returns the full path.
    std::string write(const std::string& rel, const std::string& text, mode_t mode = 0644) const {
        std::string full = *this / rel;
        std::filesystem::create_directories(std::filesystem::path(full).parent_path());
        {
            std::ofstream out(full, std::ios::binary | std::ios::trunc);
            out << text;
            if (!out) throw std::runtime_error("write " + full + " failed");
        }
        if (::chmod(full.c_str(), mode) != 0) throw std::runtime_error("chmod " + full + ": " + std::strerror(errno));
        return full;
    }

    // A symbolic link <path>/<rel> -> target (parents created).
    void link(const std::string& rel, const std::string& target) const {
        std::string full = *this / rel;
        std::filesystem::create_directories(std::filesystem::path(full).parent_path());
        std::filesystem::create_symlink(target, full);
    }

private:
    std::string path_;
};

}  // namespace corral::test
