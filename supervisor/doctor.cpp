#include "supervisor/doctor.hpp"
