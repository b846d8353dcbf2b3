/*
 * Sieve as a drop-in llama.cpp sampler: a `struct llama_sampler *` whose
 * interface (llama_sampler_i) samples with a Sieve chain, so a llama.cpp app
 * keeps its llama_sampler_sample / _accept / _reset / _clone / _free calls.
 *
 * Header-only, C and C++. Include llama.h first: this header uses its types
 * and llama_sampler_init, and libsieve itself never links libllama.
 *
 *   #include <llama.h>
 *   #include <sieve/sieve_llama.h>
 *
 *   sieve_llama_settings s;
 *   sieve_llama_settings_init(&s, llama_vocab_n_tokens(vocab));
 *   s.top_k = 50; s.temp = 0.7f; s.seed = 42;
 *   struct llama_sampler * smpl = sieve_llama_sampler_init(sieve_ctx, &s);
 *   if (!smpl) ... // refused: the reason is logged (stderr) and in sieve_llama_last_error()
 *   llama_token t = llama_sampler_sample(smpl, lctx, -1);
 *
 * How the interface maps to Sieve (one Sieve chain, one slot per sampler):
 *   apply   the candidates' logits (or, after sieve_llama_sampler_set_logits,
 *           the whole logits row straight from the app, skipping the array)
 *           are sampled by sieve_sample on the sampler's slot; `selected` is
 *           set to the drawn token's index in the array (-1, with the reason
 *           logged, when Sieve refuses the row). The draw commits
 *           the token to the slot (history, mirostat's mu, adaptive-p's
 *           average), as llama.cpp's apply + accept of the drawn token do.
 *   accept  the drawn token: nothing more (already committed). Any other
 *           token (a prompt token, a grammar's choice): the slot returns to
 *           its state before the draw and the token is appended
 *           (sieve_accept); mirostat and adaptive-p learn only from their own
 *           draws, as in llama.cpp.
 *   reset   sieve_chain_reset_slot.
 *   clone   a free slot of the same chain becomes a copy (sieve_chain_copy_slot);
 *           NULL (logged) when every slot is taken (settings.max_sequences).
 *   free    releases the slot; the last sampler of a chain made by
 *           sieve_llama_sampler_init destroys the chain.
 *
 * Settings Sieve cannot honour are refused llama.cpp-style: a NULL sampler
 * (or chain) and a logged reason. Among them: a mirostat mode other than 0, 1,
 * 2; a -1 window (llama.cpp's "the context") without n_ctx; a window beyond
 * 65536 tokens; any setting Sieve's chain refuses (an unknown or unsupported
 * sampler name, a value out of range: sieve_last_error's message is logged).
 * DRY sequence breakers are token sequences (the app tokenizes them).
 */
#ifndef SIEVE_SIEVE_LLAMA_H
#define SIEVE_SIEVE_LLAMA_H

#ifndef LLAMA_H
#error "sieve/sieve_llama.h needs llama.h: include <llama.h> before <sieve/sieve_llama.h>"
#endif

#include <sieve/sieve.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* llama.cpp's sampling settings (common_params_sampling's names and
 * defaults), without llama.cpp's common library. */
typedef struct sieve_llama_settings {
    int32_t n_vocab;            /* the model's vocabulary (llama_vocab_n_tokens), >= 1 */
    int32_t n_ctx;              /* resolves a -1 window (llama.cpp: the context); 0 = unknown */
    /* llama.cpp's --samplers order, ';'-separated, e.g. "top_k;top_p;temperature";
     * NULL = llama.cpp's default order. Ignored when mirostat is 1 or 2
     * (then "temperature;mirostat[_v2]", as common_sampler_init does). */
    const char* samplers;
    uint32_t seed;              /* LLAMA_DEFAULT_SEED = a random seed */
    float temp, dynatemp_range, dynatemp_exponent;
    int32_t top_k;
    float top_p, min_p, typ_p, top_n_sigma;
    float xtc_probability, xtc_threshold;
    int32_t min_keep;
    int32_t penalty_last_n;     /* -1 = n_ctx */
    float penalty_repeat, penalty_freq, penalty_present;
    float dry_multiplier, dry_base;
    int32_t dry_allowed_length;
    int32_t dry_penalty_last_n; /* -1 = n_ctx */
    /* DRY sequence breakers as token sequences, back to back, lengths[i] each */
    const int32_t* dry_breaker_tokens;
    const int32_t* dry_breaker_lengths;
    int32_t n_dry_breakers;
    int32_t mirostat;           /* 0 off, 1 mirostat, 2 mirostat v2 */
    float mirostat_tau, mirostat_eta;
    float adaptive_target, adaptive_decay;
    const llama_logit_bias* logit_bias;
    int32_t n_logit_bias;
    int32_t max_sequences;      /* slots: samplers (clones included) alive at once; default 4 */
} sieve_llama_settings;

