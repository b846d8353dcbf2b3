// Speculative decoding's verification (sieve_verify), the specification both
// backends follow (include/sieve/sieve.h, "speculative decoding").
//
// Match (llama.cpp's common_sampler_sample_and_accept_n): position i samples
// with the full chain over the slot's history plus drafts 0..i-1, at step
// t + i, learners carrying their state from the previous position; the token
// is emitted and the next position runs only when it equals draft i.
//
// Rejection (Leviathan et al. 2023, "Fast Inference from Transformers via
// Speculative Decoding", Algorithm 1; Chen et al. 2023): draft x_i is accepted
// when u * q_i(x_i) < p_i(x_i), u the Philox uniform of (seed, t + i, draw 1):
// probability min(1, p/q), and q_i(x_i) = 0 accepts whatever p keeps. At the
// first rejection the correction is drawn from max(0, p_i - q_i) (p_i's
// survivors only: q's mass outside them never comes back), in canonical order
// (descending, ties by lower id) with the uniform of (seed, t + i, draw 0); a
// residual with no mass (p_i and q_i equal within rounding) draws from p_i.
// After n accepted drafts the bonus is the chain's ordinary draw at t + n.
// The emitted token's p and logprob are the target's p_i(token).
#include "reference/reference.hpp"

#include <algorithm>
#include <cmath>

namespace sieve::ref {

bool chain_learns(const std::vector<SamplerKind>& chain) {
    return std::any_of(chain.begin(), chain.end(), [](SamplerKind k) {
        return k == SamplerKind::Mirostat || k == SamplerKind::MirostatV2 || k == SamplerKind::AdaptiveP;
    });
}

sieve_status check_draft(const std::vector<int32_t>& tokens, const DraftProbs& q, int32_t vocab,
                         sieve_verify_mode mode, std::string* message) {
    const auto bad = [&](sieve_status s, const std::string& why) {
        *message = why;
        return s;
    };
    if (tokens.size() > static_cast<size_t>(SIEVE_MAX_DRAFT))
        return bad(SIEVE_ERROR_INVALID_ARGUMENT, "n_draft " + std::to_string(tokens.size()) + " is past the limit " +
                                                     std::to_string(SIEVE_MAX_DRAFT));
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] >= vocab)
            return bad(SIEVE_ERROR_INVALID_ARGUMENT, "draft token " + std::to_string(i) + " is " +
                                                         std::to_string(tokens[i]) + ", outside [0, " +
                                                         std::to_string(vocab) + ")");
    if (mode == SIEVE_VERIFY_MATCH) {
        if (q.kind != SIEVE_DRAFT_PROBS_NONE)
            return bad(SIEVE_ERROR_INVALID_ARGUMENT, "the match mode takes no draft probabilities (probs_kind NONE)");
        return SIEVE_OK;
    }
    if (mode != SIEVE_VERIFY_REJECTION)
        return bad(SIEVE_ERROR_INVALID_ARGUMENT, "unknown verify mode " + std::to_string(static_cast<int>(mode)));
    if (q.kind == SIEVE_DRAFT_PROBS_NONE && tokens.empty()) return SIEVE_OK;  // no draft, no q: the bonus alone
    if (q.kind == SIEVE_DRAFT_PROBS_NONE)
        return bad(SIEVE_ERROR_INVALID_ARGUMENT, "the rejection mode needs the draft's probabilities "
                                                 "(probs_kind DENSE or TOKEN)");
    if (q.kind != SIEVE_DRAFT_PROBS_DENSE && q.kind != SIEVE_DRAFT_PROBS_TOKEN)
        return bad(SIEVE_ERROR_INVALID_ARGUMENT, "unknown probs_kind " + std::to_string(static_cast<int>(q.kind)));
    if (!tokens.empty() && !q.probs) return bad(SIEVE_ERROR_INVALID_ARGUMENT, "draft probs is NULL");
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (q.kind == SIEVE_DRAFT_PROBS_TOKEN) {
            const float v = q.probs[i];
            if (!(v > 0.0f && v <= 1.0f))
                return bad(SIEVE_ERROR_INVALID_ARGUMENT, "draft probability " + std::to_string(i) + " is " +
                                                             std::to_string(v) + ", outside (0, 1]");
            continue;
        }
        const float* row = q.probs + i * static_cast<size_t>(vocab);
        double sum = 0.0;
        for (int32_t x = 0; x < vocab; ++x) {
            if (!(row[x] >= 0.0f && std::isfinite(row[x])))
                return bad(SIEVE_ERROR_INVALID_ARGUMENT, "draft probability row " + std::to_string(i) + " holds " +
                                                             std::to_string(row[x]) + " at token " +
                                                             std::to_string(x) + " (finite and >= 0 only)");
            sum += row[x];
        }
        if (std::fabs(sum - 1.0) > kDraftSumTolerance)
            return bad(SIEVE_ERROR_INVALID_ARGUMENT, "draft probability row " + std::to_string(i) + " sums to " +
                                                         std::to_string(sum) + ", not 1 within 1e-3");
    }
    return SIEVE_OK;
}

