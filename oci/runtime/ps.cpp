// oci/runtime/ps.cpp — the container's pids from its supervisor, as JSON
// or through the host's ps.
#include "oci/runtime/ps.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>

#include "base/fd.hpp"
#include "base/sys_error.hpp"
#include "oci/runtime/container_dir.hpp"
#include "oci/runtime/control.hpp"

namespace corral::oci {

namespace {

std::vector<std::string> fields_of(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string f; in >> f;) out.push_back(f);
    return out;
}

// The host's `ps ARGS...` output (at most 16 MiB), or throws naming why.
std::string host_ps_output(const std::vector<std::string>& options) {
    std::vector<std::string> argv{"ps"};
    if (options.empty()) argv.push_back("-ef");
    argv.insert(argv.end(), options.begin(), options.end());
    int pipe_fds[2];
    check_sys(::pipe2(pipe_fds, O_CLOEXEC), "pipe2", "ps's output");
    Fd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
    const pid_t child = ::fork();
    if (child < 0) throw SysError("fork", "ps", errno);
    if (child == 0) {
        ::dup2(write_end.get(), 1);
        std::vector<char*> args;
        for (auto& a : argv) args.push_back(a.data());
        args.push_back(nullptr);
        ::execvp("ps", args.data());
        _exit(127);
    }
    write_end.reset();
    std::string out;
    std::exception_ptr unread;
    try {
        out = read_to_end(read_end.get(), "ps's output", 16u << 20);
    } catch (...) {
        unread = std::current_exception();  // reaped first, then thrown
    }
    read_end.reset();
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (unread) std::rethrow_exception(unread);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw UsageError("ps: the host's ps failed (" +
                         (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : std::string("killed")) +
                         (WIFEXITED(status) && WEXITSTATUS(status) == 127 ? ": not installed" : "") + ")");
    return out;
}

}  // namespace

std::string keep_ps_lines(std::string_view table, const std::vector<long>& pids) {
    std::istringstream in{std::string(table)};
    std::string header;
    std::getline(in, header);
    const auto names = fields_of(header);
    const auto column = std::find(names.begin(), names.end(), "PID");
    if (column == names.end()) throw UsageError("ps: the ps options left out the PID column (header \"" + header + "\")");
    const auto at = static_cast<std::size_t>(column - names.begin());
    std::string out = header + "\n";
    for (std::string line; std::getline(in, line);) {
        const auto f = fields_of(line);
        if (f.size() <= at) continue;
        char* end = nullptr;
        const long pid = std::strtol(f[at].c_str(), &end, 10);
        if (end != f[at].c_str() && *end == '\0' && std::binary_search(pids.begin(), pids.end(), pid)) out += line + "\n";
    }
    return out;
}

int cmd_ps(const OciArgs& a) {
    std::vector<long> pids = ask_supervisor_for_pids(open_live_container(a.global.root, a.id));
    std::sort(pids.begin(), pids.end());
    if (a.json) {
        std::string text = "[";
        for (std::size_t i = 0; i < pids.size(); ++i) text += (i ? "," : "") + std::to_string(pids[i]);
        std::fputs((text + "]\n").c_str(), stdout);
        return 0;
    }
    std::fputs(keep_ps_lines(host_ps_output(a.ps_options), pids).c_str(), stdout);
    return 0;
}

}  // namespace corral::oci
