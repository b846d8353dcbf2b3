#include "chain/chain.hpp"

#include "vulkan/slot_layout.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
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

const char* param_name(sieve_param param) {
    switch (param) {
    case SIEVE_PARAM_TEMPERATURE: return "temperature";
    case SIEVE_PARAM_SEED: return "seed";
    case SIEVE_PARAM_MIN_KEEP: return "min_keep";
    case SIEVE_PARAM_TOP_K: return "top_k";
    case SIEVE_PARAM_TOP_P: return "top_p";
    case SIEVE_PARAM_MIN_P: return "min_p";
    case SIEVE_PARAM_TYPICAL_P: return "typical_p";
    case SIEVE_PARAM_TOP_N_SIGMA: return "top_n_sigma";
    case SIEVE_PARAM_XTC_PROBABILITY: return "xtc_probability";
    case SIEVE_PARAM_XTC_THRESHOLD: return "xtc_threshold";
    case SIEVE_PARAM_DYNATEMP_RANGE: return "dynatemp_range";
    case SIEVE_PARAM_DYNATEMP_EXPONENT: return "dynatemp_exponent";
    case SIEVE_PARAM_REPEAT_LAST_N: return "repeat_last_n";
    case SIEVE_PARAM_REPEAT_PENALTY: return "repeat_penalty";
    case SIEVE_PARAM_FREQUENCY_PENALTY: return "frequency_penalty";
    case SIEVE_PARAM_PRESENCE_PENALTY: return "presence_penalty";
    case SIEVE_PARAM_DRY_MULTIPLIER: return "dry_multiplier";
    case SIEVE_PARAM_DRY_BASE: return "dry_base";
    case SIEVE_PARAM_DRY_ALLOWED_LENGTH: return "dry_allowed_length";
    case SIEVE_PARAM_DRY_PENALTY_LAST_N: return "dry_penalty_last_n";
    case SIEVE_PARAM_MIROSTAT_TAU: return "mirostat_tau";
    case SIEVE_PARAM_MIROSTAT_ETA: return "mirostat_eta";
    case SIEVE_PARAM_ADAPTIVE_TARGET: return "adaptive_target";
    case SIEVE_PARAM_ADAPTIVE_DECAY: return "adaptive_decay";
    }
    return nullptr;
}

std::string format_value(double v) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.17g", v);
    return buffer;
}

// A float parameter: finite (checked by the caller) and representable as a float.
float as_float(sieve_param param, double value) {
    if (std::fabs(value) > static_cast<double>(FLT_MAX))
        fail(SIEVE_ERROR_INVALID_PARAMETER, std::string(param_name(param)) + " " + format_value(value) +
                                                " is out of float range");
    return static_cast<float>(value);
}

// A float parameter whose value a slot learns from (mirostat's tau and eta,
// adaptive-p's target): bounded so that the learnt state stays finite. mu
// moves by at most |eta| (|tau| + 1075) bits per draw (a drawn p is above
// 2^-1075) and adaptive-p's average starts at target / (1 - decay) <= 100
// target, so with |value| <= 1e6 neither can overflow float in 10^26 draws.
constexpr double kLearntParamLimit = 1e6;

float as_learnt(sieve_param param, double value) {
    const float f = as_float(param, value);
    if (std::fabs(value) > kLearntParamLimit)
        fail(SIEVE_ERROR_INVALID_PARAMETER, std::string(param_name(param)) + " must be in [-1e6, 1e6], got " +
                                                format_value(value) +
                                                " (a larger value lets the slot's learnt state overflow float)");
    return f;
}

// A window over the slot's history: an integer in [0, capacity]. llama.cpp's
// -1 means "the context", which Sieve does not have: refused, with the way out.
int32_t as_last_n(sieve_param param, double value, int32_t capacity) {
    const std::string name = param_name(param);
    if (value != std::floor(value) || value < 0)
        fail(SIEVE_ERROR_INVALID_PARAMETER,
             name + " must be an integer >= 0 (0 = off), got " + format_value(value) +
                 (value == -1 ? " (llama.cpp's -1 means the context size; give the window in tokens)" : ""));
    if (value > capacity)
        fail(SIEVE_ERROR_CAPACITY, name + " " + format_value(value) + " is beyond the chain's history capacity " +
                                       std::to_string(capacity) + " (sieve_chain_desc.history_capacity)");
    return static_cast<int32_t>(value);
}

