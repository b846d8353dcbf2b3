/* minimal.c: sample one token from 8 logits with Sieve's C API (C99).
 *
 * Creates a context on the default device (or the CPU twin when there is no
 * Vulkan device), a "temperature;dist" chain for 1 row x 8 tokens with seed 42,
 * samples once, prints the token and cleans up. Returns 0 on success. */
#include <sieve/sieve.h>

#include <stdio.h>

static int failed(const char* what, sieve_status status) {
    if (status == SIEVE_OK) return 0;
    fprintf(stderr, "minimal: %s failed: %s: %s\n", what, sieve_status_name(status), sieve_last_error());
    return 1;
}

int main(void) {
    const float logits[8] = {1.0f, 3.5f, -2.0f, 0.5f, 3.0f, -1.0f, 2.0f, 0.0f};
    sieve_context_options options;
    sieve_context* context = NULL;
    sieve_chain_desc desc;
    sieve_chain* chain = NULL;
    sieve_device_info info;
    sieve_token token;
    sieve_status status;
    int rc = 1;

    if (!SIEVE_VERSION_COMPATIBLE(SIEVE_VERSION, sieve_version())) {
        fprintf(stderr, "minimal: library version %u.%u, built against %s (sieve.h: ABI rules)\n",
                (unsigned)SIEVE_VERSION_GET_MAJOR(sieve_version()), (unsigned)SIEVE_VERSION_GET_MINOR(sieve_version()),
                SIEVE_VERSION_STRING);
        return 1;
    }

    sieve_context_options_init(&options);
    status = sieve_context_create(&options, &context);
    if (status == SIEVE_ERROR_NO_DEVICE) {
        fprintf(stderr, "minimal: no Vulkan device (%s); using the CPU twin\n", sieve_last_error());
        options.backend = SIEVE_BACKEND_CPU;
        status = sieve_context_create(&options, &context);
    }
    if (failed("sieve_context_create", status)) return 1;
    if (options.backend == SIEVE_BACKEND_VULKAN && sieve_context_device_info(context, &info) == SIEVE_OK)
        printf("device: %s\n", info.name);
    else
        printf("device: CPU twin\n");

    sieve_chain_desc_init(&desc);
    desc.samplers = "temperature;dist";
    desc.max_rows = 1;
    desc.max_vocab = 8;
    desc.temperature = 0.8f;
    desc.seed = 42;
    status = sieve_chain_create(context, &desc, &chain);
    if (failed("sieve_chain_create", status)) goto done;

    status = sieve_sample(chain, logits, 1, 8, &token);
    if (failed("sieve_sample", status)) goto done;
    if (token.status != SIEVE_OK || token.token < 0 || token.token >= 8) {
        fprintf(stderr, "minimal: bad token %d (status %s)\n", (int)token.token, sieve_status_name(token.status));
        goto done;
    }
    printf("token %d  p %.6f  logprob %.6f  seed %u\n", (int)token.token, token.p, token.logprob, (unsigned)token.seed);
    rc = 0;

done:
    if (chain) sieve_chain_destroy(chain);
    sieve_context_destroy(context);
    return rc;
}
