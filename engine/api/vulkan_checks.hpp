// The checks of logits and syncs in the app's buffers that need no device,
// shared by the sieve_vulkan.h entry points (api_vulkan.cpp, api_verify.cpp).
#pragma once

#include "chain/chain.hpp"

#include <volk.h>  // before sieve_vulkan.h: its Vulkan types

#include <sieve/sieve_vulkan.h>

namespace sieve::api {

// The buffer's struct, layout and extent (what sieve_verify_vulkan checks of
// its logits, whose rows are positions, not the chain's rows).
void check_vulkan_buffer(ChainImpl& impl, const sieve_vulkan_logits* logits);
// The shape of a verify call's logits in the app's buffer, checked.
LogitsView vulkan_shape(ChainImpl& impl, const sieve_vulkan_logits* logits);
// Every check sieve_sample_vulkan makes before the device sees the call: the
// descriptor, its sizes against the buffer and the chain, the rows' inputs and
// slots (shared by the synchronous, async and recorded calls).
void check_vulkan_logits(ChainImpl& impl, const sieve_vulkan_logits* logits);
// The parts of a sieve_vulkan_sync that need no device: its struct, the
// semaphore combinations and the token buffer's room for `rows` ids.
// record: sieve_chain_record, which takes only the token buffer.
void check_sync(const sieve_vulkan_sync* sync, int32_t rows, bool record);

} // namespace sieve::api
