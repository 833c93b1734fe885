// tools/cmd_image.cpp — `corral image import|ls|inspect|rm`: the image store (image/store.hpp).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/parse.hpp"
#include "base/terminal_text.hpp"
#include "base/sys_error.hpp"
#include "image/store.hpp"
#include "run/request.hpp"
#include "run/run_index.hpp"
#include "run/state_dir.hpp"
#include "cli/image_args.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

constexpr int kExitInUse = 1;  // rm of an image a running box uses

std::string human_bytes(std::uint64_t n) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(n);
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
}

std::string short_digest(const std::string& d) { return d.size() > 19 ? d.substr(0, 19) : d; }

// One line per layer on a terminal, redrawn as bytes arrive; nothing otherwise.
class ProgressLine {
public:
    ProgressLine() : tty_(isatty(STDERR_FILENO) == 1) {}
    void operator()(const image::ImportProgress& p) {
        if (!tty_) return;
        std::string text = "layer " + std::to_string(p.layer) + "/" + std::to_string(p.layers) + " " +
                           (p.digest.empty() ? std::string("(tarball)") : short_digest(p.digest)) + "  ";
        if (p.reused && p.bytes == 0) text += "already stored";
        else text += human_bytes(p.bytes) + (p.total ? " / " + human_bytes(p.total) : std::string());
        if (!p.done && p.bytes - last_ < (1u << 20) && p.bytes != 0) return;  // redraw per MiB
        last_ = p.bytes;
        std::fprintf(stderr, "\r\033[K%s%s", text.c_str(), p.done ? "\n" : "");
        if (p.done) last_ = 0;
    }

private:
    bool tty_;
    std::uint64_t last_ = 0;
};


std::string one_name(const ImageArgs& a) {
    if (a.positional.size() != 1) throw UsageError(a.verb + ": expected exactly one image NAME");
    return a.positional.front();
}

int import(const ImageArgs& a, image::ImageStore& store) {
    if (a.positional.size() != 1) throw UsageError("import: expected exactly one SOURCE");
    ProgressLine progress;
    if (a.name && a.import.replace) throw UsageError("import: --name NAME and --replace: give one (--name replaces an image of that name)");
    image::ImportResult r = store.import(a.positional.front(), a.name, std::ref(progress), a.import);
    for (const auto& n : r.notes) std::fprintf(stderr, "corral image: %s\n", terminal_text(n).c_str());
    std::printf("imported %s: %zu layers (%zu new, %zu already stored), %s read\n", terminal_text(r.image.name).c_str(),
                r.image.layers.size(), r.layers_added, r.layers_reused, human_bytes(r.image.size_bytes).c_str());
    return 0;
}

int list(const ImageArgs& a, const image::ImageStore& store) {
    auto images = store.list();
    if (a.json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& im : images) out.push_back(nlohmann::json::parse(image::to_json_text(im)));
        std::printf("%s\n", terminal_json(out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)).c_str());
        return 0;
    }
    std::printf("%-32s %-7s %-12s %-16s %s\n", "NAME", "LAYERS", "SIZE", "FORMAT", "IMPORTED");
    for (const auto& im : images)
        std::printf("%-32s %-7zu %-12s %-16s %s\n", terminal_text(im.name).c_str(), im.layers.size(), human_bytes(im.size_bytes).c_str(),
                    im.format.c_str(), im.imported_at.c_str());
    return 0;
}

// Refused while a running box uses the image: its layers are that box's
// root file system. The runs are named from their run.json; the store's own
// check (a run's hold, taken before it reads the image) also catches a run
// too young to have said which image it uses.
int remove_image(const ImageArgs& a, image::ImageStore& store) {
    const std::string name = one_name(a);
    const std::string refusal = "corral image: rm " + name + ": refused: ";
    const auto users = run::running_runs_on_image(a.state_dir.value_or(run::default_state_dir()), name);
    if (!users.empty()) {
        std::string ids;
        for (const auto& id : users) ids += (ids.empty() ? "" : ", ") + id;
        std::fprintf(stderr, "%simage %s is in use by running run%s %s; stop %s first (`corral stop %s`)\n",
                     refusal.c_str(), name.c_str(), users.size() > 1 ? "s" : "", ids.c_str(),
                     users.size() > 1 ? "them" : "it", users.front().c_str());
        return kExitInUse;
    }
    try {
        image::RemoveResult r = store.remove(name);
        std::printf("removed %s: %zu layers deleted, %zu kept (used by other images or by a running box)\n", name.c_str(),
                    r.layers_removed.size(), r.layers_kept.size());
        return 0;
    } catch (const image::ImageInUse& e) {
        std::fprintf(stderr, "%s%s (a run that is starting; `corral ps` lists the runs); stop it first\n",
                     refusal.c_str(), e.what());
        return kExitInUse;
    }
}

}  // namespace

int cmd_image(int argc, char** argv) {
    ImageArgs a;
    try {
        a = parse_image_args(argc, argv);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "corral image: %s\n", terminal_text(e.what()).c_str());
        return 2;
    }
    if (a.verb == "help" || a.verb.empty()) {
        std::fputs(image_help().c_str(), a.verb.empty() ? stderr : stdout);
        return a.verb.empty() ? 2 : 0;
    }
    if (a.verb != "import" && a.verb != "ls" && a.verb != "inspect" && a.verb != "rm") {
        std::fprintf(stderr, "corral image: unknown command \"%s\"; expected import, ls, inspect or rm\n", a.verb.c_str());
        return 2;
    }
    if (geteuid() != 0) {
        std::fprintf(stderr, "corral image: must run as root (the store keeps layers with their owners)\n");
        return 125;
    }
    try {
        // Checked (or made) before the store opens, creates or locks anything in it.
        a.state_dir = run::make_private_dir("--state-dir", a.state_dir.value_or(run::default_state_dir()),
                                            run::DirRole::state);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "corral image: %s\n", terminal_text(e.what()).c_str());
        return 125;
    }
    image::ImageStore store(*a.state_dir);
    try {
        if (a.verb == "import") return import(a, store);
        if (a.verb == "ls") return list(a, store);
        if (a.verb == "inspect") {
            std::fputs(terminal_json(image::to_json_text(store.get(one_name(a)))).c_str(), stdout);
            return 0;
        }
        return remove_image(a, store);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "corral image: %s\n", terminal_text(e.what()).c_str());
        return 2;
    }
}

}  // namespace corral::cli
