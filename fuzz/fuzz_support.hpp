// What the harnesses share: one CPU-backend context per process, invariant
// checks that abort (libFuzzer reports an abort as a crash, with the input),
// and a reader of parameters, logits and row inputs from the fuzzer's bytes.
#pragma once

#include <sieve/sieve.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace sieve_fuzz {

[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "sieve fuzz: %s (last error: %s)\n", what, sieve_last_error());
    std::abort();
}
inline void require(bool ok, const char* what) {
    if (!ok) fail(what);
}

// A context on the given backend, created once per process; validation off.
inline sieve_context* make_context(sieve_backend backend) {
    sieve_context_options o;
    sieve_context_options_init(&o);
    o.backend = backend;
    o.validation = 0;
    sieve_context* c = nullptr;
    if (sieve_context_create(&o, &c) != SIEVE_OK) fail("context creation");
    return c;
}
inline sieve_context* cpu_context() {
    static sieve_context* c = make_context(SIEVE_BACKEND_CPU);
    return c;
}

// Every status is one of the enum's, with a name and a message.
inline sieve_status checked(sieve_status s) {
    require(s >= SIEVE_OK && s <= SIEVE_ERROR_PENDING, "status outside the enum");
    require(sieve_status_name(s) != nullptr && sieve_last_error() != nullptr, "status without a name or message");
    require(s == SIEVE_OK || std::strlen(sieve_last_error()) > 0, "failure without a message");
    return s;
}

// Tokens of a sampling call that returned `s` over `rows` x `vocab`.
inline void check_tokens(sieve_status s, const std::vector<sieve_token>& out, int32_t rows, int32_t vocab) {
    bool any_failed = false;
    for (int32_t r = 0; r < rows && r < static_cast<int32_t>(out.size()); ++r) {
        const sieve_token& t = out[static_cast<size_t>(r)];
        checked(t.status);
        if (t.status != SIEVE_OK) {
            require(t.token == -1, "failed row with a token");
            any_failed = true;
            continue;
        }
        require(t.token >= 0 && t.token < vocab, "token outside the vocab");
        require(t.p >= 0.0f && t.p <= 1.0f + 1e-5f, "token p outside [0, 1]");
        require(!std::isnan(t.logprob) && t.logprob <= 1e-5f, "token logprob not <= 0");
    }
    if (s == SIEVE_OK) require(!any_failed, "SIEVE_OK with a failed row");
}

// A float from the fuzzer: mostly sensible values, sometimes any bit pattern
// (NaN, infinities, subnormals).
inline double any_value(FuzzedDataProvider& in, double lo, double hi) {
    switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: {
        const uint32_t bits = in.ConsumeIntegral<uint32_t>();
        float f;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    }
    case 1: return static_cast<double>(in.ConsumeIntegralInRange<int32_t>(-3, 100));
    default: return in.ConsumeFloatingPointInRange<double>(lo, hi);
    }
}

// Logits [rows][vocab]: a shape (gaussian-like, ties, masked, peaked) with some
// entries replaced by any bit pattern.
inline std::vector<float> logits(FuzzedDataProvider& in, size_t n) {
    std::vector<float> out(n);
    const int shape = in.ConsumeIntegralInRange<int>(0, 3);
    uint32_t x = in.ConsumeIntegral<uint32_t>() | 1u;
    for (size_t i = 0; i < n; ++i) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        const float u = static_cast<float>(x >> 8) / 16777216.0f;
        switch (shape) {
        case 0: out[i] = 8.0f * u - 4.0f; break;
        case 1: out[i] = static_cast<float>(x % 4); break;           // ties
        case 2: out[i] = x % 3 == 0 ? -INFINITY : 10.0f * u; break;  // masked
        default: out[i] = -20.0f * std::log(u + 1e-6f) * 0.1f; break;
        }
    }
    const int raw = in.ConsumeIntegralInRange<int>(0, 4);
    for (int k = 0; k < raw && n > 0; ++k) {
        const size_t at = in.ConsumeIntegralInRange<size_t>(0, n - 1);
        const uint32_t bits = in.ConsumeIntegral<uint32_t>();
        std::memcpy(&out[at], &bits, sizeof bits);
    }
    return out;
}

