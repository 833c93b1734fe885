// cli/admin_args.hpp — the command lines of the host's own commands:
// `corral doctor`, `corral gateway`, `corral journal verify` and `corral validate`.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>

#include "base/option_table.hpp"

namespace corral::cli {

// What `corral doctor` was asked to look at.
struct DoctorArgs {
    bool as_json = false, help = false;
    std::optional<std::string> state_dir, config_dir, gateway_socket;
};
DoctorArgs parse_doctor_args(int argc, char** argv);  // throws UsageError
std::span<const OptionSpec> doctor_option_specs();
const std::string& doctor_help();

struct GatewayArgs {
    std::string config_path, org_dir;
    unsigned threads = 0;  // default: CPUs, at most 4
    std::chrono::milliseconds grace{10000};
    bool help = false;
};
GatewayArgs parse_gateway_args(int argc, char** argv);  // throws UsageError
std::span<const OptionSpec> gateway_option_specs();
const std::string& gateway_help();

// `corral journal verify FILE ...`; argv[0] is the action.
struct JournalArgs {
    std::optional<std::string> file, key, run_json, ledger, state_dir;
    bool help = false;
};
JournalArgs parse_journal_args(int argc, char** argv);  // throws UsageError
std::span<const OptionSpec> journal_option_specs();
const std::string& journal_help();

// `corral validate --config DIR [--worker NAME] [--skip-secrets] [--json]`.
struct ValidateArgs {
    std::string dir, only;
    bool skip_secrets = false, as_json = false, help = false;
};
ValidateArgs parse_validate_args(int argc, char** argv);  // throws UsageError
std::span<const OptionSpec> validate_option_specs();
const std::string& validate_help();

}  // namespace corral::cli
