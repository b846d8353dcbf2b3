/*
 * Sieve as a drop-in llama.cpp sampler (include/sieve/sieve_llama.h), side by
 * side with llama.cpp's own chain: the same settings (top_k 40, top_p 0.9,
 * min_p 0.05, temperature 0.8, seed 42), the same logits (a Zipf-like row of
 * 2000 tokens), N draws each through llama_sampler_apply. The token counts
 * of both must come from one distribution: a two-sample chi-square test over
 * the tokens with enough draws, at significance 0.001 (exit 1 otherwise).
 * Half of Sieve's draws read the logits row directly
 * (sieve_llama_sampler_set_logits), half the candidate array.
 *
 *   llama_dropin [N]   (default 40000)
 * Exit: 0 agree, 1 disagree, 2 set-up failure.
 */
#include <llama.h>

#include <sieve/sieve_llama.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { VOCAB = 2000 };

/* A Zipf-like row: logit = -1.1 ln(rank), ranks a fixed permutation. */
static void make_logits(float* logits) {
    uint32_t state = 12345u;
    int32_t i;
    for (i = 0; i < VOCAB; ++i) logits[i] = (float)(-1.1 * log((double)(i + 1)));
    for (i = VOCAB - 1; i > 0; --i) { /* Fisher-Yates with an LCG */
        int32_t j;
        float t;
        state = state * 1664525u + 1013904223u;
        j = (int32_t)(state % (uint32_t)(i + 1));
        t = logits[i], logits[i] = logits[j], logits[j] = t;
    }
}

static void fill(llama_token_data* data, const float* logits, llama_token_data_array* cur) {
    int32_t i;
    for (i = 0; i < VOCAB; ++i) data[i].id = i, data[i].logit = logits[i], data[i].p = 0.0f;
    cur->data = data, cur->size = VOCAB, cur->selected = -1, cur->sorted = false;
}

/* The upper 0.001 quantile of chi-square with k degrees of freedom
 * (Wilson-Hilferty; z = 3.0902). */
static double chi2_critical(int k) {
    const double z = 3.0902, a = 2.0 / (9.0 * k);
    const double c = 1.0 - a + z * sqrt(a);
    return k * c * c * c;
}

int main(int argc, char** argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 40000;
    static float logits[VOCAB];
    static llama_token_data data[VOCAB];
    static long count_llama[VOCAB], count_sieve[VOCAB];
    llama_token_data_array cur;
    sieve_context* context = NULL;
    sieve_llama_settings settings;
    struct llama_sampler *llama_chain, *sieve_sampler;
    double chi2 = 0;
    int i, k = 0, bins_used = 0;
    long rest_llama = 0, rest_sieve = 0;

    if (n < 1000) {
        fprintf(stderr, "llama_dropin: N must be at least 1000\n");
        return 2;
    }
    make_logits(logits);

    llama_chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(llama_chain, llama_sampler_init_top_k(40));
    llama_sampler_chain_add(llama_chain, llama_sampler_init_top_p(0.9f, 1));
    llama_sampler_chain_add(llama_chain, llama_sampler_init_min_p(0.05f, 1));
    llama_sampler_chain_add(llama_chain, llama_sampler_init_temp(0.8f));
    llama_sampler_chain_add(llama_chain, llama_sampler_init_dist(42));

    if (sieve_context_create(NULL, &context) != SIEVE_OK) {
        fprintf(stderr, "llama_dropin: no Sieve context: %s\n", sieve_last_error());
        return 2;
    }
    sieve_llama_settings_init(&settings, VOCAB);
    settings.samplers = "top_k;top_p;min_p;temperature";
    settings.top_k = 40, settings.top_p = 0.9f, settings.min_p = 0.05f, settings.temp = 0.8f;
    settings.min_keep = 1, settings.seed = 42;
    sieve_sampler = sieve_llama_sampler_init(context, &settings);
    if (sieve_sampler == NULL) {
        fprintf(stderr, "llama_dropin: the drop-in refused the settings: %s\n", sieve_llama_last_error());
        return 2;
    }

    for (i = 0; i < n; ++i) {
        fill(data, logits, &cur);
        llama_sampler_apply(llama_chain, &cur);
        if (cur.selected < 0) return 2;
        ++count_llama[cur.data[cur.selected].id];
        llama_sampler_accept(llama_chain, cur.data[cur.selected].id);

        fill(data, logits, &cur);
        if (i % 2 == 1) sieve_llama_sampler_set_logits(sieve_sampler, logits, VOCAB);
        llama_sampler_apply(sieve_sampler, &cur);
        if (cur.selected < 0) {
            fprintf(stderr, "llama_dropin: the drop-in selected nothing: %s\n", sieve_llama_last_error());
            return 2;
        }
        ++count_sieve[cur.data[cur.selected].id];
        llama_sampler_accept(sieve_sampler, cur.data[cur.selected].id);
    }

    /* Two-sample chi-square over tokens with at least 10 draws in all; the
     * rest pooled into one bin. */
    for (i = 0; i < VOCAB; ++i) {
        const long a = count_llama[i], b = count_sieve[i];
        if (a + b >= 10) {
            const double e = (a + b) / 2.0;
            chi2 += (a - e) * (a - e) / e + (b - e) * (b - e) / e;
            ++bins_used;
        } else {
            rest_llama += a, rest_sieve += b;
        }
    }
    if (rest_llama + rest_sieve >= 10) {
        const double e = (rest_llama + rest_sieve) / 2.0;
        chi2 += (rest_llama - e) * (rest_llama - e) / e + (rest_sieve - e) * (rest_sieve - e) / e;
        ++bins_used;
    }
    k = bins_used - 1;
    printf("llama_dropin: %d draws each, %d tokens compared, chi-square %.2f with %d degrees of freedom "
           "(critical %.2f at 0.001)\n",
           n, bins_used, chi2, k, chi2_critical(k > 0 ? k : 1));

    llama_sampler_free(sieve_sampler);
    llama_sampler_free(llama_chain);
    sieve_context_destroy(context);
    if (k < 1) {
        fprintf(stderr, "llama_dropin: fewer than two tokens drawn: nothing to compare\n");
        return 1;
    }
    if (chi2 > chi2_critical(k)) {
        printf("llama_dropin: the distributions DIFFER\n");
        return 1;
    }
    printf("llama_dropin: the distributions agree\n");
    return 0;
}
