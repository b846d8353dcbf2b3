// min-p. llama.cpp: llama_sampler_min_p_apply (src/llama-sampling.cpp):
//     if (ctx->p <= 0.0f || !cur_p->size) return;
//     unsorted: max_logit over the array (from -FLT_MAX);
//               min_logit = max_logit + logf(ctx->p);           // float
//               keep (in array order) every entry with logit >= min_logit
//               if (!filtered.empty() && filtered.size() >= ctx->min_keep) done;
//     otherwise (or already sorted): sort descending;
//               min_logit = data[0].logit + logf(ctx->p);
//               i = 1;  // the first token always matches
//               for (; i < size; ++i) if (data[i].logit < min_logit && i >= ctx->min_keep) break;
//               cur_p->size = i;
// The fallback keeps the top max(1, min_keep, number passing) entries, so min-p
// above 1 (nothing passes) keeps the top token, as llama.cpp's own test expects.
// The threshold is computed in float exactly as llama.cpp does. Ties at the
// fallback's cut keep the lower ids (canonical order).
#include "reference/detail.hpp"

#include <cfloat>
#include <cmath>

namespace sieve::ref {

void apply_min_p(CandidateArray& cur, float p, size_t min_keep) {
    if (p <= 0.0f || cur.data.empty()) return;
    if (!cur.sorted) {
        float max_logit = -FLT_MAX;
        for (const TokenData& td : cur.data) max_logit = std::max(max_logit, td.logit);
        const float min_logit = max_logit + logf(p); // min logit for p_i >= p * p_max
        std::vector<TokenData> filtered;
        for (const TokenData& td : cur.data)
            if (td.logit >= min_logit) filtered.push_back(td);
        if (!filtered.empty() && filtered.size() >= min_keep) {
            cur.data = std::move(filtered);
            return;
        }
        detail::sort_canonical(cur);
    }
    const float min_logit = cur.data[0].logit + logf(p);
    size_t i = 1; // the first token always matches
    for (; i < cur.data.size(); ++i) {
        if (cur.data[i].logit < min_logit && i >= min_keep) break;
    }
    cur.data.resize(i);
}

} // namespace sieve::ref
