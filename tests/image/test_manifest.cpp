// Unit tests of image/: the metadata parsers, the whiteout names and entry
// names, on text the tests write (no root, no file system but none).
#include <doctest/doctest.h>

#include <string>

#include "image/extract.hpp"
#include "image/manifest.hpp"
#include "image/store.hpp"
#include "image/whiteout.hpp"

using namespace corral::image;

namespace {

const std::string kDigestA = "sha256:" + std::string(64, 'a');
const std::string kDigestB = "sha256:" + std::string(64, 'b');
const std::string kDigestC = "sha256:" + std::string(64, 'c');

std::string error_of(auto&& f) {
    try {
        f();
    } catch (const ImageError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("digests: only sha256 with 64 lowercase hex digits") {
    CHECK(is_sha256_digest(kDigestA));
    CHECK(digest_hex(kDigestA) == std::string(64, 'a'));
    CHECK_FALSE(is_sha256_digest("sha256:" + std::string(63, 'a')));
    CHECK_FALSE(is_sha256_digest("sha256:" + std::string(64, 'A')));
    CHECK_FALSE(is_sha256_digest("sha512:" + std::string(64, 'a')));
    CHECK_FALSE(is_sha256_digest("sha256:../../../../etc/passwd" + std::string(36, 'a')));
}

TEST_CASE("index.json: one manifest, by name, by platform; nested indexes and unknown names refused") {
    const std::string one = R"({"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":")" +
                            kDigestA + R"(","size":349}]})";
    CHECK(pick_manifest(one, std::nullopt).digest == kDigestA);
    const std::string two = R"({"manifests":[
        {"digest":")" + kDigestA + R"(","size":1,"platform":{"os":"linux","architecture":"arm64"},
         "annotations":{"org.opencontainers.image.ref.name":"arm"}},
        {"digest":")" + kDigestB + R"(","size":2,"platform":{"os":"linux","architecture":"amd64"},
         "annotations":{"org.opencontainers.image.ref.name":"x86"}}]})";
    CHECK(pick_manifest(two, std::nullopt).digest == kDigestB);
    CHECK(pick_manifest(two, std::string("arm")).digest == kDigestA);
    CHECK(error_of([&] { pick_manifest(two, std::string("riscv")); }) ==
          "index.json: no manifest named \"riscv\"; it has: arm, x86");
    CHECK(error_of([] { pick_manifest(R"({"manifests":[]})", std::nullopt); }) ==
          "index.json: \"manifests\" must list at least one image manifest");
    CHECK(error_of([] { pick_manifest("[1,2]", std::nullopt); }) == "index.json: expected a JSON object at the top");
    CHECK(error_of([] { pick_manifest("{", std::nullopt); }).rfind("index.json: not valid JSON", 0) == 0);
    CHECK(error_of([] {
              pick_manifest(R"({"manifests":[{"digest":"sha256:1234","size":1}]})", std::nullopt);
          }) == "index.json manifests[0]: digest \"sha256:1234\": expected sha256:<64 lowercase hex digits>");
    const std::string nested = R"({"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":")" +
                               kDigestA + R"(","size":1}]})";
    CHECK(error_of([&] { pick_manifest(nested, std::nullopt); }).find("a nested image index is not supported") !=
          std::string::npos);
}

TEST_CASE("image manifest: config and layers in order, bottom first") {
    const std::string m = R"({"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":")" +
                          kDigestA + R"(","size":10},"layers":[
        {"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":")" + kDigestB + R"(","size":20},
        {"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":")" + kDigestC + R"(","size":30}]})";
    Manifest parsed = parse_manifest(m);
    CHECK(parsed.config.digest == kDigestA);
    REQUIRE(parsed.layers.size() == 2);
    CHECK(parsed.layers[0].digest == kDigestB);
    CHECK(parsed.layers[1].size == 30);
    CHECK(layer_compression(parsed.layers[0]) == "gzip");
    CHECK(layer_compression(parsed.layers[1]) == "");
    CHECK(error_of([] { parse_manifest(R"({"schemaVersion":1})"); }) == "image manifest: \"schemaVersion\" must be 2");
    CHECK(error_of([&] {
              parse_manifest(R"({"schemaVersion":2,"config":{"digest":")" + kDigestA + R"(","size":-1},"layers":[]})");
          }) == "image manifest config: \"size\" must be a non-negative integer");
    Descriptor foreign{"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", kDigestA, 1};
    CHECK(error_of([&] { layer_compression(foreign); }).find("non-distributable") != std::string::npos);
    Descriptor odd{"text/plain", kDigestA, 1};
    CHECK(error_of([&] { layer_compression(odd); }).find("expected an OCI or Docker layer tar") != std::string::npos);
}

