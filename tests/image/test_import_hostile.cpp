// Integration tests of `corral image import` against hostile and oversized
// archives (root): archives written byte for byte by tests/image/make_tar.py
// (links and names escaping the store, devices, digests that do not match,
// 129 layers, 25 000 directories deep, decompression bombs, a FIFO), each
// refused with its reason and nothing left behind. test_import.cpp holds the
// main(): the root and program checks are its.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/image/import_support.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace corral::test;
using namespace corral::test::image_import;

TEST_CASE("hostile archives are refused, with the reason, and nothing is written outside the store") {
    struct Case {
        const char* name;
        const char* reason;
    };
    const Case cases[] = {
        {"dotdot", "\"..\" in the name; every entry must stay inside its layer"},
        {"absolute", "an absolute name; every entry must stay inside its layer"},
        {"symlink-write", "escape is a symlink; writing through it could land outside the layer"},
        {"symlink-dir-write", "a/b is a symlink; writing through it could land outside the layer"},
        {"dir-then-symlink", "d is a symlink; writing through it could land outside the layer"},
        {"hardlink-outside", "outside the archive's tree"},
        {"hardlink-absolute", "outside the archive's tree"},
        {"device", "a character device 1:3; images may not hold device nodes"},
        {"blockdev", "a block device 8:0; images may not hold device nodes"},
    };
    TempDir t("corral-image-hostile");
    const std::string outside = t / "outside";
    fs::create_directories(outside);
    write_file(outside + "/target", "secret\n", 0600);
    const std::string state = t / "state";
    for (const auto& c : cases) {
        CAPTURE(c.name);
        const std::string tar = t / (std::string(c.name) + ".tar");
        sh("python3 '" + source_root() + "/tests/image/make_tar.py' '" + tar + "' " + c.name + " '" + outside + "'");
        Result r = image(state, {"import", tar, "--name", "hostile"});
        INFO(r.out, r.err);
        CHECK(r.exit_code == 125);
        CHECK(r.err.find(c.reason) != std::string::npos);
        CHECK(count_entries(outside) == 1);
        CHECK(read_file(outside + "/target") == "secret\n");
        CHECK(count_entries(state + "/images/tmp") == 0);
        CHECK(count_entries(state + "/images/layers/sha256") == 0);
        CHECK(count_entries(state + "/images/images") == 0);
    }
}

TEST_CASE("a layer whose bytes do not match the manifest's digest is refused, and the layers before it go too") {
    TempDir t("corral-image-digest");
    make_oci_layout(t);
    // The top layer's blob, same name, other bytes (a valid gzip'd tar).
    const std::string manifest_digest =
        sh("python3 -c \"import json;print(json.load(open('oci/index.json'))['manifests'][0]['digest'][7:])\"", t.path());
    const std::string top = sh("python3 -c \"import json;m=json.load(open('oci/blobs/sha256/" +
                                   manifest_digest.substr(0, 64) + "'));print(m['layers'][-1]['digest'][7:])\"",
                               t.path());
    sh("mkdir evil && echo evil > evil/evil && tar -C evil -czf oci/blobs/sha256/" + top.substr(0, 64) + " .", t.path());
    const std::string state = t / "state";
    Result r = image(state, {"import", t / "oci", "--name", "tampered"});
    INFO(r.out, r.err);
    CHECK(r.exit_code == 125);
    CHECK(r.err.find("digest mismatch: the manifest says sha256:" + top.substr(0, 64)) != std::string::npos);
    CHECK(count_entries(state + "/images/layers/sha256") == 0);
    CHECK(count_entries(state + "/images/tmp") == 0);
    CHECK(count_entries(state + "/images/images") == 0);
}

TEST_CASE("an image of 100 layers runs with every layer in order; one of 129 is refused at import") {
    TempDir t("corral-image-deep");
    const std::string state = t / "state";
    const std::string maker = "python3 '" + source_root() + "/tests/image/make_deep_layout.py' ";
    sh(maker + "'" + (t / "deep") + "' 100");
    Result imp = image(state, {"import", t / "deep", "--name", "deep"});
    INFO(imp.out, imp.err);
    REQUIRE(imp.exit_code == 0);
    CHECK(imp.out.find("imported deep: 100 layers (100 new, 0 already stored)") != std::string::npos);
    // Layer 1 is busybox, layer K holds /l/K, the top one also deletes /l/2.
    Result box = run_box(state, "image:deep",
                         {"sh", "-c", "cat /l/3 /l/100; test -e /l/2 && echo l2-present || echo l2-gone; ls /l | wc -l"});
    INFO(box.out, box.err);
    CHECK(box.exit_code == 0);
    CHECK(box.out == "3\n100\nl2-gone\n98\n");

    sh(maker + "'" + (t / "deeper") + "' 129");
    Result too_deep = image(state, {"import", t / "deeper", "--name", "deeper"});
    INFO(too_deep.err);
    CHECK(too_deep.exit_code == 125);
    CHECK(too_deep.err.find("129 layers; a box mounts at most 128 (squash the image") != std::string::npos);
    CHECK(count_entries(state + "/images/layers/sha256") == 100);  // nothing of it kept
    CHECK(count_entries(state + "/images/tmp") == 0);
}