static char sieve_llama_error_[512];

/* The reason for this translation unit's last refusal ("" if none). */
static inline const char* sieve_llama_last_error(void) { return sieve_llama_error_; }

static inline void sieve_llama_refuse_(const char* format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(sieve_llama_error_, sizeof sieve_llama_error_, format, args);
    va_end(args);
    fprintf(stderr, "sieve_llama: %s\n", sieve_llama_error_);
}

static inline void sieve_llama_settings_init(sieve_llama_settings* s, int32_t n_vocab) {
    memset(s, 0, sizeof *s);
    s->n_vocab = n_vocab;
    s->seed = LLAMA_DEFAULT_SEED;
    s->temp = 0.80f, s->dynatemp_range = 0.0f, s->dynatemp_exponent = 1.0f;
    s->top_k = 40, s->top_p = 0.95f, s->min_p = 0.05f, s->typ_p = 1.0f, s->top_n_sigma = -1.0f;
    s->xtc_probability = 0.0f, s->xtc_threshold = 0.10f;
    s->penalty_last_n = 64, s->penalty_repeat = 1.0f;
    s->dry_multiplier = 0.0f, s->dry_base = 1.75f, s->dry_allowed_length = 2, s->dry_penalty_last_n = -1;
    s->mirostat_tau = 5.0f, s->mirostat_eta = 0.10f;
    s->adaptive_target = -1.0f, s->adaptive_decay = 0.90f;
    s->max_sequences = 4;
}

/* A window as Sieve takes it: -1 is n_ctx; an unused sampler's window only
 * needs to fit. -2 on refusal (logged). */
static inline int32_t sieve_llama_window_(const char* name, int32_t window, int32_t n_ctx, int active) {
    if (window == -1) {
        if (n_ctx > 0) window = n_ctx;
        else if (!active) return 0;
        else {
            sieve_llama_refuse_("%s = -1 (the context) needs settings.n_ctx; Sieve has no context", name);
            return -2;
        }
    }
    if (window < 0) {
        sieve_llama_refuse_("%s = %d: a window is -1 or >= 0 tokens", name, window);
        return -2;
    }
    if (window > 65536) {
        if (!active) return 65536;
        sieve_llama_refuse_("%s = %d: Sieve keeps at most 65536 tokens of history", name, window);
        return -2;
    }
    return window;
}

/* The Sieve chain for llama.cpp-style settings: one row, settings.max_sequences
 * slots, every parameter set. NULL on refusal (the reason logged). */
