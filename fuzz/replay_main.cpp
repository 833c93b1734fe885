// A main for the fuzz targets in builds without libFuzzer (g++, the normal and
// the sanitizer builds): runs the target once on every file of the corpus
// directories given, so each corpus (the seeds and every input that once
// crashed) is a regression test of the unit suite. Exit 0 when all ran;
// a crash or abort in the target fails the test like any other.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    std::size_t ran = 0;
    for (int i = 1; i < argc; ++i) {
        std::vector<fs::path> files;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(argv[i], ec))
            if (e.is_regular_file()) files.push_back(e.path());
        if (ec || files.empty()) {
            std::fprintf(stderr, "%s: no corpus files (%s)\n", argv[i], ec ? ec.message().c_str() : "empty directory");
            return 1;
        }
        for (const auto& f : files) {
            std::ifstream in(f, std::ios::binary);
            std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            if (!in && !in.eof()) {
                std::fprintf(stderr, "%s: cannot read\n", f.c_str());
                return 1;
            }
            LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
            ++ran;
        }
    }
    std::printf("ran %zu corpus inputs\n", ran);
    return 0;
}
