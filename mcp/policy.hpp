// mcp/policy.hpp — which tool calls a worker may make: rules per server, tool
// (a glob over tool names) and argument (constraints on JSON pointers), each
// allow / deny / approval. Deny wins over approval, approval over allow; a
// call no rule allows is refused (default deny). A batch with one refused
// call is refused whole. validate_rules() turns rules that could never match
// into errors, never a silent no-op. docs/tools.md "Policy".
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/constraint.hpp"
#include "mcp/denial.hpp"
#include "mcp/message.hpp"

namespace corral::mcp {

enum class Action { allow, deny, approval };

struct Rule {
    std::string name;    // how the rule is named in decisions and errors ("rule 3", a config path)
    std::string server;  // exact server name
    std::string tool;    // glob over tool names ("*" for all)
    Action action = Action::deny;
    // All must hold (AND). allow/approval: the call's arguments must satisfy
    // each; deny: the rule matches when each matches — a value that cannot be
    // checked (wrong type, bad path) counts as matching, so a deny fails closed.
    std::vector<Constraint> when;
    // action = "approval": how long a call waits for a person (the config's
    // approval_timeout, within the approval queue's bounds; default 5 min).
    std::chrono::seconds approval_timeout{300};
};

struct Policy {
    std::set<std::string> servers;  // the servers this worker has
    std::vector<Rule> rules;
};

struct Decision {
    Action action = Action::deny;
    std::string rule;               // the deciding rule's name; empty for the default deny
    std::optional<Denial> denial;   // set unless action == allow
    std::chrono::seconds approval_timeout{300};  // action == approval: the deciding rule's
    bool allowed() const { return action == Action::allow && !denial; }
};

Decision decide(const Policy& p, std::string_view server, std::string_view tool, const nlohmann::json& arguments);

// Every tools/call of a read message; one refusal refuses all (batch_denied
// names the call). Messages other than tools/call pass this check.
Decision decide_messages(const Policy& p, std::string_view server, const std::vector<Message>& messages);

// Whether some call of `tool` could be allowed: an allow or approval rule
// names it and no unconditional deny covers it (what tools/list shows).
bool may_allow(const Policy& p, std::string_view server, std::string_view tool);

// Input schemas known per server and tool (from tools/list).
using KnownSchemas = std::map<std::string, std::map<std::string, nlohmann::json>>;

// Compiles regexes in place and returns one error line per problem: unknown
// server, a rule that can never match, a constraint on an argument the tool's
// input schema does not have. Empty: the policy is usable.
std::vector<std::string> validate_rules(Policy& p, const KnownSchemas& schemas = {});

}  // namespace corral::mcp
