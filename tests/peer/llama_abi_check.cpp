// Compiled by LlamaAbi.MirrorMatchesTheFetchedHeaders (test_bench_peer.cpp)
// against the fetched llama.cpp's own include/llama.h: every type and function
// signature of cli/llama_abi.hpp must be llama.h's. Not part of any
// target: the build needs no llama.cpp.
#include <llama.h>

#include "llama_abi.hpp"

#include <cstddef>
#include <type_traits>
#include <vector>

namespace abi = sieve_cli::llama_abi;

#define SAME_LAYOUT(T, ...)                                                                  \
    static_assert(sizeof(::T) == sizeof(abi::T) && alignof(::T) == alignof(abi::T), #T);     \
    __VA_ARGS__
#define SAME_FIELD(T, f) \
    static_assert(offsetof(::T, f) == offsetof(abi::T, f) && sizeof(::T::f) == sizeof(abi::T::f), #T "." #f);

SAME_LAYOUT(llama_token_data, SAME_FIELD(llama_token_data, id) SAME_FIELD(llama_token_data, logit)
                                  SAME_FIELD(llama_token_data, p))
SAME_LAYOUT(llama_token_data_array, SAME_FIELD(llama_token_data_array, data) SAME_FIELD(llama_token_data_array, size)
                                        SAME_FIELD(llama_token_data_array, selected)
                                            SAME_FIELD(llama_token_data_array, sorted))
SAME_LAYOUT(llama_logit_bias, SAME_FIELD(llama_logit_bias, token) SAME_FIELD(llama_logit_bias, bias))
SAME_LAYOUT(llama_sampler_chain_params, SAME_FIELD(llama_sampler_chain_params, no_perf))
static_assert(std::is_same_v<::llama_token, abi::llama_token>);
static_assert(sizeof(ggml_log_level) == sizeof(int));

// llama.h's function types with its types replaced by the mirror's.
template <class T> struct Mirror { using type = T; };
template <> struct Mirror<::llama_sampler*> { using type = abi::llama_sampler*; };
template <> struct Mirror<::llama_token_data_array*> { using type = abi::llama_token_data_array*; };
template <> struct Mirror<const ::llama_logit_bias*> { using type = const abi::llama_logit_bias*; };
template <> struct Mirror<::llama_sampler_chain_params> { using type = abi::llama_sampler_chain_params; };
template <> struct Mirror<const ::llama_vocab*> { using type = const void*; };
template <> struct Mirror<ggml_log_level> { using type = int; };
template <class R, class... A> struct Mirror<R (*)(A...)> {
    using type = typename Mirror<R>::type (*)(typename Mirror<A>::type...);
};
#define SAME_FN(fn, abi_type) static_assert(std::is_same_v<Mirror<decltype(&::fn)>::type, abi::abi_type>, #fn);

SAME_FN(llama_version, fn_version)
SAME_FN(llama_print_system_info, fn_print_system_info)
SAME_FN(llama_log_set, fn_log_set)
SAME_FN(llama_sampler_chain_default_params, fn_chain_default_params)
SAME_FN(llama_sampler_chain_init, fn_chain_init)
SAME_FN(llama_sampler_chain_add, fn_chain_add)
SAME_FN(llama_sampler_apply, fn_apply)
SAME_FN(llama_sampler_accept, fn_accept)
SAME_FN(llama_sampler_free, fn_free)
SAME_FN(llama_sampler_init_greedy, fn_init_greedy)
SAME_FN(llama_sampler_init_dist, fn_init_dist)
SAME_FN(llama_sampler_init_top_k, fn_init_top_k)
SAME_FN(llama_sampler_init_top_p, fn_init_p_keep)
SAME_FN(llama_sampler_init_min_p, fn_init_p_keep)
SAME_FN(llama_sampler_init_typical, fn_init_p_keep)
SAME_FN(llama_sampler_init_temp_ext, fn_init_temp_ext)
SAME_FN(llama_sampler_init_xtc, fn_init_xtc)
SAME_FN(llama_sampler_init_top_n_sigma, fn_init_top_n_sigma)
SAME_FN(llama_sampler_init_mirostat, fn_init_mirostat)
SAME_FN(llama_sampler_init_mirostat_v2, fn_init_mirostat_v2)
SAME_FN(llama_sampler_init_penalties, fn_init_penalties)
SAME_FN(llama_sampler_init_dry, fn_init_dry)
SAME_FN(llama_sampler_init_adaptive_p, fn_init_adaptive_p)
SAME_FN(llama_sampler_init_logit_bias, fn_init_logit_bias)

// The C++ entry point the peer finds by its mangled name (kDryTestingSymbol),
// as src/llama-sampler.cpp defines it: the test checks that the object file's
// reference to it has that name.
struct llama_sampler* llama_sampler_init_dry_testing(float, float, int32_t, int32_t,
                                                     const std::vector<std::vector<llama_token>>&);
void* dry_testing_reference() { return reinterpret_cast<void*>(&llama_sampler_init_dry_testing); }