void row_out_of_range(int32_t row, int32_t max_rows) {
    fail(SIEVE_ERROR_INVALID_ARGUMENT,
         "row " + std::to_string(row) + " is outside the chain's " + std::to_string(max_rows) + " rows");
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
    if (desc.max_slots < 0) fail(SIEVE_ERROR_INVALID_ARGUMENT, "negative max_slots");
    if (desc.history_capacity < 0 || desc.history_capacity > kMaxHistoryCapacity)
        fail(desc.history_capacity < 0 ? SIEVE_ERROR_INVALID_ARGUMENT : SIEVE_ERROR_CAPACITY,
             "history_capacity " + std::to_string(desc.history_capacity) + " outside 0.." +
                 std::to_string(kMaxHistoryCapacity) + " (0 = the default " +
                 std::to_string(kDefaultHistoryCapacity) + ")");
    ChainConfig c;
    std::string message;
    sieve_status s = ref::parse_chain(desc.samplers, &c.samplers, &message);
    if (s != SIEVE_OK) fail(s, message);
    c.max_rows = desc.max_rows;
    c.max_vocab = desc.max_vocab;
    // A subnormal temperature reads as 0 (greedy masking), as a subnormal
    // logit does: a device may flush it (docs/semantics.md).
    c.temperature = ref::flush_subnormal(desc.temperature);
    c.seed = desc.seed;
    c.min_keep = desc.min_keep;
    c.max_slots = desc.max_slots > 0 ? desc.max_slots : desc.max_rows;
    c.history_capacity = desc.history_capacity > 0 ? desc.history_capacity : kDefaultHistoryCapacity;
    return c;
}

ChainImpl::ChainImpl(const ChainConfig& config) : config_(config) {
    rows_.resize(static_cast<size_t>(config.max_rows));
    for (auto& r : rows_) {
        r.temperature = config.temperature;
        r.seed = resolve_seed(config.seed);
        r.min_keep = config.min_keep;
        // llama.cpp's default -1 is "the context": Sieve's is the slot's history;
        // its repeat_last_n 64, within the history.
        r.dry_penalty_last_n = config.history_capacity;
        r.penalty_last_n = std::min(r.penalty_last_n, config.history_capacity);
    }
    slot_of_row_.resize(static_cast<size_t>(config.max_rows));
    for (int32_t r = 0; r < config.max_rows; ++r) slot_of_row_[static_cast<size_t>(r)] = r < config.max_slots ? r : -1;
}

void ChainImpl::set_param(int32_t row, sieve_param param, double value) {
    if (row < -1 || row >= config_.max_rows) row_out_of_range(row, config_.max_rows);
    const char* name = param_name(param);
    if (!name) fail(SIEVE_ERROR_INVALID_PARAMETER, "unknown parameter " + std::to_string(static_cast<int>(param)));
    if (std::isnan(value) || std::isinf(value))
        fail(SIEVE_ERROR_INVALID_PARAMETER, std::string(name) + " must be finite (got " + format_value(value) + ")");
    // set_one validates before it writes and its checks do not depend on the row,
    // so a refused value leaves every row unchanged.
    if (row == -1) {
        for (int32_t r = 0; r < config_.max_rows; ++r) set_one(r, param, value);
    } else {
        set_one(row, param, value);
    }
}