namespace {

double q_of(const DraftProbs& q, size_t position, int32_t draft, int32_t token) {
    if (q.kind == SIEVE_DRAFT_PROBS_TOKEN) return token == draft ? q.probs[position] : 0.0;
    return q.probs[position * static_cast<size_t>(q.vocab) + static_cast<size_t>(token)];
}

RowResult emitted(const std::vector<Weighted>& p, double total, int32_t token) {
    RowResult r;
    r.token = token;
    for (const Weighted& w : p)
        if (w.id == token) r.p = static_cast<float>(w.p / total);
    r.logprob = std::log(r.p);
    return r;
}

} // namespace

RejectionStep rejection_step(const std::vector<Weighted>& p, int32_t draft, const DraftProbs& q, size_t position,
                             uint32_t seed, uint32_t step) {
    double total = 0.0, p_draft = 0.0;
    for (const Weighted& w : p) {
        total += w.p;
        if (w.id == draft) p_draft = w.p;
    }
    p_draft /= total;
    const double u = uniform_u32(seed, step, 1) / 4294967296.0;
    if (u * q_of(q, position, draft, draft) < p_draft) return {true, emitted(p, total, draft)};
    std::vector<Weighted> residual;
    residual.reserve(p.size());
    for (const Weighted& w : p) {
        const double r = w.p / total - q_of(q, position, draft, w.id);
        if (r > 0.0) residual.push_back({w.id, r});
    }
    std::stable_sort(residual.begin(), residual.end(), [](const Weighted& a, const Weighted& b) {
        return a.p > b.p || (a.p == b.p && a.id < b.id);
    });
    const std::vector<Weighted>& from = residual.empty() ? p : residual;
    const int32_t token = from[draw_inverse_cdf(from, uniform_u32(seed, step, 0))].id;
    return {false, emitted(p, total, token)};
}

RowResult bonus_draw(const std::vector<Weighted>& p, uint32_t seed, uint32_t step) {
    double total = 0.0;
    for (const Weighted& w : p) total += w.p;
    return emitted(p, total, p[draw_inverse_cdf(p, uniform_u32(seed, step, 0))].id);
}

PositionOutcome rejection_position(const std::vector<Weighted>& p, const std::vector<int32_t>& drafts,
                                   const DraftProbs& q, size_t i, uint32_t seed, uint32_t step) {
    PositionOutcome o;
    if (i == drafts.size()) {
        o.token = bonus_draw(p, seed, step);
        return o;
    }
    const RejectionStep r = rejection_step(p, drafts[i], q, i, seed, step);
    o.token = r.token;
    o.go_on = r.accepted;
    return o;
}

Verification verify_match(const std::vector<SamplerKind>& chain, const std::vector<const float*>& rows, int32_t vocab,
                          const RowParams& params, const std::vector<int32_t>& drafts, uint32_t step,
                          SlotState* state) {
    SlotState work = state ? *state : SlotState();
    const Verification v = walk_sequence(drafts.size(), [&](size_t i) {
        PositionOutcome o;
        const RowResult r = sample_row(chain, rows[i], vocab, params, step + static_cast<uint32_t>(i), 0, &work);
        if (r.status != SIEVE_OK) {
            o.status = r.status;
            o.message = r.message;
            return o;
        }
        work.history.push_back(r.token);
        o.token = r;
        o.go_on = match_goes_on(drafts, i, r.token);
        return o;
    });
    if (state && v.status == SIEVE_OK) *state = work;
    return v;
}

Verification verify_rejection(const std::vector<SamplerKind>& chain, const std::vector<const float*>& rows,
                              int32_t vocab, const RowParams& params, const std::vector<int32_t>& drafts,
                              const DraftProbs& q, uint32_t step, SlotState* state) {
    if (chain_learns(chain)) {
        Verification v;
        v.status = SIEVE_ERROR_INVALID_CHAIN;
        v.message = "the rejection mode takes no chain with mirostat, mirostat_v2 or adaptive_p";
        return v;
    }
    SlotState work = state ? *state : SlotState();
    const Verification v = walk_sequence(drafts.size(), [&](size_t i) {
        PositionOutcome o;
        std::vector<Weighted> p;
        const uint32_t at = step + static_cast<uint32_t>(i);
        o.status = row_distribution(chain, rows[i], vocab, params, &p, &o.message, at, 0, &work);
        if (o.status != SIEVE_OK) return o;
        o = rejection_position(p, drafts, q, i, params.seed, at);
        work.history.push_back(o.token.token);
        return o;
    });
    if (state && v.status == SIEVE_OK) *state = work;
    return v;
}

} // namespace sieve::ref
