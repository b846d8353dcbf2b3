// A synchronous call whose host wait fails, made to by the test seam
// wait_fault.hpp (after the submission finished: a healthy device never
// takes 120 s here, nor gets lost). A wait that runs out (sieve.h:
// SIEVE_ERROR_TIMEOUT) is reported for every row and the chain stays usable;
// the submission itself still runs to its end, so what it commits on the
// device (the tokens joining their slots, the steps) takes effect, as sieve.h
// says. A lost device is reported as such.
#include "test_support.hpp"
#include "vulkan/wait_fault.hpp"

#include <sieve/sieve.h>

#include <string>
#include <vector>

namespace {

using namespace sieve_test;

constexpr int32_t kRows = 3, kVocab = 4096;

class FailedWait : public testing::Test {
protected:
    void TearDown() override { sieve::wait_fault::disarm(); }
    // The default chain with a repeat penalty: each call depends on the
    // tokens the calls before it committed.
    sieve::Chain chain() {
        sieve::Chain c(ctx_, chain_desc("", kRows, kVocab, 0.8f, 29u));
        c.set(SIEVE_PARAM_REPEAT_PENALTY, 1.5);
        return c;
    }
    // A sample on `c` whose next wait reports `result`: the call's status
    // (its message naming `part`) in every row, token -1.
    void expect_sample_fails(sieve::Chain& c, VkResult result, sieve_status status, const std::string& part) {
        sieve::wait_fault::arm(0, result);
        std::vector<sieve_token> out(kRows);
        EXPECT_TRUE(Fails(sieve_sample(c.get(), logits_.data(), kRows, kVocab, out.data()), status, {part}));
        for (int32_t r = 0; r < kRows; ++r) {
            EXPECT_EQ(out[r].status, status) << "row " << r;
            EXPECT_EQ(out[r].token, -1) << "row " << r;
        }
    }
    sieve::Context ctx_ = backend_context(OnBackend::Gpu);
    const std::vector<float> logits_ = make_rows(Shape::Zipf, kRows, kVocab, 11);
};

TEST_F(FailedWait, SampleTimeoutIsReportedAndItsSubmissionCommits) {
    sieve::Chain timed_out = chain(), reference = chain();
    const std::vector<sieve_token> first = reference.sample(logits_.data(), kRows, kVocab);
    expect_sample_fails(timed_out, VK_TIMEOUT, SIEVE_ERROR_TIMEOUT, "did not finish");
    for (int32_t r = 0; r < kRows; ++r) {
        SCOPED_TRACE("row " + std::to_string(r));
        const std::vector<int32_t> history = timed_out.slot_history(r);
        EXPECT_EQ(history, reference.slot_history(r));
        ASSERT_EQ(history.size(), 1u);
        EXPECT_EQ(history[0], first[r].token);
    }
    const std::vector<sieve_token> next = timed_out.sample(logits_.data(), kRows, kVocab);
    const std::vector<sieve_token> expected = reference.sample(logits_.data(), kRows, kVocab);
    for (int32_t r = 0; r < kRows; ++r) {
        SCOPED_TRACE("row " + std::to_string(r));
        EXPECT_EQ(next[r].status, SIEVE_OK);
        EXPECT_EQ(next[r].token, expected[r].token);
        EXPECT_EQ(next[r].p, expected[r].p);
        EXPECT_EQ(next[r].step, expected[r].step);
        EXPECT_EQ(next[r].step, 1u);
    }
}

TEST_F(FailedWait, LostDeviceIsReported) {
    sieve::Chain c = chain();
    expect_sample_fails(c, VK_ERROR_DEVICE_LOST, SIEVE_ERROR_DEVICE_LOST, "vkWaitForFences");
}

} // namespace