void ChainImpl::set_one(int32_t row, sieve_param param, double value) {
    Row& r = rows_[static_cast<size_t>(row)];
    switch (param) {
    case SIEVE_PARAM_TEMPERATURE:
        if (std::fabs(value) > 3.0e38) fail(SIEVE_ERROR_INVALID_PARAMETER, "temperature out of float range");
        r.temperature = ref::flush_subnormal(static_cast<float>(value));  // as on creation
        return;
    case SIEVE_PARAM_SEED:
        if (value < 0 || value > 4294967295.0 || value != std::floor(value))
            fail(SIEVE_ERROR_INVALID_PARAMETER, "seed must be an integer in [0, 4294967295]");
        r.seed = resolve_seed(static_cast<uint32_t>(value));
        // A new seed restarts the step of the row's slot (a new stream).
        if (slot_of(row) >= 0) slot_record(slot_of(row))[S_STEP] = 0;
        return;
    case SIEVE_PARAM_MIN_KEEP:
        if (value < 0 || value > 2147483647.0 || value != std::floor(value))
            fail(SIEVE_ERROR_INVALID_PARAMETER, "min_keep must be a non-negative integer");
        r.min_keep = static_cast<int32_t>(value);
        return;
    case SIEVE_PARAM_TOP_K:
        // llama.cpp's top_k is an int32; <= 0 turns top-k off.
        if (value < -2147483648.0 || value > 2147483647.0 || value != std::floor(value))
            fail(SIEVE_ERROR_INVALID_PARAMETER,
                 "top_k must be an integer in [-2147483648, 2147483647] (<= 0 = off), got " + format_value(value));
        r.top_k = static_cast<int32_t>(value);
        return;
    case SIEVE_PARAM_TOP_P: r.top_p = as_float(param, value); return;
    case SIEVE_PARAM_MIN_P: r.min_p = as_float(param, value); return;
    case SIEVE_PARAM_TYPICAL_P: r.typical_p = as_float(param, value); return;
    case SIEVE_PARAM_TOP_N_SIGMA: r.top_n_sigma = as_float(param, value); return;
    case SIEVE_PARAM_XTC_PROBABILITY: r.xtc_probability = as_float(param, value); return;
    case SIEVE_PARAM_XTC_THRESHOLD: r.xtc_threshold = as_float(param, value); return;
    case SIEVE_PARAM_DYNATEMP_RANGE: {
        r.dynatemp_range = as_float(param, value);
        return;
    }
    case SIEVE_PARAM_DYNATEMP_EXPONENT: r.dynatemp_exponent = as_float(param, value); return;
    case SIEVE_PARAM_REPEAT_LAST_N: r.penalty_last_n = as_last_n(param, value, config_.history_capacity); return;
    case SIEVE_PARAM_REPEAT_PENALTY:
        // llama.cpp divides positive logits by it: 0 or less has no meaning.
        if (!(value > 0))
            fail(SIEVE_ERROR_INVALID_PARAMETER, "repeat_penalty must be > 0 (1 = off), got " + format_value(value));
        r.penalty_repeat = as_float(param, value);
        return;
    case SIEVE_PARAM_FREQUENCY_PENALTY: r.penalty_freq = as_float(param, value); return;
    case SIEVE_PARAM_PRESENCE_PENALTY: r.penalty_present = as_float(param, value); return;
    case SIEVE_PARAM_DRY_MULTIPLIER: r.dry_multiplier = as_float(param, value); return;
    case SIEVE_PARAM_DRY_BASE: r.dry_base = as_float(param, value); return;
    case SIEVE_PARAM_DRY_ALLOWED_LENGTH:
        if (value < 0 || value > 65536 || value != std::floor(value))
            fail(SIEVE_ERROR_INVALID_PARAMETER, "dry_allowed_length must be an integer in [0, 65536], got " +
                                                    format_value(value));
        r.dry_allowed_length = static_cast<int32_t>(value);
        return;
    case SIEVE_PARAM_DRY_PENALTY_LAST_N: r.dry_penalty_last_n = as_last_n(param, value, config_.history_capacity); return;
    case SIEVE_PARAM_MIROSTAT_TAU: r.mirostat_tau = as_learnt(param, value); return;
    case SIEVE_PARAM_MIROSTAT_ETA: r.mirostat_eta = as_learnt(param, value); return;
    case SIEVE_PARAM_ADAPTIVE_TARGET: r.adaptive_target = as_learnt(param, value); return;
    case SIEVE_PARAM_ADAPTIVE_DECAY: r.adaptive_decay = as_float(param, value); return;
    }
    fail(SIEVE_ERROR_INVALID_PARAMETER, "unknown parameter " + std::to_string(static_cast<int>(param)));
}

