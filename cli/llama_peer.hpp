// `sieve bench --peer llama[=PATH]`: the real llama.cpp, loaded at run time
// (dlopen; neither libsieve nor the CLI links it), timed on the same chain,
// parameters and logits as Sieve: what a llama.cpp app pays per token (fill
// its candidate array from the row, llama_sampler_apply with the chain and its
// final dist, llama_sampler_accept), one chain per row as a server keeps one
// per slot.
#pragma once

#include "llama_abi.hpp"
#include "options.hpp"

#include <sieve/sieve.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sieve_cli {

// The libllama the build fetched (scripts/fetch_llama.sh), baked in at
// configure time; "" when the build knows none.
std::string default_llama_library();

// "llama" or "llama=PATH" (an empty PATH is the default). Throws CliError
// (bad input) for another peer name.
struct PeerSpec {
    std::string name;
    std::string path;
};
PeerSpec parse_peer(const std::string& text);

// A loaded libllama: every function the peer calls, resolved. The library stays
// loaded as long as this lives.
class LlamaLibrary {
public:
    // Throws CliError (bad input) naming what is wrong: a file that cannot be
    // loaded, a library that is no libllama (no llama_version), a version other
    // than the mirrored ABI's, a needed function missing, or a library whose
    // greedy sampler does not pick the largest logit (an ABI mismatch).
    static std::unique_ptr<LlamaLibrary> open(const std::string& path);
    ~LlamaLibrary();
    LlamaLibrary(const LlamaLibrary&) = delete;
    LlamaLibrary& operator=(const LlamaLibrary&) = delete;

    std::string path;
    std::string version;      // llama_version()
    std::string system_info;  // llama_print_system_info()
    bool has_dry_breakers = false;  // llama_sampler_init_dry_testing is there

    struct Api {
        llama_abi::fn_version version;
        llama_abi::fn_print_system_info print_system_info;
        llama_abi::fn_log_set log_set;
        llama_abi::fn_chain_default_params chain_default_params;
        llama_abi::fn_chain_init chain_init;
        llama_abi::fn_chain_add chain_add;
        llama_abi::fn_apply apply;
        llama_abi::fn_accept accept;
        llama_abi::fn_free free;
        llama_abi::fn_init_greedy init_greedy;
        llama_abi::fn_init_dist init_dist;
        llama_abi::fn_init_top_k init_top_k;
        llama_abi::fn_init_p_keep init_top_p;
        llama_abi::fn_init_p_keep init_min_p;
        llama_abi::fn_init_p_keep init_typical;
        llama_abi::fn_init_temp_ext init_temp_ext;
        llama_abi::fn_init_xtc init_xtc;
        llama_abi::fn_init_top_n_sigma init_top_n_sigma;
        llama_abi::fn_init_mirostat init_mirostat;
        llama_abi::fn_init_mirostat_v2 init_mirostat_v2;
        llama_abi::fn_init_penalties init_penalties;
        llama_abi::fn_init_dry init_dry;
        llama_abi::fn_init_adaptive_p init_adaptive_p;
        llama_abi::fn_init_logit_bias init_logit_bias;
    } api{};
    void* dry_testing = nullptr;  // see llama_abi::kDryTestingSymbol

private:
    LlamaLibrary() = default;
    void* handle_ = nullptr;
};

// The chain of one case on llama.cpp, one per row.
class PeerChains {
public:
    // Builds rows chains from `chain`'s own parameters (row 0: the bench sets
    // every row alike), the run's sampler list and logit biases, and the DRY
    // breakers in force. Returns null and sets *why when llama.cpp cannot run
    // that chain.
    static std::unique_ptr<PeerChains> build(const LlamaLibrary& lib, const sieve::Chain& chain,
                                             const SamplingOptions& o, int32_t rows, int32_t vocab,
                                             const std::vector<std::vector<int32_t>>& breakers, std::string* why);
    ~PeerChains();
    PeerChains(const PeerChains&) = delete;
    PeerChains& operator=(const PeerChains&) = delete;

    // Accepts tokens into every row's chain (a history case's prefix).
    void accept(int32_t row, const std::vector<int32_t>& tokens);
    // One token for every row: fill, apply, accept. Throws CliError (bad input)
    // when llama.cpp selects no token.
    void token(const float* logits);

private:
    PeerChains(const LlamaLibrary& lib, int32_t vocab) : lib_(lib), vocab_(vocab) {}
    const LlamaLibrary& lib_;
    int32_t vocab_;
    std::vector<llama_abi::llama_sampler*> chains_;
    std::vector<llama_abi::llama_token_data> cur_;
};

// The sampler names of `o`'s chain in llama.cpp's canonical spelling, the final
// sampler appended as common_sampler_init does ("dist" unless the chain ends
// with greedy, mirostat, mirostat_v2 or adaptive_p).
std::vector<std::string> peer_sampler_names(const SamplingOptions& o);

} // namespace sieve_cli
