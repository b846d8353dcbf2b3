// Sampler names and chain parsing. Names and aliases follow llama.cpp's
// common/sampling.cpp (common_sampler_types_from_names with allow_alt_names = true,
// as `--samplers` uses it), plus the samplers that llama.cpp's common chain adds
// itself (greedy, dist, mirostat, mirostat_v2) so a Sieve chain can name them.
#include "reference/reference.hpp"

#include <cstring>

namespace sieve::ref {

namespace {

struct NameEntry {
    const char* name;
    SamplerKind kind;
};

// Canonical names first (common_sampler_type_to_str), then llama.cpp's alternative
// names (sampler_alt_name_map), then Sieve's additions. Matching is exact and
// case-sensitive, as in llama.cpp.
constexpr NameEntry kNames[] = {
    // common_sampler_types_from_names: sampler_canonical_name_map
    {"dry", SamplerKind::Dry},
    {"top_k", SamplerKind::TopK},
    {"top_p", SamplerKind::TopP},
    {"top_n_sigma", SamplerKind::TopNSigma},
    {"typ_p", SamplerKind::TypicalP},
    {"min_p", SamplerKind::MinP},
    {"temperature", SamplerKind::Temperature},
    {"xtc", SamplerKind::Xtc},
    {"infill", SamplerKind::Infill},
    {"penalties", SamplerKind::Penalties},
    {"adaptive_p", SamplerKind::AdaptiveP},
    // common_sampler_types_from_names: sampler_alt_name_map
    {"top-k", SamplerKind::TopK},
    {"top-p", SamplerKind::TopP},
    {"top-n-sigma", SamplerKind::TopNSigma},
    {"nucleus", SamplerKind::TopP},
    {"typical-p", SamplerKind::TypicalP},
    {"typical", SamplerKind::TypicalP},
    {"typ-p", SamplerKind::TypicalP},
    {"typ", SamplerKind::TypicalP},
    {"min-p", SamplerKind::MinP},
    {"temp", SamplerKind::Temperature},
    {"adaptive-p", SamplerKind::AdaptiveP},
    // The canonical name of typical-p in older llama.cpp (llama_sampling_types_from_names,
    // before the rename to "typ_p"), still common in scripts.
    {"typical_p", SamplerKind::TypicalP},
    // Sieve: the selecting samplers llama.cpp's common chain appends on its own
    // (llama_sampler_init_greedy / _dist / _mirostat / _mirostat_v2; the last is
    // named "mirostat-v2" by llama_sampler_name).
    {"greedy", SamplerKind::Greedy},
    {"dist", SamplerKind::Dist},
    {"mirostat", SamplerKind::Mirostat},
    {"mirostat_v2", SamplerKind::MirostatV2},
    {"mirostat-v2", SamplerKind::MirostatV2},
};

bool lookup(const std::string& name, SamplerKind* kind) {
    for (const NameEntry& entry : kNames) {
        if (name == entry.name) {
            *kind = entry.kind;
            return true;
        }
    }
    return false;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string trim(const std::string& s) {
    size_t begin = 0;
    size_t end = s.size();
    while (begin < end && is_space(s[begin])) ++begin;
    while (end > begin && is_space(s[end - 1])) --end;
    return s.substr(begin, end - begin);
}

void set_message(std::string* message, const std::string& text) {
    if (message) *message = text;
}

// "'top-k' (top_k)" when the user's spelling differs from the canonical name.
std::string describe(const std::string& written, SamplerKind kind) {
    std::string text = "'" + written + "'";
    if (written != sampler_name(kind)) text += std::string(" (") + sampler_name(kind) + ")";
    return text;
}

} // namespace

// llama.cpp's default `--samplers` (common_params_sampling::samplers in
// common/common.h): penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc,
// temperature.
const char* const kDefaultChain = "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature";

const char* sampler_name(SamplerKind kind) {
    // common_sampler_type_to_str for llama.cpp's common samplers.
    switch (kind) {
    case SamplerKind::Temperature: return "temperature";
    case SamplerKind::Greedy: return "greedy";
    case SamplerKind::Dist: return "dist";
    case SamplerKind::Penalties: return "penalties";
    case SamplerKind::Dry: return "dry";
    case SamplerKind::TopNSigma: return "top_n_sigma";
    case SamplerKind::TopK: return "top_k";
    case SamplerKind::TypicalP: return "typ_p";
    case SamplerKind::TopP: return "top_p";
    case SamplerKind::MinP: return "min_p";
    case SamplerKind::Xtc: return "xtc";
    case SamplerKind::Infill: return "infill";
    case SamplerKind::Mirostat: return "mirostat";
    case SamplerKind::MirostatV2: return "mirostat_v2";
    case SamplerKind::AdaptiveP: return "adaptive_p";
    }
    return "unknown";
}

// Samplers that pick the token and therefore end a chain. llama.cpp's common chain
// ends with exactly one of them: dist (default), greedy, mirostat/mirostat_v2
// (which replace the truncating samplers) or adaptive_p (which replaces dist).
bool is_selector(SamplerKind kind) {
    switch (kind) {
    case SamplerKind::Greedy:
    case SamplerKind::Dist:
    case SamplerKind::Mirostat:
    case SamplerKind::MirostatV2:
    case SamplerKind::AdaptiveP:
        return true;
    default:
        return false;
    }
}

bool sampler_implemented(SamplerKind kind) {
    switch (kind) {
    case SamplerKind::Temperature:
    case SamplerKind::Greedy:
    case SamplerKind::Dist:
    case SamplerKind::TopNSigma:
    case SamplerKind::TopK:
    case SamplerKind::TypicalP:
    case SamplerKind::TopP:
    case SamplerKind::MinP:
    case SamplerKind::Xtc:
    case SamplerKind::Penalties:
    case SamplerKind::Dry:
    case SamplerKind::Mirostat:
    case SamplerKind::MirostatV2:
    case SamplerKind::AdaptiveP:
        return true;
    default:
        return false;
    }
}

sieve_status parse_chain(const char* text, std::vector<SamplerKind>* out, std::string* message) {
    if (!out) {
        set_message(message, "parse_chain: out is NULL");
        return SIEVE_ERROR_INVALID_ARGUMENT;
    }
    out->clear();
    set_message(message, "");

    std::string source = text ? trim(text) : std::string();
    if (source.empty()) source = kDefaultChain; // NULL or "" = llama.cpp's default order

    // Split on ';' (llama.cpp's --samplers separator) or ','. Whitespace around a
    // name is ignored. Empty items ("top_k;;temp", a trailing ';') are skipped:
    // llama.cpp ignores names it cannot match (with a warning) and the empty name
    // is the only one Sieve ignores too.
    std::vector<std::string> written;
    std::vector<SamplerKind> kinds;
    size_t start = 0;
    while (start <= source.size()) {
        size_t stop = source.find_first_of(";,", start);
        if (stop == std::string::npos) stop = source.size();
        const std::string name = trim(source.substr(start, stop - start));
        start = stop + 1;
        if (name.empty()) continue;
        SamplerKind kind;
        if (!lookup(name, &kind)) {
            set_message(message, "unknown sampler '" + name + "'");
            return SIEVE_ERROR_UNKNOWN_SAMPLER;
        }
        written.push_back(name);
        kinds.push_back(kind);
    }
    if (kinds.empty()) {
        set_message(message, "sampler chain '" + source + "' names no sampler");
        return SIEVE_ERROR_INVALID_CHAIN;
    }

    // The selecting sampler must be last: nothing runs after the token is picked.
    for (size_t i = 0; i + 1 < kinds.size(); ++i) {
        if (is_selector(kinds[i])) {
            set_message(message, "sampler " + describe(written[i + 1], kinds[i + 1]) + " comes after " +
                                     describe(written[i], kinds[i]) + ", which picks the token and must be last");
            return SIEVE_ERROR_INVALID_CHAIN;
        }
    }

    // common_sampler_init appends dist when the chain has no selecting sampler.
    if (!is_selector(kinds.back())) {
        kinds.push_back(SamplerKind::Dist);
        written.push_back(sampler_name(SamplerKind::Dist));
    }

    for (size_t i = 0; i < kinds.size(); ++i) {
        if (!sampler_implemented(kinds[i])) {
            set_message(message, "sampler " + describe(written[i], kinds[i]) + " is not implemented yet");
            return SIEVE_ERROR_UNSUPPORTED_SAMPLER;
        }
    }

    *out = std::move(kinds);
    return SIEVE_OK;
}

} // namespace sieve::ref