double ChainImpl::get_param(int32_t row, sieve_param param) const {
    if (row < 0 || row >= config_.max_rows)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(row) + " is outside the chain");
    const Row& r = rows_[static_cast<size_t>(row)];
    switch (param) {
    case SIEVE_PARAM_TEMPERATURE: return r.temperature;
    case SIEVE_PARAM_SEED: return r.seed;
    case SIEVE_PARAM_MIN_KEEP: return r.min_keep;
    case SIEVE_PARAM_TOP_K: return r.top_k;
    case SIEVE_PARAM_TOP_P: return r.top_p;
    case SIEVE_PARAM_MIN_P: return r.min_p;
    case SIEVE_PARAM_TYPICAL_P: return r.typical_p;
    case SIEVE_PARAM_TOP_N_SIGMA: return r.top_n_sigma;
    case SIEVE_PARAM_XTC_PROBABILITY: return r.xtc_probability;
    case SIEVE_PARAM_XTC_THRESHOLD: return r.xtc_threshold;
    case SIEVE_PARAM_DYNATEMP_RANGE: return r.dynatemp_range;
    case SIEVE_PARAM_DYNATEMP_EXPONENT: return r.dynatemp_exponent;
    case SIEVE_PARAM_REPEAT_LAST_N: return r.penalty_last_n;
    case SIEVE_PARAM_REPEAT_PENALTY: return r.penalty_repeat;
    case SIEVE_PARAM_FREQUENCY_PENALTY: return r.penalty_freq;
    case SIEVE_PARAM_PRESENCE_PENALTY: return r.penalty_present;
    case SIEVE_PARAM_DRY_MULTIPLIER: return r.dry_multiplier;
    case SIEVE_PARAM_DRY_BASE: return r.dry_base;
    case SIEVE_PARAM_DRY_ALLOWED_LENGTH: return r.dry_allowed_length;
    case SIEVE_PARAM_DRY_PENALTY_LAST_N: return r.dry_penalty_last_n;
    case SIEVE_PARAM_MIROSTAT_TAU: return r.mirostat_tau;
    case SIEVE_PARAM_MIROSTAT_ETA: return r.mirostat_eta;
    case SIEVE_PARAM_ADAPTIVE_TARGET: return r.adaptive_target;
    case SIEVE_PARAM_ADAPTIVE_DECAY: return r.adaptive_decay;
    }
    fail(SIEVE_ERROR_INVALID_PARAMETER, "unknown parameter " + std::to_string(static_cast<int>(param)));
}

void ChainImpl::set_logit_bias(int32_t row, const int32_t* tokens, const float* biases, int32_t n) {
    if (row < -1 || row >= config_.max_rows) row_out_of_range(row, config_.max_rows);
    if (n < 0) fail(SIEVE_ERROR_INVALID_ARGUMENT, "logit bias count " + std::to_string(n) + " is negative");
    std::vector<ref::LogitBias> list;
    if (n > 0) {
        if (n > max_bias_entries())
            fail(SIEVE_ERROR_CAPACITY, "logit bias of " + std::to_string(n) + " entries; this backend takes at most " +
                                           std::to_string(max_bias_entries()) + " per row");
        if (!tokens || !biases)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, std::string(!tokens ? "tokens" : "biases") + " is NULL");
        list.reserve(static_cast<size_t>(n));
        for (int32_t i = 0; i < n; ++i) {
            const int32_t t = tokens[i];
            const float b = biases[i];
            // llama.cpp skips ids outside the vocabulary silently; Sieve refuses them.
            if (t < 0 || t >= config_.max_vocab)
                fail(SIEVE_ERROR_INVALID_ARGUMENT, "logit bias entry " + std::to_string(i) + ": token " +
                                                       std::to_string(t) + " is outside the chain's vocab 0.." +
                                                       std::to_string(config_.max_vocab - 1));
            if (std::isnan(b) || b == INFINITY)
                fail(SIEVE_ERROR_INVALID_ARGUMENT, "logit bias entry " + std::to_string(i) + " (token " +
                                                       std::to_string(t) + "): bias " + format_value(b) +
                                                       " is refused (finite or -inf only; -inf bans the token)");
            list.push_back(ref::LogitBias{t, b});
        }
    }
    for (int32_t r = 0; r < config_.max_rows; ++r)
        if (row == -1 || r == row) {
            rows_[static_cast<size_t>(r)].logit_bias = list;
            rows_[static_cast<size_t>(r)].inputs_version = ++inputs_versions_;
        }
}

