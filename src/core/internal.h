/* Internal helpers shared by every module: error raising, checked allocation,
 * logging through the context. Not installed. */
#ifndef CTR_INTERNAL_H
#define CTR_INTERNAL_H

#include "ctrecon.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CTR__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CTR__PRINTF(a, b)
#endif

/* Records `status` with a formatted detail in the calling thread's buffer
 * (ctr_error_detail; 1023 characters at most, longer text is cut) and returns
 * it. The detail is the message alone, for users: it names the file, field or
 * parameter and what was expected, never the source file and line. */
ctr_status ctr__error_set(ctr_status status, const char *fmt, ...) CTR__PRINTF(2, 3);
ctr_status ctr__error_setv(ctr_status status, const char *fmt, va_list ap);

/* Raise and return: CTR_FAIL(CTR_E_IO, "cannot open '%s': %s", path, strerror(errno)) */
#define CTR_FAIL(status, ...) return ctr__error_set((status), __VA_ARGS__)
/* Raise, store in `st` and jump to cleanup (one cleanup label per function). */
#define CTR_FAIL_GOTO(st, status, ...)           \
  do {                                           \
    (st) = ctr__error_set((status), __VA_ARGS__); \
    goto cleanup;                                \
  } while (0)
/* Propagate a failing status (detail already set). */
#define CTR_CHECK(expr)                 \
  do {                                  \
    ctr_status ctr__s = (expr);         \
    if (ctr__s != CTR_OK) return ctr__s; \
  } while (0)
#define CTR_CHECK_GOTO(st, expr)         \
  do {                                   \
    (st) = (expr);                       \
    if ((st) != CTR_OK) goto cleanup;    \
  } while (0)

/* malloc/calloc that raise CTR_E_OUT_OF_MEMORY with the size and purpose. */
void *ctr__malloc(size_t bytes, const char *what);
void *ctr__calloc(size_t n, size_t size, const char *what);
/* 64-byte aligned allocation (free with ctr__aligned_free). */
void *ctr__aligned_alloc(size_t bytes, const char *what);
void ctr__aligned_free(void *p);
/* n * size with overflow check (returns 0 and raises on overflow). */
int ctr__mul_size(size_t a, size_t b, size_t *out);

/* Monotonic seconds (step timings). */
double ctr__now_s(void);

/* Context internals. */
#define CTR__MAX_DEVICES 64
struct ctr_context {
  ctr_context_options opts; /* opts.tuning points to `tuning`; opts.devices points nowhere:
                               the list is copied below */
  ctr_device_kind resolved;
  ctr_tuning tuning; /* copied at creation (tuning.c); cache_dir resolved and owned (NULL: none) */
  /* CUDA contexts: the device ordinals, resolved once at creation (distinct,
   * each visible); the first is the device of single-GPU operations. */
  int ndevices;
  int devices[CTR__MAX_DEVICES];
};

/* Ordinal of the context's i-th CUDA device (0 for a CPU context, a NULL
 * context or i out of range): every GPU entry point takes its device from
 * here, never from the options. */
int ctr__context_gpu(const ctr_context *ctx, int i);

/* The tuning table (src/core/tuning.c, docs/tuning.md): the context's
 * copy, or the defaults (no cache directory) for ctx NULL. */
const ctr_tuning *ctr__tuning(const ctr_context *ctx);
/* Checks `in` (NULL = the defaults; any version 1 .. CTR_TUNING_VERSION,
 * prefix-copied) and copies it into ctx->tuning, resolving the kernel cache
 * directory. CTR_E_INVALID_ARGUMENT naming the field. */
ctr_status ctr__tuning_adopt(ctr_context *ctx, const ctr_tuning *in);
/* Frees what ctr__tuning_adopt allocated. */
void ctr__tuning_release(ctr_context *ctx);

/* Log through the context's callback (no-op if ctx or callback is NULL). */
void ctr__log(const ctr_context *ctx, ctr_log_level level, const char *fmt, ...) CTR__PRINTF(3, 4);
/* Progress callback; returns CTR_E_CANCELLED if the callback asks to stop. */
ctr_status ctr__progress(const ctr_context *ctx, const char *stage, double fraction);
/* Until ctr__progress_scope_end, the calling thread's ctr__progress calls
 * report `stage` at lo + fraction x (hi - lo): a call made inside another
 * (ctr_fbp inside the streamed FBP's band loop) is a part of its progress. */
void ctr__progress_scope(const char *stage, double lo, double hi);
void ctr__progress_scope_end(void);

/* The data policy for non-finite and out-of-range values (values.c,
 * CTR__VALUE_LIMIT in projmath.h). Count of bad values in v[0, n). */
int64_t ctr__values_count(const float *v, int64_t n);
/* Replaces bad values by 0 and returns how many there were. */
int64_t ctr__values_sanitize(float *v, int64_t n);
/* The same for data that cannot be negative (counts, activities): a
 * negative value is bad too. */
int64_t ctr__values_count_nonneg(const float *v, int64_t n);
int64_t ctr__values_sanitize_nonneg(float *v, int64_t n);
/* bad > 0: strict -> CTR_E_FORMAT naming `what` and the count; else a
 * warning through ctx's log with the count, CTR_OK. */
ctr_status ctr__values_report(const ctr_context *ctx, int strict, int64_t bad, const char *what);
/* The same for another kind of bad datum: "<what>: <bad> <kind>, <fate>". */
ctr_status ctr__values_report_kind(const ctr_context *ctx, int strict, int64_t bad,
                                   const char *what, const char *kind, const char *fate);
#define CTR__BAD_VALUES "values NaN, infinite or beyond +-1e+24"

/* Human sizes: "1.5 GiB" into buf. */
const char *ctr__format_bytes(double bytes, char *buf, size_t n);

/* Number of threads for OpenMP regions. */
int ctr__num_threads(const ctr_context *ctx);

#ifdef __cplusplus
}
#endif

#endif
