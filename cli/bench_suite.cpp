#include "bench_suite.hpp"

#include "exit_codes.hpp"

#include <algorithm>
#include <numeric>

namespace sieve_cli {
namespace {

// A named chain: its samplers ("" = llama.cpp's default chain) and the
// truncation parameters it runs with; the rest are llama.cpp's defaults.
struct ChainSpec {
    const char* label;
    const char* samplers;
    int32_t top_k;
    float top_p;
    int32_t history_last_n;  // > 0: penalties and DRY on over this window (kPenalties)
};
constexpr const char* kDefaultOrder = "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature";
constexpr ChainSpec kChains[] = {
    {"greedy", "greedy", 40, 0.95f, 0},
    {"dist", "temperature;dist", 40, 0.95f, 0},
    {"default", "", 40, 0.95f, 0},                        // llama.cpp's default chain and defaults
    {"default_topk0", "", 0, 0.95f, 0},                   // the same with top-k off (a common setting)
    {"top_p", "top_p;temperature", 40, 0.9f, 0},          // top-p 0.9, no top-k
    {"min_p", "min_p;temperature", 40, 0.95f, 0},         // min-p 0.05
    {"top_k1000", "top_k;temperature", 1000, 0.95f, 0},   // a large k
    // llama.cpp's default chain with repetition penalties and DRY on over a
    // full history: llama.cpp's default window, and a long-context one.
    {"penalties_dry_n64", kDefaultOrder, 40, 0.95f, 64},
    {"penalties_dry_n4096", kDefaultOrder, 40, 0.95f, 4096},
};

// The strengths of the history cases (docs/bench.md): llama.cpp-typical
// settings with every term of both samplers on. The cost does not depend on
// them, only on the windows and the history.
struct PenaltySettings {
    float repeat = 1.1f;      // --repeat-penalty 1.1: the common setting (llama.cpp's default before 1.0)
    float frequency = 0.1f;   // --frequency-penalty / --presence-penalty: mild, so their terms run too
    float presence = 0.1f;
    float dry_multiplier = 0.8f;  // DRY's recommended settings (its author's, llama.cpp's README)
    float dry_base = 1.75f;
    int32_t dry_allowed_length = 2;
};
constexpr PenaltySettings kPenalties{};
// Breakers: four single tokens, as llama.cpp's default "\n", ":", "\"", "*"
// are; here the row-0 tokens of these logit ranks (frequent, as those are).
constexpr int32_t kBreakerRanks[] = {3, 7, 12, 20};
constexpr int32_t kVocabs[] = {32000, 128256, 151936, 262144};
constexpr int32_t kRows[] = {1, 8, 64, 256};
constexpr const char* kShapes[] = {"zipf", "flat", "peaked"};

const ChainSpec& chain_spec(const std::string& label) {
    for (const ChainSpec& c : kChains)
        if (label == c.label) return c;
    throw CliError(kExitUsage, "internal: no chain '" + label + "'");
}

std::string case_name(const std::string& chain, const std::string& shape, int32_t vocab, int32_t rows) {
    return chain + "/" + shape + "/v" + std::to_string(vocab) + "/b" + std::to_string(rows);
}

// The verify suite: both modes, 4 and 8 drafts, 1 and 16 sequences, at Qwen's
// vocabulary. Peaked rows (one token far above the rest) and drafts of each
// position's argmax: nearly every draft is accepted, so every position runs.
constexpr const char* kVerifyModes[] = {"match", "rejection"};
constexpr int32_t kVerifyDrafts[] = {4, 8};
constexpr int32_t kVerifySequences[] = {1, 16};

BenchCase make_case(const std::string& chain, const std::string& shape, int32_t vocab, int32_t rows,
                    const SamplingOptions& base) {
    const ChainSpec& spec = chain_spec(chain);
    BenchCase c;
    c.name = case_name(chain, shape, vocab, rows);
    c.chain = chain;
    c.shape = shape;
    c.sampling = base;
    c.sampling.samplers = spec.samplers;
    c.sampling.top_k = spec.top_k;
    c.sampling.top_p = spec.top_p;
    c.vocab = vocab;
    c.rows = rows;
    c.history_last_n = spec.history_last_n;
    if (spec.history_last_n > 0) {
        SamplingOptions& o = c.sampling;
        o.repeat_last_n = spec.history_last_n;
        o.repeat_penalty = kPenalties.repeat;
        o.frequency_penalty = kPenalties.frequency;
        o.presence_penalty = kPenalties.presence;
        o.dry_multiplier = kPenalties.dry_multiplier;
        o.dry_base = kPenalties.dry_base;
        o.dry_allowed_length = kPenalties.dry_allowed_length;
        o.dry_penalty_last_n = spec.history_last_n;
        o.history_capacity = spec.history_last_n;  // the history stays full: each drawn token pushes one out
        o.history.clear();
        o.dry_sequence_breakers.clear();           // case_history's, set by the runner
        o.mirostat = 0;
    }
    return c;
}

} // namespace

std::string case_name(const BenchCase& c) {
    const std::string name = case_name(c.chain, c.shape, c.vocab, c.rows);
    return c.verify.empty() ? name : "verify_" + c.verify + "_d" + std::to_string(c.drafts) + "/" + name;
}

const char* suite_names_help() {
    return "default (a few minutes on lavapipe), full (every combination: hours) or verify (speculative decoding: "
           "sieve_verify against sieve_sample position by position)";
}

std::vector<BenchCase> suite_cases(const std::string& suite, const SamplingOptions& base) {
    std::vector<BenchCase> cases;
    auto add = [&](const std::string& chain, const std::string& shape, int32_t vocab, int32_t rows) {
        const std::string name = case_name(chain, shape, vocab, rows);
        for (const BenchCase& c : cases)
            if (c.name == name) return;  // the sweeps share their centre point
        cases.push_back(make_case(chain, shape, vocab, rows, base));
    };
    if (suite == "default") {
        // Every chain at Qwen's vocabulary, one row, LM-like logits...
        for (const ChainSpec& c : kChains) add(c.label, "zipf", 151936, 1);
        // ...the default chain across vocabularies (latency vs vocab)...
        for (int32_t v : kVocabs) add("default", "zipf", v, 1);
        // ...across batches at 32000 (256 x 151936 f32 logits pass the 128 MiB
        // storage-buffer range of lavapipe and many phones)...
        for (int32_t b : kRows) add("default", "zipf", 32000, b);
        // ...and on every logits shape.
        for (const char* s : kShapes) add("default", s, 151936, 1);
        return cases;
    }
    if (suite == "full") {
        // Chains innermost: consecutive cases share one set of logits.
        for (const char* s : kShapes)
            for (int32_t v : kVocabs)
                for (int32_t b : kRows)
                    for (const ChainSpec& c : kChains) add(c.label, s, v, b);
        return cases;
    }
    if (suite == "verify") {
        for (const char* mode : kVerifyModes)
            for (int32_t d : kVerifyDrafts)
                for (int32_t b : kVerifySequences) {
                    BenchCase c = make_case("default", "peaked", 151936, b, base);
                    c.verify = mode;
                    c.drafts = d;
                    c.name = case_name(c);
                    cases.push_back(c);
                }
        return cases;
    }
    if (suite == "tiny") {
        // For the test suite: small, fast, and one case of each kind of outcome.
        add("greedy", "zipf", 4096, 1);
        add("default", "zipf", 4096, 2);
        add("dist", "peaked", 3000, 1);
        add("penalties_dry_n64", "zipf", 4096, 2);   // compared with default/zipf/v4096/b2: +1 dispatch
        add("penalties_dry_n4096", "zipf", 4096, 2);
        return cases;
    }
    throw CliError(kExitUsage, "unknown --suite '" + suite + "' (suites: " + suite_names_help() + ")");
}

BenchCase file_case(std::shared_ptr<const Logits> logits, const SamplingOptions& sampling) {
    BenchCase c;
    c.chain = samplers_label(sampling);
    c.shape = "file";
    c.sampling = sampling;
    c.vocab = logits->vocab;
    c.rows = logits->rows;
    c.name = c.chain + "/file/v" + std::to_string(c.vocab) + "/b" + std::to_string(c.rows);
    c.logits = std::move(logits);
    return c;
}

std::vector<BenchCase> filter_cases(const std::vector<BenchCase>& cases, const std::string& filter) {
    std::vector<BenchCase> out;
    for (const BenchCase& c : cases)
        if (filter.empty() || c.name.find(filter) != std::string::npos) out.push_back(c);
    return out;
}

Logits shape_logits(const std::string& shape, int32_t rows, int32_t vocab) {
    if (shape == "flat") return flat_logits(rows, vocab);
    if (shape == "peaked") return peaked_logits(rows, vocab);
    return zipf_logits(rows, vocab);
}

namespace {

// splitmix64: a portable stream of 64-bit words.
struct Mix {
    uint64_t x;
    uint64_t next() {
        uint64_t z = (x += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t below(uint64_t n) { return next() % n; }  // n is small: the bias is negligible
};

// The ids of a row by logit, descending (ties by lower id), the first `n`.
std::vector<int32_t> top_ids(const Logits& logits, int32_t row, int32_t n) {
    std::vector<int32_t> ids(static_cast<size_t>(logits.vocab));
    std::iota(ids.begin(), ids.end(), 0);
    const float* l = logits.row(row);
    auto before = [l](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); };
    const size_t k = static_cast<size_t>(std::min(n, logits.vocab));
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), before);
    ids.resize(k);
    return ids;
}

} // namespace

