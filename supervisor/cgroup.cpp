#include "supervisor/cgroup.hpp"