void ChainImpl::set_token_bitmask(int32_t row, const uint32_t* words, int32_t n_words) {
    if (row < -1 || row >= config_.max_rows) row_out_of_range(row, config_.max_rows);
    std::vector<uint32_t> mask;
    if (words) {
        const int64_t max_words = (static_cast<int64_t>(config_.max_vocab) + 31) / 32;
        if (n_words <= 0)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "token bitmask word count " + std::to_string(n_words) +
                                                   " is not positive (words = NULL clears the mask)");
        if (n_words > max_words)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "token bitmask of " + std::to_string(n_words) +
                                                   " words is longer than the chain's vocab " +
                                                   std::to_string(config_.max_vocab) + " needs (" +
                                                   std::to_string(max_words) + " words)");
        mask.assign(words, words + n_words);
    }
    for (int32_t r = 0; r < config_.max_rows; ++r)
        if (row == -1 || r == row) {
            rows_[static_cast<size_t>(r)].token_bitmask = mask;
            rows_[static_cast<size_t>(r)].inputs_version = ++inputs_versions_;
        }
}

void ChainImpl::reset(int32_t row) {
    if (row < -1 || row >= config_.max_rows)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(row) + " is outside the chain");
    if (row == -1) {
        for (int32_t s = 0; s < config_.max_slots; ++s) slot_reset(slot_record(s), history_capacity());
        return;
    }
    if (slot_of(row) < 0) fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(row) + " maps to no slot");
    slot_reset(slot_record(slot_of(row)), history_capacity());
}

void ChainImpl::check_slot(int32_t slot, const char* what) const {
    if (slot < 0 || slot >= config_.max_slots)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, std::string(what) + " " + std::to_string(slot) + " is outside the chain's " +
                                               std::to_string(config_.max_slots) + " slots");
}

void ChainImpl::set_slots(const int32_t* slots, int32_t n) {
    if (n < 0 || n > config_.max_rows)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "slot map of " + std::to_string(n) + " rows; the chain has " +
                                               std::to_string(config_.max_rows));
    if (n > 0 && !slots) fail(SIEVE_ERROR_INVALID_ARGUMENT, "slots is NULL");
    for (int32_t r = 0; r < n; ++r) {
        if (slots[r] < 0 || slots[r] >= config_.max_slots)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(r) + ": slot " + std::to_string(slots[r]) +
                                                   " is outside the chain's " + std::to_string(config_.max_slots) +
                                                   " slots");
    }
    for (int32_t r = 0; r < config_.max_rows; ++r)
        slot_of_row_[static_cast<size_t>(r)] = r < n ? slots[r] : (r < config_.max_slots ? r : -1);
}

void ChainImpl::check_slots(int32_t rows, const char* unit) const {
    const std::string one = unit;
    // A verification's sequence s takes row s's slot: say so where it is one.
    const std::string whose = one == "row" ? "" : " (" + one + " s takes row s's slot)";
    std::vector<int32_t> owner(static_cast<size_t>(config_.max_slots), -1);
    for (int32_t r = 0; r < rows; ++r) {
        const int32_t s = slot_of(r);
        if (s < 0)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, one + " " + std::to_string(r) + " maps to no slot" + whose +
                                                   " (the chain has " + std::to_string(config_.max_slots) +
                                                   " slots; map rows with sieve_chain_set_slots)");
        if (owner[static_cast<size_t>(s)] >= 0)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, one + "s " + std::to_string(owner[static_cast<size_t>(s)]) + " and " +
                                                   std::to_string(r) + " both map to slot " + std::to_string(s) +
                                                   whose + " (two appends to one history have no order)");
        owner[static_cast<size_t>(s)] = r;
    }
}

