#include "gateway/host.hpp"
