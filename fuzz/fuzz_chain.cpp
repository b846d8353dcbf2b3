// Chain parsing and parameters on the CPU backend: sieve_chain_create with any
// sampler string and desc fields, sieve_chain_set_param with any ids and
// values, then a sample. Every call returns a status; nothing crashes.
#include "fuzz_support.hpp"

#include <string>

using namespace sieve_fuzz;

namespace {

// Sampler names and separators the parser knows, so inputs reach past it often.
const char* const kWords[] = {"dist", "greedy", "top_k", "top-k", "top_p", "min_p", "typ_p", "typical",
                              "temperature", "temp", "xtc", "top_n_sigma", "penalties", "dry", "mirostat",
                              "mirostat_v2", "adaptive_p", "infill", "logit_bias", ";", ",", " ", ""};

std::string samplers(FuzzedDataProvider& in) {
    if (in.ConsumeBool()) return in.ConsumeRandomLengthString(64);  // any bytes
    std::string s;
    for (int n = in.ConsumeIntegralInRange<int>(0, 8); n > 0; --n) {
        s += kWords[in.ConsumeIntegralInRange<size_t>(0, sizeof kWords / sizeof *kWords - 1)];
        if (in.ConsumeBool()) s += ';';
    }
    return s;
}

// A capacity: small mostly, any int32 at times (absurd ones must be refused).
int32_t capacity(FuzzedDataProvider& in, int32_t typical) {
    return in.ConsumeProbability<float>() < 0.9f ? in.ConsumeIntegralInRange<int32_t>(-1, typical)
                                                 : in.ConsumeIntegral<int32_t>();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FuzzedDataProvider in(data, size);
    const std::string text = samplers(in);
    sieve_chain_desc desc;
    sieve_chain_desc_init(&desc);
    desc.samplers = in.ConsumeBool() ? text.c_str() : nullptr;
    desc.max_rows = capacity(in, 4);
    desc.max_vocab = capacity(in, 300);
    desc.temperature = static_cast<float>(any_value(in, -1, 3));
    desc.seed = in.ConsumeIntegral<uint32_t>();
    desc.min_keep = capacity(in, 5);
    desc.max_slots = capacity(in, 4);
    desc.history_capacity = capacity(in, 64);
    if (in.ConsumeProbability<float>() < 0.05f) desc.struct_size = in.ConsumeIntegralInRange<uint32_t>(0, 256);

    sieve_chain* chain = nullptr;
    if (checked(sieve_chain_create(cpu_context(), &desc, &chain)) != SIEVE_OK) {
        require(chain == nullptr, "a failed create returned a chain");
        return 0;
    }
    require(chain != nullptr, "create succeeded without a chain");
    fuzz_params(in, chain, desc.max_rows, 8);

    const int32_t rows = in.ConsumeIntegralInRange<int32_t>(0, desc.max_rows > 4 ? 4 : desc.max_rows);
    const int32_t vocab = in.ConsumeIntegralInRange<int32_t>(0, desc.max_vocab > 300 ? 300 : desc.max_vocab);
    const std::vector<float> l = logits(in, static_cast<size_t>(rows) * static_cast<size_t>(vocab));
    std::vector<sieve_token> out(static_cast<size_t>(rows > 0 ? rows : 1));
    const sieve_status s = checked(sieve_sample(chain, l.data(), rows, vocab, out.data()));
    check_tokens(s, out, rows, vocab);
    sieve_chain_destroy(chain);
    return 0;
}
