// Unit tests of the rootfs plan's refusals: no root, nothing mounted. Bad
// --rootfs, --workspace and --bind values get the exact message that names
// the option, the value and the problem; bad internal inputs are refused
// rather than planned into a weaker box.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/sys_error.hpp"
#include "rootfs/mount_plan.hpp"
#include "tests/rootfs/mount_plan_support.hpp"

namespace fs = std::filesystem;
using namespace corral::rootfs;
using namespace corral::rootfs::plan_test;

TEST_CASE("bad --rootfs and --workspace values name the option, the value and the problem") {
    ScratchTree dir;
    std::ofstream(dir.path / "file") << "x";
    RootfsSpec spec = base_spec();

    spec.source = dir_source("/nonexistent/corral-image");
    CHECK(usage_error_of(spec) == "--rootfs /nonexistent/corral-image: no such directory");
    spec.source = dir_source((dir.path / "file").string());
    CHECK(usage_error_of(spec) == "--rootfs " + corral::names::to_string(spec.source) + ": is not a directory");
    spec.source = dir_source("images/debian");
    CHECK(usage_error_of(spec) == "--rootfs images/debian: expected \"host\" or an absolute path to a directory");
    spec.source = dir_source("");
    CHECK(usage_error_of(spec) == "--rootfs : expected \"host\" or an absolute path to a directory");
    spec.source = dir_source("/");
    CHECK(usage_error_of(spec) == "--rootfs /: the host's root directory cannot be an image; use --rootfs host");
    fs::create_directory(dir.path / "a,b");
    spec.source = dir_source((dir.path / "a,b").string());
    CHECK(usage_error_of(spec).find("overlayfs cannot take a path containing ',', ':' or '\\'") != std::string::npos);
    spec.source = dir_source(dir.path.string());
    spec.scratch_dir = (dir.path / "scratch" / "run").string();
    CHECK(usage_error_of(spec) == "--rootfs " + corral::names::to_string(spec.source) + ": contains corral's scratch directory " + spec.scratch_dir +
                                      "; use an image directory outside it");

    spec = base_spec();
    spec.workspace = "/nonexistent/ws";
    CHECK(usage_error_of(spec) == "--workspace /nonexistent/ws: no such directory");
    spec.workspace = (dir.path / "file").string();
    CHECK(usage_error_of(spec) == "--workspace " + *spec.workspace + ": is not a directory");
    spec.workspace = "ws";
    CHECK(usage_error_of(spec) == "--workspace ws: expected an absolute path to a directory");
    spec.workspace = "/";
    CHECK(usage_error_of(spec) == "--workspace /: the host's root directory cannot be shown to the box; use a project directory");
    // Never where the supervisor keeps its records: not the dir, not above it, not inside it.
    fs::create_directories(dir.path / "state" / "runs" / "r1");
    spec.protected_dirs = {(dir.path / "state").string(), "/run/corral"};
    for (const fs::path& ws : {dir.path / "state", dir.path, dir.path / "state" / "runs"}) {
        spec.workspace = ws.string();
        CHECK(usage_error_of(spec) == "--workspace " + ws.string() + ": overlaps " + (dir.path / "state").string() +
                                          " (corral's records and the host's /proc, /sys and /dev are off limits to the box); use a directory outside it");
    }
    fs::create_directories(dir.path / "project");
    spec.workspace = (dir.path / "project").string();
    CHECK_NOTHROW(plan_rootfs(spec));
    spec.protected_dirs.clear();

    // The workspace is writable: it may not overlap the image in either direction.
    fs::create_directories(dir.path / "image" / "srv");
    spec = base_spec();
    spec.source = dir_source((dir.path / "image").string());
    spec.workspace = (dir.path / "image" / "srv").string();
    CHECK(usage_error_of(spec) == "--workspace " + *spec.workspace + ": is inside the image " + corral::names::to_string(spec.source) +
                                      ", which must stay read-only; use a directory outside it");
    spec.workspace = corral::names::to_string(spec.source);
    CHECK(usage_error_of(spec) == "--workspace " + *spec.workspace + ": is inside the image " + corral::names::to_string(spec.source) +
                                      ", which must stay read-only; use a directory outside it");
    spec.workspace = dir.path.string();
    CHECK(usage_error_of(spec) == "--workspace " + *spec.workspace + ": contains the image " + corral::names::to_string(spec.source) +
                                      ", which must stay read-only; use a directory that does not contain it");
    fs::create_directories(dir.path / "ws");
    spec.workspace = (dir.path / "ws").string();
    CHECK_NOTHROW(plan_rootfs(spec));
}

