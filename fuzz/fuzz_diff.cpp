// The differential harness: the same call on the CPU backend and the Vulkan
// backend (one context per process, validation off), the same seed and
// parameters. Both are held to the twin with the rules the GPU tests use
// (tests/support/twin_compare.hpp): statuses equal; survivor sets equal, or different
// only at a top-p/min-p/typical/XTC threshold within 1e-6; probabilities
// within 1e-4 relative; the same token unless the uniform lies within 1e-6 of
// a CDF boundary. Any broken rule aborts with gtest's message.
#include "fuzz_support.hpp"
#include "twin_compare.hpp"
#include "twin_params.hpp"

#include <gtest/gtest-spi.h>

#include <map>
#include <memory>
#include <string>

using namespace sieve_fuzz;
using namespace sieve_test::twin;

namespace {

constexpr int32_t kMaxVocab = 2048, kHistory = 64;


struct Pair {
    sieve_chain* cpu = nullptr;
    sieve_chain* gpu = nullptr;
    std::vector<SamplerKind> kinds;
    std::string samplers;
};

sieve_chain* create(sieve_context* context, const std::string& samplers) {
    sieve_chain_desc desc;
    sieve_chain_desc_init(&desc);
    desc.samplers = samplers.c_str();
    desc.max_rows = 1;
    desc.max_vocab = kMaxVocab;
    desc.seed = 1;
    desc.history_capacity = kHistory;
    sieve_chain* c = nullptr;
    if (sieve_chain_create(context, &desc, &c) != SIEVE_OK) fail("chain creation");
    return c;
}

// Chains by sampler string, both backends; a bounded cache (creating a Vulkan
// chain records and allocates, too slow for every input).
Pair& pair_for(const std::string& samplers) {
    static sieve_context* gpu_context = make_context(SIEVE_BACKEND_VULKAN);
    static std::map<std::string, Pair> cache;
    auto it = cache.find(samplers);
    if (it != cache.end()) return it->second;
    if (cache.size() >= 32) {
        for (auto& [name, p] : cache) sieve_chain_destroy(p.cpu), sieve_chain_destroy(p.gpu);
        cache.clear();
    }
    Pair p;
    std::string message;
    if (sieve::ref::parse_chain(samplers.c_str(), &p.kinds, &message) != SIEVE_OK) fail("a fuzzed chain does not parse");
    p.samplers = samplers;
    p.cpu = create(cpu_context(), samplers);
    p.gpu = create(gpu_context, samplers);
    return cache[samplers] = p;
}

// A fixed set of chains: creating a Vulkan chain compiles its pipelines
// (seconds on lavapipe under ASan), so inputs pick among these, which cover
// every sampler; penalties and DRY lead (the GPU backend runs them only as the
// chain's first samplers, SIEVE_ERROR_UNSUPPORTED_SAMPLER otherwise).
const char* const kChains[] = {
    "",  // llama.cpp's default
    "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature;dist",
    "top_k;top_p;min_p;temperature;dist", "temperature;top_n_sigma;greedy", "penalties;temperature;mirostat",
    "dry;top_k;temperature;mirostat_v2", "min_p;xtc;temperature;adaptive_p", "typ_p;temperature;top_p;dist"};

std::string samplers(FuzzedDataProvider& in) {
    return kChains[in.ConsumeIntegralInRange<size_t>(0, sizeof kChains / sizeof *kChains - 1)];
}

// Row parameters over the ranges the API accepts, with llama.cpp's "off"
// values reachable.
RowParams params(FuzzedDataProvider& in) {
    RowParams p;
    const auto f = [&](float lo, float hi) { return in.ConsumeFloatingPointInRange<float>(lo, hi); };
    p.temperature = in.ConsumeBool() ? f(-0.5f, 2.5f) : 0.8f;
    // SIEVE_SEED_RANDOM asks each backend to pick its own seed: the two would
    // differ by design (the harness's first finding), so it is never fuzzed.
    p.seed = in.ConsumeIntegralInRange<uint32_t>(0, SIEVE_SEED_RANDOM - 1);
    p.min_keep = in.ConsumeIntegralInRange<int32_t>(0, 4);
    p.top_k = in.ConsumeIntegralInRange<int32_t>(-1, 300);
    p.top_p = f(0.0f, 1.05f);
    p.min_p = f(-0.1f, 1.1f);
    p.typical_p = f(0.0f, 1.05f);
    p.top_n_sigma = f(-1.0f, 4.0f);
    p.xtc_probability = f(-0.1f, 1.0f);
    p.xtc_threshold = f(0.0f, 0.6f);
    p.dynatemp_range = in.ConsumeBool() ? f(0.0f, 2.0f) : 0.0f;
    p.dynatemp_exponent = f(0.1f, 3.0f);
    p.penalty_last_n = in.ConsumeIntegralInRange<int32_t>(0, kHistory);
    p.penalty_repeat = f(0.5f, 2.0f);
    p.penalty_freq = f(-1.0f, 1.0f);
    p.penalty_present = f(-1.0f, 1.0f);
    p.dry_multiplier = f(0.0f, 2.0f);
    p.dry_base = f(0.9f, 3.0f);
    p.dry_allowed_length = in.ConsumeIntegralInRange<int32_t>(0, 4);
    p.dry_penalty_last_n = in.ConsumeIntegralInRange<int32_t>(0, kHistory);
    p.mirostat_tau = f(0.0f, 10.0f);
    p.mirostat_eta = f(0.0f, 1.0f);
    p.adaptive_target = f(-0.5f, 1.0f);
    p.adaptive_decay = f(0.0f, 0.99f);
    return p;
}

GpuDistribution distribution(sieve_chain* c, const std::vector<float>& l, int32_t vocab) {
    std::vector<int32_t> ids(static_cast<size_t>(vocab));
    std::vector<float> probs(static_cast<size_t>(vocab));
    int32_t count = 0;
    GpuDistribution out;
    out.status = checked(sieve_chain_distribution(c, l.data(), 1, vocab, 0, ids.data(), probs.data(), vocab, &count));
    if (out.status != SIEVE_OK) {
        out.message = sieve_last_error();
        return out;
    }
    require(count >= 1 && count <= vocab, "distribution count outside 1..vocab");
    for (int32_t i = 0; i < count; ++i) out.p[ids[static_cast<size_t>(i)]] = probs[static_cast<size_t>(i)];
    require(out.p.size() == static_cast<size_t>(count), "survivor id twice");
    return out;
}

// Triage: with SIEVE_FUZZ_DUMP=PATH, running one input writes the case as the
// harness decoded it to PATH (chain, parameters, history, logits) and each
// backend's distribution to PATH.cpu and PATH.gpu ("id p" lines).
const char* dump_path() { return std::getenv("SIEVE_FUZZ_DUMP"); }

void dump_case(const Pair& pair, const RowParams& p, const sieve::ref::SlotState& state, const std::vector<float>& l) {
    FILE* f = std::fopen(dump_path(), "w");
    if (!f) fail("SIEVE_FUZZ_DUMP: cannot write the file");
    std::fprintf(f, "chain %s\n", pair.samplers.empty() ? "(default)" : pair.samplers.c_str());
    std::fprintf(f, "temperature %.9g seed %u min_keep %d top_k %d top_p %.9g min_p %.9g typical_p %.9g\n", p.temperature,
                 p.seed, p.min_keep, p.top_k, p.top_p, p.min_p, p.typical_p);
    std::fprintf(f, "top_n_sigma %.9g xtc_probability %.9g xtc_threshold %.9g dynatemp_range %.9g dynatemp_exponent %.9g\n",
                 p.top_n_sigma, p.xtc_probability, p.xtc_threshold, p.dynatemp_range, p.dynatemp_exponent);
    std::fprintf(f, "penalty_last_n %d repeat %.9g freq %.9g present %.9g\n", p.penalty_last_n, p.penalty_repeat,
                 p.penalty_freq, p.penalty_present);
    std::fprintf(f, "dry multiplier %.9g base %.9g allowed_length %d last_n %d\n", p.dry_multiplier, p.dry_base,
                 p.dry_allowed_length, p.dry_penalty_last_n);
    std::fprintf(f, "mirostat tau %.9g eta %.9g adaptive target %.9g decay %.9g\n", p.mirostat_tau, p.mirostat_eta,
                 p.adaptive_target, p.adaptive_decay);
    std::fprintf(f, "history");
    for (int32_t t : state.history) std::fprintf(f, " %d", t);
    std::fprintf(f, "\nlogits %zu", l.size());
    for (float x : l) std::fprintf(f, " %.9g", x);
    std::fprintf(f, "\n");
    std::fclose(f);
}

void dump_distribution(const GpuDistribution& d, const char* backend) {
    FILE* f = std::fopen((std::string(dump_path()) + "." + backend).c_str(), "w");
    if (!f) fail("SIEVE_FUZZ_DUMP: cannot write the file");
    for (const auto& [id, p] : d.p) std::fprintf(f, "%d %.9g\n", id, p);
    std::fclose(f);
}

// One backend's distribution and token against the twin.
void compare(sieve_chain* c, const char* backend, Row row, const std::vector<float>& l, sieve_token* token,
             Tally* tally) {
    const GpuDistribution got = distribution(c, l, row.vocab);
    if (dump_path()) dump_distribution(got, backend);
    compare_distribution(got, &row, 0, tally);
    checked(sieve_sample(c, l.data(), 1, row.vocab, token));
    compare_token(*token, row, 0, tally);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FuzzedDataProvider in(data, size);
    Pair& pair = pair_for(samplers(in));
    const RowParams p = params(in);
    const int32_t vocab = in.ConsumeIntegralInRange<int32_t>(1, kMaxVocab);
    sieve::ref::SlotState state;
    for (int n = in.ConsumeIntegralInRange<int>(0, 40); n > 0; --n)
        state.history.push_back(in.ConsumeIntegralInRange<int32_t>(0, vocab - 1));
    const std::vector<float> l = logits(in, static_cast<size_t>(vocab));
    if (dump_path()) dump_case(pair, p, state, l);

    sieve_status set[2];
    sieve_chain* chains[2] = {pair.cpu, pair.gpu};
    for (int b = 0; b < 2; ++b) {
        checked(sieve_chain_reset(chains[b], -1));
        set[b] = checked(set_row_params(chains[b], 0, p));
        if (set[b] == SIEVE_OK)
            set[b] = checked(sieve_accept(chains[b], 0, state.history.data(), static_cast<int32_t>(state.history.size())));
    }
    require(set[0] == set[1], "the backends took different parameters");
    if (set[0] != SIEVE_OK) return 0;

    ::testing::TestPartResultArray failures;
    sieve_token tokens[2] = {};
    Tally tally;
    {
        ::testing::ScopedFakeTestPartResultReporter reporter(
            ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS, &failures);
        for (int b = 0; b < 2; ++b)
            compare(chains[b], b ? "gpu" : "cpu", Row{pair.kinds, l.data(), vocab, p, &state}, l, &tokens[b], &tally);
    }
    for (int i = 0; i < failures.size(); ++i)
        std::fprintf(stderr, "%s:%d: %s\n", failures.GetTestPartResult(i).file_name(),
                     failures.GetTestPartResult(i).line_number(), failures.GetTestPartResult(i).message());
    require(failures.size() == 0, "the backends disagree beyond the documented tolerance (above)");
    require(tokens[0].status == tokens[1].status, "statuses differ between the backends");
    return 0;
}