void ChainImpl::accept(int32_t row, const int32_t* tokens, int32_t n) {
    if (row < 0 || row >= config_.max_rows) row_out_of_range(row, config_.max_rows);
    if (slot_of(row) < 0) fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(row) + " maps to no slot");
    if (n < 0) fail(SIEVE_ERROR_INVALID_ARGUMENT, "token count " + std::to_string(n) + " is negative");
    if (n > 0 && !tokens) fail(SIEVE_ERROR_INVALID_ARGUMENT, "tokens is NULL");
    for (int32_t i = 0; i < n; ++i)
        if (tokens[i] < 0 || tokens[i] >= config_.max_vocab)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "token " + std::to_string(i) + " (" + std::to_string(tokens[i]) +
                                                   ") is outside the chain's vocab 0.." +
                                                   std::to_string(config_.max_vocab - 1));
    // Only the newest `capacity` tokens can stay.
    const int32_t keep = std::min(n, config_.history_capacity);
    slot_append(slot_record(slot_of(row)), history_capacity(), tokens + (n - keep), static_cast<size_t>(keep));
}

void ChainImpl::reset_slot(int32_t slot) {
    check_slot(slot, "slot");
    slot_reset(slot_record(slot), history_capacity());
}

void ChainImpl::copy_slot(int32_t src, int32_t dst) {
    check_slot(src, "source slot");
    check_slot(dst, "destination slot");
    if (src == dst) return;
    const uint32_t* from = slot_record(src);
    std::memcpy(slot_record(dst), from, slot_words(history_capacity()) * 4);
}

size_t ChainImpl::slot_state_size() const { return slot_blob_bytes(history_capacity()); }

void ChainImpl::save_slot(int32_t slot, void* data, size_t size) {
    check_slot(slot, "slot");
    if (!data) fail(SIEVE_ERROR_INVALID_ARGUMENT, "data is NULL");
    if (size < slot_state_size())
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "buffer of " + std::to_string(size) + " bytes; a slot state needs " +
                                               std::to_string(slot_state_size()));
    slot_save(slot_record(slot), history_capacity(), data);
}

void ChainImpl::restore_slot(int32_t slot, const void* data, size_t size) {
    check_slot(slot, "slot");
    if (!data) fail(SIEVE_ERROR_INVALID_ARGUMENT, "data is NULL");
    slot_restore(slot_record(slot), history_capacity(), static_cast<uint32_t>(config_.max_vocab), data, size);
}

std::vector<int32_t> ChainImpl::slot_history(int32_t slot) {
    check_slot(slot, "slot");
    return sieve::slot_history(slot_record(slot), history_capacity());
}

void ChainImpl::set_dry_breakers(int32_t row, const int32_t* tokens, const int32_t* lengths, int32_t n) {
    if (row < -1 || row >= config_.max_rows) row_out_of_range(row, config_.max_rows);
    if (n < 0) fail(SIEVE_ERROR_INVALID_ARGUMENT, "breaker count " + std::to_string(n) + " is negative");
    if (n > kMaxDryBreakers)
        fail(SIEVE_ERROR_CAPACITY, std::to_string(n) + " DRY sequence breakers; at most " +
                                       std::to_string(kMaxDryBreakers) + " per row");
    if (n > 0 && (!tokens || !lengths))
        fail(SIEVE_ERROR_INVALID_ARGUMENT, std::string(!tokens ? "tokens" : "lengths") + " is NULL");
    std::vector<std::vector<int32_t>> breakers;
    int32_t total = 0;
    for (int32_t i = 0; i < n; ++i) {
        const int32_t len = lengths[i];
        if (len <= 0 || len > kMaxDryBreakerLength)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "DRY sequence breaker " + std::to_string(i) + " has " +
                                                   std::to_string(len) + " tokens; a breaker has 1.." +
                                                   std::to_string(kMaxDryBreakerLength));
        if (total + len > kMaxDryBreakerTokens)
            fail(SIEVE_ERROR_CAPACITY, "DRY sequence breakers of more than " + std::to_string(kMaxDryBreakerTokens) +
                                           " tokens in all");
        std::vector<int32_t> seq(tokens + total, tokens + total + len);
        for (int32_t t : seq)
            if (t < 0 || t >= config_.max_vocab)
                fail(SIEVE_ERROR_INVALID_ARGUMENT, "DRY sequence breaker " + std::to_string(i) + ": token " +
                                                       std::to_string(t) + " is outside the chain's vocab 0.." +
                                                       std::to_string(config_.max_vocab - 1));
        total += len;
        breakers.push_back(std::move(seq));
    }
    for (int32_t r = 0; r < config_.max_rows; ++r)
        if (row == -1 || r == row) rows_[static_cast<size_t>(r)].dry_sequence_breakers = breakers;
}

