// run/mcp_servers.cpp — the stdio MCP servers' boxes (run/mcp_servers.hpp):
// launched before the agent's, each server started on the gateway's first
// message to it, stopped and torn down after the gateway.
#include "run/mcp_servers.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>
#include <variant>

#include "base/sys_error.hpp"
#include "names/rootfs_source.hpp"
#include "rootfs/disk_overlap.hpp"
#include "rootfs/mount_plan.hpp"
#include "gateway/secret_scrubber.hpp"
#include "supervisor/init_channel.hpp"
#include "supervisor/invocation.hpp"
#include "supervisor/threads.hpp"

namespace corral::run {

using namespace std::chrono_literals;
using supervisor::SandboxSpec;

// What a server's stderr log kept and left out over the whole run (every
// start of the server appends to one log, under one cap).
struct ServerLogCount {
    std::uint64_t kept = 0, dropped = 0;
};

struct StdioServerBoxes::Box {
    std::string name;
    std::optional<supervisor::Sandbox> box;
    std::string run_id;                            // its box's, kept past its teardown (run.json)
    uid_t uid = 0;
    std::string log_path;                          // RUN_DIR/mcp-NAME.stderr.log
    std::optional<supervisor::Invocation> server;  // its command, once started
    std::thread log_thread;                        // its stderr into log_path
    ServerLogCount log_count;                            // over every start of the server
};

namespace {

// Whether launch_sandbox may clone now: a box's launch or teardown can
// leave a thread that the kernel still lists for a moment after its join.
void wait_single_threaded() {
    for (int i = 0; i < 1000 && supervisor::count_threads() != 1; ++i) std::this_thread::sleep_for(100us);
}

// Writes all of `bytes` (best effort: a log that cannot be written is a log lost, not a run lost).
void write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        ssize_t n = write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
}

// The server's stderr to its log: scrubbed, then cut at kServerLogLimit for
// the run. It ends at EOF, or once the server's reaper exited (its PID
// namespace is gone): then what is buffered is read without waiting. Never
// on EOF alone: a server that passed its stderr fd away (SCM_RIGHTS over its
// socket, queued and never read) would keep the pipe open for ever.
void keep_log(Fd from, Fd reaper, const std::string& path, std::shared_ptr<const gateway::ScrubPatterns> patterns,
              ServerLogCount* count) {
    Fd log(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
    gateway::SecretScrubber scrubber(std::move(patterns));
    auto put = [&](const std::string& text) {
        const std::uint64_t room = count->kept < kServerLogLimit ? kServerLogLimit - count->kept : 0;
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(room, text.size()));
        if (log.valid() && n > 0) write_all(log.get(), std::string_view(text).substr(0, n));
        count->kept += n;
        count->dropped += text.size() - n;
    };
    const std::uint64_t dropped_before = count->dropped;
    char buf[16384];
    std::string out;
    bool reaper_gone = false;
    for (;;) {
        if (!reaper_gone) {
            pollfd p[2] = {{from.get(), POLLIN, 0}, {reaper.get(), POLLIN, 0}};
            if (poll(p, 2, -1) < 0) {
                if (errno == EINTR) continue;
                break;
            }
            if (p[1].revents != 0) {
                reaper_gone = true;
                fcntl(from.get(), F_SETFL, fcntl(from.get(), F_GETFL) | O_NONBLOCK);
            }
        }
        ssize_t n = read(from.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;   // EOF, or (the reaper gone) nothing more buffered
        out.clear();
        scrubber.feed(std::string_view(buf, static_cast<std::size_t>(n)), out);
        put(out);
    }
    out.clear();
    scrubber.finish(out);
    put(out);
    if (count->dropped > dropped_before && log.valid())
        write_all(log.get(), "\n[corral: " + std::to_string(count->dropped) + " bytes of stderr not kept in this run "
                                 "(the log keeps " + std::to_string(kServerLogLimit) + ")]\n");
}

// Ends a started server: SIGKILL to its reaper (its PID namespace dies with
// it), waited for, its log kept to the end.
void stop_server(StdioServerBoxes::Box& b);

// A directory named in the run, opened: what the comparison on disk uses.
struct OpenedDir {
    std::string path, what;
    std::string opened;   // path, or its nearest existing ancestor when it is not made yet
    Fd fd;                // `opened`'s
    bool made = true;
};

// `path` opened (symlinks followed: what it resolves to now is what counts),
// or nullopt when it does not exist.
std::optional<Fd> open_dir(const std::string& path, const std::string& what) {
    Fd fd(open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (fd.valid()) return fd;
    if (errno == ENOENT) return std::nullopt;
    throw UsageError(what + ": cannot open " + path + " to compare it with what the agent can write: open: " +
                     errno_text(errno) + "; a stdio MCP server's box is given only directories corral can check");
}

// A server's box holds its secrets: nothing in it may be what the agent can
// write (the workspace, a --bind, its home), or the agent could change the
// server's code or data and have it hand the secret over. Compared on disk
// (rootfs/disk_overlap.hpp), in both directions: a symlink, a ".." after
// one, or another mount of the same tree cannot hide an overlap. A writable
// directory not made yet is judged by its nearest existing ancestor: a shown
// directory holding that would hold it too. Throws UsageError naming both.
void refuse_agent_writable(const SandboxSpec& agent) {
    std::vector<std::pair<std::string, std::string>> writable;   // host path, what it is
    if (agent.rootfs.workspace) writable.emplace_back(*agent.rootfs.workspace, "the workspace");
    if (agent.rootfs.home_dir) writable.emplace_back(*agent.rootfs.home_dir, "the agent's home");
    for (const auto& bind : agent.rootfs.binds)
        if (!bind.read_only) writable.emplace_back(bind.source, bind.option + " " + bind.source + ":" + bind.target);
    std::vector<std::pair<std::string, std::string>> shown;   // what the server's box would see
    for (const auto& bind : agent.rootfs.binds)
        if (bind.read_only) shown.emplace_back(bind.source, bind.option + " " + bind.source + ":" + bind.target);
    if (const auto* dir = std::get_if<names::DirRootfs>(&agent.rootfs.source)) shown.emplace_back(dir->path, "--rootfs " + dir->path);
    if (std::holds_alternative<names::HostRootfs>(agent.rootfs.source))
        for (const auto& d : rootfs::host_rootfs_dirs()) shown.emplace_back(d, "--rootfs host (its " + d + ")");
    if (shown.empty() || writable.empty()) return;
    const std::string allowed = "; a stdio MCP server's box is given only what the agent cannot change: give the server "
                                "its files from a directory that neither lies in nor contains the workspace, the "
                                "agent's home or a --bind";
    std::vector<OpenedDir> writable_dirs;
    for (const auto& [path, what] : writable) {
        std::string at = path;
        std::optional<Fd> fd = open_dir(at, what);
        while (!fd && at != "/") {
            at = std::filesystem::path(at).parent_path().string();
            fd = open_dir(at, what);
        }
        if (!fd) continue;   // not even "/": nothing to compare
        const bool made = at == path;
        writable_dirs.push_back({path, made ? what : what + " (not made yet, in " + at + ")", at, std::move(*fd), made});
    }
    for (const auto& [path, what] : shown) {
        std::optional<Fd> fd = open_dir(path, what);
        if (!fd) throw UsageError(what + ": " + path + " does not exist" + allowed);
        for (const auto& w : writable_dirs) {
            const rootfs::DiskOverlap o = rootfs::disk_overlap(fd->get(), w.fd.get());
            // A directory not made yet lies below its ancestor: only a shown
            // directory at or above that ancestor would hold it.
            if (o == rootfs::DiskOverlap::none || (!w.made && o == rootfs::DiskOverlap::inside)) continue;
            throw UsageError(what + ": overlaps " + w.what + " (" + w.path + "), which the agent can write: on disk " +
                             path + " " + rootfs::disk_overlap_words(o) + " " + w.opened + allowed);
        }
    }
}

}  // namespace

SandboxSpec server_box_spec(const SandboxSpec& agent, std::size_t index, const mcp::StdioServer& server) {
    refuse_agent_writable(agent);
    SandboxSpec s;
    s.run_id = agent.run_id + "-mcp-" + std::to_string(index + 1);
    s.run_dir = agent.run_dir;
    s.scratch_root = agent.scratch_root;
    s.lock_dir = agent.lock_dir;
    s.rootfs.source = agent.rootfs.source;
    s.rootfs.image_layers = agent.rootfs.image_layers;
    s.rootfs.image_working_dir = agent.rootfs.image_working_dir;
    s.rootfs.protected_dirs = agent.rootfs.protected_dirs;
    s.rootfs.tmp_size_bytes = agent.rootfs.tmp_size_bytes;
    s.rootfs.scratch_size_bytes = agent.rootfs.scratch_size_bytes;
    s.rootfs.shm_size_bytes = agent.rootfs.shm_size_bytes;
    // What the operator shows every box of the run read-only (node_modules,
    // a tool's install): never what the agent may write.
    for (const auto& bind : agent.rootfs.binds)
        if (bind.read_only) s.rootfs.binds.push_back(bind);
    s.image_env = agent.image_env;
    s.hostname = agent.hostname;
    s.limits = agent.limits;
    s.uid_range = agent.uid_range;
    s.open_files = agent.open_files;
    s.seccomp_rules = agent.seccomp_rules;
    s.cwd = server.cwd.empty() ? "/" : server.cwd;
    s.session = true;   // its command is started later, with its secrets
    return s;
}

std::vector<std::pair<std::string, std::string>> server_environment(const mcp::StdioServer& server,
                                                                    const std::map<std::string, std::string>& secrets) {
    std::vector<std::pair<std::string, std::string>> env(server.env.begin(), server.env.end());
    for (const auto& [variable, credential] : server.secret_env) {
        auto it = secrets.find(credential);
        if (it == secrets.end())
            throw std::runtime_error("its secret_env " + variable + " names [credentials." + credential +
                                     "], whose secret the run does not hold");
        env.emplace_back(variable, it->second);
    }
    return env;
}

void merge_teardown(supervisor::TeardownReport& into, const supervisor::TeardownReport& part, const std::string& name) {
    const std::string prefix = name.empty() ? "" : "mcp " + name + ": ";
    for (auto step : part.steps) {
        step.step = prefix + step.step;
        into.steps.push_back(std::move(step));
    }
    for (const auto& p : part.problems) into.problems.push_back(prefix + p);
    for (const auto& n : part.notes) into.notes.push_back(prefix + n);
}

std::shared_ptr<StdioServerBoxes> StdioServerBoxes::launch(const SandboxSpec& agent, const mcp::ToolsConfig& tools,
                                                           const supervisor::Tell& tell) {
    std::shared_ptr<StdioServerBoxes> out(new StdioServerBoxes());
    std::size_t index = 0;
    for (const auto& [name, server] : tools.servers) {
        const auto* stdio = std::get_if<mcp::StdioServer>(&server.transport);
        if (stdio == nullptr) continue;
        auto b = std::make_unique<Box>();
        b->name = name;
        b->log_path = agent.run_dir + "/mcp-" + name + ".stderr.log";
        // Its launch's lines name the box they are about.
        const std::string& box_name = name;   // clang 14 cannot capture a structured binding
        const supervisor::Tell named_tell = [&tell, &box_name](const std::string& line) {
            if (!tell) return;
            const bool warning = line.rfind("warning: ", 0) == 0;
            tell(std::string(warning ? "warning: " : "") + "MCP server " + box_name + "'s box: " +
                 line.substr(warning ? 9 : 0));
        };
        try {
            wait_single_threaded();
            b->box.emplace(supervisor::launch_sandbox(server_box_spec(agent, index++, *stdio), {}, named_tell));
        } catch (const supervisor::SandboxSetupError& e) {
            supervisor::SandboxSetupError named(e.step(), e.error(), "MCP server " + name + "'s box: " + e.what());
            supervisor::TeardownReport report;
            if (e.teardown()) merge_teardown(report, *e.teardown(), name);
            merge_teardown(report, out->tear_down(), "");
            named.attach_teardown(std::move(report));
            throw named;
        } catch (const std::exception& e) {
            // Failed before the clone (nothing of this box exists); the
            // boxes launched before it are torn down, and must be clean.
            supervisor::SandboxSetupError named(supervisor::SetupStep::wait_for_supervisor, EIO,
                                                "MCP server " + name + "'s box: " + e.what());
            named.attach_teardown(out->tear_down());
            throw named;
        }
        b->run_id = b->box->run_id();
        b->uid = b->box->uid();
        out->boxes_.push_back(std::move(b));
    }
    wait_single_threaded();
    return out;
}

StdioServerBoxes::~StdioServerBoxes() {
    if (!torn_down_) tear_down();
}

nlohmann::json StdioServerBoxes::record() const {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& b : boxes_)
        out.push_back({{"server", b->name}, {"run_id", b->run_id}, {"uid", b->uid}});
    return out;
}

void StdioServerBoxes::use_secrets(const std::map<std::string, std::string>& secrets) {
    std::lock_guard lock(mutex_);
    secrets_ = secrets;
}

StdioServerBoxes::Box* StdioServerBoxes::find(const std::string& name) {
    for (auto& b : boxes_)
        if (b->name == name) return b.get();
    return nullptr;
}

gateway::StdioProcess StdioServerBoxes::start(const std::string& name, const mcp::StdioServer& server) {
    std::lock_guard lock(mutex_);
    Box* b = find(name);
    if (b == nullptr || torn_down_) throw std::runtime_error("the run has no box for it");
    if (b->server) stop_server(*b);  // it exited: its box starts it again
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        throw SysError("socketpair(AF_UNIX, SOCK_STREAM)", "a stdio MCP server's socket", errno);
    Fd ours(pair[0]), theirs(pair[1]);
    supervisor::InvocationSpec spec;
    spec.role = supervisor::Role::agent;   // the box's own UID; it has no other user
    spec.argv = server.argv;
    spec.env = server_environment(server, secrets_);
    spec.cwd = server.cwd.empty() ? "/" : server.cwd;
    spec.stdio_socket = theirs.get();
    b->server.emplace(supervisor::spawn_invocation(*b->box, std::move(spec)));
    theirs.reset();
    std::vector<std::string> secret_values;
    for (const auto& [credential, secret] : secrets_) secret_values.push_back(secret);
    auto patterns = std::make_shared<const gateway::ScrubPatterns>(secret_values);
    Fd reaper(fcntl(b->server->pidfd(), F_DUPFD_CLOEXEC, 3));
    if (!reaper.valid()) {
        stop_server(*b);
        throw SysError("fcntl(F_DUPFD_CLOEXEC)", "a stdio MCP server's pidfd", errno);
    }
    b->log_thread = std::thread(keep_log, b->server->take_stderr(), std::move(reaper), b->log_path, std::move(patterns),
                                &b->log_count);
    Fd to_server(fcntl(ours.get(), F_DUPFD_CLOEXEC, 3));
    if (!to_server.valid()) {
        stop_server(*b);
        throw SysError("fcntl(F_DUPFD_CLOEXEC)", "a stdio MCP server's socket", errno);
    }
    gateway::StdioProcess process;
    process.to_server = std::move(to_server);
    process.from_server = std::move(ours);
    process.stop = [this, b] {
        std::lock_guard stop_lock(mutex_);
        stop_server(*b);
    };
    return process;
}

supervisor::TeardownReport StdioServerBoxes::tear_down() {
    std::lock_guard lock(mutex_);
    supervisor::TeardownReport report;
    for (auto& b : boxes_) {
        stop_server(*b);
        if (b->box && !torn_down_) merge_teardown(report, supervisor::teardown(*b->box), b->name);
    }
    // The Box objects stay: a channel's stop, later, finds its server gone.
    torn_down_ = true;
    return report;
}

namespace {

void stop_server(StdioServerBoxes::Box& b) {
    if (b.server) {
        const int pidfd = b.server->pidfd();
        if (pidfd >= 0 && !supervisor::pidfd_exited(pidfd)) {
            supervisor::signal_through_pidfd(pidfd, SIGKILL);
            pollfd p{pidfd, POLLIN, 0};
            while (poll(&p, 1, 5000) < 0 && errno == EINTR) {
            }
        }
        b.server.reset();
    }
    if (b.log_thread.joinable()) b.log_thread.join();
}

}  // namespace

}  // namespace corral::run