static inline sieve_chain* sieve_llama_chain_create(sieve_context* context, const sieve_llama_settings* s) {
    sieve_chain_desc desc;
    sieve_chain* chain = NULL;
    int32_t pen_window, dry_window, capacity;
    sieve_status st;
    size_t i;
    sieve_llama_error_[0] = '\0';
    if (context == NULL || s == NULL) {
        sieve_llama_refuse_("NULL %s", context == NULL ? "context" : "settings");
        return NULL;
    }
    if (s->n_vocab < 1) {
        sieve_llama_refuse_("n_vocab = %d: a vocabulary has at least one token", s->n_vocab);
        return NULL;
    }
    if (s->mirostat < 0 || s->mirostat > 2) {
        sieve_llama_refuse_("mirostat = %d: llama.cpp's modes are 0 (off), 1 and 2", s->mirostat);
        return NULL;
    }
    if (s->max_sequences < 1) {
        sieve_llama_refuse_("max_sequences = %d: at least one", s->max_sequences);
        return NULL;
    }
    pen_window = sieve_llama_window_("penalty_last_n", s->penalty_last_n, s->n_ctx,
                                     s->penalty_repeat != 1.0f || s->penalty_freq != 0.0f || s->penalty_present != 0.0f);
    if (pen_window == -2) return NULL;
    dry_window = sieve_llama_window_("dry_penalty_last_n", s->dry_penalty_last_n, s->n_ctx, s->dry_multiplier != 0.0f);
    if (dry_window == -2) return NULL;
    capacity = pen_window > dry_window ? pen_window : dry_window;
    if (capacity < 64) capacity = 64;

    sieve_chain_desc_init(&desc);
    desc.samplers = s->mirostat == 1 ? "temperature;mirostat" : s->mirostat == 2 ? "temperature;mirostat_v2" : s->samplers;
    desc.max_rows = 1;
    desc.max_vocab = s->n_vocab;
    desc.temperature = s->temp;
    desc.seed = s->seed;
    desc.min_keep = s->min_keep;
    desc.max_slots = s->max_sequences;
    desc.history_capacity = capacity;
    st = sieve_chain_create(context, &desc, &chain);
    if (st != SIEVE_OK) {
        sieve_llama_refuse_("%s: %s", sieve_status_name(st), sieve_last_error());
        return NULL;
    }
    {
        const struct { sieve_param param; double value; const char* name; } values[] = {
            {SIEVE_PARAM_TOP_K, (double)s->top_k, "top_k"},
            {SIEVE_PARAM_TOP_P, s->top_p, "top_p"},
            {SIEVE_PARAM_MIN_P, s->min_p, "min_p"},
            {SIEVE_PARAM_TYPICAL_P, s->typ_p, "typ_p"},
            {SIEVE_PARAM_TOP_N_SIGMA, s->top_n_sigma, "top_n_sigma"},
            {SIEVE_PARAM_XTC_PROBABILITY, s->xtc_probability, "xtc_probability"},
            {SIEVE_PARAM_XTC_THRESHOLD, s->xtc_threshold, "xtc_threshold"},
            {SIEVE_PARAM_DYNATEMP_RANGE, s->dynatemp_range, "dynatemp_range"},
            {SIEVE_PARAM_DYNATEMP_EXPONENT, s->dynatemp_exponent, "dynatemp_exponent"},
            {SIEVE_PARAM_REPEAT_LAST_N, (double)pen_window, "penalty_last_n"},
            {SIEVE_PARAM_REPEAT_PENALTY, s->penalty_repeat, "penalty_repeat"},
            {SIEVE_PARAM_FREQUENCY_PENALTY, s->penalty_freq, "penalty_freq"},
            {SIEVE_PARAM_PRESENCE_PENALTY, s->penalty_present, "penalty_present"},
            {SIEVE_PARAM_DRY_MULTIPLIER, s->dry_multiplier, "dry_multiplier"},
            {SIEVE_PARAM_DRY_BASE, s->dry_base, "dry_base"},
            {SIEVE_PARAM_DRY_ALLOWED_LENGTH, (double)s->dry_allowed_length, "dry_allowed_length"},
            {SIEVE_PARAM_DRY_PENALTY_LAST_N, (double)dry_window, "dry_penalty_last_n"},
            {SIEVE_PARAM_MIROSTAT_TAU, s->mirostat_tau, "mirostat_tau"},
            {SIEVE_PARAM_MIROSTAT_ETA, s->mirostat_eta, "mirostat_eta"},
            {SIEVE_PARAM_ADAPTIVE_TARGET, s->adaptive_target, "adaptive_target"},
            {SIEVE_PARAM_ADAPTIVE_DECAY, s->adaptive_decay, "adaptive_decay"},
        };
        for (i = 0; i < sizeof values / sizeof values[0]; ++i) {
            st = sieve_chain_set_param(chain, -1, values[i].param, values[i].value);
            if (st != SIEVE_OK) {
                sieve_llama_refuse_("%s = %g: %s", values[i].name, values[i].value, sieve_last_error());
                sieve_chain_destroy(chain);
                return NULL;
            }
        }
    }
    if (s->n_dry_breakers > 0 &&
        (st = sieve_chain_set_dry_breakers(chain, -1, s->dry_breaker_tokens, s->dry_breaker_lengths,
                                           s->n_dry_breakers)) != SIEVE_OK) {
        sieve_llama_refuse_("DRY sequence breakers: %s", sieve_last_error());
        sieve_chain_destroy(chain);
        return NULL;
    }
    if (s->n_logit_bias > 0) {
        int32_t* ids = (int32_t*)malloc(sizeof(int32_t) * (size_t)s->n_logit_bias);
        float* bias = (float*)malloc(sizeof(float) * (size_t)s->n_logit_bias);
        int32_t j;
        if (ids == NULL || bias == NULL) st = SIEVE_ERROR_OUT_OF_MEMORY;
        else {
            for (j = 0; j < s->n_logit_bias; ++j) ids[j] = s->logit_bias[j].token, bias[j] = s->logit_bias[j].bias;
            st = sieve_chain_set_logit_bias(chain, -1, ids, bias, s->n_logit_bias);
        }
        free(ids);
        free(bias);
        if (st != SIEVE_OK) {
            sieve_llama_refuse_("logit bias: %s", st == SIEVE_ERROR_OUT_OF_MEMORY ? "out of memory" : sieve_last_error());
            sieve_chain_destroy(chain);
            return NULL;
        }
    }
    return chain;
}

