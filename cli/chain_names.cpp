#include "chain_names.hpp"

#include "exit_codes.hpp"

#include <algorithm>
#include <utility>

namespace sieve_cli {
namespace {

// llama.cpp's canonical names and the alternative ones --samplers accepts
// (common_sampler_types_from_names), plus the selecting samplers the library
// names itself (engine/reference/chain_parse.cpp; a test holds the two equal).
const std::pair<const char*, const char*> kAliases[] = {
    {"dry", "dry"},           {"top_k", "top_k"},         {"top_p", "top_p"},
    {"top_n_sigma", "top_n_sigma"}, {"typ_p", "typ_p"},   {"min_p", "min_p"},
    {"temperature", "temperature"}, {"xtc", "xtc"},       {"infill", "infill"},
    {"penalties", "penalties"}, {"adaptive_p", "adaptive_p"},
    {"top-k", "top_k"},       {"top-p", "top_p"},         {"top-n-sigma", "top_n_sigma"},
    {"nucleus", "top_p"},     {"typical-p", "typ_p"},     {"typical", "typ_p"},
    {"typ-p", "typ_p"},       {"typ", "typ_p"},           {"min-p", "min_p"},
    {"temp", "temperature"},  {"adaptive-p", "adaptive_p"}, {"typical_p", "typ_p"},
    {"greedy", "greedy"},     {"dist", "dist"},           {"mirostat", "mirostat"},
    {"mirostat_v2", "mirostat_v2"}, {"mirostat-v2", "mirostat_v2"},
};

const std::pair<char, const char*> kLetters[] = {
    {'d', "dry"},   {'e', "penalties"}, {'k', "top_k"},       {'y', "typ_p"},       {'p', "top_p"}, {'s', "top_n_sigma"},
    {'m', "min_p"}, {'t', "temperature"}, {'x', "xtc"},       {'i', "infill"},      {'a', "adaptive_p"},
};

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r\n\v\f");
    if (b == std::string::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\r\n\v\f") - b + 1);
}

bool is_selector(const std::string& canonical) {
    return canonical == "greedy" || canonical == "dist" || canonical == "mirostat" || canonical == "mirostat_v2" ||
           canonical == "adaptive_p";
}

} // namespace

const char* const kLlamaDefaultSamplers = "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature";

std::string samplers_from_letters(const std::string& letters) {
    const std::string map = "d dry, e penalties, k top_k, y typ_p, p top_p, s top_n_sigma, m min_p, t temperature, "
                            "x xtc, i infill, a adaptive_p";
    if (letters.empty()) throw CliError(kExitUsage, "--sampling-seq: an empty value; it takes sampler letters (" + map + ")");
    std::vector<std::string> names;
    for (char c : letters) {
        const auto it = std::find_if(std::begin(kLetters), std::end(kLetters), [c](const auto& l) { return l.first == c; });
        if (it == std::end(kLetters))
            throw CliError(kExitUsage, "--sampling-seq '" + letters + "': '" + std::string(1, c) +
                                           "' is not a sampler letter (" + map + ")");
        names.push_back(it->second);
    }
    return join_names(names);
}

std::vector<std::string> split_sampler_names(const std::string& text) {
    std::vector<std::string> names;
    size_t start = 0;
    while (start <= text.size()) {
        size_t stop = text.find_first_of(";,", start);
        if (stop == std::string::npos) stop = text.size();
        const std::string name = trim(text.substr(start, stop - start));
        if (!name.empty()) names.push_back(name);
        start = stop + 1;
    }
    return names;
}

std::string canonical_sampler_name(const std::string& name) {
    for (const auto& [alias, canonical] : kAliases)
        if (name == alias) return canonical;
    return name;
}

std::string samplers_in_run_order(const std::string& text) {
    std::vector<std::string> names = split_sampler_names(text);
    auto adaptive = [](const std::string& n) { return canonical_sampler_name(n) == "adaptive_p"; };
    const auto it = std::find_if(names.begin(), names.end(), adaptive);
    if (it == names.end() || it + 1 == names.end()) return text;
    const std::string written = *it;
    names.erase(std::remove_if(names.begin(), names.end(), adaptive), names.end());
    names.push_back(written);
    return join_names(names);
}

std::vector<std::string> chain_that_runs(const std::string& samplers) {
    std::vector<std::string> names = split_sampler_names(samplers.empty() ? kLlamaDefaultSamplers : samplers);
    for (std::string& n : names) n = canonical_sampler_name(n);
    if (names.empty() || !is_selector(names.back())) names.push_back("dist");
    return names;
}

bool reads_history(const std::vector<std::string>& chain) {
    return std::any_of(chain.begin(), chain.end(), [](const std::string& n) { return n == "penalties" || n == "dry"; });
}

std::string join_names(const std::vector<std::string>& names) {
    std::string s;
    for (size_t i = 0; i < names.size(); ++i) s += (i ? ";" : "") + names[i];
    return s;
}

} // namespace sieve_cli
