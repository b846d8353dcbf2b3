// The sampler chain a run builds, by name, as llama.cpp's common_sampler_init
// builds it from --samplers / --sampling-seq / --mirostat (docs/contracts.md,
// "The CLI").
#pragma once

#include <string>
#include <vector>

namespace sieve_cli {

// llama.cpp's default --samplers (common_params_sampling::samplers), the
// library's default chain.
extern const char* const kLlamaDefaultSamplers;

// --sampling-seq letters as llama.cpp reads them (common_sampler_types_from_chars):
// d dry, e penalties, k top_k, y typ_p, p top_p, s top_n_sigma, m min_p,
// t temperature, x xtc, i infill, a adaptive_p. Throws CliError (usage) for an
// empty sequence or a letter outside that map, which llama.cpp skips with a warning.
std::string samplers_from_letters(const std::string& letters);

// The names of a --samplers text (split on ';' or ','), as written, empty ones left out.
std::vector<std::string> split_sampler_names(const std::string& text);

// A name's canonical form ("top-k" -> "top_k", "temp" -> "temperature");
// an unknown name as written (the library refuses it).
std::string canonical_sampler_name(const std::string& name);

// --samplers as common_sampler_init runs it: adaptive_p, wherever it is named,
// becomes the chain's final sampler (in place of dist). Names as written.
std::string samplers_in_run_order(const std::string& text);

// The canonical names of the chain that runs for a --samplers text ("" =
// llama.cpp's default), the final dist included when the chain names no
// selecting sampler (greedy, dist, mirostat, mirostat_v2, adaptive_p).
std::vector<std::string> chain_that_runs(const std::string& samplers);

// True when a sampler of the chain reads the slot's token history (penalties, dry).
bool reads_history(const std::vector<std::string>& chain);

std::string join_names(const std::vector<std::string>& names);

} // namespace sieve_cli
