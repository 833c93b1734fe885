// tests/run/run_args.hpp — `corral run ARGS...` parsed as the CLI parses it.
#pragma once

#include <string>
#include <vector>

#include "run/request.hpp"

namespace corral::test {

inline run::RunRequest parse_run_args(std::vector<std::string> args) {
    args.insert(args.begin(), "run");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return run::parse_run_request(static_cast<int>(argv.size()), argv.data());
}

}  // namespace corral::test
