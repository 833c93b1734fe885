// One doctest main per sandbox test executable; SBT_UID_RANGE (set per
// executable in meson.build) keeps their runs' UIDs apart when meson runs
// the executables in parallel.
#include <doctest/doctest.h>

#include "tests/supervisor/sandbox/sandbox_support.hpp"

int main(int argc, char** argv) { return corral::test::sandbox::run_suite(argc, argv, SBT_UID_RANGE); }
