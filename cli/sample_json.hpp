// What every `sieve sample --json` document starts with: the device, the
// chain, the seed and the history samplers' parameters; shared by the per-row
// output and the --draft (verification) output.
#pragma once

#include "json_output.hpp"
#include "options.hpp"

#include <sieve/sieve.hpp>

namespace sieve_cli {

// The parameters of the samplers that read the history, as the chain holds
// them (row 0; every row has the same): the library's defaults where no flag
// set them. llama.cpp's flag names, '_' for '-'.
Json history_params_json(const sieve::Chain& chain, const SamplingOptions& o, const ChainSetup& setup);

// device, backend, samplers, temp, seed (when not null), the history
// parameters and vocab.
Json sample_json_header(const Device& device, const sieve::Chain& chain, const SamplingOptions& o,
                        const ChainSetup& setup, const Json& seed, int32_t vocab);

} // namespace sieve_cli
