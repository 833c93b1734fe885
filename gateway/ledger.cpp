#include "gateway/ledger.hpp"