TEST_CASE("image config: Env, WorkingDir, Entrypoint, Cmd honoured; User, ports, volumes, healthcheck named as ignored") {
    const std::string c = R"({"architecture":"amd64","os":"linux",
        "config":{"Env":["PATH=/usr/local/go/bin:/usr/bin","GOPATH=/go"],"WorkingDir":"/go/src",
                  "Entrypoint":["/bin/tini","--"],"Cmd":["go","version"],"User":"1000:1000",
                  "ExposedPorts":{"8080/tcp":{}},"Volumes":{"/data":{}},
                  "Healthcheck":{"Test":["CMD","true"]}},
        "rootfs":{"type":"layers","diff_ids":[")" + kDigestA + R"("]}})";
    ImageConfig cfg = parse_config(c);
    CHECK(cfg.env == std::vector<std::string>{"PATH=/usr/local/go/bin:/usr/bin", "GOPATH=/go"});
    CHECK(cfg.working_dir == "/go/src");
    CHECK(cfg.entrypoint == std::vector<std::string>{"/bin/tini", "--"});
    CHECK(cfg.cmd == std::vector<std::string>{"go", "version"});
    CHECK(cfg.diff_ids == std::vector<std::string>{kDigestA});
    REQUIRE(cfg.ignored.size() == 4);
    CHECK(cfg.ignored[0] == "User \"1000:1000\" is ignored: the command runs as corral's unprivileged agent");
    CHECK(cfg.ignored[1].rfind("ExposedPorts is ignored", 0) == 0);
    CHECK(cfg.ignored[2].rfind("Volumes is ignored", 0) == 0);
    CHECK(cfg.ignored[3].rfind("Healthcheck is ignored", 0) == 0);
    // Without a config section: nothing to honour, nothing ignored.
    CHECK(parse_config(R"({"rootfs":{"diff_ids":[]}})").env.empty());
    CHECK(error_of([] { parse_config(R"({"config":{"Env":["NOEQUALS"]}})"); }) ==
          "image config Env: \"NOEQUALS\": expected KEY=VALUE");
    CHECK(error_of([] { parse_config(R"({"config":{"WorkingDir":"rel"}})"); }) ==
          "image config WorkingDir \"rel\": expected an absolute path");
    CHECK(error_of([] { parse_config(R"({"config":{"Cmd":"sh"}})"); }) == "image config: \"Cmd\" must be a list of strings");
}

TEST_CASE("docker save manifest.json: one image, relative paths only") {
    const std::string m = R"([{"Config":"abc.json","RepoTags":["busybox:1.36"],"Layers":["l1/layer.tar","blobs/sha256/xyz"]}])";
    DockerImage d = parse_docker_manifest(m);
    CHECK(d.config_path == "abc.json");
    CHECK(d.layer_paths == std::vector<std::string>{"l1/layer.tar", "blobs/sha256/xyz"});
    CHECK(d.repo_tags == std::vector<std::string>{"busybox:1.36"});
    CHECK(error_of([] { parse_docker_manifest(R"([{"Config":"../x.json","Layers":[]}])"); }) ==
          "manifest.json Config: \"../x.json\": expected a relative path inside the archive, without \"..\"");
    CHECK(error_of([] { parse_docker_manifest(R"([{"Config":"c.json","Layers":["/etc/shadow"]}])"); }).find(
              "expected a relative path inside the archive") != std::string::npos);
    CHECK(error_of([] { parse_docker_manifest("[]"); }) ==
          "manifest.json: expected a list with one image (docker save IMAGE)");
    CHECK(error_of([] { parse_docker_manifest(R"([{"Config":"a","Layers":[]},{"Config":"b","Layers":[]}])"); }) ==
          "manifest.json lists 2 images: save one image per archive");
}

TEST_CASE("whiteouts: .wh.NAME deletes NAME, .wh..wh..opq makes the directory opaque") {
    CHECK(classify_whiteout("file").kind == WhiteoutKind::none);
    CHECK(classify_whiteout(".whatever").kind == WhiteoutKind::none);
    Whiteout w = classify_whiteout(".wh.gone");
    CHECK(w.kind == WhiteoutKind::deletion);
    CHECK(w.name == "gone");
    CHECK(classify_whiteout(".wh..wh..opq").kind == WhiteoutKind::opaque);
    CHECK(error_of([] { classify_whiteout(".wh."); }) == "whiteout \".wh.\": deletes no name");
    CHECK(error_of([] { classify_whiteout(".wh.."); }) == "whiteout \".wh..\": deletes no name");
    CHECK(error_of([] { classify_whiteout(".wh..wh.plnk"); }).find("reserved") != std::string::npos);
}

TEST_CASE("entry names: normalized inside the layer; absolute names and .. refused") {
    CHECK(normalize_entry_name("./usr//bin/", "t") == "usr/bin");
    CHECK(normalize_entry_name("./", "t") == "");
    CHECK(normalize_entry_name("a/./b", "t") == "a/b");
    CHECK(error_of([] { normalize_entry_name("/etc/passwd", "t"); }) ==
          "t: entry \"/etc/passwd\" refused: an absolute name; every entry must stay inside its layer");
    CHECK(error_of([] { normalize_entry_name("a/../../etc", "t"); }) ==
          "t: entry \"a/../../etc\" refused: \"..\" in the name; every entry must stay inside its layer");
}

TEST_CASE("image names and records") {
    CHECK(is_valid_image_name("debian-12.5_slim"));
    CHECK_FALSE(is_valid_image_name(""));
    CHECK_FALSE(is_valid_image_name(".hidden"));
    CHECK_FALSE(is_valid_image_name("a/b"));
    CHECK_FALSE(is_valid_image_name("a:b"));
    CHECK_FALSE(is_valid_image_name(std::string(129, 'a')));
    StoredImage im;
    im.name = "demo";
    im.layers = {kDigestA, kDigestB};
    im.config.env = {"A=1"};
    im.config.working_dir = "/srv";
    im.config.cmd = {"sh"};
    im.config.ignored = {"User \"1\" is ignored"};
    StoredImage back = from_json_text(to_json_text(im), "demo.json");
    CHECK(back.layers == im.layers);
    CHECK(back.config.env == im.config.env);
    CHECK(back.config.working_dir == "/srv");
    CHECK(back.config.cmd == im.config.cmd);
    CHECK(back.config.ignored == im.config.ignored);
    CHECK(error_of([] { from_json_text(R"({"name":"x","layers":["sha256:../../etc"],"config":{}})", "x.json"); }) ==
          "x.json: layer \"sha256:../../etc\" is not a sha256 digest");
}
