// tools/cmd_ca.cpp — `corral ca init [--state-dir DIR]`: create (or keep) corral's CA.
//
// The CA's certificate is what sandbox images must trust for inject-mode
// hosts; creating it ahead of the first gateway start lets an image build
// step copy it. Prints the certificate's path on stdout.
#include <cstdio>
#include <string>
#include <string_view>

#include "base/sys_error.hpp"
#include "gateway/ca.hpp"
#include "rootfs/host_paths.hpp"
#include "run/request.hpp"
#include "cli/action_front.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

int cmd_ca(int argc, char** argv) {
    ActionFront front("ca", ca_help());
    if (auto exit = front.take_action(argc, argv, {"init"})) return *exit;
    StateDirArgs args;
    try {
        args = parse_state_dir_args("corral ca", argc - 1, argv + 1);
    } catch (const UsageError& e) {
        return front.bad_usage(e.what());
    }
    if (args.help) return front.help();
    const std::optional<std::string>& given = args.state_dir;
    // The state dir every corral command uses: a run's embedded gateway keeps
    // its CA there too, so this is the CA the runs' boxes will see.
    const std::string state_dir = given.value_or(run::default_state_dir());
    // Root writes the CA key under it: only a path no one but root can
    // redirect (the same rule as `corral run` and `corral gateway`).
    rootfs::require_root_only_tree("--state-dir", state_dir + "/ca");
    auto ca = gateway::CertificateAuthority::load_or_create(state_dir);
    std::printf("%s\n", ca.certificate_path().c_str());
    std::fprintf(stderr, "corral ca: %s CA in %s\n", ca.created() ? "created" : "kept the existing",
                 gateway::ca_files(state_dir).dir.c_str());
    return 0;
}

}  // namespace corral::cli
