// doctest's implementation, compiled once for every test executable that
// brings its own main() (a SKIP check, a network namespace, a UID slice):
// they link doctest_impl_dep and run doctest::Context themselves.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
