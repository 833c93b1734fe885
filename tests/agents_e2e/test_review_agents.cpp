// A real CLI writing into a reviewed workspace (issue 31, docs/workspace.md):
// pi, unmodified, in `corral run --workspace DIR --review --prompt`, scripted
// by the model stand-in to use its own write and bash tools. DIR is not
// written during the run; `corral diff` lists what pi did (an addition, a
// deletion, a new directory, a rename); `corral apply` makes DIR the tree the
// same edits made directly give, as DIR's owner.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/agents_e2e/checks.hpp"
#include "tests/agents_e2e/world.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace corral;
using namespace corral::test::agents;

namespace {

// DIR's owner: an unprivileged user that is not the box's.
constexpr uid_t kOwner = 41311;
constexpr gid_t kOwnerGroup = 41312;

// The stand-in's script is cleared however the case ends: a later pi run
// must not be handed these calls.
struct ScriptGuard {
    const World& w;
    ~ScriptGuard() { post_script(w, json{{"calls", json::array()}}); }
};

void own_tree(const std::string& root) {
    for (const auto& e : fs::recursive_directory_iterator(root)) ::lchown(e.path().c_str(), kOwner, kOwnerGroup);
    ::lchown(root.c_str(), kOwner, kOwnerGroup);
}

bool has_line(const std::string& text, const std::string& line) {
    return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("review: pi's own write and bash tools change a reviewed workspace; diff lists it, apply writes it as DIR's owner") {
    auto& w = world();
    const std::string ws = w.dir + "/review-ws";
    fs::remove_all(ws);
    fs::create_directories(ws + "/docs");
    test::write_file(ws + "/existing.txt", "existing\n");
    test::write_file(ws + "/docs/old-name.md", "a note that pi moves\n");
    own_tree(ws);
    ::chmod(ws.c_str(), 0755);
    const std::string manifest_before = test::run({"sh", "-c", "cd " + ws + " && find . -printf '%p %m %u %T@\\n' | sort"}).out;

    const auto before = standin_seen().size();
    ScriptGuard guard{w};
    post_script(w, {{"calls",
                     {{{"tool", "write"}, {"builtin", true},
                       {"arguments", {{"path", "/workspace/from-pi.txt"}, {"content", "written by pi\n"}}}},
                      {{"tool", "bash"}, {"builtin", true},
                       {"arguments", {{"command", "cd /workspace && rm existing.txt && mkdir -p src && "
                                                  "echo 'int main(void) { return 0; }' > src/main.c && "
                                                  "mv docs/old-name.md docs/new-name.md"}}}}}}});
    const std::string run_dir = w.dir + "/run-review-pi";
    test::RunOptions o;
    o.timeout = std::chrono::seconds(240);
    o.env["CORRAL_STATE_DIR"] = w.dir + "/corral-state";
    auto r = test::run({test::corral_bin(), "run", "--config", org_dir(w, Org::primary), "--worker", "pi", "--run-dir",
                        run_dir, "--workspace", ws, "--review", "--prompt", "Make the scripted edits"},
                       o);
    INFO("exit ", r.exit_code, "\nstdout:\n", r.out, "\nstderr:\n", r.err);
    REQUIRE(r.exit_code == 0);
    // pi ran both tools (their results went back to the model), and DIR was not written.
    std::size_t results = 0;
    const auto seen = standin_seen();
    for (std::size_t i = before; i < seen.size(); ++i) results += seen[i].value("tool_results", json::array()).size();
    CHECK(results >= 2);
    CHECK(test::run({"sh", "-c", "cd " + ws + " && find . -printf '%p %m %u %T@\\n' | sort"}).out == manifest_before);

    const auto corral_cmd = [&](std::vector<std::string> args) {
        args.insert(args.begin(), test::corral_bin());
        args.insert(args.end(), {"--state-dir", w.dir + "/corral-state"});
        return test::run(args);
    };
    const auto stat = corral_cmd({"diff", "--stat", run_dir});
    INFO(stat.out << stat.err);
    REQUIRE(stat.exit_code == 0);
    for (const char* line : {"A  from-pi.txt", "D  existing.txt", "A  src", "A  src/main.c",
                             "D  docs/old-name.md  (renamed to docs/new-name.md)",
                             "A  docs/new-name.md  (renamed from docs/old-name.md)"}) {
        INFO(line);
        CHECK(has_line(stat.out, line));
    }
    const auto applied = corral_cmd({"apply", run_dir});
    INFO(applied.out << applied.err);
    CHECK(applied.exit_code == 0);
    CHECK(test::read_file(ws + "/from-pi.txt") == "written by pi\n");
    CHECK(test::read_file(ws + "/src/main.c") == "int main(void) { return 0; }\n");
    CHECK(test::read_file(ws + "/docs/new-name.md") == "a note that pi moves\n");
    CHECK_FALSE(fs::exists(ws + "/existing.txt"));
    CHECK_FALSE(fs::exists(ws + "/docs/old-name.md"));
    for (const char* p : {"/from-pi.txt", "/src", "/src/main.c", "/docs/new-name.md"}) {
        struct stat st {};
        REQUIRE(::lstat((ws + p).c_str(), &st) == 0);
        INFO(p);
        CHECK(st.st_uid == kOwner);
        CHECK(st.st_gid == kOwnerGroup);
    }
}
