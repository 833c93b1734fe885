#include "names/rootfs_source.hpp"

#include <algorithm>
#include <filesystem>

namespace corral::names {

namespace {

constexpr std::string_view kImagePrefix = "image:";

bool is_image_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

}  // namespace

bool is_image_name(std::string_view n) {
    if (n.empty() || n.size() > 128) return false;
    if (n[0] == '.' || n[0] == '_' || n[0] == '-') return false;
    return std::all_of(n.begin(), n.end(), is_image_name_char);
}

RootfsParse parse_rootfs_source(std::string_view text, const std::string& relative_to) {
    if (text.empty()) return RootfsProblem::empty;
    if (text == "host") return HostRootfs{};
    if (text.starts_with(kImagePrefix)) {
        const std::string_view name = text.substr(kImagePrefix.size());
        if (!is_image_name(name)) return RootfsProblem::bad_image_name;
        return ImageRootfs{std::string(name)};
    }
    std::filesystem::path p(text);
    if (!p.is_absolute()) p = std::filesystem::path(relative_to) / p;
    return DirRootfs{p.lexically_normal().string(), std::string(text)};
}

std::string to_string(const RootfsSource& source) {
    if (std::holds_alternative<HostRootfs>(source)) return "host";
    if (const auto* d = std::get_if<DirRootfs>(&source)) return d->path;
    return std::string(kImagePrefix) + std::get<ImageRootfs>(source).name;
}

std::string text_as_given(const RootfsSource& source) {
    if (const auto* d = std::get_if<DirRootfs>(&source)) return d->given;
    return to_string(source);
}

}  // namespace corral::names
