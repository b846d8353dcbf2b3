// Google Benchmark micro-benchmarks of the CPU twin's hot paths (the CPU backend
// and `sieve bench`'s twin column run exactly this code). Logits are LM-like: a
// Zipf(1.1) distribution over a shuffled vocabulary, as logits (log-probabilities
// plus an arbitrary offset) with a little noise so that ties are rare.
#include "reference/reference.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace sieve::ref;

std::vector<float> zipf_logits(int32_t vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> rank(static_cast<size_t>(vocab));
    std::iota(rank.begin(), rank.end(), 1);
    std::shuffle(rank.begin(), rank.end(), rng);
    std::normal_distribution<float> noise(0.0f, 0.05f);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (size_t i = 0; i < logits.size(); ++i) {
        logits[i] = 12.0f - 1.1f * std::log(static_cast<float>(rank[i])) + noise(rng);
    }
    return logits;
}

std::vector<SamplerKind> parse_or_die(const char* text) {
    std::vector<SamplerKind> chain;
    std::string message;
    if (parse_chain(text, &chain, &message) != SIEVE_OK) std::abort();
    return chain;
}

void run_sample_row(benchmark::State& state, const char* chain_text, RowParams params = RowParams()) {
    const int32_t vocab = static_cast<int32_t>(state.range(0));
    const std::vector<float> logits = zipf_logits(vocab, 20240601u);
    const std::vector<SamplerKind> chain = parse_or_die(chain_text);
    params.temperature = 0.8f;
    params.seed = 1234u;
    uint32_t step = 0;
    for (auto _ : state) {
        RowResult r = sample_row(chain, logits.data(), vocab, params, step++);
        if (r.status != SIEVE_OK) {
            state.SkipWithError(r.message.c_str());
            break;
        }
        benchmark::DoNotOptimize(r.token);
    }
    state.SetItemsProcessed(state.iterations()); // tokens
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(vocab) * 4);
}

void BM_SampleRow_TemperatureDist(benchmark::State& state) { run_sample_row(state, "temperature;dist"); }
void BM_SampleRow_Greedy(benchmark::State& state) { run_sample_row(state, "greedy"); }

// The truncating chains of `sieve bench`'s suite (docs/bench.md), llama.cpp's
// defaults unless the case says otherwise.
void BM_SampleRow_DefaultChain(benchmark::State& state) {
    run_sample_row(state, "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature");
}
void BM_SampleRow_TopP(benchmark::State& state) {
    RowParams p;
    p.top_p = 0.9f;
    run_sample_row(state, "top_p;temperature", p);
}
void BM_SampleRow_MinP(benchmark::State& state) { run_sample_row(state, "min_p;temperature"); }
void BM_SampleRow_TopK1000(benchmark::State& state) {
    RowParams p;
    p.top_k = 1000;
    run_sample_row(state, "top_k;temperature", p);
}

// The parts of the dist path on their own.
void BM_CanonicalDistribution(benchmark::State& state) {
    const int32_t vocab = static_cast<int32_t>(state.range(0));
    const std::vector<float> logits = zipf_logits(vocab, 7u);
    const CandidateArray cur = make_candidates(logits.data(), vocab);
    for (auto _ : state) {
        std::vector<Weighted> dist = canonical_distribution(cur);
        benchmark::DoNotOptimize(dist.data());
    }
    state.SetItemsProcessed(state.iterations() * vocab);
}

void BM_DrawInverseCdf(benchmark::State& state) {
    const int32_t vocab = static_cast<int32_t>(state.range(0));
    const std::vector<float> logits = zipf_logits(vocab, 7u);
    const std::vector<Weighted> dist = canonical_distribution(make_candidates(logits.data(), vocab));
    uint32_t step = 0;
    for (auto _ : state) {
        size_t index = draw_inverse_cdf(dist, uniform_u32(1u, step++, 0u));
        benchmark::DoNotOptimize(index);
    }
}

void BM_CheckLogits(benchmark::State& state) {
    const int32_t vocab = static_cast<int32_t>(state.range(0));
    const std::vector<float> logits = zipf_logits(vocab, 7u);
    std::string message;
    for (auto _ : state) {
        sieve_status s = check_logits(logits.data(), vocab, &message);
        benchmark::DoNotOptimize(s);
    }
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(vocab) * 4);
}

void BM_PhiloxUniform(benchmark::State& state) {
    uint32_t step = 0;
    for (auto _ : state) {
        uint32_t u = uniform_u32(42u, step++, 0u);
        benchmark::DoNotOptimize(u);
    }
}

BENCHMARK(BM_SampleRow_TemperatureDist)->Arg(32000)->Arg(151936)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleRow_Greedy)->Arg(32000)->Arg(151936)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleRow_DefaultChain)->Arg(32000)->Arg(151936)->Arg(262144)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleRow_TopP)->Arg(32000)->Arg(151936)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleRow_MinP)->Arg(32000)->Arg(151936)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleRow_TopK1000)->Arg(32000)->Arg(151936)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CanonicalDistribution)->Arg(32000)->Arg(151936)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DrawInverseCdf)->Arg(32000)->Arg(151936)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CheckLogits)->Arg(32000)->Arg(151936)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PhiloxUniform);

} // namespace

// tests/CMakeLists.txt links benchmark::benchmark (not benchmark_main).
BENCHMARK_MAIN();
