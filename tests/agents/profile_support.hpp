// tests/agents/profile_support.hpp — what the agent-profile tests share: the
// inputs the golden files were made from, and a plain string split.
#pragma once

#include <string>
#include <vector>

#include "agents/agent_profile.hpp"

namespace corral::test::profile {

inline const char* const kRunId = "20260101T000000Z-abc123";

inline ::corral::agents::AgentInputs golden_inputs(::corral::agents::CredentialMode mode) {
    ::corral::agents::AgentInputs in;
    in.run_id = kRunId;
    in.worker = "alpha";
    in.prompt = "Reply with exactly DONE";
    in.system_prompt = "You are a careful engineer.";
    in.credential = mode;
    return in;
}

inline std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> parts;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            parts.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    parts.push_back(cur);
    return parts;
}

}  // namespace corral::test::profile
