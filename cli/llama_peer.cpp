#include "llama_peer.hpp"

#include "exit_codes.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace sieve_cli {
namespace {

using namespace llama_abi;

constexpr const char* kDefaultOrder[] = {"penalties", "dry", "top_n_sigma", "top_k", "typ_p",
                                         "top_p",     "min_p", "xtc",       "temperature"};

// llama.cpp's names and the aliases its --samplers accepts (docs/semantics.md).
const std::map<std::string, std::string>& canonical_names() {
    static const std::map<std::string, std::string> names = {
        {"penalties", "penalties"},     {"dry", "dry"},
        {"top_n_sigma", "top_n_sigma"}, {"top-n-sigma", "top_n_sigma"},
        {"top_k", "top_k"},             {"top-k", "top_k"},
        {"typ_p", "typ_p"},             {"typical_p", "typ_p"},
        {"typical-p", "typ_p"},         {"typ-p", "typ_p"},
        {"typical", "typ_p"},           {"typ", "typ_p"},
        {"top_p", "top_p"},             {"top-p", "top_p"},
        {"nucleus", "top_p"},           {"min_p", "min_p"},
        {"min-p", "min_p"},             {"xtc", "xtc"},
        {"temperature", "temperature"}, {"temp", "temperature"},
        {"infill", "infill"},           {"adaptive_p", "adaptive_p"},
        {"adaptive-p", "adaptive_p"},   {"greedy", "greedy"},
        {"dist", "dist"},               {"mirostat", "mirostat"},
        {"mirostat_v2", "mirostat_v2"}, {"mirostat-v2", "mirostat_v2"},
    };
    return names;
}

bool is_final(const std::string& name) {
    return name == "dist" || name == "greedy" || name == "mirostat" || name == "mirostat_v2" || name == "adaptive_p";
}

// The shared llama.cpp log sink: quiet (the bench's output is its own).
void quiet_log(int, const char*, void*) {}

} // namespace

std::string default_llama_library() {
#ifdef SIEVE_LLAMA_DEFAULT_LIB
    return SIEVE_LLAMA_DEFAULT_LIB;
#else
    return "";
#endif
}

PeerSpec parse_peer(const std::string& text) {
    const size_t eq = text.find('=');
    PeerSpec p{text.substr(0, eq), eq == std::string::npos ? "" : text.substr(eq + 1)};
    if (p.name != "llama")
        throw CliError(kExitUsage, "--peer '" + text + "': unknown peer '" + p.name + "' (peers: llama, llama=PATH)");
    if (p.path.empty()) {
        p.path = default_llama_library();
        if (p.path.empty())
            throw CliError(kExitBadInput, "--peer llama: this build knows no libllama; give one with --peer llama=PATH");
    }
    return p;
}