void ChainImpl::check_call(const float* logits, int32_t rows, int32_t vocab) const {
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

sieve_status ChainImpl::distribution(const LogitsView& logits, int32_t row, std::vector<ref::Weighted>* out,
                                     std::string* message) {
    std::vector<std::vector<ref::Weighted>> outs;
    std::vector<sieve_status> statuses;
    const sieve_status s = distributions(logits, {row}, &outs, &statuses, message);
    *out = std::move(outs[0]);
    return s;
}

void ChainImpl::set_logprobs(int32_t n) {
    if (n < -1 || n > SIEVE_MAX_TOP_LOGPROBS)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "logprobs n " + std::to_string(n) + " is outside -1.." +
                                               std::to_string(SIEVE_MAX_TOP_LOGPROBS) +
                                               " (-1 off, 0 the token's, 1..20 also the top n)");
    logprobs_n_ = n;
    last_logprobs_.clear();
    last_logprobs_valid_.clear();
}

void ChainImpl::begin_logprobs(int32_t rows) {
    last_logprobs_.assign(logprobs_n_ >= 0 ? static_cast<size_t>(rows) : 0, sieve_logprobs{});
    last_logprobs_valid_.assign(last_logprobs_.size(), false);
}

void ChainImpl::store_logprobs(int32_t row, const ref::RawLogprobs& raw) {
    sieve_logprobs& out = last_logprobs_[static_cast<size_t>(row)];
    out = sieve_logprobs{};
    out.raw_logprob = static_cast<float>(raw.token_logprob);
    out.raw_p = static_cast<float>(std::exp(raw.token_logprob));
    out.n_top = static_cast<int32_t>(raw.top.size());
    for (size_t i = 0; i < raw.top.size(); ++i) {
        out.top_ids[i] = raw.top[i].id;
        out.top_logprobs[i] = static_cast<float>(raw.top[i].p);
    }
    last_logprobs_valid_[static_cast<size_t>(row)] = true;
}

sieve_logprobs ChainImpl::logprobs(int32_t row) const {
    if (logprobs_n_ < 0 && last_logprobs_.empty())
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "logprobs are off (sieve_chain_set_logprobs)");
    if (last_logprobs_.empty())
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "no sampling call with logprobs has run since they were asked for");
    if (row < 0 || static_cast<size_t>(row) >= last_logprobs_.size())
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(row) + " is outside the last call's rows 0.." +
                                               std::to_string(last_logprobs_.size() - 1));
    if (!last_logprobs_valid_[static_cast<size_t>(row)])
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(row) + " failed in the last call: it has no logprobs");
    return last_logprobs_[static_cast<size_t>(row)];
}

sieve_status ChainImpl::sample_device(const sieve_vulkan_logits&, sieve_token*, std::string*) {
    fail(SIEVE_ERROR_INVALID_ARGUMENT, "logits in a VkBuffer need a Vulkan context on the buffer's device "
                                       "(sieve_context_create_vulkan); this chain runs on the CPU backend");
}

void ChainImpl::sample_async(const sieve_vulkan_logits& logits, const sieve_vulkan_sync*) {
    sample_device(logits, nullptr, nullptr);  // refuses with sample_device's words
}

void ChainImpl::record(VkCommandBuffer_T*, const sieve_vulkan_logits& logits, const sieve_vulkan_sync*) {
    sample_device(logits, nullptr, nullptr);
}

sieve_status ChainImpl::wait(uint64_t, sieve_token*, std::string*) {
    fail(SIEVE_ERROR_INVALID_ARGUMENT, "nothing to wait for: no sieve_sample_vulkan_async call is in flight");
}

sieve_status ChainImpl::finish_recorded(sieve_token*, std::string*) {
    fail(SIEVE_ERROR_INVALID_ARGUMENT, "nothing to collect: no sieve_chain_record call is in flight");
}

void ChainImpl::check_idle() const {
    if (const char* finish = in_flight())
        fail(SIEVE_ERROR_PENDING, std::string("a sampling call is in flight on this chain; ") + finish +
                                      " finishes it before the chain takes another call");
}

