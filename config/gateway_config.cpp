#include "config/gateway_config.hpp"