constexpr int32_t kLastParam = SIEVE_PARAM_ADAPTIVE_DECAY;  // sieve_param's ids are 0..kLastParam

// A few sieve_chain_set_param calls with any param id, row and value; the
// statuses are checked, failures are fine.
inline void fuzz_params(FuzzedDataProvider& in, sieve_chain* chain, int32_t max_rows, int calls) {
    for (int i = 0; i < calls && in.remaining_bytes() > 0; ++i) {
        const int32_t row = in.ConsumeBool() ? -1 : in.ConsumeIntegralInRange<int32_t>(-2, max_rows);
        const int32_t param = in.ConsumeProbability<float>() < 0.95f ? in.ConsumeIntegralInRange<int32_t>(0, kLastParam)
                                                                     : in.ConsumeIntegral<int32_t>();
        const double value = any_value(in, -2.0, 2.0);
        const sieve_status s = checked(sieve_chain_set_param(chain, row, static_cast<sieve_param>(param), value));
        if (s == SIEVE_OK && row >= 0) {
            double back = 0;
            require(sieve_chain_get_param(chain, row, static_cast<sieve_param>(param), &back) == SIEVE_OK,
                    "a parameter set but not readable");
        }
    }
}

// Row inputs: a logit bias, a bitmask, accepted history and DRY breakers on a
// row, with ids a little beyond the vocab at times (refused with a status).
inline void fuzz_row_inputs(FuzzedDataProvider& in, sieve_chain* chain, int32_t max_rows, int32_t vocab) {
    const int32_t row = in.ConsumeIntegralInRange<int32_t>(-1, max_rows - 1);
    const auto id = [&] { return in.ConsumeIntegralInRange<int32_t>(-1, vocab); };
    switch (in.ConsumeIntegralInRange<int>(0, 4)) {
    case 0: {
        std::vector<int32_t> ids;
        std::vector<float> bias;
        for (int n = in.ConsumeIntegralInRange<int>(0, 4); n > 0; --n) {
            ids.push_back(id());
            bias.push_back(static_cast<float>(any_value(in, -10, 10)));
        }
        checked(sieve_chain_set_logit_bias(chain, row, ids.data(), bias.data(), static_cast<int32_t>(ids.size())));
        break;
    }
    case 1: {
        std::vector<uint32_t> words(static_cast<size_t>(in.ConsumeIntegralInRange<int32_t>(0, (vocab + 31) / 32 + 1)));
        for (auto& w : words) w = in.ConsumeBool() ? 0xFFFFFFFFu : in.ConsumeIntegral<uint32_t>();
        checked(sieve_chain_set_token_bitmask(chain, row, words.empty() ? nullptr : words.data(),
                                              static_cast<int32_t>(words.size())));
        break;
    }
    case 2: {
        std::vector<int32_t> ids;
        for (int n = in.ConsumeIntegralInRange<int>(0, 24); n > 0; --n) ids.push_back(id());
        checked(sieve_accept(chain, row, ids.data(), static_cast<int32_t>(ids.size())));
        break;
    }
    case 3: {
        std::vector<int32_t> ids, lengths;
        for (int n = in.ConsumeIntegralInRange<int>(0, 3); n > 0; --n) {
            const int32_t len = in.ConsumeIntegralInRange<int32_t>(0, 3);
            lengths.push_back(len);
            for (int32_t k = 0; k < len; ++k) ids.push_back(id());
        }
        checked(sieve_chain_set_dry_breakers(chain, row, ids.data(), lengths.data(),
                                             static_cast<int32_t>(lengths.size())));
        break;
    }
    default: checked(sieve_chain_reset(chain, row)); break;
    }
}

} // namespace sieve_fuzz
