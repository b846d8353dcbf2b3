#include "bench_suite.hpp"

#include "exit_codes.hpp"

namespace sieve_cli {
namespace {

// A named chain: its samplers ("" = llama.cpp's default chain) and the
// truncation parameters it runs with; the rest are llama.cpp's defaults.
struct ChainSpec {
    const char* label;
    const char* samplers;
    int32_t top_k;
    float top_p;
    bool penalties;
};
constexpr ChainSpec kChains[] = {
    {"greedy", "greedy", 40, 0.95f, false},
    {"dist", "temperature;dist", 40, 0.95f, false},
    {"default", "", 40, 0.95f, false},                        // llama.cpp's default chain and defaults
    {"top_p", "top_p;temperature", 40, 0.9f, false},          // top-p 0.9, no top-k
    {"min_p", "min_p;temperature", 40, 0.95f, false},         // min-p 0.05
    {"top_k1000", "top_k;temperature", 1000, 0.95f, false},   // a large k
    // llama.cpp's default chain with repetition penalties and DRY on.
    {"penalties_dry", "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature", 40, 0.95f, true},
};
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
    c.penalties = spec.penalties;
    return c;
}

} // namespace

const char* suite_names_help() { return "default (a few minutes on lavapipe) or full (every combination: hours)"; }

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
    if (suite == "tiny") {
        // For the test suite: small, fast, and one case of each kind of outcome.
        add("greedy", "zipf", 4096, 1);
        add("default", "zipf", 4096, 2);
        add("dist", "peaked", 3000, 1);
        add("penalties_dry", "zipf", 4096, 1);
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

std::string penalties_unsupported() {
    // This library has no parameters for penalties and DRY yet (issue 4): a
    // chain that names them runs them at llama.cpp's disabled defaults, which
    // would measure a different case under this one's name. When issue 4 lands,
    // set the parameters in the runner and return "".
    return "penalties and DRY cannot be switched on through this library's API yet (issue 4: no repeat-penalty "
           "or DRY parameters); the chain would run them disabled, so the case is not measured";
}

} // namespace sieve_cli