/* ---- the sampler ------------------------------------------------------------- */

typedef struct sieve_llama_shared_ {
    sieve_chain* chain;
    int owns_chain;
    int32_t n_vocab;
    int32_t n_slots;
    unsigned char* used;    /* per slot: a sampler holds it */
    int32_t refs;
    float* row;             /* scratch: the candidates' logits as a row */
    size_t blob_size;
} sieve_llama_shared_;

typedef struct sieve_llama_ctx_ {
    sieve_llama_shared_* shared;
    int32_t slot;
    const float* direct;    /* the app's logits row for the next apply (NULL = the array) */
    int32_t direct_vocab;
    int32_t pending;        /* the token the last apply drew and committed (-1: none) */
    void* before;           /* the slot as it was before that draw */
} sieve_llama_ctx_;

static inline const char* sieve_llama_name_(const struct llama_sampler* smpl) {
    (void)smpl;
    return "sieve";
}

static inline void sieve_llama_apply_(struct llama_sampler* smpl, llama_token_data_array* cur_p) {
    sieve_llama_ctx_* c = (sieve_llama_ctx_*)smpl->ctx;
    sieve_llama_shared_* sh = c->shared;
    const float* row = c->direct;
    int32_t vocab = c->direct_vocab;
    sieve_token out;
    sieve_status st;
    size_t i;
    cur_p->selected = -1;
    c->direct = NULL;
    if (row == NULL) {
        for (i = 0; i < (size_t)sh->n_vocab; ++i) sh->row[i] = -INFINITY;
        for (i = 0; i < cur_p->size; ++i) {
            const llama_token id = cur_p->data[i].id;
            if (id >= 0 && id < sh->n_vocab) sh->row[id] = cur_p->data[i].logit;
        }
        row = sh->row;
        vocab = sh->n_vocab;
    }
    sieve_chain_set_slots(sh->chain, &c->slot, 1);
    if (sieve_chain_save_slot(sh->chain, c->slot, c->before, sh->blob_size) != SIEVE_OK) {
        sieve_llama_refuse_("apply: saving the slot: %s", sieve_last_error());
        return;
    }
    st = sieve_sample(sh->chain, row, 1, vocab, &out);
    if (st != SIEVE_OK) {
        sieve_llama_refuse_("apply: %s: %s", sieve_status_name(st), sieve_last_error());
        return;
    }
    c->pending = out.token;
    if ((size_t)out.token < cur_p->size && cur_p->data[out.token].id == out.token) {
        cur_p->selected = out.token;
    } else {
        for (i = 0; i < cur_p->size; ++i)
            if (cur_p->data[i].id == out.token) {
                cur_p->selected = (int64_t)i;
                break;
            }
    }
    if (cur_p->selected < 0) sieve_llama_refuse_("apply: the drawn token %d is not in the candidate array", out.token);
}

