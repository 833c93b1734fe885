// Fuzz target: a worker's worker.toml, from its text through the checks
// check_org makes on it (its grants against the credentials an org.toml
// defines). Every problem must be a Diagnostic, never an exception.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "config/org_config.hpp"

using namespace corral::config;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    const CredentialNames known{{"anthropic", "openai"}, true};
    WorkerConfig w;
    w.name = "w1";
    w.file = "/nonexistent-org/workers/w1/worker.toml";
    std::vector<Diagnostic> errors;
    check_worker_toml(text, w.file, known, "/nonexistent-org", w, errors);
    for (const auto& d : errors)
        if (d.file.empty() || (d.form == Diagnostic::Form::message ? d.message.empty() : d.allowed.empty())) std::abort();
    if (errors.empty())
        for (const auto& g : w.grants)
            if (g.identities != std::vector<std::string>{"w1"}) std::abort();
    return 0;
}
