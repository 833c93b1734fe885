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
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

void usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: corral ca init [--state-dir DIR]\n"
                 "\n"
                 "Creates corral's certificate authority in DIR/ca/ (ECDSA P-256; ca.key mode 0600,\n"
                 "ca.crt mode 0644) unless it already exists, and prints the certificate's path.\n"
                 "  --state-dir DIR   default /var/lib/corral (the gateway's state_dir)\n");
}

// A malformed command line: one line naming the problem, exit 2 (as every
// corral subcommand), not the 125 of a failed action.
int bad_usage(const std::string& problem) {
    std::fprintf(stderr, "corral ca: %s (see corral ca --help)\n", problem.c_str());
    return 2;
}

}  // namespace

int cmd_ca(int argc, char** argv) {
    if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h") {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (std::string_view(argv[1]) != "init")
        return bad_usage("unknown ca action \"" + std::string(argv[1]) + "\"; expected: init");
    std::string state_dir = "/var/lib/corral";
    for (int i = 2; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        }
        if (a == "--state-dir") {
            if (i + 1 >= argc) return bad_usage("--state-dir: missing value; expected --state-dir DIR");
            state_dir = argv[++i];
            if (state_dir.empty()) return bad_usage("--state-dir: empty path; expected a directory");
            continue;
        }
        return bad_usage("unexpected argument \"" + std::string(a) + "\"; expected: --state-dir DIR");
    }
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
