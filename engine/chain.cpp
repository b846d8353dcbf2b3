#include "chain.hpp"

#include <cmath>
#include <random>

namespace sieve {

namespace {

uint32_t resolve_seed(uint32_t seed) {
    if (seed != SIEVE_SEED_RANDOM) return seed;
    // llama.cpp's LLAMA_DEFAULT_SEED means "pick one": take it from the OS. The
    // seed actually used is reported with every token.
    static std::random_device device;
    uint32_t s = device();
    return s == SIEVE_SEED_RANDOM ? 0u : s;
}

} // namespace

ChainConfig make_chain_config(const sieve_chain_desc& desc) {
    if (desc.struct_size < sizeof(sieve_chain_desc))
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "sieve_chain_desc.struct_size is too small (call sieve_chain_desc_init)");
    if (desc.max_rows < 0 || desc.max_vocab < 0) fail(SIEVE_ERROR_INVALID_ARGUMENT, "negative chain capacity");
    if (desc.max_rows == 0 || desc.max_vocab == 0)
        fail(SIEVE_ERROR_CAPACITY, "chain capacity must be at least 1 row and 1 token");
    if (!std::isfinite(desc.temperature)) fail(SIEVE_ERROR_INVALID_PARAMETER, "temperature must be finite");
    if (desc.min_keep < 0) fail(SIEVE_ERROR_INVALID_PARAMETER, "min_keep must be >= 0");
    ChainConfig c;
    std::string message;
    sieve_status s = ref::parse_chain(desc.samplers, &c.samplers, &message);
    if (s != SIEVE_OK) fail(s, message);
    c.max_rows = desc.max_rows;
    c.max_vocab = desc.max_vocab;
    c.temperature = desc.temperature;
    c.seed = desc.seed;
    c.min_keep = desc.min_keep;
    return c;
}

Chain::Chain(const ChainConfig& config) : config_(config) {
    rows_.resize(static_cast<size_t>(config.max_rows));
    for (auto& r : rows_) r = Row{config.temperature, resolve_seed(config.seed), config.min_keep, 1u};
}

void Chain::set_param(int32_t row, sieve_param param, double value) {
    if (row < -1 || row >= config_.max_rows)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(row) + " is outside the chain's " +
                                               std::to_string(config_.max_rows) + " rows");
    if (std::isnan(value) || std::isinf(value))
        fail(SIEVE_ERROR_INVALID_PARAMETER, "parameter value must be finite");
    if (row == -1) {
        for (int32_t r = 0; r < config_.max_rows; ++r) set_one(r, param, value);
    } else {
        set_one(row, param, value);
    }
}

void Chain::set_one(int32_t row, sieve_param param, double value) {
    Row& r = rows_[static_cast<size_t>(row)];
    switch (param) {
    case SIEVE_PARAM_TEMPERATURE:
        if (std::fabs(value) > 3.0e38) fail(SIEVE_ERROR_INVALID_PARAMETER, "temperature out of float range");
        r.temperature = static_cast<float>(value);
        return;
    case SIEVE_PARAM_SEED:
        if (value < 0 || value > 4294967295.0 || value != std::floor(value))
            fail(SIEVE_ERROR_INVALID_PARAMETER, "seed must be an integer in [0, 4294967295]");
        r.seed = resolve_seed(static_cast<uint32_t>(value));
        r.generation += 1;
        return;
    case SIEVE_PARAM_MIN_KEEP:
        if (value < 0 || value > 2147483647.0 || value != std::floor(value))
            fail(SIEVE_ERROR_INVALID_PARAMETER, "min_keep must be a non-negative integer");
        r.min_keep = static_cast<int32_t>(value);
        return;
    }
    fail(SIEVE_ERROR_INVALID_PARAMETER, "unknown parameter " + std::to_string(static_cast<int>(param)));
}

double Chain::get_param(int32_t row, sieve_param param) const {
    if (row < 0 || row >= config_.max_rows)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(row) + " is outside the chain");
    const Row& r = rows_[static_cast<size_t>(row)];
    switch (param) {
    case SIEVE_PARAM_TEMPERATURE: return r.temperature;
    case SIEVE_PARAM_SEED: return r.seed;
    case SIEVE_PARAM_MIN_KEEP: return r.min_keep;
    }
    fail(SIEVE_ERROR_INVALID_PARAMETER, "unknown parameter " + std::to_string(static_cast<int>(param)));
}

void Chain::reset(int32_t row) {
    if (row < -1 || row >= config_.max_rows)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(row) + " is outside the chain");
    for (int32_t r = 0; r < config_.max_rows; ++r)
        if (row == -1 || r == row) rows_[static_cast<size_t>(r)].generation += 1;
}

void Chain::check_call(const float* logits, int32_t rows, int32_t vocab) const {
    if (!logits) fail(SIEVE_ERROR_INVALID_ARGUMENT, "logits is NULL");
    if (rows < 0 || vocab < 0)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "negative size (rows " + std::to_string(rows) + ", vocab " +
                                               std::to_string(vocab) + ")");
    if (rows == 0 || rows > config_.max_rows)
        fail(SIEVE_ERROR_CAPACITY, "rows " + std::to_string(rows) + " outside the chain's capacity 1.." +
                                       std::to_string(config_.max_rows));
    if (vocab == 0 || vocab > config_.max_vocab)
        fail(SIEVE_ERROR_CAPACITY, "vocab " + std::to_string(vocab) + " outside the chain's capacity 1.." +
                                       std::to_string(config_.max_vocab));
}

ref::RowParams Chain::row_params(int32_t row) const {
    const Row& r = rows_[static_cast<size_t>(row)];
    ref::RowParams p;
    p.temperature = r.temperature;
    p.seed = r.seed;
    p.min_keep = r.min_keep;
    return p;
}

bool Chain::greedy_terminal() const { return config_.samplers.back() == ref::SamplerKind::Greedy; }

float Chain::row_scale(int32_t row) const {
    float scale = 1.0f;
    for (auto k : config_.samplers) {
        if (k != ref::SamplerKind::Temperature) continue;
        float t = rows_[static_cast<size_t>(row)].temperature;
        if (!(t > 0.0f)) return 0.0f;
        scale *= t;
    }
    return scale;
}

} // namespace sieve
