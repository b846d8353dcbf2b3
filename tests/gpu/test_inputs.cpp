// Logits as inference engines hold them (issue 5, "Inputs"): f16 and bf16
// values and rows inside a larger buffer (a row stride). Widening is exact, so
// a chain sampling f16/bf16 rows must give bit for bit what the same chain
// gives for the widened f32 rows: the same token, p, log-probability and step,
// on the GPU and on the CPU twin. The padding between rows holds NaN, so a
// stride that was ignored shows as a non-finite-logit status.
#include "half_bits.hpp"
#include "test_support.hpp"
#include "twin_compare.hpp"

#include "chain/logits_view.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

namespace {

using namespace sieve_test;

TEST(InputWidening, EveryHalfValue) {
    for (uint32_t b = 0; b < 65536; ++b) {
        const uint16_t h = static_cast<uint16_t>(b);
        const float want = from_f16(h), got = sieve::half_to_float(h);
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << "f16 bits " << b;
        } else {
            uint32_t w, g;
            std::memcpy(&w, &want, 4);
            std::memcpy(&g, &got, 4);
            ASSERT_EQ(g, w) << "f16 bits " << b << " widen to " << got << ", expected " << want;
        }
    }
}

TEST(InputWidening, EveryBfloatValue) {
    for (uint32_t b = 0; b < 65536; ++b) {
        const uint16_t h = static_cast<uint16_t>(b);
        const float want = from_bf16(h), got = sieve::bfloat_to_float(h);
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << "bf16 bits " << b;
        } else {
            ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << "bf16 bits " << b;
        }
    }
}

enum class Where { Gpu, Cpu };

// Rows in `dtype` at `stride` elements apart (NaN padding), and the same rows
// widened to packed f32: what the results must equal.
struct Input {
    std::vector<uint16_t> halves;  // f16/bf16 storage
    std::vector<float> floats;     // f32 storage (dtype f32)
    std::vector<float> widened;    // [rows][vocab]
    sieve_logits desc{};
};

Input make_input(sieve_dtype dtype, Shape shape, int32_t rows, int32_t vocab, int64_t stride, uint32_t seed) {
    const auto src = make_rows(shape, rows, vocab, seed);
    Input in;
    in.widened.resize(src.size());
    const size_t total = static_cast<size_t>(stride) * static_cast<size_t>(rows - 1) + static_cast<size_t>(vocab);
    if (dtype == SIEVE_DTYPE_F32) in.floats.assign(total, std::numeric_limits<float>::quiet_NaN());
    else in.halves.assign(total, dtype == SIEVE_DTYPE_F16 ? 0x7E00u : 0x7FC0u);  // NaN padding
    for (int32_t r = 0; r < rows; ++r)
        for (int32_t i = 0; i < vocab; ++i) {
            const size_t at = static_cast<size_t>(r) * static_cast<size_t>(stride) + static_cast<size_t>(i);
            const size_t packed = static_cast<size_t>(r) * vocab + i;
            const float v = src[packed];
            if (dtype == SIEVE_DTYPE_F32) {
                in.floats[at] = v;
                in.widened[packed] = v;
            } else if (dtype == SIEVE_DTYPE_F16) {
                in.halves[at] = to_f16(v);
                in.widened[packed] = from_f16(in.halves[at]);
            } else {
                in.halves[at] = to_bf16(v);
                in.widened[packed] = from_bf16(in.halves[at]);
            }
        }
    const void* data = dtype == SIEVE_DTYPE_F32 ? static_cast<const void*>(in.floats.data()) : in.halves.data();
    sieve_logits_init(&in.desc, data, dtype, rows, vocab);
    in.desc.row_stride = stride;
    return in;
}

using InputParam = std::tuple<Where, sieve_dtype, const char*, int32_t>;

class Inputs : public testing::TestWithParam<InputParam> {};

TEST_P(Inputs, EqualTheWidenedF32Rows) {
    const auto [where, dtype, samplers, vocab] = GetParam();
    constexpr int32_t kRows = 3;
    sieve::Context ctx = where == Where::Gpu ? gpu_context() : cpu_context();
    // Zipf-like rows, and rows of a few values (f16/bf16's large tie groups);
    // masked rows (-inf) go through the same widening (EveryHalfValue).
    for (Shape shape : {Shape::Zipf, Shape::Ties}) {
        SCOPED_TRACE(shape_name(shape));
        const Input in = make_input(dtype, shape, kRows, vocab, vocab + 37, 11);
        sieve::Chain typed(ctx, chain_desc(samplers, kRows, vocab, 0.8f, 77));
        sieve::Chain plain(ctx, chain_desc(samplers, kRows, vocab, 0.8f, 77));
        for (int32_t step = 0; step < 3; ++step) {
            const auto a = typed.sample(in.desc);
            const auto b = plain.sample(in.widened.data(), kRows, vocab);
            for (int32_t r = 0; r < kRows; ++r) {
                SCOPED_TRACE("step " + std::to_string(step) + " row " + std::to_string(r));
                const auto& t = a[static_cast<size_t>(r)];
                const auto& u = b[static_cast<size_t>(r)];
                ASSERT_EQ(t.status, SIEVE_OK) << sieve_last_error();
                EXPECT_EQ(t.token, u.token);
                EXPECT_EQ(std::memcmp(&t.p, &u.p, 4), 0) << t.p << " vs " << u.p;
                EXPECT_EQ(std::memcmp(&t.logprob, &u.logprob, 4), 0);
                EXPECT_EQ(t.step, u.step);
            }
        }
    }
}

std::string input_name(const testing::TestParamInfo<InputParam>& info) {
    const auto [where, dtype, samplers, vocab] = info.param;
    std::string s = std::string(where == Where::Gpu ? "Gpu_" : "Cpu_") + sieve::dtype_name(dtype) + "_" +
                    (*samplers ? samplers : "default") +
                    "_v" + std::to_string(vocab);
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return s;
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, Inputs,
    testing::Combine(testing::Values(Where::Gpu, Where::Cpu),
                     testing::Values(SIEVE_DTYPE_F32, SIEVE_DTYPE_F16, SIEVE_DTYPE_BF16),
                     testing::Values("", "top_p;temperature"), testing::Values(1000, 32000)),
    input_name);

// A large vocabulary's f16 rows on the GPU against the CPU twin: f16's tie
// groups (thousands of equal values) through the radix and wide paths.
TEST(InputsF16, GpuMatchesTwinAt151936) {
    constexpr int32_t kRows = 2, kVocab = 151936;
    sieve::Context gpu = gpu_context();
    for (const char* samplers : {"", "top_p;temperature", "min_p;temperature"}) {
        SCOPED_TRACE(samplers);
        const Input in = make_input(SIEVE_DTYPE_F16, Shape::Zipf, kRows, kVocab, kVocab + 64, 5);
        sieve::Chain chain(gpu, chain_desc(samplers, kRows, kVocab, 0.8f, 9));
        const auto kinds = twin_chain(samplers);
        twin::Tally tally;
        for (uint32_t step = 0; step < 3; ++step) {
            const auto got = chain.sample(in.desc);
            for (int32_t r = 0; r < kRows; ++r) {
                twin::RowParams params;
                params.temperature = 0.8f;
                params.seed = 9;
                const twin::Row row{kinds, in.widened.data() + static_cast<size_t>(r) * kVocab, kVocab, params};
                twin::compare_token(got[static_cast<size_t>(r)], row, step, &tally);
            }
        }
        EXPECT_LE(tally.token_near_cdf_boundary, 1);
    }
}

} // namespace
