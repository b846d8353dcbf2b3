/* The engine alone, through the public C API, for A/B runs across versions
 * (scripts/engine_ab.sh compiles this file against each side's own sieve.h):
 * sieve_sample on one row of 151936 logits from the host, the median of
 * CALLS timed calls per case after a warm-up, then, with the chain's
 * profiling on (GPU timestamps around each dispatch), each stage's median
 * over CALLS more calls; one line a case:
 * "<case> <median us> <stage>=<median us> ...". The cases are sieve bench's one-row chains (cli/bench_suite.cpp)
 * without history, llama.cpp's default chain with a logit bias (default_bias) and two chains that need
 * the full-row aggregates (top_p_min_p: the default chain with top-k off; top_n_sigma); the row is a
 * fixed Zipf-like one.
 *
 *   sieve_engine_ab CALLS [CASES]   (CASES: a comma-separated list; default all)
 *
 * Exit status: 0; 2 usage; 1 the library refused a context or a chain. */
#include <sieve/sieve.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kVocab = 151936, kWarmup = 30 };

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

/* Whether `name` is an item of the comma-separated `list`. */
static int listed(const char* list, const char* name) {
    const size_t n = strlen(name);
    for (const char* p = list; p && *p;) {
        const char* end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

int main(int argc, char** argv) {
    const int calls = argc > 1 ? atoi(argv[1]) : 0;
    if (argc < 2 || argc > 3 || calls < 1) {
        fprintf(stderr, "usage: sieve_engine_ab CALLS [CASES]\n");
        return 2;
    }
    const char* only = argc > 2 ? argv[2] : NULL;
    static const struct {
        const char* name;
        const char* samplers;
        int top_k;
        double top_p;
        int bias;        /* a logit bias of +1 on token 5 (the rows' inputs) */
        double n_sigma;  /* top-n-sigma's n (0: the chain's default) */
        int logprobs;    /* sieve_chain_set_logprobs's n (-1: off) */
    } cases[] = {{"greedy", "greedy", 40, 0.95, 0, 0, -1},
                 {"dist", "temperature;dist", 40, 0.95, 0, 0, -1},
                 {"default", "", 40, 0.95, 0, 0, -1},
                 {"top_p", "top_p;temperature", 40, 0.9, 0, 0, -1},
                 {"min_p", "min_p;temperature", 40, 0.95, 0, 0, -1},
                 {"top_k1000", "top_k;temperature", 1000, 0.95, 0, 0, -1},
                 {"default_bias", "", 40, 0.95, 1, 0, -1},
                 /* the full-row aggregates: top-p first with min-p after it (top-k off), top-n-sigma */
                 {"top_p_min_p", "", 0, 0.95, 0, 0, -1},
                 {"top_n_sigma", "top_n_sigma;temperature", 40, 0.95, 0, 1.0, -1},
                 /* the raw log-probabilities pass: the token's and the top 20 */
                 {"default_logprobs", "", 40, 0.95, 0, 0, 20}};
    const size_t n_cases = sizeof(cases) / sizeof(cases[0]);
    for (const char* p = only; p && *p;) {  /* every name given must be a case */
        const char* end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        int known = 0;
        for (size_t c = 0; c < n_cases; ++c) known |= strlen(cases[c].name) == len && !strncmp(p, cases[c].name, len);
        if (!known) {
            fprintf(stderr, "sieve_engine_ab: unknown case '%.*s'\n", (int)len, p);
            return 2;
        }
        p = end ? end + 1 : NULL;
    }
    /* Rank r of a fixed shuffle gets 12 - ln(r + 1), plus noise below 0.01. */
    float* logits = malloc(sizeof(float) * kVocab);
    double* times = malloc(sizeof(double) * (size_t)calls);
    if (!logits || !times) return 1;
    uint32_t s = 12345;
    for (int i = 0; i < kVocab; ++i) {
        s = s * 1664525u + 1013904223u;
        const uint32_t rank = (uint32_t)(((uint64_t)i * 2654435761u) % kVocab);
        logits[i] = 12.0f - logf((float)rank + 1.0f) + (float)(s >> 8) * (0.01f / 16777216.0f);
    }
    sieve_context* ctx = NULL;
    if (sieve_context_create(NULL, &ctx) != SIEVE_OK) {
        fprintf(stderr, "sieve_engine_ab: no context: %s\n", sieve_last_error());
        return 1;
    }
    for (size_t c = 0; c < n_cases; ++c) {
        if (only && !listed(only, cases[c].name)) continue;
        sieve_chain_desc desc;
        sieve_chain_desc_init(&desc);
        desc.samplers = cases[c].samplers;
        desc.max_rows = 1;
        desc.max_vocab = kVocab;
        desc.temperature = 0.8f;
        desc.seed = 42;
        sieve_chain* chain = NULL;
        if (sieve_chain_create(ctx, &desc, &chain) != SIEVE_OK) {
            fprintf(stderr, "sieve_engine_ab: no chain %s: %s\n", cases[c].name, sieve_last_error());
            return 1;
        }
        sieve_chain_set_param(chain, -1, SIEVE_PARAM_TOP_K, cases[c].top_k);
        sieve_chain_set_param(chain, -1, SIEVE_PARAM_TOP_P, cases[c].top_p);
        if (cases[c].n_sigma > 0) sieve_chain_set_param(chain, -1, SIEVE_PARAM_TOP_N_SIGMA, cases[c].n_sigma);
        if (cases[c].logprobs >= 0 && sieve_chain_set_logprobs(chain, cases[c].logprobs) != SIEVE_OK) {
            fprintf(stderr, "sieve_engine_ab: no logprobs for %s: %s\n", cases[c].name, sieve_last_error());
            return 1;
        }
        const int32_t biased = 5;
        const float plus_one = 1.0f;
        if (cases[c].bias && sieve_chain_set_logit_bias(chain, 0, &biased, &plus_one, 1) != SIEVE_OK) {
            fprintf(stderr, "sieve_engine_ab: no bias for %s: %s\n", cases[c].name, sieve_last_error());
            return 1;
        }
        sieve_token token;
        for (int i = 0; i < kWarmup; ++i) sieve_sample(chain, logits, 1, kVocab, &token);
        for (int i = 0; i < calls; ++i) {
            const double t0 = now_us();
            if (sieve_sample(chain, logits, 1, kVocab, &token) != SIEVE_OK || token.status != SIEVE_OK) {
                fprintf(stderr, "sieve_engine_ab: %s failed: %s\n", cases[c].name, sieve_last_error());
                return 1;
            }
            times[i] = now_us() - t0;
        }
        qsort(times, (size_t)calls, sizeof(double), by_value);
        printf("%s %.1f", cases[c].name, times[calls / 2]);
        /* Where the time goes: each stage's median with timestamps on (a
         * call's stages, in order; a stage of one name may recur at levels). */
        enum { kStages = 16 };
        sieve_stage_time stages[kStages], first[kStages];
        uint32_t n_stages = 0;
        double* per_stage = malloc(sizeof(double) * (size_t)calls * kStages);
        if (!per_stage || sieve_chain_set_profiling(chain, 1) != SIEVE_OK) return 1;
        for (int i = 0; i < calls; ++i) {
            uint32_t n = 0;
            if (sieve_sample(chain, logits, 1, kVocab, &token) != SIEVE_OK ||
                sieve_chain_stage_times(chain, stages, kStages, &n) != SIEVE_OK)
                return 1;
            if (i == 0) {  /* the labels: the first call's stages */
                n_stages = n < kStages ? n : kStages;
                memcpy(first, stages, sizeof(stages));
            }
            for (uint32_t k = 0; k < n_stages; ++k) per_stage[k * (size_t)calls + i] = k < n ? stages[k].gpu_us : 0.0;
        }
        for (uint32_t k = 0; k < n_stages; ++k) {
            qsort(per_stage + k * (size_t)calls, (size_t)calls, sizeof(double), by_value);
            printf(" %s=%.1f", first[k].stage, per_stage[k * (size_t)calls + calls / 2]);
        }
        printf("\n");
        fflush(stdout);
        free(per_stage);
        sieve_chain_destroy(chain);
    }
    sieve_context_destroy(ctx);
    free(times);
    free(logits);
    return 0;
}
