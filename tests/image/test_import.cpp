// Integration tests of `corral image` and `corral run --rootfs image:NAME`
// (root): real OCI layouts made by umoci, docker-save archives assembled by
// GNU tar from files the test writes, hostile archives written byte for byte
// by tests/image/make_tar.py, and real sandboxes running the imported images.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/sha256.hpp"
#include "tests/image/import_support.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace corral::test;
using namespace corral::test::image_import;


TEST_CASE("an OCI layout made by umoci: layers stacked, deletions applied, the config in effect, /etc generated") {
    TempDir t("corral-image-oci");
    make_oci_layout(t);
    const std::string state = t / "state";
    Result imp = image(state, {"import", t / "oci", "--name", "demo"});
    INFO(imp.out, imp.err);
    REQUIRE(imp.exit_code == 0);
    CHECK(imp.out.find("imported demo: 2 layers (2 new, 0 already stored)") != std::string::npos);
    CHECK(imp.err.find("User \"1000\" is ignored") != std::string::npos);
    CHECK(imp.err.find("\r") == std::string::npos);  // no progress display without a terminal
    CHECK(count_entries(state + "/images/layers/sha256") == 2);
    CHECK(count_entries(state + "/images/tmp") == 0);

    // No command: Entrypoint + Cmd; the ignored settings are said, one line each.
    Result dflt = run_box(state, "image:demo", {});
    INFO(dflt.out, dflt.err);
    CHECK(dflt.exit_code == 0);
    CHECK(dflt.out == "hello-from-cmd\n");
    CHECK(dflt.err.find("image demo: User \"1000\" is ignored: the command runs as corral's unprivileged agent") !=
          std::string::npos);
    CHECK(dflt.err.find("image demo: ExposedPorts is ignored") != std::string::npos);

    Result box = run_box(state, "image:demo",
                         {"sh", "-c",
                          "pwd; echo FOO=$FOO; echo PATH=$PATH; echo HOME=$HOME; tool; "
                          "test -e /gone && echo gone-present || echo gone-deleted; cat /keep; "
                          "getent hosts localhost; getent hosts $(cat /etc/hostname); cat /etc/hostname; cat /etc/resolv.conf; id -u"});
    INFO(box.out, box.err);
    CHECK(box.exit_code == 0);
    CHECK(box.out.find("/srv/app\n") == 0);                       // WorkingDir, made in the overlay
    CHECK(box.out.find("FOO=from-image\n") != std::string::npos);  // Env
    CHECK(box.out.find("PATH=/opt/bin:/usr/bin:/bin\n") != std::string::npos);
    CHECK(box.out.find("HOME=/home/agent\n") != std::string::npos);  // corral's own wins
    CHECK(box.out.find("tool-ran\n") != std::string::npos);       // found in the image's PATH
    CHECK(box.out.find("gone-deleted\n") != std::string::npos);
    CHECK(box.out.find("keep\n") != std::string::npos);
    CHECK(box.out.find("localhost ip6-localhost ip6-loopback") != std::string::npos);  // getent: /etc/hosts
    CHECK(box.out.find("127.0.1.1       corral-") != std::string::npos);  // the box's own name
    CHECK(box.out.find("stale-build-host") == std::string::npos);
    CHECK(box.out.find("corral-") != std::string::npos);
    CHECK(box.out.find("10.9.8.7") == std::string::npos);
    CHECK(box.out.find("nameserver 127.0.0.1") != std::string::npos);
    CHECK(box.out.find("\n0\n") == std::string::npos);            // not root

    // --workspace wins over WorkingDir.
    TempDir ws("corral-image-ws");
    fs::permissions(ws.path(), fs::perms(0755));
    Result in_ws = run_corral({"run", "--state-dir", state, "--uid-range", kUidRange, "--rootfs", "image:demo",
                           "--workspace", ws.path(), "--", "pwd"});
    INFO(in_ws.err);
    CHECK(in_ws.out == "/workspace\n");

    // run.json and the journal's admission name the image by its layers'
    // digests (what NAME pointed at then, whatever it points at later).
    const std::string rd = t / "run-named";
    Result named = run_corral({"run", "--state-dir", state, "--uid-range", kUidRange, "--rootfs", "image:demo",
                               "--run-dir", rd, "--", "echo", "named"});
    INFO(named.err);
    REQUIRE(named.exit_code == 0);
    auto rec = nlohmann::json::parse(read_file(rd + "/run.json"));
    REQUIRE(rec["image"].is_object());
    CHECK(rec["image"]["name"] == "demo");
    REQUIRE(rec["image"]["layers"].size() == 2);
    std::string joined;
    for (const auto& l : rec["image"]["layers"]) {
        const std::string d = l.get<std::string>();
        REQUIRE(d.rfind("sha256:", 0) == 0);
        CHECK(fs::is_directory(state + "/images/layers/sha256/" + d.substr(7)));
        joined += d + "\n";
    }
    CHECK(rec["image"]["layers_sha256"] == "sha256:" + corral::sha256_hex(joined));
    auto admission = nlohmann::json::parse(lines(read_file(rd + "/journal.jsonl")).at(0));
    CHECK(admission["type"] == "admission");
    CHECK(admission["payload"]["image"] == rec["image"]);

    // The image's layers are untouched by the runs.
    bool stale_kept = false;
    for (const auto& l : fs::directory_iterator(state + "/images/layers/sha256"))
        if (fs::exists(l.path() / "etc/hostname")) stale_kept = read_file(l.path() / "etc/hostname") == "stale-build-host\n";
    CHECK(stale_kept);

    Result ls = image(state, {"ls", "--json"});
    CHECK(ls.exit_code == 0);
    CHECK(ls.out.find("\"name\": \"demo\"") != std::string::npos);
    Result inspect = image(state, {"inspect", "demo"});
    CHECK(inspect.out.find("\"WorkingDir\": \"/srv/app\"") != std::string::npos);
    Result missing = run_box(state, "image:nope", {"true"});
    CHECK(missing.exit_code == 125);
    CHECK(missing.err.find("image nope: not in the store") != std::string::npos);
}