CaseHistory case_history(const Logits& logits, int32_t n) {
    CaseHistory h;
    if (n <= 0) return h;
    // Words come from each row's 1024 likeliest tokens, rank r with weight
    // 1/(r+1) (Zipf, as text is), in fixed point.
    constexpr int32_t kWords = 1024;
    const std::vector<int32_t> row0 = top_ids(logits, 0, kWords);
    std::vector<int32_t> breakers;
    for (int32_t r : kBreakerRanks)
        if (r < static_cast<int32_t>(row0.size())) breakers.push_back(row0[static_cast<size_t>(r)]);
    if (breakers.empty()) breakers.push_back(row0.back());
    for (int32_t b : breakers) h.breakers.push_back({b});
    for (int32_t row = 0; row < logits.rows; ++row) {
        std::vector<int32_t> words = top_ids(logits, row, kWords);
        words.erase(std::remove_if(words.begin(), words.end(),
                                   [&](int32_t id) { return std::find(breakers.begin(), breakers.end(), id) != breakers.end(); }),
                    words.end());
        if (words.empty()) words = breakers;  // a tiny vocabulary: breakers are all there is
        std::vector<uint64_t> cdf(words.size());
        uint64_t total = 0;
        for (size_t r = 0; r < words.size(); ++r) cdf[r] = total += (uint64_t(1) << 40) / (r + 1);
        Mix rng{0x5EEDull * 1000003u + static_cast<uint64_t>(row)};
        auto word = [&] {
            const uint64_t u = rng.below(total);
            return words[static_cast<size_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin())];
        };
        // The tail: a verbatim repeat of an earlier span, so DRY matches at once.
        const int32_t tail = n >= 32 ? 6 : 0;
        std::vector<int32_t> t;
        t.reserve(static_cast<size_t>(n));
        while (static_cast<int32_t>(t.size()) < n - tail) {
            const uint64_t roll = rng.below(100);
            if (roll < 7) {
                t.push_back(breakers[rng.below(breakers.size())]);  // a sentence or line ends
            } else if (roll < 12 && t.size() >= 24) {
                // A phrase said again: 4..16 tokens copied from earlier.
                const size_t len = 4 + rng.below(13);
                const size_t from = rng.below(t.size() - len);
                for (size_t i = 0; i < len && static_cast<int32_t>(t.size()) < n - tail; ++i) t.push_back(t[from + i]);
            } else {
                t.push_back(word());
            }
        }
        if (tail > 0) {
            // Copy a span that has a continuation inside the history.
            const size_t from = rng.below(t.size() - static_cast<size_t>(tail) - 1);
            for (int32_t i = 0; i < tail; ++i) t.push_back(t[from + static_cast<size_t>(i)]);
        }
        h.rows.push_back(std::move(t));
    }
    return h;
}

} // namespace sieve_cli
