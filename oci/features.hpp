// oci/features.hpp — the runtime spec's features document (`corral-oci
// features`): what corral's OCI front accepts, built from the same lists
// the config reader checks against, so the two cannot disagree.
#pragma once

#include <string>
#include <string_view>

namespace corral::oci {

// The JSON, pretty-printed, with a final newline. `corral_version` goes in
// the annotations ("io.corral.version").
std::string features_json(std::string_view corral_version);

}  // namespace corral::oci
