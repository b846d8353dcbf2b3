// What every `sieve sample` output starts with: the device, the chain that
// ran, every sampling parameter as the chain holds it and the seed; shared by
// the per-row output and the --draft (verification) output, JSON and text.
#pragma once

#include "json_output.hpp"
#include "options.hpp"

#include <sieve/sieve.hpp>

#include <string>
#include <vector>

namespace sieve_cli {

// Every sampling parameter as the chain holds it (row 0; every row has the
// same): the library's defaults where no flag set them. llama.cpp's flag
// names, '_' for '-' (temp, top_k, ..., typical, dynatemp_exp, repeat_last_n,
// mirostat_lr, ...), the logit bias, the DRY breakers and the history.
Json chain_params_json(const sieve::Chain& chain, const SamplingOptions& o, const ChainSetup& setup);

// device, backend, samplers (the chain that ran), the parameters, seed (when
// not null; each row carries its own) and vocab.
Json sample_json_header(const Device& device, const sieve::Chain& chain, const SamplingOptions& o,
                        const ChainSetup& setup, const Json& seed, int32_t vocab);

// Every row's seed, as the chain holds it (a random one is drawn per row).
std::vector<uint32_t> row_seeds(const sieve::Chain& chain, int32_t rows);

// The text header's lines: "samplers: ..." and the parameters of the samplers
// in the chain, with the seed ("seed N", or "seed per row").
std::string sample_text_header(const sieve::Chain& chain, const SamplingOptions& o, const ChainSetup& setup,
                               const std::vector<uint32_t>& seeds);

} // namespace sieve_cli
