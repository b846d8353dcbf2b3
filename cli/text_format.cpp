#include "text_format.hpp"

#include <cstdio>

namespace sieve_cli {

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string pad(const std::string& s, size_t width, bool right) {
    if (s.size() >= width) return s + " ";
    return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

} // namespace sieve_cli