TEST_CASE("a docker-save archive with an opaque directory, a whiteout, a hard link and xattrs") {
    TempDir t("corral-image-docker");
    const std::string d = t.path();
    make_base_rootfs(d + "/root1");
    sh("mkdir save && tar -C root1 -cf save/layer1.tar . && python3 '" + source_root() +
       "/tests/image/make_tar.py' save/layer2.tar whiteouts", d);
    const std::string l1 = corral::sha256_hex(read_file(d + "/save/layer1.tar"));
    const std::string l2 = corral::sha256_hex(read_file(d + "/save/layer2.tar"));
    const std::string config = R"({"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/bin:/bin","LEVEL=2"],)"
                               R"("Cmd":["layer2"]},"rootfs":{"type":"layers","diff_ids":["sha256:)" + l1 + R"(","sha256:)" + l2 + R"("]}})";
    write_file(d + "/save/cfg.json", config);
    const std::string cfg_hex = corral::sha256_hex(read_file(d + "/save/cfg.json"));
    sh("mv save/cfg.json save/" + cfg_hex + ".json && mkdir save/a save/b && mv save/layer1.tar save/a/layer.tar && "
       "mv save/layer2.tar save/b/layer.tar", d);
    write_file(d + "/save/manifest.json", R"([{"Config":")" + cfg_hex + R"(.json","RepoTags":["corral/test:v1"],)"
                                          R"("Layers":["a/layer.tar","b/layer.tar"]}])");
    sh("tar -C save -cf saved.tar .", d);

    const std::string state = t / "state";
    Result imp = image(state, {"import", d + "/saved.tar"});
    INFO(imp.out, imp.err);
    REQUIRE(imp.exit_code == 0);
    CHECK(imp.out.find("imported corral-test-v1: 2 layers") != std::string::npos);  // named after its tag
    CHECK(imp.err.find("dropped xattr trusted.overlay.redirect") != std::string::npos);
    const std::string layer2 = state + "/images/layers/sha256/" + l2;
    char buf[8] = {};
    CHECK(getxattr((layer2 + "/opq").c_str(), "trusted.overlay.opaque", buf, sizeof buf) == 1);
    CHECK(buf[0] == 'y');
    CHECK(getxattr((layer2 + "/etc/xattr-file").c_str(), "user.corral", buf, sizeof buf) == 4);
    CHECK(getxattr((layer2 + "/etc/xattr-file").c_str(), "trusted.overlay.redirect", buf, sizeof buf) < 0);
    struct stat st {};
    REQUIRE(lstat((layer2 + "/gone").c_str(), &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    CHECK(st.st_rdev == 0);

    Result box = run_box(state, "image:corral-test-v1",
                         {"sh", "-c", "ls /opq; test -e /gone || echo gone-deleted; cat /etc/ok-link; echo L=$LEVEL; layer2"});
    INFO(box.out, box.err);
    CHECK(box.exit_code == 0);
    CHECK(box.out == "new\ngone-deleted\nfine\nL=2\nfrom-layer-2\n");
    // The same, unpacked: a docker save directory.
    Result dir_imp = image(state, {"import", d + "/save", "--name", "saved-dir"});
    CHECK(dir_imp.exit_code == 0);
    CHECK(dir_imp.out.find("(0 new, 2 already stored)") != std::string::npos);
}

TEST_CASE("owners and modes are the archive's, also where a create call alone would give others") {
    TempDir t("corral-image-modes");
    const std::string tar = t / "modes.tar";
    sh("python3 '" + source_root() + "/tests/image/make_tar.py' '" + tar + "' modes");
    const std::string state = t / "state";
    Result imp = image(state, {"import", tar, "--name", "modes"});
    INFO(imp.out, imp.err);
    REQUIRE(imp.exit_code == 0);
    const std::string layer = state + "/images/layers/sha256/" + corral::sha256_hex(read_file(tar));
    struct Want {
        const char* path;
        mode_t mode;
        uid_t uid;
        gid_t gid;
    };
    const Want wants[] = {
        {"g", S_IFDIR | 02775, 0, 50},
        {"g/f", S_IFREG | 0644, 0, 0},      // not the set-GID directory's group
        {"g/sub", S_IFDIR | 0755, 0, 0},    // neither its group nor its set-GID bit
        {"g/own", S_IFREG | 0640, 1000, 1000},
        {"suid", S_IFREG | 04755, 0, 0},
        {"sgid-owned", S_IFREG | 02755, 1000, 1000},  // the bit set after the chown that would clear it
        {"gw", S_IFREG | 0664, 0, 0},       // not cut by the umask
        {"tmp", S_IFDIR | 01777, 0, 0},
        {"locked", S_IFDIR | 0700, 1000, 1000},
        {"locked/x", S_IFREG | 0600, 1000, 1000},
        {"implied", S_IFDIR | 0755, 0, 0},  // made on the way
        {"implied/deep/file", S_IFREG | 0644, 0, 0},
        {"etc", S_IFDIR | 0750, 0, 42},     // listed again: the last entry wins
    };
    for (const auto& w : wants) {
        const std::string path = w.path;
        CAPTURE(path);
        struct stat st {};
        REQUIRE(lstat((layer + "/" + path).c_str(), &st) == 0);
        CHECK(st.st_mode == w.mode);
        CHECK(st.st_uid == w.uid);
        CHECK(st.st_gid == w.gid);
    }
}

TEST_CASE("two images sharing layers store them once; rm removes only what no other image uses") {
    TempDir t("corral-image-share");
    make_oci_layout(t);
    sh("cp -a oci oci2 && umoci unpack --image oci2:t b >/dev/null && echo third > b/rootfs/third && "
       "umoci repack --image oci2:t b && rm -rf b", t.path());
    const std::string state = t / "state";
    REQUIRE(image(state, {"import", t / "oci", "--name", "one"}).exit_code == 0);
    Result two = image(state, {"import", t / "oci2", "--name", "two"});
    INFO(two.out, two.err);
    REQUIRE(two.exit_code == 0);
    CHECK(two.out.find("3 layers (1 new, 2 already stored)") != std::string::npos);
    CHECK(count_entries(state + "/images/layers/sha256") == 3);
    Result third = run_box(state, "image:two", {"cat", "/third", "/keep"});
    CHECK(third.out == "third\nkeep\n");

    Result rm_one = image(state, {"rm", "one"});
    CHECK(rm_one.out == "removed one: 0 layers deleted, 2 kept (used by other images or by a running box)\n");
    CHECK(count_entries(state + "/images/layers/sha256") == 3);
    Result rm_two = image(state, {"rm", "two"});
    CHECK(rm_two.out == "removed two: 3 layers deleted, 0 kept (used by other images or by a running box)\n");
    CHECK(count_entries(state + "/images/layers/sha256") == 0);
    CHECK(count_entries(state + "/images/images") == 0);
    CHECK(image(state, {"rm", "two"}).exit_code == 2);
}


TEST_CASE("image rm of an image a running box uses is refused, naming the run; after the stop it goes") {
    TempDir t("corral-image-busy");
    const std::string state = import_base_tarball(t, {"busy", "idle"});

    Background box({corral_bin(), "run", "--state-dir", state, "--uid-range", kUidRange, "--rootfs", "image:busy", "--",
                    "sh", "-c", "echo ready; exec busybox sleep 120"});
    REQUIRE_MESSAGE(box.wait_for_stdout("ready", std::chrono::seconds(60)), box.drain_stdout());
    const std::vector<std::string> ids = running_ids(state);
    REQUIRE(ids.size() == 1);
    const std::string id = ids.front();

    Result refused = image(state, {"rm", "busy"});
    INFO(refused.out, refused.err);
    CHECK(refused.exit_code == 1);
    CHECK(refused.err == "corral image: rm busy: refused: image busy is in use by running run " + id +
                             "; stop it first (`corral stop " + id + "`)\n");
    CHECK(refused.out.empty());
    CHECK(image(state, {"inspect", "busy"}).exit_code == 0);
    CHECK(count_entries(state + "/images/layers/sha256") == 1);  // one layer, both images'
    // Another image of the same layers is not in use: it goes, the shared layer stays.
    Result idle = image(state, {"rm", "idle"});
    CHECK(idle.out == "removed idle: 0 layers deleted, 1 kept (used by other images or by a running box)\n");

    Result stop = run_corral({"stop", "--state-dir", state, id});
    INFO(stop.err);
    CHECK(stop.exit_code == 0);
    CHECK(box.wait_exit(std::chrono::seconds(30)) >= 0);
    Result rm = image(state, {"rm", "busy"});
    INFO(rm.err);
    CHECK(rm.exit_code == 0);
    CHECK(rm.out == "removed busy: 1 layers deleted, 0 kept (used by other images or by a running box)\n");
    CHECK(count_entries(state + "/images/layers/sha256") == 0);
}

TEST_CASE("image rm is refused while a run holds the image, before its run.json names it") {
    TempDir t("corral-image-held");
    const std::string state = import_base_tarball(t, {"held"});
    // What a run takes before it reads the image: a shared flock on images/use/NAME
    // (made here by flock(1), as a run that has not written run.json yet holds it).
    sh("mkdir -p '" + state + "/images/use'");
    Background holder({"flock", "-s", state + "/images/use/held", "sh", "-c", "echo held; exec sleep 120"});
    REQUIRE(holder.wait_for_stdout("held", std::chrono::seconds(10)));
    Result refused = image(state, {"rm", "held"});
    INFO(refused.out, refused.err);
    CHECK(refused.exit_code == 1);
    CHECK(refused.err.find("corral image: rm held: refused: image held: a running box uses it") != std::string::npos);
    CHECK(image(state, {"inspect", "held"}).exit_code == 0);
    CHECK(count_entries(state + "/images/layers/sha256") == 1);
    holder.kill_now();
    CHECK(image(state, {"rm", "held"}).exit_code == 0);
    CHECK(count_entries(state + "/images/layers/sha256") == 0);
}

TEST_CASE("a rootfs tarball in every compression is imported and runs; the compression is read from the bytes") {
    TempDir t("corral-image-tarballs");
    make_base_rootfs(t / "root");
    sh("tar -C root -cf base.tar . && gzip -k base.tar && xz -k base.tar && zstd -q base.tar && bzip2 -k base.tar\n"
       "cp base.tar.zst zstd-named-img.img",  // no suffix to go by
       t.path());
    const std::string state = t / "state";
    for (const char* file : {"base.tar", "base.tar.gz", "base.tar.xz", "base.tar.zst", "base.tar.bz2", "zstd-named-img.img"}) {
        CAPTURE(file);
        Result imp = image(state, {"import", t / file, "--name", "tb"});
        INFO(imp.out, imp.err);
        REQUIRE(imp.exit_code == 0);
        CHECK(imp.out.find("imported tb: 1 layers") != std::string::npos);
        Result box = run_box(state, "image:tb", {"sh", "-c", "cat /keep /etc/ok"});
        INFO(box.err);
        CHECK(box.exit_code == 0);
        CHECK(box.out == "keep\nfine\n");
    }
    // Each re-import under "tb" replaced the one before, and its layer went with it.
    CHECK(count_entries(state + "/images/layers/sha256") == 1);
}

TEST_CASE("on a terminal the import shows each layer's progress; a worker's rootfs = \"image:NAME\" and a session stand on the image") {
    TempDir t("corral-image-use");
    make_oci_layout(t);
    const std::string state = t / "state";
    // script(1) gives the import a pseudo-terminal for stdout and stderr.
    Result tty = run({"script", "-qfec",
                      corral_bin() + " image import '" + (t / "oci") + "' --name demo --state-dir '" + state + "'", "/dev/null"});
    INFO(tty.out, tty.err);
    REQUIRE(tty.exit_code == 0);
    CHECK(tty.out.find("\r\033[Klayer 1/2 sha256:") != std::string::npos);  // redrawn in place
    CHECK(tty.out.find("layer 2/2 sha256:") != std::string::npos);
    CHECK(tty.out.find(" / ") != std::string::npos);  // bytes read / the layer's size
    CHECK(tty.out.find("imported demo: 2 layers (2 new, 0 already stored)") != std::string::npos);

    const std::string org = t / "org";
    fs::create_directories(org + "/workers/tool");
    write_file(org + "/org.toml", "");
    write_file(org + "/workers/tool/worker.toml", "agent = \"none\"\nrootfs = \"image:demo\"\n");
    Result worker = run_corral({"run", "--state-dir", state, "--uid-range", kUidRange, "--config", org, "--worker", "tool",
                                "--", "sh", "-c", "pwd; cat /keep; echo FOO=$FOO"});
    INFO(worker.out, worker.err);
    CHECK(worker.exit_code == 0);
    CHECK(worker.out == "/srv/app\nkeep\nFOO=from-image\n");

    Result start = run_corral({"session", "start", "--state-dir", state, "--uid-range", kUidRange, "--rootfs", "image:demo"});
    INFO(start.out, start.err);
    REQUIRE(start.exit_code == 0);
    std::string id = start.out.substr(0, start.out.find('\n'));
    Result ex = run_corral({"exec", "--state-dir", state, id, "--", "sh", "-c", "tool; cat /keep; echo FOO=$FOO"});
    INFO(ex.out, ex.err);
    CHECK(ex.exit_code == 0);
    CHECK(ex.out == "tool-ran\nkeep\nFOO=from-image\n");
    Result busy = image(state, {"rm", "demo"});
    CHECK(busy.exit_code == 1);  // the session stands on it
    Result stop = run_corral({"session", "stop", "--grace", "0", "--state-dir", state, id});
    CHECK(stop.exit_code == 0);
    CHECK(image(state, {"rm", "demo"}).exit_code == 0);
}

TEST_CASE("--rootfs given what is not a root file system says what it is and what to do") {
    TempDir t("corral-image-errors");
    make_oci_layout(t);
    const std::string state = t / "state";
    Result layout = run_box(state, t / "oci", {"true"});
    CHECK(layout.exit_code == 125);
    CHECK(layout.err.find("this is an OCI image layout, not a root file system: `corral image import " + (t / "oci")) !=
          std::string::npos);
    sh("tar -C oci -cf oci.tar .", t.path());
    Result file = run_box(state, t / "oci.tar", {"true"});
    CHECK(file.err.find("is a file, not a directory; an image archive or rootfs tarball is imported first") !=
          std::string::npos);
    // A registry reference: corral does not pull; it says how to fetch and import.
    Result pulled = run_box(state, "debian:12", {"true"});
    CHECK(pulled.exit_code == 125);
    CHECK(pulled.err.find("--rootfs debian:12: corral does not pull images from registries") != std::string::npos);
    Result imported = image(state, {"import", "docker://debian:12"});
    CHECK(imported.exit_code == 2);
    CHECK(imported.err.find("docker://debian:12: corral does not pull images from registries") != std::string::npos);
    sh("umoci unpack --image oci:t bundle >/dev/null && chmod 0700 bundle/rootfs", t.path());
    Result closed = run_box(state, t / "bundle/rootfs", {"true"});
    INFO(closed.err);
    CHECK(closed.err.find("mode 0700: the agent (an unprivileged UID) cannot enter the image's root") != std::string::npos);
    // A tree under a user's home: its user could change it under a running box.
    REQUIRE(fs::is_directory("/home"));
    char home_tree[] = "/home/corral-test-rootfs-XXXXXX";
    REQUIRE(mkdtemp(home_tree) != nullptr);
    struct RemoveAtEnd {
        std::string dir;
        ~RemoveAtEnd() { fs::remove_all(dir); }
    } remove_home_tree{home_tree};
    sh("cp -a bundle/rootfs/. '" + std::string(home_tree) + "/'", t.path());
    fs::permissions(home_tree, fs::perms(0755));
    Result in_home = run_box(state, home_tree, {"true"});
    INFO(in_home.err);
    CHECK(in_home.exit_code == 125);
    CHECK(in_home.err.find("is under a user's home directory") != std::string::npos);
    CHECK(in_home.err.find("images belong to root: import it (`corral image import`") != std::string::npos);
    // The OCI archive itself imports.
    Result archive = image(state, {"import", t / "oci.tar", "--name", "from-archive"});
    INFO(archive.err);
    CHECK(archive.exit_code == 0);
    CHECK(run_box(state, "image:from-archive", {"cat", "/keep"}).out == "keep\n");
}

TEST_CASE("--rootfs DIR gets the same generated /etc/hosts, /etc/hostname and /etc/resolv.conf; DIR is untouched") {
    TempDir t("corral-image-dir");
    const std::string root = t / "rootfs";
    make_base_rootfs(root);
    fs::permissions(root, fs::perms(0755));
    fs::create_symlink("../run/systemd/resolve/stub-resolv.conf", root + "/etc/resolv.conf.link");
    fs::remove(root + "/etc/resolv.conf");
    fs::rename(root + "/etc/resolv.conf.link", root + "/etc/resolv.conf");  // Ubuntu's form: a link into /run
    Result box = run_box(t / "state", root, {"sh", "-c", "getent hosts localhost; cat /etc/hostname /etc/resolv.conf"});
    INFO(box.out, box.err);
    CHECK(box.exit_code == 0);
    CHECK(box.out.find("localhost ip6-localhost ip6-loopback") != std::string::npos);
    CHECK(box.out.find("stale-build-host") == std::string::npos);
    CHECK(box.out.find("nameserver 127.0.0.1") != std::string::npos);
    CHECK(read_file(root + "/etc/hostname") == "stale-build-host\n");
    CHECK(fs::is_symlink(root + "/etc/resolv.conf"));
}

int main(int argc, char** argv) {
    if (!running_as_root()) {
        std::cerr << "SKIP: image integration tests need root (layers keep their owners; corral run makes namespaces)\n";
        return 77;
    }
    for (const char* p : {"umoci", "python3", "tar", "busybox"})
        if (!have_program(p)) {
            std::cerr << "SKIP: " << p << " is missing (tools/install-deps.sh installs it)\n";
            return 77;
        }
    doctest::Context context(argc, argv);
    return context.run();
}

TEST_CASE("without a loadable libarchive an import is refused with the package to install, and corral run still works") {
    // corral opens libarchive only to import (image/libarchive.hpp). In a
    // mount namespace of the test's own, the library is /dev/null.
    TempDir t("corral-image-nolib");
    make_oci_layout(t);
    sh("tar -C oci -cf oci.tar .", t.path());
    const std::string state = t / "state";
    const std::string lib = sh("readlink -f \"$(ldconfig -p | awk '/libarchive\\.so\\.13 .*x86-64/ {print $NF; exit}')\"", t.path());
    REQUIRE_MESSAGE(!lib.empty(), "no libarchive.so.13 in ldconfig's cache");
    const std::string path = lib.substr(0, lib.find('\n'));
    const std::string script = "mount --bind /dev/null '" + path + "' && exec \"$@\"";
    Result refused = run({"unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", corral_bin(), "image",
                          "import", t / "oci.tar", "--name", "x", "--state-dir", state},
                         RunOptions{.timeout = std::chrono::milliseconds(60'000)});
    INFO(refused.out << refused.err);
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find("reading archives needs libarchive (Debian: apt-get install libarchive13): dlopen(libarchive.so.13)") !=
          std::string::npos);
    CHECK(count_entries(state + "/images/images") == 0);
    Result version = run({"unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", corral_bin(), "--version"});
    CHECK(version.exit_code == 0);
}

TEST_CASE("a re-import under a running box's image name keeps the layers the box stands on until it has ended") {
    TempDir t("corral-image-reimport");
    make_oci_layout(t);  // 2 layers; the second has /keep
    const std::string state = t / "state";
    REQUIRE(image(state, {"import", t / "oci", "--name", "busy"}).exit_code == 0);
    REQUIRE(count_entries(state + "/images/layers/sha256") == 2);
    // Another tree under the same name: one layer, none of the old ones.
    sh("mkdir -p other && umoci unpack --image oci:t u >/dev/null && cp -a u/rootfs/. other/ && rm -rf u && "
       "echo replaced > other/keep && tar -C other -cf other.tar .",
       t.path());
    // A box on the image as it is now, reading it again after the re-import.
    Result box;
    std::thread running([&] { box = run_box(state, "image:busy", {"sh", "-c", "cat /keep; sleep 3; cat /keep"}); });
    bool up = false;
    for (int i = 0; i < 100 && !up; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        up = run_corral({"ps", "--json", "--state-dir", state}).out.find("\"running\"") != std::string::npos;
    }
    CHECK(up);
    Result again = image(state, {"import", t / "other.tar", "--name", "busy"});
    INFO(again.out << again.err);
    CHECK(again.exit_code == 0);
    CHECK(again.err.find("of the image this import replaced is kept: a running box stands on it") != std::string::npos);
    CHECK(count_entries(state + "/images/layers/sha256") == 3);  // the box's two and the new one
    running.join();
    INFO(box.out << box.err);
    CHECK(box.exit_code == 0);
    CHECK(box.out == "keep\nkeep\n");  // the box's root stayed whole
    CHECK(run_box(state, "image:busy", {"cat", "/keep"}).out == "replaced\n");
    // Once the box has ended, the next sweep takes the old layers.
    REQUIRE(image(state, {"import", t / "other.tar", "--name", "busy"}).exit_code == 0);
    CHECK(count_entries(state + "/images/layers/sha256") == 1);
}
