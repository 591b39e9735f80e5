/* The parallel-beam kernel selector (fbp_tune.c): the fastest exact
 * backprojection kernel per GPU and problem size, found by a short tuning
 * run on first use and cached in "fbp-kernels.json" in the context's
 * ctr_tuning.cache_dir (default $XDG_CACHE_HOME/ctrecon, else
 * ~/.cache/ctrecon). ctr_tuning.tune = -1 turns tuning off (the static
 * default kernel is used). */
#ifndef CTR_FBP_TUNE_H
#define CTR_FBP_TUNE_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctr__fbp_tune_key {
  char gpu[256];          /* device name */
  int64_t nbins, nangles, nx, ny;
  int interp;             /* ctr_fbp_interp */
  int multi;              /* 1 when several slices are reconstructed at once */
} ctr__fbp_tune_key;

/* 1 and the kernel's name in `kernel` if the cache in `dir` has the key; 0
 * for no dir (NULL or ""), a missing, unreadable, corrupt or stale cache or
 * no entry. */
int ctr__fbp_tune_lookup(const char *dir, const ctr__fbp_tune_key *k, char *kernel, size_t n);
/* Records (or replaces) the key's kernel in the cache in `dir`; a corrupt or
 * stale cache is replaced by a fresh one. Atomic (temporary name + rename).
 * CTR_E_IO without a dir or when it cannot be written. */
ctr_status ctr__fbp_tune_store(const char *dir, const ctr__fbp_tune_key *k, const char *kernel,
                               double gups);

/* Times candidate i: milliseconds per slice into *ms. */
typedef ctr_status (*ctr__fbp_time_fn)(void *user, int i, double *ms);
/* The automatic choice among the kernels names[0 .. n): *chosen = -1 when
 * the context's ctr_tuning.tune is -1 (nothing read, timed or written);
 * else the candidate this context chose for k before (kept in the context:
 * nothing read), else the one the cache holds for k, else the fastest by
 * `time`, then recorded in the cache (one that cannot be written costs a
 * re-tune in the next context). Errors of `time` are returned. */
ctr_status ctr__fbp_tune_choose(const ctr_context *ctx, const ctr__fbp_tune_key *k,
                                const char *const *names, int n, ctr__fbp_time_fn time,
                                void *user, int *chosen);

#ifdef __cplusplus
}
#endif
#endif
