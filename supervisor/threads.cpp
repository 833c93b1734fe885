#include "supervisor/threads.hpp"

#include <dirent.h>

#include <chrono>
#include <system_error>

namespace corral::supervisor {

std::size_t count_threads() {
    std::size_t n = 0;
    if (DIR* d = opendir("/proc/self/task")) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') ++n;
        closedir(d);
    }
    return n;
}

std::size_t count_threads_after_joins() {
    std::size_t n = count_threads();
    for (int i = 0; i < 1000 && n > 1; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        n = count_threads();
    }
    return n;
}

std::thread start_beside(const std::function<void()>& work) {
    try {
        return std::thread(work);
    } catch (const std::system_error&) {
        work();
        return std::thread();
    }
}

}  // namespace corral::supervisor
