// The history samplers' parameters in `sieve sample --json`: shared by the
// per-row output and the --draft (verification) output.
#pragma once

#include "json_output.hpp"
#include "options.hpp"

#include <sieve/sieve.hpp>

namespace sieve_cli {

// The parameters of the samplers that read the history, as the chain holds
// them (row 0; every row has the same): the library's defaults where no flag
// set them. llama.cpp's flag names, '_' for '-'.
Json history_params_json(const sieve::Chain& chain, const SamplingOptions& o, const ChainSetup& setup);

} // namespace sieve_cli
