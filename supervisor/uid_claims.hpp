// supervisor/uid_claims.hpp — whether a UID from the range is free for a
// box: no user, group (the run's GID has the UID's number) or process has
// it; and a session's two more UIDs (its service and verifier roles).
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

#include "supervisor/sandbox.hpp"
#include "supervisor/uid_lease.hpp"

namespace corral::supervisor {

// Why NSS (files, systemd, LDAP, ...) says the UID is taken, "" if it is free.
// A lookup that fails (an unreachable directory server, a broken entry)
// counts as "in use": the UID is skipped rather than assumed free.
std::string user_database_claim(uid_t uid);

// A session's service and verifier UIDs: two more leases from the range,
// each recording the run id (so stale cleanup knows them), each checked
// like the agent's (no user, group or process has it; a taken one is
// skipped). Unlike the agent's, their check runs before the clone: sessions
// start rarely, execs often.
// A UID skipped is told (sandbox.hpp Tell), one line each.
std::vector<UidLease> lease_role_uids(const SandboxSpec& spec, uid_t agent_uid, std::set<uid_t> skip, const Tell& tell);

}  // namespace corral::supervisor
