/* batched.c: many sequences in one submission (C99).
 *
 * A continuous batch of 64 rows over a 32000-token vocabulary, each row with its
 * own parameters (temperature, top-k, top-p, seed, a repetition penalty on every
 * other row) and its own sequence slot (the rows map to slots in reverse, as a
 * server's scheduler might). Four tokens per row; halfway, some rows change
 * parameters (nothing is re-recorded for that). Each token is checked against
 * the same row sampled alone in a one-row chain with the same parameters: a
 * row's result does not depend on the batch. Prints a summary; returns 0. */
#include <sieve/sieve.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS 64
#define VOCAB 32000
#define SLOTS 64
#define STEPS 4

static int failed(const char* what, sieve_status status) {
    if (status == SIEVE_OK) return 0;
    fprintf(stderr, "batched: %s failed: %s: %s\n", what, sieve_status_name(status), sieve_last_error());
    return 1;
}

/* LM-like logits, deterministic in (row, step). */
static void fill_row(float* row, int r, int step) {
    unsigned x = 2463534242u ^ (unsigned)(r * 7919 + step * 104729);
    int i;
    for (i = 0; i < VOCAB; ++i) {
        unsigned rank;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        rank = x % VOCAB;
        row[i] = 12.0f - 1.1f * logf((float)rank + 1.0f) + (float)(x >> 24) / 255.0f * 0.6f;
    }
}

static sieve_status set_row(sieve_chain* chain, int row, int r, int step) {
    sieve_status s = SIEVE_OK;
    const double temperature = 0.5 + 0.01 * r + (step >= STEPS / 2 && r % 3 == 0 ? 0.3 : 0.0);
    s = s ? s : sieve_chain_set_param(chain, row, SIEVE_PARAM_TEMPERATURE, temperature);
    s = s ? s : sieve_chain_set_param(chain, row, SIEVE_PARAM_TOP_K, 10 + r);
    s = s ? s : sieve_chain_set_param(chain, row, SIEVE_PARAM_TOP_P, r % 4 == 0 ? 1.0 : 0.9);
    s = s ? s : sieve_chain_set_param(chain, row, SIEVE_PARAM_REPEAT_PENALTY, r % 2 == 0 ? 1.3 : 1.0);
    return s;
}

int main(void) {
    sieve_context* context = NULL;
    sieve_chain* batch = NULL;
    sieve_chain* single[ROWS] = {NULL};
    sieve_chain_desc desc;
    float* logits = (float*)malloc(sizeof(float) * ROWS * VOCAB);
    int32_t slots[ROWS];
    sieve_token out[ROWS], alone;
    int rc = 1, r, step, checked = 0;

    if (!logits) return 1;
    if (failed("sieve_context_create", sieve_context_create(NULL, &context))) goto done;
    sieve_chain_desc_init(&desc);
    desc.samplers = "penalties;top_k;top_p;temperature;dist";
    desc.max_vocab = VOCAB;
    desc.max_rows = ROWS;
    desc.max_slots = SLOTS;
    desc.history_capacity = 64;
    if (failed("sieve_chain_create", sieve_chain_create(context, &desc, &batch))) goto done;
    desc.max_rows = 1;
    desc.max_slots = 1;
    for (r = 0; r < ROWS; ++r) {
        slots[r] = SLOTS - 1 - r;
        if (failed("sieve_chain_create", sieve_chain_create(context, &desc, &single[r]))) goto done;
        if (failed("sieve_chain_set_param", sieve_chain_set_param(batch, r, SIEVE_PARAM_SEED, 1000 + r))) goto done;
        if (failed("sieve_chain_set_param", sieve_chain_set_param(single[r], 0, SIEVE_PARAM_SEED, 1000 + r))) goto done;
    }
    if (failed("sieve_chain_set_slots", sieve_chain_set_slots(batch, slots, ROWS))) goto done;

    for (step = 0; step < STEPS; ++step) {
        for (r = 0; r < ROWS; ++r) {
            fill_row(logits + (size_t)r * VOCAB, r, step);
            if (failed("set_row", set_row(batch, r, r, step)) || failed("set_row", set_row(single[r], 0, r, step)))
                goto done;
        }
        if (failed("sieve_sample", sieve_sample(batch, logits, ROWS, VOCAB, out))) goto done;
        for (r = 0; r < ROWS; ++r) {
            if (failed("sieve_sample", sieve_sample(single[r], logits + (size_t)r * VOCAB, 1, VOCAB, &alone))) goto done;
            if (alone.token != out[r].token || alone.p != out[r].p || alone.step != out[r].step) {
                fprintf(stderr, "batched: step %d row %d: token %d (p %g) in the batch, %d (p %g) alone\n", step, r,
                        out[r].token, out[r].p, alone.token, alone.p);
                goto done;
            }
            ++checked;
        }
        printf("step %d: rows 0..3 -> %d %d %d %d\n", step, out[0].token, out[1].token, out[2].token, out[3].token);
    }
    printf("batched: ok (%d rows x %d steps, every token equal to its row sampled alone)\n", ROWS, STEPS);
    rc = checked == ROWS * STEPS ? 0 : 1;

done:
    for (r = 0; r < ROWS; ++r) sieve_chain_destroy(single[r]);
    sieve_chain_destroy(batch);
    sieve_context_destroy(context);
    free(logits);
    return rc;
}
