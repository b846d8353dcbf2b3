// TEMPORARY until the twin's dry.cpp lands (delete at merge).
#include "reference/reference.hpp"
#include <cmath>
namespace sieve::ref {
int32_t dry_max_exponent(float base) {
    const float FLOAT_MAX_LOG = 88.7228391f;
    int max_exponent = 0;
    if (base > 1.000001f) max_exponent = static_cast<int>(FLOAT_MAX_LOG / std::log(base));
    return max_exponent;
}
}
