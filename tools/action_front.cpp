#include "tools/action_front.hpp"

namespace corral::cli {

std::optional<int> ActionFront::take_action(int argc, char** argv, std::initializer_list<std::string_view> actions) {
    if (argc < 2) {
        usage_(stderr);
        return 2;
    }
    if (is_help(argv[1])) return help();
    action_ = argv[1];
    std::string allowed;
    for (auto a : actions) {
        if (a == action_) return std::nullopt;
        allowed += (allowed.empty() ? "" : ", ") + std::string(a);
    }
    return bad_usage("unknown " + noun_ + " action \"" + action_ + "\"; expected: " + allowed);
}

std::optional<int> ActionFront::take_state_dir_only(int argc, char** argv, std::optional<std::string>& dir) const {
    for (int i = 2; i < argc; ++i) {
        std::string_view a = argv[i];
        if (is_help(a)) return help();
        if (a == "--state-dir") {
            if (i + 1 >= argc) return bad_usage("--state-dir: missing value; expected --state-dir DIR");
            dir = argv[++i];
            if (dir->empty()) return bad_usage("--state-dir: empty path; expected a directory");
            continue;
        }
        return bad_usage("unexpected argument \"" + std::string(a) + "\"; expected: --state-dir DIR");
    }
    return std::nullopt;
}

int ActionFront::help() const {
    usage_(stdout);
    return 0;
}

int ActionFront::bad_usage(const std::string& problem) const {
    std::fprintf(stderr, "corral %s: %s (see corral %s --help)\n", noun_.c_str(), problem.c_str(), noun_.c_str());
    return 2;
}

}  // namespace corral::cli
