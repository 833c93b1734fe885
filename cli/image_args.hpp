// cli/image_args.hpp — the command line of `corral image import|ls|inspect|rm`.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/option_table.hpp"
#include "image/store.hpp"

namespace corral::cli {

struct ImageArgs {
    std::string verb;  // the first positional; "help" for --help
    std::vector<std::string> positional;
    std::optional<std::string> name;
    std::optional<std::string> state_dir;
    bool json = false;
    image::ImportOptions import;
};
// One table for every verb, options anywhere. Throws UsageError.
ImageArgs parse_image_args(int argc, char** argv);
std::span<const OptionSpec> image_option_specs();
const std::string& image_help();

}  // namespace corral::cli
