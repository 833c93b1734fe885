// tests/image/import_support.hpp — what the image integration tests share:
// running corral, the busybox base rootfs and the OCI layout made from it by
// umoci, and an image store with that rootfs imported under some names.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace corral::test::image_import {

namespace fs = std::filesystem;

inline constexpr const char* kUidRange = "1900100500-1900100599";

inline std::string sh(const std::string& script, const std::string& cwd = {}) {
    Result r = run({"sh", "-ec", script}, RunOptions{.cwd = cwd});
    if (r.exit_code != 0) throw std::runtime_error("fixture failed: " + script + "\n" + r.out + r.err);
    return r.out;
}

inline Result run_corral(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {corral_bin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, RunOptions{.timeout = std::chrono::milliseconds(120'000)});
}

inline Result image(const std::string& state, std::vector<std::string> args) {
    args.insert(args.begin(), "image");
    args.push_back("--state-dir");
    args.push_back(state);
    return run_corral(args);
}

inline Result run_box(const std::string& state, const std::string& rootfs, const std::vector<std::string>& cmd) {
    std::vector<std::string> args = {"run", "--state-dir", state, "--uid-range", kUidRange, "--rootfs", rootfs};
    if (!cmd.empty()) args.push_back("--");
    args.insert(args.end(), cmd.begin(), cmd.end());
    return run_corral(args);
}

inline std::size_t count_entries(const std::string& dir) {
    if (!fs::exists(dir)) return 0;
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// A busybox root with glibc's getent (libc has its files NSS module built in),
// a /gone directory and an /opq directory for the upper layers to delete and
// hide, and /keep.
inline void make_base_rootfs(const std::string& root) {
    sh("mkdir -p '" + root + "'/bin '" + root + "'/etc '" + root + "'/gone '" + root + "'/opq '" + root +
       "'/usr/bin '" + root + "'/lib64 '" + root + "'/lib/x86_64-linux-gnu\n"
       "cp /bin/busybox '" + root + "'/bin/\n"
       "for a in sh cat ls echo env pwd test id; do ln -s busybox '" + root + "'/bin/$a; done\n"
       "cp /usr/bin/getent '" + root + "'/usr/bin/\n"
       "for l in $(ldd /usr/bin/getent | grep -o '/[^ ]*'); do mkdir -p '" + root + "'$(dirname $l); cp -L $l '" + root +
       "'$l; done\n"
       "echo a > '" + root + "'/gone/f; echo lower > '" + root + "'/opq/old; echo keep > '" + root + "'/keep\n"
       "echo 'root:x:0:0::/root:/bin/sh' > '" + root + "'/etc/passwd; echo 'root:x:0:' > '" + root + "'/etc/group\n"
       "echo stale-build-host > '" + root + "'/etc/hostname; echo 'nameserver 10.9.8.7' > '" + root + "'/etc/resolv.conf\n"
       "echo fine > '" + root + "'/etc/ok\n");
}

// An OCI layout at DIR/oci, tag t: the base rootfs, then a layer deleting
// /gone and adding /opt/bin/tool, and a config.
inline void make_oci_layout(const TempDir& t) {
    const std::string dir = t.path();
    sh("umoci init --layout oci && umoci new --image oci:t && umoci unpack --image oci:t b >/dev/null", dir);
    make_base_rootfs(dir + "/b/rootfs");
    sh("umoci repack --image oci:t b && rm -rf b && umoci unpack --image oci:t b >/dev/null\n"
       "rm -rf b/rootfs/gone && mkdir -p b/rootfs/opt/bin && printf '#!/bin/sh\\necho tool-ran\\n' > b/rootfs/opt/bin/tool\n"
       "chmod 755 b/rootfs/opt/bin/tool && umoci repack --image oci:t b && rm -rf b\n"
       "umoci config --image oci:t --config.env FOO=from-image --config.env PATH=/opt/bin:/usr/bin:/bin "
       "--config.env HOME=/root --config.workingdir /srv/app --config.entrypoint /bin/echo "
       "--config.cmd hello-from-cmd --config.user 1000 --config.exposedports 8080/tcp",
       dir);
}



// The ids `corral ps` shows running.
inline std::vector<std::string> running_ids(const std::string& state) {
    Result ps = run_corral({"ps", "--json", "--state-dir", state});
    REQUIRE_MESSAGE(ps.exit_code == 0, ps.err);
    std::vector<std::string> ids;
    for (const auto& r : nlohmann::json::parse(ps.out))
        if (r["state"] == "running") ids.push_back(r["id"].get<std::string>());
    return ids;
}

// make_base_rootfs as a plain tarball, imported into t/state as each of
// `names` (one layer, which they share); returns the state dir.
inline std::string import_base_tarball(const TempDir& t, std::initializer_list<const char*> names) {
    make_base_rootfs(t / "root");
    sh("tar -C root -cf root.tar .", t.path());
    const std::string state = t / "state";
    for (const char* name : names) REQUIRE(image(state, {"import", t / "root.tar", "--name", name}).exit_code == 0);
    return state;
}

}  // namespace corral::test::image_import
