/* A shared library that looks like a libllama but lacks one function the
 * bench's peer needs (llama_sampler_init_top_n_sigma): `sieve bench --peer
 * llama=THIS` must refuse it, naming that function (tests/microbench/test_bench_peer.cpp).
 * The functions are never called: the peer checks every symbol first. */
#define FAKE(name) \
    void name(void); \
    void name(void) {}
FAKE(llama_version)
FAKE(llama_print_system_info)
FAKE(llama_log_set)
FAKE(llama_sampler_chain_default_params)
FAKE(llama_sampler_chain_init)
FAKE(llama_sampler_chain_add)
FAKE(llama_sampler_apply)
FAKE(llama_sampler_accept)
FAKE(llama_sampler_free)
FAKE(llama_sampler_init_greedy)
FAKE(llama_sampler_init_dist)
FAKE(llama_sampler_init_top_k)
FAKE(llama_sampler_init_top_p)
FAKE(llama_sampler_init_min_p)
FAKE(llama_sampler_init_typical)
FAKE(llama_sampler_init_temp_ext)
FAKE(llama_sampler_init_xtc)
FAKE(llama_sampler_init_mirostat)
FAKE(llama_sampler_init_mirostat_v2)
FAKE(llama_sampler_init_penalties)
FAKE(llama_sampler_init_dry)
FAKE(llama_sampler_init_adaptive_p)
FAKE(llama_sampler_init_logit_bias)
