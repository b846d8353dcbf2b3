// Sampling on the CPU backend: any logits (any bits), rows, vocab, parameters
// and row inputs, through every sampling entry point. Results are checked
// against the API's promises (a status per row, tokens inside the vocab,
// distributions that are distributions).
#include "fuzz_support.hpp"

#include <map>
#include <memory>
#include <string>

using namespace sieve_fuzz;

namespace {

constexpr int32_t kMaxRows = 4, kMaxVocab = 512;

const char* const kChains[] = {
    "",  // llama.cpp's default
    "penalties;dry;top_k;typ_p;top_p;min_p;xtc;temperature;dist",
    "temperature;top_n_sigma;dist", "top_k;greedy", "penalties;mirostat", "temperature;mirostat_v2",
    "min_p;temperature;adaptive_p", "xtc;top_p;dist", "dry;typical;temperature", "top_p;min_p;top_k;dist",
};
constexpr size_t kNumChains = sizeof kChains / sizeof *kChains;

// One chain per entry of kChains, created on first use and kept, with the
// parameters it was created with: each input starts from them (a parameter an
// earlier input set would otherwise make a finding depend on the inputs
// before it, and the kept input would not reproduce it).
struct KeptChain {
    std::unique_ptr<sieve_chain, void (*)(sieve_chain*)> chain{nullptr, sieve_chain_destroy};
    struct Default {
        int32_t row;
        sieve_param param;
        double value;
    };
    std::vector<Default> defaults;
};

sieve_chain* chain_for(size_t i) {
    static KeptChain kept[kNumChains];
    KeptChain& k = kept[i];
    if (!k.chain) {
        sieve_chain_desc desc;
        sieve_chain_desc_init(&desc);
        desc.samplers = kChains[i];
        desc.max_rows = kMaxRows;
        desc.max_vocab = kMaxVocab;
        desc.seed = 7;
        desc.history_capacity = 64;
        sieve_chain* c = nullptr;
        if (sieve_chain_create(cpu_context(), &desc, &c) != SIEVE_OK) fail("chain creation");
        k.chain.reset(c);
        for (int32_t row = 0; row < kMaxRows; ++row)
            for (int32_t p = 0; p <= kLastParam; ++p) {
                double value = 0;
                if (sieve_chain_get_param(c, row, static_cast<sieve_param>(p), &value) == SIEVE_OK)
                    k.defaults.push_back({row, static_cast<sieve_param>(p), value});
            }
    }
    for (const KeptChain::Default& d : k.defaults)
        if (sieve_chain_set_param(k.chain.get(), d.row, d.param, d.value) != SIEVE_OK) fail("restoring a parameter");
    return k.chain.get();
}

void check_distribution(sieve_chain* chain, const std::vector<float>& l, int32_t rows, int32_t vocab, int32_t row) {
    const int32_t cap = vocab > 0 ? vocab : 1;
    std::vector<int32_t> ids(static_cast<size_t>(cap));
    std::vector<float> probs(static_cast<size_t>(cap));
    int32_t count = -1;
    if (checked(sieve_chain_distribution(chain, l.data(), rows, vocab, row, ids.data(), probs.data(), cap, &count)) !=
        SIEVE_OK)
        return;
    require(count >= 1 && count <= vocab, "distribution count outside 1..vocab");
    std::map<int32_t, int> seen;
    double total = 0;
    for (int32_t i = 0; i < count; ++i) {
        require(ids[static_cast<size_t>(i)] >= 0 && ids[static_cast<size_t>(i)] < vocab, "survivor id outside the vocab");
        require(seen[ids[static_cast<size_t>(i)]]++ == 0, "survivor id twice");
        const float p = probs[static_cast<size_t>(i)];
        require(p >= 0.0f && p <= 1.0f + 1e-5f, "survivor p outside [0, 1]");
        require(i == 0 || p <= probs[static_cast<size_t>(i - 1)], "survivors not in descending order");
        total += p;
    }
    require(std::fabs(total - 1.0) < 1e-3, "survivor probabilities do not sum to 1");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FuzzedDataProvider in(data, size);
    sieve_chain* chain = chain_for(in.ConsumeIntegralInRange<size_t>(0, kNumChains - 1));
    checked(sieve_chain_reset(chain, -1));
    checked(sieve_chain_set_logit_bias(chain, -1, nullptr, nullptr, 0));
    checked(sieve_chain_set_token_bitmask(chain, -1, nullptr, 0));
    checked(sieve_chain_set_dry_breakers(chain, -1, nullptr, nullptr, 0));
    fuzz_params(in, chain, kMaxRows, in.ConsumeIntegralInRange<int>(0, 12));

    // Sizes: within capacity mostly; 0, negative and beyond capacity at times.
    const bool odd = in.ConsumeProbability<float>() < 0.1f;
    const int32_t rows = odd ? in.ConsumeIntegralInRange<int32_t>(-1, kMaxRows + 1) : in.ConsumeIntegralInRange<int32_t>(1, kMaxRows);
    const int32_t vocab = odd ? in.ConsumeIntegralInRange<int32_t>(-1, kMaxVocab + 1) : in.ConsumeIntegralInRange<int32_t>(1, kMaxVocab);
    for (int n = in.ConsumeIntegralInRange<int>(0, 3); n > 0; --n) fuzz_row_inputs(in, chain, kMaxRows, vocab);
    const size_t cells = rows > 0 && vocab > 0 ? static_cast<size_t>(rows) * static_cast<size_t>(vocab) : 0;
    const std::vector<float> l = logits(in, cells + 1);  // + 1: never a NULL pointer

    std::vector<sieve_token> out(kMaxRows + 2);
    const int32_t written = rows < kMaxRows ? rows : kMaxRows;  // a call-level failure writes min(rows, max_rows)
    switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: check_tokens(checked(sieve_sample(chain, l.data(), rows, vocab, out.data())), out, written, vocab); break;
    case 1: {
        const int32_t draws = in.ConsumeIntegralInRange<int32_t>(-1, 5);
        std::vector<int32_t> tokens(static_cast<size_t>(kMaxRows + 2) * 6);
        const sieve_status s = checked(sieve_sample_draws(chain, l.data(), rows, vocab, draws, tokens.data(), out.data()));
        check_tokens(s, out, written, vocab);
        break;
    }
    case 2: check_distribution(chain, l, rows, vocab, in.ConsumeIntegralInRange<int32_t>(-1, kMaxRows)); break;
    default: {
        // f16 / bf16 / f32 with a row stride: the same bytes read as another dtype.
        sieve_logits view;
        const auto dtype = static_cast<sieve_dtype>(in.ConsumeIntegralInRange<int>(0, 3));
        sieve_logits_init(&view, l.data(), dtype, rows, vocab);
        const int64_t stride = in.ConsumeIntegralInRange<int64_t>(-1, 3);
        view.row_stride = stride <= 0 ? stride : vocab + stride;
        // The buffer holds cells + 1 floats: refuse views that would read past it.
        const int64_t width = dtype == SIEVE_DTYPE_F32 ? 4 : 2;
        const int64_t need = rows > 0 && vocab > 0 ? ((rows - 1) * (view.row_stride > 0 ? view.row_stride : vocab) + vocab) * width : 0;
        if (need > static_cast<int64_t>(l.size() * sizeof(float))) break;
        check_tokens(checked(sieve_sample_logits(chain, &view, out.data())), out, written, vocab);
        break;
    }
    }
    return 0;
}
