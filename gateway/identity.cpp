#include "gateway/identity.hpp"
