// `sieve bench --compare A.json B.json`: per-case ratio B/A of the median
// latency of two runs, matched by case name, with what differs between the
// runs (device, backend, profile, settings) and the warnings each run carried.
#pragma once

#include "json_output.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace sieve_cli {

struct Comparison {
    Json doc;                           // the --json document
    std::vector<std::string> warnings;  // the runs' own ("A: ...", "B: ...") and one for their differences
};

// Compares the cases whose name contains `filter` (all when empty). Throws
// CliError (bad input) for unreadable or malformed files and when the two
// runs have no case name in common.
Comparison compare_runs(const std::string& a_path, const std::string& b_path, const std::string& filter);

// The comparison as a table, the differences and the warnings included.
void print_comparison(std::ostream& out, const Comparison& c);

} // namespace sieve_cli
