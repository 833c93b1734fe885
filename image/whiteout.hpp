// image/whiteout.hpp — OCI whiteouts in overlayfs's own form.
//
// An OCI layer deletes a lower layer's NAME with an empty file `.wh.NAME`
// beside it, and hides everything a directory had below with
// `DIR/.wh..wh..opq`. overlayfs reads neither: in a lower layer it takes a
// character device 0/0 named NAME as a deletion and a directory carrying the
// xattr trusted.overlay.opaque="y" as opaque. The extractor turns each marker
// into that form as it writes the layer, so the layers are mounted as they
// are, with no flattening at run time.
#pragma once

#include <string>
#include <string_view>

namespace corral::image {

inline constexpr std::string_view kWhiteoutPrefix = ".wh.";
inline constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";
inline constexpr const char* kOpaqueXattr = "trusted.overlay.opaque";

enum class WhiteoutKind { none, deletion, opaque };

struct Whiteout {
    WhiteoutKind kind = WhiteoutKind::none;
    std::string name;  // deletion: the name it deletes (".wh.foo" -> "foo")
};

// What the last component of an entry's name means. Throws ImageError for a
// marker that names nothing (".wh.", ".wh..", ".wh..."), or another
// `.wh..wh.` name (reserved by the OCI spec).
Whiteout classify_whiteout(std::string_view name);

// In the directory `dir_fd` of a layer being written, as root:
// a 0/0 character device named `name` (the caller has emptied the name).
// Throws SysError naming the call and `where`.
void make_deletion(int dir_fd, const std::string& name, const std::string& where);
// trusted.overlay.opaque = "y" on the directory `dir_fd`.
void make_opaque(int dir_fd, const std::string& where);

}  // namespace corral::image
