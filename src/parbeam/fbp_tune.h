/* Cache of the parallel-beam kernel selector (fbp_tune.c): the fastest
 * exact backprojection kernel per GPU and problem size, found by a short
 * tuning run on first use. File: $CTRECON_CACHE_DIR/fbp-kernels.json (else
 * $XDG_CACHE_HOME/ctrecon/, else ~/.cache/ctrecon/). CTRECON_TUNE=0 turns
 * tuning off (the static default kernel is used). */
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

/* 1 and the kernel's name in `kernel` if the cache has the key; 0 for a
 * missing, unreadable, corrupt or stale cache or no entry. */
int ctr__fbp_tune_lookup(const ctr__fbp_tune_key *k, char *kernel, size_t n);
/* Records (or replaces) the key's kernel; a corrupt or stale cache is
 * replaced by a fresh one. Atomic (temporary name + rename). */
ctr_status ctr__fbp_tune_store(const ctr__fbp_tune_key *k, const char *kernel, double gups);
/* 0 when CTRECON_TUNE is 0, off or no. */
int ctr__fbp_tune_enabled(void);

#ifdef __cplusplus
}
#endif
#endif
