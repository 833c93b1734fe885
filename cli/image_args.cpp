// cli/image_args.cpp — the option table of `corral image` (a data table),
// its --help and its parser.
#include "cli/image_args.hpp"

#include <cerrno>
#include <cstdlib>

#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "cli/command_table.hpp"

namespace corral::cli {

namespace {

std::uint64_t prefixed_size(const char* option, const std::string& text) {
    try {
        return parse_size(text);
    } catch (const std::exception& e) {
        throw UsageError(std::string(option) + " \"" + text + "\": " + e.what());
    }
}

std::uint64_t prefixed_count(const char* option, const std::string& text) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || text.front() == '-')
        throw UsageError(std::string(option) + " \"" + text + "\": expected a whole number (0: no bound)");
    return n;
}

const Option<ImageArgs> kImageOptions[] = {
    {{"--name", "NAME", "the image's name (default: the archive's tag or file name);\n"
                        "replaces an image of that name"},
     [](ImageArgs& a, const std::string& v) { a.name = v; }},
    {{"--replace", "", "let the default name replace an image of that name (without\n"
                       "it or --name, an archive naming itself after an image in\n"
                       "the store is refused)"},
     [](ImageArgs& a, const std::string&) { a.import.replace = true; }},
    {{"--max-expanded", "SIZE", "refuse an import that writes more (default 32G; 0: no bound)"},
     [](ImageArgs& a, const std::string& v) { a.import.limits.max_bytes = prefixed_size("--max-expanded", v); }},
    {{"--max-ratio", "N", "refuse an import that writes more than N bytes per byte\n"
                          "read, past its first 64 MiB (default 200; 0: no bound)"},
     [](ImageArgs& a, const std::string& v) { a.import.limits.max_ratio = prefixed_count("--max-ratio", v); }},
    {{"--json", "", "ls: one JSON array instead of the table"}, [](ImageArgs& a, const std::string&) { a.json = true; }},
    {{"--state-dir", "DIR", "corral's state directory (default /var/lib/corral, or\n"
                            "$CORRAL_STATE_DIR)"},
     [](ImageArgs& a, const std::string& v) { a.state_dir = v; }},
};

constexpr const char* kImageHead =
    "usage: corral image import SOURCE [--name NAME | --replace] [--max-expanded SIZE] [--max-ratio N]\n"
    "                           [--state-dir DIR]\n"
    "       corral image ls [--json] [--state-dir DIR]\n"
    "       corral image inspect NAME [--state-dir DIR]\n"
    "       corral image rm NAME [--state-dir DIR]\n"
    "\n"
    "SOURCE is an OCI image layout (a directory with oci-layout and index.json),\n"
    "an OCI archive (that directory as a tar), a `docker save` archive or its\n"
    "unpacked directory (manifest.json), or a plain root file system tarball\n"
    "(.tar, .tar.gz, .tar.xz, .tar.zst: one layer). Each layer's digest is checked\n"
    "against the manifest while it is read; a layer is stored once, in\n"
    "STATE_DIR/images, and shared by every image that has it. Run an image with\n"
    "`corral run --rootfs image:NAME`. rm refuses (exit 1) while a running box\n"
    "uses the image, and names its runs. docs/images.md has the details.\n"
    "\n";

}  // namespace

ImageArgs parse_image_args(int argc, char** argv) {
    ImageArgs a;
    CommandLine line = parse_options<ImageArgs>({"corral image"}, kImageOptions, argc, argv, a);
    if (line.help) {
        a.verb = "help";
        return a;
    }
    if (!line.positionals.empty()) {
        a.verb = line.positionals.front();
        a.positional.assign(line.positionals.begin() + 1, line.positionals.end());
    }
    return a;
}

std::span<const OptionSpec> image_option_specs() { return option_specs_of<kImageOptions>(); }

const std::string& image_help() {
    static const std::string text = help_with_options(kImageHead, image_option_specs(), 20);
    return text;
}

}  // namespace corral::cli