int64_t ChainImpl::check_layout(const void* data, int32_t dtype, int32_t rows, int32_t vocab,
                                int64_t row_stride) const {
    if (dtype != SIEVE_DTYPE_F32 && dtype != SIEVE_DTYPE_F16 && dtype != SIEVE_DTYPE_BF16)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "unknown dtype " + std::to_string(dtype));
    check_call(static_cast<const float*>(data), rows, vocab);
    const int64_t stride = row_stride == 0 ? vocab : row_stride;
    if (stride < vocab)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "row_stride " + std::to_string(row_stride) + " is smaller than the vocab " +
                                               std::to_string(vocab));
    if (stride > (INT64_MAX / 4) / rows)
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "row_stride " + std::to_string(stride) + " overflows the address range");
    return stride;
}

LogitsView ChainImpl::check_call(const sieve_logits* logits) const {
    if (!logits) fail(SIEVE_ERROR_INVALID_ARGUMENT, "logits is NULL");
    if (logits->struct_size < sizeof(sieve_logits))
        fail(SIEVE_ERROR_INVALID_ARGUMENT, "sieve_logits.struct_size is " + std::to_string(logits->struct_size) +
                                               "; set it to sizeof(sieve_logits) (sieve_logits_init does)");
    const int64_t stride =
        check_layout(logits->data, raw_enum(logits->dtype), logits->rows, logits->vocab, logits->row_stride);
    return {logits->data, logits->dtype, logits->rows, logits->vocab, stride};
}

void ChainImpl::check_row_inputs(int32_t rows, int32_t vocab) {
    check_history_tokens(rows, vocab);
    const size_t needed = (static_cast<size_t>(vocab) + 31) / 32;
    for (int32_t i = 0; i < rows && i < config_.max_rows; ++i) {
        const Row& r = rows_[static_cast<size_t>(i)];
        if (!r.token_bitmask.empty() && r.token_bitmask.size() < needed)
            fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(i) + ": the token bitmask has " +
                                                   std::to_string(r.token_bitmask.size()) + " words; vocab " +
                                                   std::to_string(vocab) + " needs " + std::to_string(needed));
        for (const ref::LogitBias& b : r.logit_bias)
            if (b.token >= vocab)
                fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(i) + ": logit bias token " +
                                                       std::to_string(b.token) + " is outside this call's vocab 0.." +
                                                       std::to_string(vocab - 1));
    }
}

// Only a call over fewer tokens than the chain's capacity can meet them: the
// slots take ids below max_vocab, and draws are below the call's vocab.
void ChainImpl::check_history_tokens(int32_t rows, int32_t vocab) {
    if (vocab >= config_.max_vocab) return;
    bool penalties = false, dry = false;
    for (auto k : config_.samplers) {
        penalties = penalties || k == ref::SamplerKind::Penalties;
        dry = dry || k == ref::SamplerKind::Dry;
    }
    if (!penalties && !dry) return;
    for (int32_t r = 0; r < rows; ++r) {
        if (dry)
            for (const auto& seq : rows_[static_cast<size_t>(r)].dry_sequence_breakers)
                for (int32_t t : seq)
                    if (t >= vocab)
                        fail(SIEVE_ERROR_INVALID_PARAMETER, "row " + std::to_string(r) + ": DRY sequence breaker token " +
                                                                std::to_string(t) + " is outside this call's vocab 0.." +
                                                                std::to_string(vocab - 1));
        if (slot_of(r) < 0) continue;  // check_slots reports it
        for (int32_t t : sieve::slot_history(slot_record(slot_of(r)), history_capacity()))
            if (t >= vocab)
                fail(SIEVE_ERROR_INVALID_ARGUMENT, "row " + std::to_string(r) + ": the slot's history has token " +
                                                       std::to_string(t) + ", outside this call's vocab 0.." +
                                                       std::to_string(vocab - 1));
    }
}

ref::RowParams ChainImpl::row_params(int32_t row) const { return rows_[static_cast<size_t>(row)]; }

bool ChainImpl::greedy_terminal() const { return config_.samplers.back() == ref::SamplerKind::Greedy; }

float ChainImpl::row_scale(int32_t row) const {
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
