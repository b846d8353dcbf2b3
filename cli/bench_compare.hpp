// `sieve bench --compare A.json B.json`: per-case ratio B/A of the median
// latency of two runs, matched by case name.
#pragma once

#include <ostream>
#include <string>

namespace sieve_cli {

// Prints the comparison (a table, or one JSON document when `json`) of the
// cases whose name contains `filter` (all when empty). Returns the exit
// status; throws CliError (bad input) for unreadable or malformed files and
// when the two runs have no case name in common.
int run_compare(const std::string& a_path, const std::string& b_path, const std::string& filter, bool json,
                std::ostream& out);

} // namespace sieve_cli
