#include "gateway/headers.hpp"
