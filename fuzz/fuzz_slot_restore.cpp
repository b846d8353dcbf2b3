// Slot-restore blobs on the CPU backend: any bytes into
// sieve_chain_restore_slot, then sampling from that slot must return a status,
// never crash. When the restore succeeds, the slot's state survives a
// save -> restore round trip into another slot: the same blob back, the same
// history, and the same token drawn from both slots.
#include "fuzz_support.hpp"

#include <cstring>

using namespace sieve_fuzz;

namespace {

constexpr int32_t kVocab = 64, kHistory = 16;

// Chains whose samplers read every part of a slot: the history (penalties,
// DRY), mu (mirostat), the adaptive-p average and the RNG step.
const char* const kChains[] = {"penalties;dry;top_k;temperature;dist", "penalties;mirostat_v2", "dry;mirostat",
                               "top_k;adaptive_p"};
constexpr size_t kNumChains = sizeof kChains / sizeof *kChains;

sieve_chain* chain_for(size_t i) {
    static sieve_chain* chains[kNumChains] = {};
    if (!chains[i]) {
        sieve_chain_desc desc;
        sieve_chain_desc_init(&desc);
        desc.samplers = kChains[i];
        desc.max_rows = 2;
        desc.max_vocab = kVocab;
        desc.seed = 11;
        desc.history_capacity = kHistory;
        if (sieve_chain_create(cpu_context(), &desc, &chains[i]) != SIEVE_OK) fail("chain creation");
        // Every history sampler on, so a blob's history is read.
        sieve_chain_set_param(chains[i], -1, SIEVE_PARAM_REPEAT_PENALTY, 1.3);
        sieve_chain_set_param(chains[i], -1, SIEVE_PARAM_REPEAT_LAST_N, kHistory);
        sieve_chain_set_param(chains[i], -1, SIEVE_PARAM_DRY_MULTIPLIER, 0.8);
        sieve_chain_set_param(chains[i], -1, SIEVE_PARAM_ADAPTIVE_TARGET, 0.3);
    }
    return chains[i];
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    sieve_chain* chain = chain_for(data[0] % kNumChains);
    const uint8_t* blob = data + 1;
    const size_t blob_size = size - 1;
    size_t state_size = 0;
    require(sieve_chain_slot_state_size(chain, &state_size) == SIEVE_OK, "slot state size");
    checked(sieve_chain_reset(chain, -1));
    checked(sieve_chain_set_slots(chain, nullptr, 0));

    std::vector<float> logits(2 * kVocab);
    for (int32_t i = 0; i < kVocab; ++i) logits[static_cast<size_t>(i)] = logits[static_cast<size_t>(kVocab + i)] = 0.1f * static_cast<float>(i % 17);
    const sieve_status restored = checked(sieve_chain_restore_slot(chain, 0, blob_size ? blob : nullptr, blob_size));
    std::vector<sieve_token> out(2);
    check_tokens(checked(sieve_sample(chain, logits.data(), 1, kVocab, out.data())), out, 1, kVocab);
    if (restored != SIEVE_OK) return 0;
    require(blob_size == state_size, "restore accepted a blob of the wrong size");

    // Round trip: slot 0 (as it is now) -> blob -> slot 1 -> blob again.
    std::vector<uint8_t> saved(state_size), again(state_size);
    require(sieve_chain_save_slot(chain, 0, saved.data(), saved.size()) == SIEVE_OK, "save of a restored slot");
    require(sieve_chain_restore_slot(chain, 1, saved.data(), saved.size()) == SIEVE_OK, "restore of a saved blob");
    require(sieve_chain_save_slot(chain, 1, again.data(), again.size()) == SIEVE_OK, "save after the round trip");
    require(std::memcmp(saved.data(), again.data(), saved.size()) == 0, "round trip changed the blob");
    int32_t h0[kHistory], h1[kHistory], n0 = -1, n1 = -2;
    require(sieve_chain_slot_history(chain, 0, h0, kHistory, &n0) == SIEVE_OK &&
                sieve_chain_slot_history(chain, 1, h1, kHistory, &n1) == SIEVE_OK,
            "history of a restored slot");
    require(n0 == n1 && n0 >= 0 && n0 <= kHistory && std::memcmp(h0, h1, sizeof(int32_t) * static_cast<size_t>(n0)) == 0,
            "round trip changed the history");
    // Rows 0 and 1 on slots 0 and 1, same parameters and logits: the same result.
    const sieve_status s = checked(sieve_sample(chain, logits.data(), 2, kVocab, out.data()));
    check_tokens(s, out, 2, kVocab);
    require(out[0].status == out[1].status && out[0].token == out[1].token && out[0].step == out[1].step,
            "two slots with the same state drew differently");
    return 0;
}
