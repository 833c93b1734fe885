#include "supervisor/run_record.hpp"
