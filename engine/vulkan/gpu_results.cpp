#include "vulkan/gpu_results.hpp"

#include <gpu_layout.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sieve {

using namespace glsl;

namespace {

float as_float(uint32_t w) {
    float f;
    std::memcpy(&f, &w, 4);
    return f;
}

} // namespace

bool result_left_to_twin(const uint32_t* res) { return res[RES_STATUS] == STATUS_FALLBACK; }

uint32_t result_step(const uint32_t* res) { return res[RES_STEP]; }

sieve_token decode_result(uint32_t row, const uint32_t* res, const ref::RowParams& params, std::string* message,
                          sieve_status* first) {
    sieve_token t{};
    t.status = static_cast<sieve_status>(res[RES_STATUS]);
    t.token = t.status == SIEVE_OK ? static_cast<int32_t>(res[RES_TOKEN]) : -1;
    t.p = as_float(res[RES_P]);
    t.logprob = as_float(res[RES_LOGPROB]);
    t.seed = res[RES_SEED];
    t.step = res[RES_STEP];
    t.row_passes = res[RES_PASSES];
    if (t.status != SIEVE_OK && *first == SIEVE_OK) {
        *first = t.status;
        std::string what;
        if (t.status == SIEVE_ERROR_NON_FINITE_LOGIT) {
            what = res[RES_FIRST_BAD] != 0xFFFFFFFFu ? "logit " + std::to_string(res[RES_FIRST_BAD]) + " is NaN or +Inf"
                                                     : "the temperature division overflows a logit to +-Inf";
        } else if (t.status == SIEVE_ERROR_ALL_MASKED) {
            // The twin's words (reference/row.cpp).
            const bool mask = !params.token_bitmask.empty(), bias = !params.logit_bias.empty();
            what = mask && bias ? "the token bitmask and logit bias leave every token of the row masked"
                   : mask       ? "the token bitmask allows no token of the row"
                   : bias       ? "the logit bias leaves every token of the row masked"
                                : "every logit is -Inf";
        } else {
            what = sieve_status_name(t.status);
        }
        *message = "row " + std::to_string(row) + ": " + what;
    }
    return t;
}

ref::RawLogprobs decode_raw_logprobs(const uint32_t* res, int32_t n) {
    const auto word = [res](uint32_t w) { return static_cast<double>(as_float(res[w])); };
    ref::RawLogprobs raw;
    raw.log_z = word(RES_RAW_MAX) + std::log(word(RES_RAW_SUM));
    raw.token_logprob = word(RES_RAW_TOKEN) - raw.log_z;
    const uint32_t found = std::min<uint32_t>(res[RES_RAW_COUNT], static_cast<uint32_t>(n));
    for (uint32_t j = 0; j < found; ++j)
        raw.top.push_back({static_cast<int32_t>(res[RES_RAW_IDS + j]), word(RES_RAW_LOGITS + j) - raw.log_z});
    return raw;
}

bool decode_distribution_list(const uint32_t* words, std::vector<ref::Weighted>* out, uint32_t* step) {
    out->clear();
    if (words[0] == STATUS_FALLBACK) {
        *step = words[1];
        return false;
    }
    for (uint32_t i = 0; i < words[0]; ++i)
        out->push_back({static_cast<int32_t>(words[2 + 2 * i]), static_cast<double>(as_float(words[3 + 2 * i]))});
    return true;
}

void decode_distribution_row(const float* p, const float* logits, uint32_t vocab, float scale,
                             std::vector<ref::Weighted>* out) {
    struct Entry {
        float p, scaled;
        int32_t id;
    };
    std::vector<Entry> order;
    out->clear();
    // Canonical order: the logit the draw sees descending, ties by lower id.
    // The probability is monotone in it (bias and penalties included, which
    // only the GPU applied); where probabilities tie (underflow to 0) the raw
    // logit divided by the temperature, as the shaders divide, decides.
    for (uint32_t i = 0; i < vocab; ++i)
        if (p[i] >= 0.0f)
            order.push_back({p[i], scale > 0.0f ? logits[i] / scale : logits[i], static_cast<int32_t>(i)});
    std::sort(order.begin(), order.end(), [](const Entry& a, const Entry& b) {
        if (a.p != b.p) return a.p > b.p;
        if (a.scaled != b.scaled) return a.scaled > b.scaled;
        return a.id < b.id;
    });
    for (const Entry& e : order) out->push_back({e.id, static_cast<double>(e.p)});
}

} // namespace sieve
