#include "supervisor/stale_cleanup.hpp"
