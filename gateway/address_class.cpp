#include "gateway/address_class.hpp"