std::unique_ptr<LlamaLibrary> LlamaLibrary::open(const std::string& path) {
    std::unique_ptr<LlamaLibrary> lib(new LlamaLibrary());
    lib->path = path;
    const std::string what = "--peer llama=" + path;
    lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle_) {
        const char* e = dlerror();
        throw CliError(kExitBadInput, what + ": cannot load it as a shared library: " + (e ? e : "unknown error") +
                                          (path == default_llama_library() ? " (scripts/fetch_llama.sh fetches it)" : ""));
    }
    auto sym = [&](const char* name) { return dlsym(lib->handle_, name); };
    if (!sym("llama_version") || !sym("llama_sampler_chain_init"))
        throw CliError(kExitBadInput, what + ": not a libllama (it has no llama_version or llama_sampler_chain_init)");
    Api& a = lib->api;
    std::string missing;
    auto need = [&](auto& fn, const char* name) {
        void* p = sym(name);
        if (!p) missing += (missing.empty() ? "" : ", ") + std::string(name);
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    need(a.version, "llama_version");
    need(a.print_system_info, "llama_print_system_info");
    need(a.log_set, "llama_log_set");
    need(a.chain_default_params, "llama_sampler_chain_default_params");
    need(a.chain_init, "llama_sampler_chain_init");
    need(a.chain_add, "llama_sampler_chain_add");
    need(a.apply, "llama_sampler_apply");
    need(a.accept, "llama_sampler_accept");
    need(a.free, "llama_sampler_free");
    need(a.init_greedy, "llama_sampler_init_greedy");
    need(a.init_dist, "llama_sampler_init_dist");
    need(a.init_top_k, "llama_sampler_init_top_k");
    need(a.init_top_p, "llama_sampler_init_top_p");
    need(a.init_min_p, "llama_sampler_init_min_p");
    need(a.init_typical, "llama_sampler_init_typical");
    need(a.init_temp_ext, "llama_sampler_init_temp_ext");
    need(a.init_xtc, "llama_sampler_init_xtc");
    need(a.init_top_n_sigma, "llama_sampler_init_top_n_sigma");
    need(a.init_mirostat, "llama_sampler_init_mirostat");
    need(a.init_mirostat_v2, "llama_sampler_init_mirostat_v2");
    need(a.init_penalties, "llama_sampler_init_penalties");
    need(a.init_dry, "llama_sampler_init_dry");
    need(a.init_adaptive_p, "llama_sampler_init_adaptive_p");
    need(a.init_logit_bias, "llama_sampler_init_logit_bias");
    if (!missing.empty())
        throw CliError(kExitBadInput, what + ": this libllama lacks " + missing +
                                          " (the peer needs llama.cpp's sampler API of release v0.4.0)");
    const char* v = a.version();
    lib->version = v ? v : "";
    if (lib->version.rfind(kVersionPrefix, 0) != 0)
        throw CliError(kExitBadInput, what + ": llama.cpp version '" + lib->version + "'; the peer's ABI mirror is " +
                                          "llama.cpp v0.4.0's (llama_version " + kVersionPrefix + "x)");
    a.log_set(quiet_log, nullptr);
    const char* info = a.print_system_info();
    lib->system_info = info ? info : "";
    lib->dry_testing = sym(kDryTestingSymbol);
    lib->has_dry_breakers = lib->dry_testing != nullptr;

    // The layouts in use: greedy must select the largest of three logits.
    llama_token_data d[3] = {{0, 0.5f, 0.0f}, {1, 2.0f, 0.0f}, {2, -1.0f, 0.0f}};
    llama_token_data_array arr{d, 3, -1, false};
    llama_sampler* g = a.init_greedy();
    if (g) a.apply(g, &arr);
    const bool ok = g && arr.selected >= 0 && arr.selected < 3 && d[arr.selected].id == 1;
    if (g) a.free(g);
    if (!ok)
        throw CliError(kExitBadInput, what + ": its greedy sampler does not pick the largest logit: its ABI is not "
                                             "llama.cpp v0.4.0's");
    return lib;
}

LlamaLibrary::~LlamaLibrary() {
    // Not unloaded (dlclose): a C++ library's static objects and exit handlers
    // may still refer to its code; one library per run lives until the exit.
}

std::vector<std::string> peer_sampler_names(const SamplingOptions& o) {
    std::vector<std::string> names;
    const std::string text = effective_samplers(o);
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = text.find_first_of(";,", start);
        std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
        const size_t a = item.find_first_not_of(" \t\n\r"), b = item.find_last_not_of(" \t\n\r");
        if (a != std::string::npos) {
            item = item.substr(a, b - a + 1);
            auto it = canonical_names().find(item);
            names.push_back(it == canonical_names().end() ? item : it->second);
        }
        if (end == std::string::npos) break;
        start = end + 1;
    }
    if (names.empty()) names.assign(std::begin(kDefaultOrder), std::end(kDefaultOrder));
    if (!is_final(names.back())) names.push_back("dist");
    return names;
}