TEST_CASE("bad internal inputs are refused rather than weakening the box") {
    RootfsSpec spec = base_spec();
    spec.agent_uid = 0;
    CHECK(usage_error_of(spec) == "agent UID/GID 0/1900000007: 0 is root; the agent must run with an unprivileged UID and GID");
    spec = base_spec();
    spec.tmp_size_bytes = 0;
    CHECK(usage_error_of(spec) == "/tmp size 0: expected at least one byte (0 would mean unlimited)");
    spec = base_spec();
    spec.hostname = "bad host\n127.0.0.1 evil";
    CHECK(usage_error_of(spec).rfind("--hostname bad host", 0) == 0);
    spec = base_spec();
    spec.agent_name = "root";
    CHECK(usage_error_of(spec).find("agent name \"root\"") == 0);
    spec = base_spec();
    spec.scratch_dir = "run/corral";
    CHECK(usage_error_of(spec).rfind("scratch directory \"run/corral\"", 0) == 0);
    spec = base_spec();
    spec.scratch_dir = "/run/corral/scratch/../x";
    CHECK(usage_error_of(spec).rfind("scratch directory", 0) == 0);

    for (const char* bad : {"etc/x", "/etc/../x", "/etc//x", "/etc/x/", "/"}) {
        spec = base_spec();
        spec.extra_files.push_back({bad, "", 0644});
        CHECK(usage_error_of(spec) == "extra file \"" + std::string(bad) +
                                          "\": expected an absolute path without '.', '..', '//' or a trailing '/'");
    }
    for (const char* under : {"/workspace/x", "/proc/x", "/dev/x", "/sys/x", "/workspace"}) {
        spec = base_spec();
        spec.extra_files.push_back({under, "", 0644});
        CHECK(usage_error_of(spec).find(": may not be placed under /") != std::string::npos);
    }
    spec = base_spec();
    spec.extra_files.push_back({"/etc/x", "", 04755});
    CHECK(usage_error_of(spec) == "extra file /etc/x: mode must be within 0777 (no setuid, setgid or sticky bits)");
    spec = base_spec();
    spec.extra_files.push_back({"/etc/x", "", 0644});
    spec.extra_files.push_back({"/etc/x", "", 0644});
    CHECK(usage_error_of(spec) == "extra file /etc/x: given twice");
}

TEST_CASE("--bind sources get the workspace's refusals; targets are never equal or nested") {
    ScratchTree dir;
    fs::create_directories(dir.path / "a" / "b");
    fs::create_directories(dir.path / "state");
    RootfsSpec spec = base_spec();
    spec.binds = {{"/nonexistent/src", "/x", false, "--bind"}};
    CHECK(usage_error_of(spec) == "--bind /nonexistent/src: no such directory");
    spec.binds = {{"/", "/x", false, "--bind"}};
    CHECK(usage_error_of(spec) == "--bind /: the host's root directory cannot be shown to the box; use a project directory");
    spec.protected_dirs = {(dir.path / "state").string()};
    spec.binds = {{dir.path.string(), "/x", true, "--ro-bind"}};
    CHECK(usage_error_of(spec).starts_with("--ro-bind " + dir.path.string() + ": overlaps " + (dir.path / "state").string()));
    spec.protected_dirs.clear();
    spec.binds = {{(dir.path / "a").string(), "/x", false, "--bind"}, {(dir.path / "a" / "b").string(), "/x", true, "--ro-bind"}};
    CHECK(usage_error_of(spec) == "--ro-bind " + (dir.path / "a" / "b").string() + ":/x: --bind " + (dir.path / "a").string() +
                                      " already goes to /x; allowed: one bind per target");
    spec.binds = {{(dir.path / "a").string(), "/x", false, "--bind"}, {(dir.path / "a" / "b").string(), "/x/y", false, "--bind"}};
    CHECK(usage_error_of(spec).find(": overlaps --bind " + (dir.path / "a").string() + ":/x") != std::string::npos);
    spec.binds = {{(dir.path / "a").string(), "/usr/share/certs", false, "--bind"}};
    spec.extra_files = {{"/usr/share/certs/bundle.pem", "pem", 0644}};
    CHECK(usage_error_of(spec) == "--bind " + (dir.path / "a").string() + ":/usr/share/certs: would hold "
                                  "/usr/share/certs/bundle.pem, a file corral places in the box; allowed: a target outside it");
    spec.extra_files.clear();
    spec.binds = {{(dir.path / "a").string(), "/proc/x", false, "--bind"}};
    CHECK(usage_error_of(spec).starts_with("--bind: target \"/proc/x\": is at or below /proc"));
    // The image stays read-only: no bind into or around it.
    fs::create_directories(dir.path / "image");
    spec = base_spec();
    spec.source = dir_source((dir.path / "image").string());
    spec.binds = {{dir.path.string(), "/x", false, "--bind"}};
    std::string e = usage_error_of(spec);
    CAPTURE(e);
    const bool named = e.find(": contains the image") != std::string::npos || e.starts_with("--rootfs");
    CHECK(named);
}
