#include "supervisor/command_path.hpp"

namespace corral::supervisor {

namespace {

std::vector<std::string> path_entries(const std::string& path) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        std::size_t colon = path.find(':', start);
        std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        out.push_back(dir.empty() ? "." : dir);
        if (colon == std::string::npos) return out;
        start = colon + 1;
    }
}

}  // namespace

std::string env_value(const std::vector<std::string>& env, const std::string& key) {
    std::string prefix = key + "=";
    std::string value;
    for (const auto& kv : env)
        if (kv.starts_with(prefix)) value = kv.substr(prefix.size());
    return value;
}

std::vector<std::string> exec_candidates(const std::string& cmd, const std::vector<std::string>& env) {
    if (cmd.find('/') != std::string::npos) return {cmd};
    std::vector<std::string> out;
    for (const auto& dir : path_entries(env_value(env, "PATH"))) out.push_back(dir + "/" + cmd);
    return out;
}

}  // namespace corral::supervisor