static inline void sieve_llama_accept_(struct llama_sampler* smpl, llama_token token) {
    sieve_llama_ctx_* c = (sieve_llama_ctx_*)smpl->ctx;
    sieve_llama_shared_* sh = c->shared;
    const int32_t pending = c->pending;
    c->pending = -1;
    if (pending == token) return;  /* the draw committed it */
    if (pending >= 0) sieve_chain_restore_slot(sh->chain, c->slot, c->before, sh->blob_size);
    sieve_chain_set_slots(sh->chain, &c->slot, 1);
    if (sieve_accept(sh->chain, 0, &token, 1) != SIEVE_OK) sieve_llama_refuse_("accept: %s", sieve_last_error());
}

static inline void sieve_llama_reset_(struct llama_sampler* smpl) {
    sieve_llama_ctx_* c = (sieve_llama_ctx_*)smpl->ctx;
    c->pending = -1;
    sieve_chain_reset_slot(c->shared->chain, c->slot);
}

static inline struct llama_sampler* sieve_llama_wrap_(sieve_llama_shared_* sh, int32_t slot);

static inline struct llama_sampler* sieve_llama_clone_(const struct llama_sampler* smpl) {
    const sieve_llama_ctx_* c = (const sieve_llama_ctx_*)smpl->ctx;
    sieve_llama_shared_* sh = c->shared;
    struct llama_sampler* copy;
    int32_t slot;
    for (slot = 0; slot < sh->n_slots && sh->used[slot]; ++slot) {
    }
    if (slot == sh->n_slots) {
        sieve_llama_refuse_("clone: all %d slots are taken (settings.max_sequences)", sh->n_slots);
        return NULL;
    }
    if (sieve_chain_copy_slot(sh->chain, c->slot, slot) != SIEVE_OK) {
        sieve_llama_refuse_("clone: %s", sieve_last_error());
        return NULL;
    }
    copy = sieve_llama_wrap_(sh, slot);
    if (copy != NULL) {
        sieve_llama_ctx_* cc = (sieve_llama_ctx_*)copy->ctx;
        cc->pending = c->pending;
        memcpy(cc->before, c->before, sh->blob_size);
    }
    return copy;
}

static inline void sieve_llama_free_(struct llama_sampler* smpl) {
    sieve_llama_ctx_* c = (sieve_llama_ctx_*)smpl->ctx;
    sieve_llama_shared_* sh = c->shared;
    sh->used[c->slot] = 0;
    free(c->before);
    free(c);
    if (--sh->refs == 0) {
        if (sh->owns_chain) sieve_chain_destroy(sh->chain);
        free(sh->used);
        free(sh->row);
        free(sh);
    }
}

/* The interface: the callbacks above, the rest (backend sampling) NULL. */
#ifdef __cplusplus
static inline struct llama_sampler_i* sieve_llama_iface_(void) {
    static struct llama_sampler_i iface = [] {
        struct llama_sampler_i i = {};
        i.name = sieve_llama_name_, i.accept = sieve_llama_accept_, i.apply = sieve_llama_apply_;
        i.reset = sieve_llama_reset_, i.clone = sieve_llama_clone_, i.free = sieve_llama_free_;
        return i;
    }();
    return &iface;
}
#else
static struct llama_sampler_i sieve_llama_iface_storage_ = {
    .name = sieve_llama_name_, .accept = sieve_llama_accept_, .apply = sieve_llama_apply_,
    .reset = sieve_llama_reset_, .clone = sieve_llama_clone_, .free = sieve_llama_free_,
};
static inline struct llama_sampler_i* sieve_llama_iface_(void) { return &sieve_llama_iface_storage_; }
#endif

static inline struct llama_sampler* sieve_llama_wrap_(sieve_llama_shared_* sh, int32_t slot) {
    sieve_llama_ctx_* c = (sieve_llama_ctx_*)calloc(1, sizeof *c);
    if (c == NULL || (c->before = malloc(sh->blob_size)) == NULL) {
        free(c);
        sieve_llama_refuse_("out of memory");
        return NULL;
    }
    c->shared = sh;
    c->slot = slot;
    c->pending = -1;
    sh->used[slot] = 1;
    ++sh->refs;
    return llama_sampler_init(sieve_llama_iface_(), c);
}

/* A sampler on `slot` of an app's chain (one row; max_vocab n_vocab, max_slots
 * n_slots as the chain was made). The app keeps the chain alive and destroys
 * it after the last sampler on it is freed; clones take the chain's free
 * slots. NULL on refusal (logged). */
