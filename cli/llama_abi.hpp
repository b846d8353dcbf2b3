// The few types and functions of llama.cpp's C API that `sieve bench --peer
// llama` calls, mirrored from include/llama.h of llama.cpp release v0.4.0
// (llama_version() "0.4.0-dev"; node-llama-cpp@3.21.1's bundle). Mirrored, not
// included: the CLI builds without llama.cpp and loads libllama at run time
// (dlopen), so only these declarations tie it to that ABI.
// tests/llama_abi_check.cpp compiles this file next to the real llama.h and
// checks every layout and signature (LlamaAbi.MirrorMatchesTheFetchedHeaders).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sieve_cli::llama_abi {

constexpr const char* kVersionPrefix = "0.4.";  // llama_version() of the releases this mirror fits

using llama_token = int32_t;

struct llama_token_data {
    llama_token id;
    float logit;
    float p;
};

struct llama_token_data_array {
    llama_token_data* data;
    size_t size;
    int64_t selected;  // an index into data, set by the chain's final sampler
    bool sorted;
};

struct llama_logit_bias {
    llama_token token;
    float bias;
};

struct llama_sampler_chain_params {
    bool no_perf;
};

struct llama_sampler;  // opaque

// ggml_log_callback; the level is an enum ggml_log_level (int-sized).
using log_callback = void (*)(int level, const char* text, void* user_data);

// The functions, by the name dlsym looks up.
using fn_version = const char* (*)();
using fn_print_system_info = const char* (*)();
using fn_log_set = void (*)(log_callback, void*);
using fn_chain_default_params = llama_sampler_chain_params (*)();
using fn_chain_init = llama_sampler* (*)(llama_sampler_chain_params);
using fn_chain_add = void (*)(llama_sampler*, llama_sampler*);
using fn_apply = void (*)(llama_sampler*, llama_token_data_array*);
using fn_accept = void (*)(llama_sampler*, llama_token);
using fn_free = void (*)(llama_sampler*);
using fn_init_greedy = llama_sampler* (*)();
using fn_init_dist = llama_sampler* (*)(uint32_t seed);
using fn_init_top_k = llama_sampler* (*)(int32_t k);
using fn_init_p_keep = llama_sampler* (*)(float p, size_t min_keep);  // top_p, min_p, typical
using fn_init_temp_ext = llama_sampler* (*)(float t, float delta, float exponent);
using fn_init_xtc = llama_sampler* (*)(float p, float t, size_t min_keep, uint32_t seed);
using fn_init_top_n_sigma = llama_sampler* (*)(float n);
using fn_init_mirostat = llama_sampler* (*)(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m);
using fn_init_mirostat_v2 = llama_sampler* (*)(uint32_t seed, float tau, float eta);
using fn_init_penalties = llama_sampler* (*)(int32_t n_vocab, int32_t last_n, float repeat, float freq, float present);
// llama_sampler_init_dry(const llama_vocab*, ...): the vocabulary is read only
// to tokenize string breakers; without breakers it may be NULL.
using fn_init_dry = llama_sampler* (*)(const void* vocab, float multiplier, float base, int32_t allowed_length,
                                       int32_t penalty_last_n, const char** breakers, size_t n_breakers);
using fn_init_adaptive_p = llama_sampler* (*)(float target, float decay, uint32_t seed);
using fn_init_logit_bias = llama_sampler* (*)(int32_t n_vocab, int32_t n_logit_bias, const llama_logit_bias* bias);

// DRY with token-id breakers, as Sieve takes them, has no C entry point: the
// library exports llama_sampler_init_dry_testing (C++, for its test-sampling),
// which takes const std::vector<std::vector<llama_token>>&. Looked up by its
// Itanium-mangled name; optional (without it, chains with DRY breakers are n/a).
constexpr const char* kDryTestingSymbol = "_Z30llama_sampler_init_dry_testingffiiRKSt6vectorIS_IiSaIiEESaIS1_EE";

} // namespace sieve_cli::llama_abi
