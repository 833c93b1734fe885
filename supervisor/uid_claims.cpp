// supervisor/uid_claims.cpp — see uid_claims.hpp.
#include "supervisor/uid_claims.hpp"

#include <grp.h>
#include <pwd.h>

#include <cerrno>
#include <cstring>

#include "base/log.hpp"
#include "supervisor/sweep.hpp"

namespace corral::supervisor {

// Why NSS (files, systemd, LDAP, ...) says the UID is taken, "" if it is free.
// A lookup that fails (an unreachable directory server, a broken entry)
// counts as "in use": the UID is skipped rather than assumed free.
std::string user_database_claim(uid_t uid) {
    struct passwd pw {};
    struct passwd* result = nullptr;
    std::vector<char> buf(4096);
    int rc;
    while ((rc = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &result)) == ERANGE && buf.size() < (1u << 20))
        buf.resize(buf.size() * 2);
    if (rc != 0) return std::string("could not be checked in the user database: ") + std::strerror(rc);
    if (result != nullptr)
        return std::string("exists in the user database as ") +
               (pw.pw_name != nullptr && pw.pw_name[0] != '\0' ? pw.pw_name : "(unnamed)");
    // The run's GID has the UID's number: a group of that number (sudo,
    // kmem, staff in a range set too low) would give the box its rights.
    struct group gr {};
    struct group* gresult = nullptr;
    while ((rc = ::getgrgid_r(static_cast<gid_t>(uid), &gr, buf.data(), buf.size(), &gresult)) == ERANGE &&
           buf.size() < (1u << 20))
        buf.resize(buf.size() * 2);
    if (rc != 0) return std::string("could not be checked in the group database: ") + std::strerror(rc);
    if (gresult != nullptr)
        return std::string("exists in the group database (as the run's GID) as ") +
               (gr.gr_name != nullptr && gr.gr_name[0] != '\0' ? gr.gr_name : "(unnamed)");
    return {};
}

// A session's service and verifier UIDs: two more leases from the range,
// each recording the run id (so stale cleanup knows them), each checked
// like the agent's (no user, group or process has it; a taken one is
// skipped). Unlike the agent's, their check runs before the clone: sessions
// start rarely, execs often.
std::vector<UidLease> lease_role_uids(const SandboxSpec& spec, uid_t agent_uid, std::set<uid_t> skip,
                                      const Tell& tell) {
    skip.insert(agent_uid);
    std::vector<UidLease> leases;
    while (leases.size() < 2) {
        UidLease lease = acquire_uid(spec.uid_range, spec.lock_dir, skip);
        lease.record_run_id(spec.run_id);
        skip.insert(lease.uid());
        const std::string claim = user_database_claim(lease.uid());
        const auto owners = processes_owned_by(lease.uid(), lease.gid(), KernelThreads::skip);
        if (!claim.empty() || !owners.empty()) {
            if (tell)
                tell("warning: uid " + std::to_string(lease.uid()) + " " +
                     (claim.empty() ? std::string("is used by processes outside corral") : claim) +
                     "; skipping it (take it out of --uid-range)");
            continue;
        }
        leases.push_back(std::move(lease));
    }
    return leases;
}

}  // namespace corral::supervisor
