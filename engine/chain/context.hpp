// A context: one backend on one device. The Vulkan context owns (or borrows) the
// device and its pipelines; the CPU context runs the twin. (Named *Impl: the
// public C++ wrapper in sieve.hpp owns sieve::Context and sieve::Chain, and a
// program may link both.)
#pragma once

#include "chain/chain.hpp"

#include <memory>

namespace sieve {

class ContextImpl {
public:
    virtual ~ContextImpl() = default;
    virtual sieve_backend backend() const = 0;
    virtual sieve_device_info device_info() const = 0;
    virtual uint64_t validation_messages() const { return 0; }
    virtual std::unique_ptr<ChainImpl> create_chain(const ChainConfig& config) = 0;
};

std::unique_ptr<ContextImpl> make_cpu_context();
std::unique_ptr<ContextImpl> make_vulkan_context(const sieve_context_options& options);

} // namespace sieve

// The context's state is shared by its handle and its chains: it goes when the
// last of them does, so a chain outliving sieve_context_destroy stays usable
// (the C++ wrapper makes that easy: a chain built from a temporary Context).
struct sieve_context {
    std::shared_ptr<sieve::ContextImpl> impl;
};

struct sieve_chain {
    std::shared_ptr<sieve::ContextImpl> context;  // declared first: destroyed after the chain
    std::unique_ptr<sieve::ChainImpl> impl;
};
