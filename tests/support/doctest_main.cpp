// doctest's implementation and its standard main(), compiled once for every
// test executable that needs nothing before its cases run (doctest_main_dep).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
