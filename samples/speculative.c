/* speculative.c: speculative decoding's verification, one call per step (C99).
 *
 * Two sequences decode with drafts of different lengths (4 and 7 tokens). A
 * toy target model gives logits that depend on the sequence, its position and
 * its previous token; a toy draft model proposes the argmax of a perturbed
 * target row, so most drafts match what the target samples and some do not.
 * Each step verifies both sequences' drafts in one sieve_verify call
 * (SIEVE_VERIFY_MATCH: llama.cpp's rule), and each sequence continues from the
 * last token it emitted. Every emitted token is checked against a second chain
 * that samples the same positions one sieve_sample call at a time, stopping at
 * the first token that differs from the draft (llama.cpp's loop). Prints the
 * accepted counts per step; returns nonzero on any failure. */
#include <sieve/sieve.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define VOCAB 4096
#define SEQS 2
#define STEPS 5
#define MAX_LEN 8 /* the longest draft + 1 */

static const int32_t draft_len[SEQS] = {4, 7};

static int failed(const char* what, sieve_status status) {
    if (status == SIEVE_OK) return 0;
    fprintf(stderr, "speculative: %s failed: %s: %s\n", what, sieve_status_name(status), sieve_last_error());
    return 1;
}

static unsigned next(unsigned* x) {
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* The target model: LM-like logits, deterministic in (sequence, position,
 * previous token), with one clear favourite. */
static void target_row(float* row, int seq, int pos, int32_t prev) {
    unsigned x = 2463534242u ^ (unsigned)(seq * 7919 + pos * 104729 + prev * 15485863);
    int i;
    for (i = 0; i < VOCAB; ++i) row[i] = 4.0f - 1.1f * logf((float)(next(&x) % VOCAB) + 1.0f);
    row[next(&x) % VOCAB] = 9.0f;
}

/* The draft model: the argmax of the target's row plus noise strong enough to
 * change it now and then. */
static int32_t draft_token(float* scratch, int seq, int pos, int32_t prev) {
    unsigned x = 0x9E3779B9u ^ (unsigned)(seq * 31 + pos * 131 + prev * 7);
    int32_t best = 0;
    int i;
    target_row(scratch, seq, pos, prev);
    if (next(&x) % 4 == 0) scratch[next(&x) % VOCAB] = 10.0f; /* a wrong guess, about one time in four */
    for (i = 1; i < VOCAB; ++i)
        if (scratch[i] > scratch[best]) best = i;
    return best;
}

int main(void) {
    sieve_context* context = NULL;
    sieve_chain* verifier = NULL;
    sieve_chain* looper = NULL;
    sieve_chain_desc desc;
    float* logits = (float*)malloc(sizeof(float) * SEQS * MAX_LEN * VOCAB);
    float* scratch = (float*)malloc(sizeof(float) * VOCAB);
    int32_t drafts[SEQS][MAX_LEN];
    int32_t last[SEQS] = {1, 2}, pos[SEQS] = {0, 0}, total_accepted[SEQS] = {0, 0};
    int32_t slots[SEQS] = {0, 1};
    sieve_draft draft[SEQS];
    sieve_verified out[SEQS];
    sieve_token tokens[SEQS * MAX_LEN], alone;
    sieve_logits view;
    int rc = 1, s, step, i, rows;

    if (!logits || !scratch) goto done;
    if (failed("sieve_context_create", sieve_context_create(NULL, &context))) goto done;
    sieve_chain_desc_init(&desc);
    desc.samplers = "top_k;temperature;dist";
    desc.max_vocab = VOCAB;
    desc.max_rows = SEQS * MAX_LEN; /* every sequence's positions in one call */
    desc.max_slots = SEQS;
    desc.temperature = 0.5f;
    desc.seed = 1234;
    if (failed("sieve_chain_create", sieve_chain_create(context, &desc, &verifier))) goto done;
    if (failed("sieve_chain_create", sieve_chain_create(context, &desc, &looper))) goto done;
    if (failed("sieve_chain_set_slots", sieve_chain_set_slots(verifier, slots, SEQS))) goto done;

    for (step = 0; step < STEPS; ++step) {
        /* Drafts, then the target's logits at every position: row i of a
         * sequence follows its drafts 0..i-1. */
        rows = 0;
        for (s = 0; s < SEQS; ++s) {
            int32_t prev = last[s];
            for (i = 0; i <= draft_len[s]; ++i) {
                target_row(logits + (size_t)(rows + i) * VOCAB, s, pos[s] + i, prev);
                if (i == draft_len[s]) break;
                drafts[s][i] = draft_token(scratch, s, pos[s] + i, prev);
                prev = drafts[s][i];
            }
            sieve_draft_init(&draft[s], drafts[s], draft_len[s]);
            rows += draft_len[s] + 1;
        }
        sieve_logits_init(&view, logits, SIEVE_DTYPE_F32, rows, VOCAB);
        if (failed("sieve_verify", sieve_verify(verifier, &view, draft, SEQS, SIEVE_VERIFY_MATCH, tokens, out)))
            goto done;

        printf("step %d:", step);
        rows = 0;
        for (s = 0; s < SEQS; ++s) {
            const sieve_token* t = tokens + rows;
            if (failed("sequence", out[s].status)) goto done;
            if (out[s].n_tokens != out[s].n_accepted + 1 || out[s].n_accepted < 0 ||
                out[s].n_accepted > draft_len[s]) {
                fprintf(stderr, "speculative: sequence %d: %d tokens for %d accepted drafts\n", s, out[s].n_tokens,
                        out[s].n_accepted);
                goto done;
            }
            /* The same positions sampled one call at a time on the sequence's slot. */
            if (failed("sieve_chain_set_slots", sieve_chain_set_slots(looper, &slots[s], 1))) goto done;
            for (i = 0; i < out[s].n_tokens; ++i) {
                if (failed("token", t[i].status)) goto done;
                if (i < out[s].n_accepted && t[i].token != drafts[s][i]) {
                    fprintf(stderr, "speculative: sequence %d position %d: accepted %d, the draft was %d\n", s, i,
                            t[i].token, drafts[s][i]);
                    goto done;
                }
                if (failed("sieve_sample", sieve_sample(looper, logits + (size_t)(rows + i) * VOCAB, 1, VOCAB, &alone)))
                    goto done;
                if (alone.token != t[i].token || alone.step != t[i].step) {
                    fprintf(stderr, "speculative: sequence %d position %d: token %d (step %u) verified, %d (step %u) sampled "
                                    "alone\n", s, i, t[i].token, (unsigned)t[i].step, alone.token, (unsigned)alone.step);
                    goto done;
                }
            }
            if (out[s].n_accepted < draft_len[s] && t[out[s].n_accepted].token == drafts[s][out[s].n_accepted]) {
                fprintf(stderr, "speculative: sequence %d stopped at a draft it matched\n", s);
                goto done;
            }
            printf("  sequence %d: %d of %d drafts accepted, %d tokens", s, out[s].n_accepted, draft_len[s],
                   out[s].n_tokens);
            total_accepted[s] += out[s].n_accepted;
            pos[s] += out[s].n_tokens;
            last[s] = t[out[s].n_tokens - 1].token;
            rows += draft_len[s] + 1;
        }
        printf("\n");
    }
    printf("speculative: ok (%d steps; accepted %d of %d and %d of %d drafts; %d and %d tokens, each equal to "
           "sampling position by position)\n", STEPS, total_accepted[0], STEPS * draft_len[0], total_accepted[1],
           STEPS * draft_len[1], pos[0], pos[1]);
    rc = 0;

done:
    sieve_chain_destroy(looper);
    sieve_chain_destroy(verifier);
    sieve_context_destroy(context);
    free(scratch);
    free(logits);
    return rc;
}
