// The whole `sieve` command line, callable in-process (main.cpp is a thin shell).
#pragma once

#include <ostream>

namespace sieve_cli {

// Parses argv, runs the subcommand and returns the exit status (0, 2, 3 or 4).
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

} // namespace sieve_cli