std::unique_ptr<PeerChains> PeerChains::build(const LlamaLibrary& lib, const sieve::Chain& chain,
                                              const SamplingOptions& o, int32_t rows, int32_t vocab,
                                              const std::vector<std::vector<int32_t>>& breakers, std::string* why) {
    const LlamaLibrary::Api& a = lib.api;
    auto param = [&](sieve_param p) { return chain.get_param(p, 0); };
    auto f = [&](sieve_param p) { return static_cast<float>(param(p)); };
    auto i = [&](sieve_param p) { return static_cast<int32_t>(param(p)); };
    const uint32_t seed = static_cast<uint32_t>(param(SIEVE_PARAM_SEED));
    const size_t min_keep = static_cast<size_t>(std::max(0, i(SIEVE_PARAM_MIN_KEEP)));
    const std::vector<std::string> names = peer_sampler_names(o);
    std::vector<llama_logit_bias> bias;
    for (const std::string& t : o.logit_bias) {
        const LogitBiasEntry e = parse_logit_bias(t);
        bias.push_back({e.token, e.bias});
    }
    const float dry_multiplier = f(SIEVE_PARAM_DRY_MULTIPLIER), dry_base = f(SIEVE_PARAM_DRY_BASE);
    const int32_t dry_last_n = i(SIEVE_PARAM_DRY_PENALTY_LAST_N);
    const bool dry_on = dry_multiplier != 0.0f && dry_base >= 1.0f && dry_last_n != 0;
    for (const std::string& n : names) {
        if (n == "infill") {
            *why = "llama.cpp's infill sampler needs a model's vocabulary";
            return nullptr;
        }
        if (!canonical_names().count(n)) {
            *why = "no llama.cpp sampler '" + n + "'";
            return nullptr;
        }
        if (n == "dry" && dry_on && !breakers.empty() && !lib.has_dry_breakers) {
            *why = "DRY with token breakers needs llama_sampler_init_dry_testing, which this libllama lacks";
            return nullptr;
        }
    }

    using DryTesting = llama_sampler* (*)(float, float, int32_t, int32_t, const std::vector<std::vector<llama_token>>&);
    std::unique_ptr<PeerChains> out(new PeerChains(lib, vocab));
    for (int32_t r = 0; r < rows; ++r) {
        llama_sampler* c = a.chain_init(a.chain_default_params());
        out->chains_.push_back(c);
        auto add = [&](llama_sampler* s) { a.chain_add(c, s); };
        if (!bias.empty()) add(a.init_logit_bias(vocab, static_cast<int32_t>(bias.size()), bias.data()));
        for (const std::string& n : names) {
            if (n == "penalties")
                add(a.init_penalties(vocab, i(SIEVE_PARAM_REPEAT_LAST_N), f(SIEVE_PARAM_REPEAT_PENALTY),
                                     f(SIEVE_PARAM_FREQUENCY_PENALTY), f(SIEVE_PARAM_PRESENCE_PENALTY)));
            else if (n == "dry" && dry_on && !breakers.empty())
                add(reinterpret_cast<DryTesting>(lib.dry_testing)(dry_multiplier, dry_base, i(SIEVE_PARAM_DRY_ALLOWED_LENGTH),
                                                                   dry_last_n, breakers));
            else if (n == "dry")
                add(a.init_dry(nullptr, dry_multiplier, dry_base, i(SIEVE_PARAM_DRY_ALLOWED_LENGTH), dry_last_n, nullptr, 0));
            else if (n == "top_n_sigma") add(a.init_top_n_sigma(f(SIEVE_PARAM_TOP_N_SIGMA)));
            else if (n == "top_k") add(a.init_top_k(i(SIEVE_PARAM_TOP_K)));
            else if (n == "typ_p") add(a.init_typical(f(SIEVE_PARAM_TYPICAL_P), min_keep));
            else if (n == "top_p") add(a.init_top_p(f(SIEVE_PARAM_TOP_P), min_keep));
            else if (n == "min_p") add(a.init_min_p(f(SIEVE_PARAM_MIN_P), min_keep));
            else if (n == "xtc")
                add(a.init_xtc(f(SIEVE_PARAM_XTC_PROBABILITY), f(SIEVE_PARAM_XTC_THRESHOLD), min_keep, seed));
            else if (n == "temperature")
                add(a.init_temp_ext(f(SIEVE_PARAM_TEMPERATURE), f(SIEVE_PARAM_DYNATEMP_RANGE), f(SIEVE_PARAM_DYNATEMP_EXPONENT)));
            else if (n == "greedy") add(a.init_greedy());
            else if (n == "dist") add(a.init_dist(seed));
            else if (n == "mirostat")
                add(a.init_mirostat(vocab, seed, f(SIEVE_PARAM_MIROSTAT_TAU), f(SIEVE_PARAM_MIROSTAT_ETA), 100));
            else if (n == "mirostat_v2") add(a.init_mirostat_v2(seed, f(SIEVE_PARAM_MIROSTAT_TAU), f(SIEVE_PARAM_MIROSTAT_ETA)));
            else if (n == "adaptive_p")
                add(a.init_adaptive_p(f(SIEVE_PARAM_ADAPTIVE_TARGET), f(SIEVE_PARAM_ADAPTIVE_DECAY), seed));
        }
    }
    out->cur_.resize(static_cast<size_t>(vocab));
    return out;
}

PeerChains::~PeerChains() {
    for (llama_sampler* c : chains_) lib_.api.free(c);
}

void PeerChains::accept(int32_t row, const std::vector<int32_t>& tokens) {
    for (int32_t t : tokens) lib_.api.accept(chains_[static_cast<size_t>(row)], t);
}

void PeerChains::token(const float* logits) {
    for (size_t r = 0; r < chains_.size(); ++r) {
        const float* row = logits + r * static_cast<size_t>(vocab_);
        for (int32_t t = 0; t < vocab_; ++t) cur_[static_cast<size_t>(t)] = {t, row[t], 0.0f};
        llama_token_data_array arr{cur_.data(), cur_.size(), -1, false};
        lib_.api.apply(chains_[r], &arr);
        if (arr.selected < 0 || static_cast<size_t>(arr.selected) >= arr.size)
            throw CliError(kExitBadInput, "llama.cpp selected no token (selected " + std::to_string(arr.selected) + ")");
        lib_.api.accept(chains_[r], arr.data[arr.selected].id);
    }
}

} // namespace sieve_cli
