#include "image/libarchive.hpp"

#include <dlfcn.h>

#include <string>

#include "base/sys_error.hpp"

namespace corral::image {

namespace {

constexpr const char* kLibrary = "libarchive.so.13";

std::string dl_problem() {
    const char* e = dlerror();
    return e != nullptr ? e : "unknown reason";
}

Libarchive load() {
    // RTLD_LOCAL: its symbols serve these pointers only. Never closed: the
    // pointers live as long as the process.
    void* handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr)
        throw UsageError(std::string("reading archives needs libarchive (Debian: apt-get install libarchive13): dlopen(") +
                         kLibrary + "): " + dl_problem());
    Libarchive la;
#define CORRAL_LIBARCHIVE_RESOLVE(name)                                                                          \
    la.name = reinterpret_cast<decltype(la.name)>(dlsym(handle, #name));                                         \
    if (la.name == nullptr)                                                                                      \
        throw UsageError(std::string(kLibrary) + " has no " #name " (a libarchive older than 3.x?): " + dl_problem());
    CORRAL_LIBARCHIVE_FUNCTIONS(CORRAL_LIBARCHIVE_RESOLVE)
#undef CORRAL_LIBARCHIVE_RESOLVE
    return la;
}

}  // namespace

const Libarchive& libarchive() {
    static const Libarchive la = load();
    return la;
}

}  // namespace corral::image
