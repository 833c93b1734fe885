// oci/runtime/list.cpp — every record under --root, as a table or JSON.
#include "oci/runtime/list.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/sys_error.hpp"
#include "oci/runtime/container_dir.hpp"

namespace corral::oci {

namespace {

struct Listed {
    std::string id;
    ContainerStatus status = ContainerStatus::creating;
    long pid = 0;
    ContainerRecord record;
};

Listed listed(const ContainerDir& dir) {
    Listed l;
    l.id = dir.id();
    try {
        l.record = dir.read();
        l.status = effective_status(l.record);
        if (l.status != ContainerStatus::stopped) l.pid = l.record.supervisor;
    } catch (const UsageError&) {
        // No record yet: a create under way, or one that died before writing it.
    }
    return l;
}

}  // namespace

int cmd_list(const OciArgs& a) {
    std::vector<Listed> all;
    for (const auto& dir : ContainerDir::all(a.global.root)) all.push_back(listed(dir));
    if (a.quiet) {
        for (const auto& l : all) std::printf("%s\n", l.id.c_str());
        return 0;
    }
    if (a.json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& l : all)
            out.push_back({{"ociVersion", l.record.state.oci_version}, {"id", l.id}, {"pid", l.pid},
                           {"status", std::string(to_string(l.status))}, {"bundle", l.record.state.bundle},
                           {"rootfs", l.record.state.bundle.empty() ? "" : l.record.state.bundle + "/rootfs"},
                           {"created", l.record.created}, {"owner", "root"},
                           {"annotations", l.record.state.annotations}});
        std::fputs((out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
        return 0;
    }
    std::printf("%-20s %-8s %-10s %-40s %-30s %s\n", "ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER");
    for (const auto& l : all)
        std::printf("%-20s %-8ld %-10s %-40s %-30s %s\n", l.id.c_str(), l.pid, std::string(to_string(l.status)).c_str(),
                    l.record.state.bundle.c_str(), l.record.created.c_str(), "root");
    return 0;
}

}  // namespace corral::oci
