#include "gateway/grants.hpp"
