// Fuzz target: an organisation's org.toml, from its text through the checks
// check_org makes on it. Every problem must be a Diagnostic (never an
// exception), and one naming the file and what is wrong.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "config/org_config.hpp"

using namespace corral::config;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    OrgConfig org;
    org.dir = "/nonexistent-org";
    org.org_file = org.dir + "/org.toml";
    std::vector<Diagnostic> errors;
    check_org_toml(text, org.org_file, org, errors);
    for (const auto& d : errors)
        if (d.file.empty() || (d.form == Diagnostic::Form::message ? d.message.empty() : d.allowed.empty())) std::abort();
    return 0;
}