TEST_CASE("an entry 25 000 directories deep is refused, a deep tree a dead import left is removed, and imports go on") {
    TempDir t("corral-image-deep");
    const std::string state = t / "state";
    // A rootfs tarball: three ordinary entries, then one 25 000 directories deep (pax names).
    sh("python3 -c 'import tarfile, io\n"
       "with tarfile.open(\"deep.tar\", \"w\", format=tarfile.PAX_FORMAT) as t:\n"
       "    for n in (\"bin/\", \"etc/\", \"usr/\"):\n"
       "        i = tarfile.TarInfo(n); i.type = tarfile.DIRTYPE; t.addfile(i)\n"
       "    i = tarfile.TarInfo(\"a/\" * 25000 + \"f\"); i.size = 1; t.addfile(i, io.BytesIO(b\"x\"))\n'",
       t.path());
    Result deep = image(state, {"import", t / "deep.tar", "--name", "deep"});
    INFO(deep.err);
    CHECK(deep.exit_code != 0);
    CHECK(deep.err.find("more than 512 directories deep") != std::string::npos);
    CHECK(count_entries(state + "/images/tmp") == 0);

    // What an import killed mid-way would leave: a tree as deep in tmp/. The
    // next import removes it (one directory fd at a time) and goes on.
    sh("mkdir -p images/tmp/import-dead && cd images/tmp/import-dead && "
       "python3 -c 'import os\nfor _ in range(25000):\n    os.mkdir(\"d\"); os.chdir(\"d\")\n'",
       state);
    sh("mkdir -p small/bin small/etc small/usr && tar -C small -cf small.tar .", t.path());
    Result next = image(state, {"import", t / "small.tar", "--name", "next"});
    INFO(next.err);
    CHECK(next.exit_code == 0);
    CHECK(count_entries(state + "/images/tmp") == 0);
}

TEST_CASE("an archive naming itself after an image in the store does not replace it without --name or --replace") {
    TempDir t("corral-image-replace");
    const std::string state = t / "state";
    // Two different rootfs tarballs, both app.tar: both name themselves "app".
    sh("mkdir -p one/r/bin one/r/etc one/r/usr two/r/bin two/r/etc two/r/usr && echo one > one/r/etc/which && "
       "echo two > two/r/etc/which && tar -C one/r -cf one/app.tar . && tar -C two/r -cf two/app.tar .",
       t.path());
    REQUIRE(image(state, {"import", t / "one/app.tar"}).exit_code == 0);
    const std::string before = read_file(state + "/images/images/app.json");
    Result again = image(state, {"import", t / "two/app.tar"});
    CHECK(again.exit_code == 2);
    CHECK(again.err.find("names itself \"app\", and an image of that name is in the store; --name app or --replace "
                         "replaces it") != std::string::npos);
    CHECK(read_file(state + "/images/images/app.json") == before);  // untouched
    CHECK(count_entries(state + "/images/tmp") == 0);
    CHECK(image(state, {"import", t / "two/app.tar", "--replace"}).exit_code == 0);
    CHECK(read_file(state + "/images/images/app.json") != before);
    CHECK(image(state, {"import", t / "one/app.tar", "--name", "app"}).exit_code == 0);  // an explicit name replaces
    CHECK(image(state, {"import", t / "one/app.tar", "--name", "app", "--replace"}).exit_code == 2);
}

TEST_CASE("a decompression bomb is refused by the expansion bounds while it is extracted; nothing is kept") {
    TempDir t("corral-image-bomb");
    const std::string state = t / "state";
    // 80 MiB of zeros in a rootfs tarball: about 80 KiB gzipped.
    sh("mkdir -p r/bin r/etc r/usr && truncate -s 80M r/usr/zeros && tar -C r -cf - . | gzip -1 > bomb.tar.gz", t.path());
    Result ratio = image(state, {"import", t / "bomb.tar.gz", "--name", "bomb"});
    INFO(ratio.err);
    CHECK(ratio.exit_code != 0);
    CHECK(ratio.err.find("times; refused as a decompression bomb") != std::string::npos);
    CHECK(count_entries(state + "/images/tmp") == 0);
    CHECK(count_entries(state + "/images/layers/sha256") == 0);
    Result size = image(state, {"import", t / "bomb.tar.gz", "--name", "bomb", "--max-ratio", "0", "--max-expanded", "10M"});
    CHECK(size.exit_code != 0);
    CHECK(size.err.find("expands past 10485760 bytes; refused") != std::string::npos);
    CHECK(count_entries(state + "/images/layers/sha256") == 0);
    CHECK(image(state, {"import", t / "bomb.tar.gz", "--max-ratio", "ten"}).exit_code == 2);
}

TEST_CASE("a FIFO where a layer belongs is refused at once, not waited on with the store locked; nothing is left") {
    TempDir t("corral-image-fifo");
    make_oci_layout(t);
    const std::string state = t / "state";
    // The first gzip blob is a layer: a FIFO with no writer stands in its place.
    sh("for f in oci/blobs/sha256/*; do if gzip -t \"$f\" 2>/dev/null; then rm \"$f\"; mkfifo \"$f\"; break; fi; done; "
       "test -n \"$(find oci/blobs -type p)\"",
       t.path());
    // A bound on the wait only so that the old behaviour (a hang) ends the test.
    Result fifo = run({corral_bin(), "image", "import", t / "oci", "--name", "fifo", "--state-dir", state},
                      RunOptions{.timeout = std::chrono::milliseconds(30'000)});
    INFO(fifo.err);
    CHECK_FALSE(fifo.timed_out);
    CHECK(fifo.exit_code != 0);
    CHECK(fifo.err.find("is not a regular file") != std::string::npos);
    CHECK(count_entries(state + "/images/tmp") == 0);
    // The store is not left locked: the next import goes ahead.
    sh("mkdir -p small/bin small/etc small/usr && tar -C small -cf small.tar .", t.path());
    CHECK(image(state, {"import", t / "small.tar", "--name", "next"}).exit_code == 0);
}