static inline struct llama_sampler* sieve_llama_sampler_from_chain(sieve_chain* chain, int32_t slot, int32_t n_vocab,
                                                                   int32_t n_slots) {
    sieve_llama_shared_* sh;
    struct llama_sampler* smpl;
    if (chain == NULL || n_vocab < 1 || n_slots < 1 || slot < 0 || slot >= n_slots) {
        sieve_llama_refuse_("from_chain: %s", chain == NULL ? "NULL chain" : "n_vocab, n_slots or slot out of range");
        return NULL;
    }
    sh = (sieve_llama_shared_*)calloc(1, sizeof *sh);
    if (sh == NULL) {
        sieve_llama_refuse_("out of memory");
        return NULL;
    }
    sh->chain = chain;
    sh->n_vocab = n_vocab;
    sh->n_slots = n_slots;
    sh->used = (unsigned char*)calloc((size_t)n_slots, 1);
    sh->row = (float*)malloc(sizeof(float) * (size_t)n_vocab);
    if (sieve_chain_slot_state_size(chain, &sh->blob_size) != SIEVE_OK || sh->used == NULL || sh->row == NULL) {
        sieve_llama_refuse_("from_chain: %s", sh->used && sh->row ? sieve_last_error() : "out of memory");
        free(sh->used);
        free(sh->row);
        free(sh);
        return NULL;
    }
    smpl = sieve_llama_wrap_(sh, slot);
    if (smpl == NULL) {
        free(sh->used);
        free(sh->row);
        free(sh);
    }
    return smpl;
}

/* A sampler with its own chain built from llama.cpp-style settings (slot 0;
 * the chain is destroyed with the last sampler on it). NULL on refusal
 * (logged). */
static inline struct llama_sampler* sieve_llama_sampler_init(sieve_context* context, const sieve_llama_settings* s) {
    struct llama_sampler* smpl;
    sieve_chain* chain = sieve_llama_chain_create(context, s);
    if (chain == NULL) return NULL;
    smpl = sieve_llama_sampler_from_chain(chain, 0, s->n_vocab, s->max_sequences);
    if (smpl == NULL) sieve_chain_destroy(chain);
    else ((sieve_llama_ctx_*)smpl->ctx)->shared->owns_chain = 1;
    return smpl;
}

/* Whether `smpl` is one of this header's samplers (in this translation unit). */
static inline int sieve_llama_is_sieve(const struct llama_sampler* smpl) {
    return smpl != NULL && smpl->iface == sieve_llama_iface_();
}

/* The next apply samples this logits row (n_vocab floats, the app's, read
 * during that apply) instead of the candidate array's logits, which spares
 * the copy; the array must still hold the drawn token (llama_sampler_sample's
 * array holds the whole vocabulary in id order). One apply only. */
static inline int sieve_llama_sampler_set_logits(struct llama_sampler* smpl, const float* logits, int32_t n_vocab) {
    sieve_llama_ctx_* c;
    if (!sieve_llama_is_sieve(smpl) || logits == NULL || n_vocab < 1) {
        sieve_llama_refuse_("set_logits: %s", !sieve_llama_is_sieve(smpl) ? "not a Sieve sampler" : "no logits");
        return 0;
    }
    c = (sieve_llama_ctx_*)smpl->ctx;
    if (n_vocab > c->shared->n_vocab) {
        sieve_llama_refuse_("set_logits: n_vocab %d is beyond the chain's %d", n_vocab, c->shared->n_vocab);
        return 0;
    }
    c->direct = logits;
    c->direct_vocab = n_vocab;
    return 1;
}

/* The Sieve chain and slot behind a Sieve sampler (NULL / -1 otherwise). */
static inline sieve_chain* sieve_llama_sampler_chain(const struct llama_sampler* smpl) {
    return sieve_llama_is_sieve(smpl) ? ((const sieve_llama_ctx_*)smpl->ctx)->shared->chain : NULL;
}
static inline int32_t sieve_llama_sampler_slot(const struct llama_sampler* smpl) {
    return sieve_llama_is_sieve(smpl) ? ((const sieve_llama_ctx_*)smpl->ctx)->slot : -1;
}

#ifdef __cplusplus
}
#endif

#endif /* SIEVE_SIEVE_LLAMA_H */
