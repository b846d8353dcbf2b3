// The soak (scripts/soak.sh): TOKENS tokens through one slot of a Vulkan chain
// (llama.cpp's default chain with penalties and DRY on, vocab 32000), the CPU
// twin in lockstep for the first LOCKSTEP tokens, and the process's resident
// memory and the engine's counters printed every INTERVAL tokens.
//
// Passes when, after the warm-up (the lockstep stretch, at least 10000 tokens),
// the counters of allocations and recordings do not move and resident memory
// grows by at most 8 MiB; and every lockstep token is the twin's, except where
// the uniform lies within 1e-6 of a CDF boundary of the twin's distribution
// (the rule of tests/support/twin_compare.hpp), with its p within 1e-4 relative.
//
// usage: sieve_soak [TOKENS [LOCKSTEP [INTERVAL]]]   (1000000 2000 100000)
#include "reference/reference.hpp"
#include "twin_boundary.hpp"
#include "twin_params.hpp"

#include <sieve/sieve.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

constexpr int32_t kVocab = 32000, kHistory = 1024, kRowsOfLogits = 64;
constexpr long kRssSlackKiB = 8 * 1024;

long resident_kib() {
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

void check(sieve_status s, const char* what) {
    if (s == SIEVE_OK) return;
    std::fprintf(stderr, "soak: %s: %s (%s)\n", what, sieve_status_name(s), sieve_last_error());
    std::exit(4);
}

// LM-like rows (Zipf over a random permutation, a little noise), cycled so the
// logits change from token to token without costing the host a row each time.
std::vector<float> make_logits() {
    std::vector<float> out(static_cast<size_t>(kRowsOfLogits) * kVocab);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    auto next = [&] { x ^= x << 13, x ^= x >> 7, x ^= x << 17; return x; };
    std::vector<int32_t> rank(kVocab);
    for (int32_t r = 0; r < kRowsOfLogits; ++r) {
        for (int32_t i = 0; i < kVocab; ++i) rank[static_cast<size_t>(i)] = i;
        for (int32_t i = kVocab - 1; i > 0; --i) std::swap(rank[static_cast<size_t>(i)], rank[next() % static_cast<uint64_t>(i + 1)]);
        for (int32_t i = 0; i < kVocab; ++i) {
            const double noise = static_cast<double>(next() >> 11) / 9007199254740992.0 - 0.5;
            out[static_cast<size_t>(r) * kVocab + static_cast<size_t>(i)] =
                static_cast<float>(12.0 - 1.1 * std::log(rank[static_cast<size_t>(i)] + 1.0) + 0.2 * noise);
        }
    }
    return out;
}

// Penalties and DRY on (llama.cpp's defaults leave them neutral), the rest of
// llama.cpp's defaults; one RowParams drives both the chain and the twin.
sieve::ref::RowParams soak_params() {
    sieve::ref::RowParams p;
    p.seed = 1234;
    p.penalty_last_n = 64;
    p.penalty_repeat = 1.1f;
    p.penalty_freq = 0.05f;
    p.penalty_present = 0.05f;
    p.dry_multiplier = 0.8f;
    p.dry_base = 1.75f;
    p.dry_allowed_length = 2;
    p.dry_penalty_last_n = kHistory;
    return p;
}

} // namespace

int main(int argc, char** argv) {
    const long tokens = argc > 1 ? std::atol(argv[1]) : 1000000;
    const long lockstep = argc > 2 ? std::atol(argv[2]) : 2000;
    const long interval = argc > 3 ? std::atol(argv[3]) : 100000;
    const long warmup = std::max(lockstep, 10000L);

    sieve_context_options o;
    sieve_context_options_init(&o);
    o.validation = 0;
    sieve_context* context = nullptr;
    check(sieve_context_create(&o, &context), "context");
    sieve_device_info info;
    check(sieve_context_device_info(context, &info), "device info");
    sieve_chain_desc desc;
    sieve_chain_desc_init(&desc);  // samplers NULL: llama.cpp's default chain
    desc.max_rows = 1;
    desc.max_vocab = kVocab;
    desc.max_slots = 1;
    desc.history_capacity = kHistory;
    sieve_chain* chain = nullptr;
    check(sieve_chain_create(context, &desc, &chain), "chain");
    const sieve::ref::RowParams params = soak_params();
    check(sieve_test::twin::set_row_params(chain, 0, params), "set_param");
    std::vector<sieve::ref::SamplerKind> kinds;
    std::string message;
    if (sieve::ref::parse_chain(nullptr, &kinds, &message) != SIEVE_OK) return 4;

    const std::vector<float> logits = make_logits();
    sieve::ref::SlotState twin;  // the slot as the twin sees it
    long mismatches = 0, near_boundary = 0, base_rss = 0;
    sieve_counters base{};
    bool failed = false;
    std::printf("soak: %ld tokens on %s, vocab %d, chain \"%s\" with penalties and DRY, twin lockstep %ld\n", tokens,
                info.name, kVocab, sieve::ref::kDefaultChain, lockstep);
    std::printf("%10s %12s %12s %12s %10s\n", "tokens", "rss_kib", "allocations", "recordings", "submits");
    for (long t = 1; t <= tokens; ++t) {
        const float* row = logits.data() + static_cast<size_t>((t - 1) % kRowsOfLogits) * kVocab;
        sieve_token got{};
        check(sieve_sample(chain, row, 1, kVocab, &got), "sample");
        if (t <= lockstep) {
            const auto want = sieve::ref::sample_row(kinds, row, kVocab, params, got.step, 0, &twin);
            if (want.status != SIEVE_OK || got.token != want.token) {
                if (want.status == SIEVE_OK &&
                    sieve_test::twin::draw_explains(kinds, row, kVocab, params, got.step, &twin, got.token)) {
                    ++near_boundary;
                } else {
                    ++mismatches;
                    std::printf("soak: token %ld: GPU %d, twin %d\n", t, got.token, want.token);
                }
            } else if (std::fabs(got.p - want.p) > 1e-4 * want.p) {
                ++mismatches;
                std::printf("soak: token %ld: p %g on the GPU, %g in the twin\n", t, got.p, want.p);
            }
            twin.history.push_back(got.token);  // the slot took the GPU's token
            if (twin.history.size() > static_cast<size_t>(kHistory)) twin.history.erase(twin.history.begin());
        }
        if (t % interval == 0 || t == warmup || t == tokens) {
            sieve_counters c;
            check(sieve_chain_counters(chain, &c), "counters");
            const long rss = resident_kib();
            std::printf("%10ld %12ld %12llu %12llu %10llu\n", t, rss, static_cast<unsigned long long>(c.allocations),
                        static_cast<unsigned long long>(c.recordings), static_cast<unsigned long long>(c.submits));
            std::fflush(stdout);
            if (t == warmup) base = c, base_rss = rss;
            if (t > warmup) {
                if (c.allocations != base.allocations || c.recordings != base.recordings) {
                    std::printf("soak: counters grew after warm-up\n");
                    failed = true;
                }
                if (rss - base_rss > kRssSlackKiB) {
                    std::printf("soak: resident memory grew %ld KiB after warm-up\n", rss - base_rss);
                    failed = true;
                }
            }
        }
    }
    std::printf("soak: lockstep %ld tokens: %ld mismatches, %ld at a CDF boundary\n", std::min(lockstep, tokens),
                mismatches, near_boundary);
    sieve_chain_destroy(chain);
    sieve_context_destroy(context);
    if (mismatches > 0 || failed) return 1;
    std::printf("soak: passed\n");
    return 0;
}
