// base/atomic_file.cpp — temporary file, write, sync as asked, rename, sync the directory as asked.
#include "base/atomic_file.hpp"

#include "base/fd.hpp"
#include "base/sys_error.hpp"

#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace corral {

namespace {

// Removes the temporary file unless the rename consumed it.
struct TempName {
    std::string path;
    bool renamed = false;
    ~TempName() {
        if (!renamed && !path.empty()) ::unlink(path.c_str());
    }
};

void sync_directory(const std::string& dir) {
    Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!d.valid()) throw SysError("open", dir, errno);
    check_sys(::fsync(d.get()), "fsync", dir);
}

}  // namespace

AtomicFileWrite atomic_target(const std::string& path, mode_t mode, Durability durability) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return {".", path, mode, durability};
    return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1), mode, durability};
}

void write_file_atomically(const AtomicFileWrite& target, std::string_view content) {
    const std::string final_path = target.dir + "/" + target.name;
    TempName tmp{target.dir + "/." + target.name + ".XXXXXX"};
    // mkostemp creates with O_EXCL: a name planted in the directory (a
    // symlink, a file of someone else's) is never opened, only skipped.
    Fd fd(::mkostemp(tmp.path.data(), O_CLOEXEC));
    if (!fd.valid()) {
        const int err = errno;
        tmp.path.clear();
        throw SysError("mkostemp", target.dir + "/." + target.name + ".XXXXXX", err);
    }
    check_sys(::fchmod(fd.get(), target.mode), "fchmod", tmp.path);  // the umask must not change it
    write_all(fd.get(), content.data(), content.size(), tmp.path);
    if (target.durability != Durability::visible) check_sys(::fdatasync(fd.get()), "fdatasync", tmp.path);
    fd.reset();
    check_sys(::rename(tmp.path.c_str(), final_path.c_str()), "rename", tmp.path + " -> " + final_path);
    tmp.renamed = true;
    if (target.durability == Durability::durable) sync_directory(target.dir);
}

}  // namespace corral
