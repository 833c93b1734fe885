// tools/cmd_key.cpp — `corral key init|show [--state-dir DIR]`: the journal's
// signing key (journal/key.hpp). `show` prints the public key the operator
// keeps off the host to verify journals with (`corral journal verify --key`).
#include <cstdio>
#include <string>
#include <string_view>

#include "base/sys_error.hpp"
#include "journal/key.hpp"
#include "rootfs/host_paths.hpp"
#include "run/request.hpp"
#include "cli/action_front.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

int cmd_key(int argc, char** argv) {
    ActionFront front("key", key_help());
    if (auto exit = front.take_action(argc, argv, {"init", "show"})) return *exit;
    StateDirArgs args;
    try {
        args = parse_state_dir_args("corral key", argc - 1, argv + 1);
    } catch (const UsageError& e) {
        return front.bad_usage(e.what());
    }
    if (args.help) return front.help();
    const std::optional<std::string>& state_dir = args.state_dir;
    const std::string& action = front.action();
    std::string dir = state_dir ? *state_dir : run::default_state_dir();
    journal::KeyFiles files = journal::key_files(dir);
    if (action == "show") {
        journal::PublicKey key = journal::PublicKey::from_file(files.pub_path);
        std::fputs(key.pem().c_str(), stdout);
        std::fprintf(stderr, "corral key: %s (%s)\n", key.fingerprint().c_str(), files.pub_path.c_str());
        return 0;
    }
    // Root writes the private key under it: only a path no one but root can
    // redirect (as `corral ca init`).
    rootfs::require_root_only_tree("--state-dir", dir);
    bool created = false;
    journal::SigningKey key = journal::SigningKey::load_or_create(dir, &created);
    std::fputs(key.public_key().pem().c_str(), stdout);
    std::fprintf(stderr, "corral key: %s journal key %s in %s\n", created ? "created" : "kept the existing",
                 key.public_key().fingerprint().c_str(), files.dir.c_str());
    return 0;
}

}  // namespace corral::cli
