#include "supervisor/uid_lease.hpp"
