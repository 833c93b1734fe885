#include "supervisor/sweep.hpp"
