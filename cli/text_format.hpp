// Number and column formatting shared by the CLI's tables and report.
#pragma once

#include <cstddef>
#include <string>

namespace sieve_cli {

// v with `decimals` digits after the point ("%.*f").
std::string fixed(double v, int decimals);

// s padded to `width` (right-aligned when `right`); a value as wide as the
// column or wider gets one space after it, so columns never run together.
std::string pad(const std::string& s, size_t width, bool right);

} // namespace sieve_cli
