// `sieve`: devices, sample, bench. See docs/contracts.md, "The CLI".
#include "cli.hpp"

#include <iostream>

int main(int argc, char** argv) {
    return sieve_cli::run_cli(argc, argv, std::cout, std::cerr);
}
