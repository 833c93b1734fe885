// config/org_schema.hpp — the checks of one org.toml and of one worker.toml,
// already parsed: every key and value against the schema docs/configuration.md
// describes, every problem a Diagnostic. The directory walk that finds and
// reads the files is org_files.cpp. Internal to config/.
#pragma once

#include <string>
#include <vector>

#include "config/checker.hpp"
#include "config/org_config.hpp"

#include <toml.hpp>

namespace corral::config {

// Returns the credential names org.toml writes: the workers' grants are
// checked against them (also when org.toml's own sections have errors).
CredentialNames check_org_document(const std::string& file, const toml::value& root, OrgConfig& org,
                                   std::vector<Diagnostic>& errors);

void check_worker_document(const std::string& file, const toml::value& root, const CredentialNames& org_credentials,
                           WorkerConfig& w, const std::string& org_dir, std::vector<Diagnostic>& errors);

}  // namespace corral::config
