/* Internal helpers shared by every module: error raising, checked allocation,
 * logging through the context. Not installed. */
#ifndef CTR_INTERNAL_H
#define CTR_INTERNAL_H

#include "ctrecon.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
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

/* ctr__error_set for an error about one API field (ctr_error_get_field):
 * `field` is its C name, "ctr_<struct>.<member>", or the member alone where
 * it is unique in the API ("gpu_budget"); the detail names it too (for C
 * callers). The CLI and Python map `field` to their flag and keyword
 * (tests/error_fields.sh checks the CLI's table against these sites). */
ctr_status ctr__error_set_field(ctr_status status, const char *field, const char *fmt, ...)
    CTR__PRINTF(3, 4);
/* The same with the offending value as the caller gave it
 * (ctr_error_get_value): `value` is its text (NULL: none), made by
 * CTR__V_INT, CTR__V_UINT or CTR__V_REAL, or a string (a path, a name) as
 * it is. Raise with it wherever the value is at hand. */
ctr_status ctr__error_set_value(ctr_status status, const char *field, const char *value,
                                const char *fmt, ...) CTR__PRINTF(4, 5);
/* The text of a value for ctr__error_set_value, in a buffer that lives to
 * the end of the enclosing block (a compound literal: C only): integers in
 * decimal, reals in the shortest form that reads back as the same double
 * ("0.1", "1e+30", "nan"). */
#define CTR__V_INT(v) ctr__value_int((char[24]){0}, (long long)(v))
#define CTR__V_UINT(v) ctr__value_uint((char[24]){0}, (unsigned long long)(v))
#define CTR__V_REAL(v) ctr__value_real((char[32]){0}, (double)(v))
const char *ctr__value_int(char *buf, long long v);
const char *ctr__value_uint(char *buf, unsigned long long v);
const char *ctr__value_real(char *buf, double v);

/* Raise and return: CTR_FAIL(CTR_E_IO, "cannot open '%s': %s", path, strerror(errno)) */
#define CTR_FAIL(status, ...) return ctr__error_set((status), __VA_ARGS__)
/* Raise, store in `st` and jump to cleanup (one cleanup label per function). */
#define CTR_FAIL_GOTO(st, status, ...)           \
  do {                                           \
    (st) = ctr__error_set((status), __VA_ARGS__); \
    goto cleanup;                                \
  } while (0)
/* The same about an API field (ctr__error_set_field):
 * CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.subsets",
 *                "ctr_iterate_options.subsets is %lld: expected >= 0", n) */
#define CTR_FAIL_FIELD(status, field, ...) \
  return ctr__error_set_field((status), (field), __VA_ARGS__)
#define CTR_FAIL_FIELD_GOTO(st, status, field, ...)           \
  do {                                                        \
    (st) = ctr__error_set_field((status), (field), __VA_ARGS__); \
    goto cleanup;                                             \
  } while (0)
/* ... and its value (ctr__error_set_value):
 * CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.subsets", CTR__V_INT(n),
 *                      "ctr_iterate_options.subsets is %lld: expected >= 0", n) */
#define CTR_FAIL_FIELD_VALUE(status, field, value, ...) \
  return ctr__error_set_value((status), (field), (value), __VA_ARGS__)
#define CTR_FAIL_FIELD_VALUE_GOTO(st, status, field, value, ...)           \
  do {                                                                     \
    (st) = ctr__error_set_value((status), (field), (value), __VA_ARGS__); \
    goto cleanup;                                                          \
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
/* memcpy of n bytes in 1 MiB pieces over the OpenMP threads when n is 4 MiB or more
 * (one thread copies ~5 GB/s, a fraction of a GPU machine's memory bandwidth); a plain
 * memcpy below. Call it from outside a parallel region. */
void ctr__copy_parallel(void *dst, const void *src, size_t n);
/* n * size with overflow check (returns 0 and raises on overflow). */
int ctr__mul_size(size_t a, size_t b, size_t *out);

/* Monotonic seconds (step timings). */
double ctr__now_s(void);
/* Seconds since 1970 (CLOCK_REALTIME): stamps compared across processes. */
double ctr__wall_s(void);

/* Context internals. */
#define CTR__MAX_DEVICES 64
/* Choices a context makes once and keeps (the FBP kernel for a GPU and a
 * size: every GPU's pipeline asks for it once a band): a string key and a
 * short value, the oldest replaced when full. */
#define CTR__MEMO_SLOTS 16
#define CTR__MEMO_KEY 320 /* bytes of a key, its terminating 0 included */
#define CTR__MEMO_VALUE 96 /* bytes of a value (an autotuned parameter set's text) */
typedef struct ctr__memo {
  pthread_mutex_t mu;
  int n, next;
  char key[CTR__MEMO_SLOTS][CTR__MEMO_KEY];
  char value[CTR__MEMO_SLOTS][CTR__MEMO_VALUE];
} ctr__memo;
/* GPU buffers a context keeps between its runs: the cache of
 * src/gpu/gpu_buffers.h (its allocator, policy and thread contract; peer
 * access makes allocations dearer: bench/experiments/peer_alloc.cu). */
#define CTR__GPU_CACHE_SLOTS 64
typedef struct ctr__gpu_cache {
  pthread_mutex_t mu;
  int n;
  struct {
    int device;
    void *ptr;
    size_t bytes;
  } slot[CTR__GPU_CACHE_SLOTS];
} ctr__gpu_cache;
struct ctr_context {
  ctr_context_options opts; /* opts.tuning points to `tuning`; opts.devices points nowhere:
                               the list is copied below */
  ctr_device_kind resolved;
  ctr_tuning tuning; /* copied at creation (tuning.c); cache_dir resolved and owned (NULL: none) */
  /* CUDA contexts: the device ordinals, resolved once at creation (distinct,
   * each visible); the first is the device of single-GPU operations. */
  int ndevices;
  int devices[CTR__MAX_DEVICES];
  /* A distributed run's hook (src/distributed): called first by every
   * ctr__progress on this context while the run lasts; it keeps the rank
   * alive, may rewrite the fraction (rank 0: the whole run's) and returns
   * CTR_E_CANCELLED once another rank stopped the run. NULL otherwise. */
  ctr_status (*progress_hook)(void *user, double *fraction);
  void *progress_hook_user;
  ctr__memo memo;
  ctr__gpu_cache gpu_cache;
  int refs; /* 1 (the caller's) + the objects that hold it (ctr__context_hold) */
};

/* Objects made on a context that outlive a call (ctr_projector,
 * ctr_pet_projector, ctr_backprojector) use it until they are freed: their
 * free gives their GPU buffers back to its cache. They hold it (hold at
 * creation, drop at the end of their free): ctr_context_free of a context
 * that is held gives its kept GPU buffers back at once and leaves the rest
 * to the last drop, so an object freed after its context (Python's
 * Context.close) is safe. NULL: nothing. Thread-safe. */
void ctr__context_hold(const ctr_context *ctx);
void ctr__context_drop(const ctr_context *ctx);

/* Implemented by the cache (src/gpu/gpu_buffers.cu; stubs without CUDA),
 * called up from core: the bytes the context keeps on `device` (free to a
 * plan: they are reused) and the release of every kept buffer
 * (ctr_context_release_memory, the one caller). Thread-safe. */
uint64_t ctr__gpu_cached_bytes(const ctr_context *ctx, int device);
void ctr__gpu_cache_release(const ctr_context *ctx);
/* Free memory of CUDA device `device` (src/gpu/device.cu; a CPU build:
 * CTR_E_UNSUPPORTED). */
ctr_status ctr__cuda_free_memory(int device, uint64_t *free_bytes);

/* The k-th smallest (0-based) of the n finite values of s, which it
 * reorders so that s[0..k] <= s[k] <= s[k..n) (select.c; dezinger medians,
 * preview windows). */
float ctr__select_kth(float *s, int64_t n, int64_t k);

/* The memory rule (memory.c, ctr_context_get_memory_budgets): the detected
 * budget of GPU ordinal `device` (its free memory and the bytes the context
 * keeps there, less the reserve; the kept buffers are not released) and of
 * host memory. */
ctr_status ctr__gpu_budget_detect(const ctr_context *ctx, int device, uint64_t *budget);
uint64_t ctr__host_budget_detect(void);
/* "0 = detected" for a caller's budgets: each non-NULL one that is 0 becomes
 * what ctr_context_get_memory_budgets gives (the GPU one 0 on a CPU
 * context), by the same rule but without giving the kept buffers back
 * (every device allocation of the library is the cache's: they are reused,
 * or given back when the GPU is full); given ones stay. Every budget option
 * resolves through it. */
ctr_status ctr__budgets_resolve(ctr_context *ctx, uint64_t *gpu_budget, uint64_t *host_budget);

/* The context's memo (ctx NULL: nothing kept). get: 1 and the value in
 * `value` (n bytes) when `key` was put; put: keeps key -> value (a longer
 * key or value is not kept). Thread-safe. */
int ctr__context_memo_get(const ctr_context *ctx, const char *key, char *value, size_t n);
void ctr__context_memo_put(const ctr_context *ctx, const char *key, const char *value);

/* Why no GPU can be used, in words for an error's detail (why: n bytes).
 * ctr__cuda_why_none asks the CUDA runtime (the CUDA backend; "this build has
 * no CUDA backend" without one); ctr__cuda_reason words what it found:
 * probe is the cudaGetDeviceCount outcome (CTR__CUDA_PROBE_*), driver the
 * driver's CUDA version (cudaDriverGetVersion: 13000 is 13.0, 0 when no
 * driver could be loaded), runtime the CUDA runtime's, error the runtime's
 * text for CTR__CUDA_PROBE_ERROR. */
enum {
  CTR__CUDA_PROBE_NONE = 0,     /* success, but zero devices */
  CTR__CUDA_PROBE_NO_DEVICE,    /* cudaErrorNoDevice */
  CTR__CUDA_PROBE_OLD_DRIVER,   /* cudaErrorInsufficientDriver */
  CTR__CUDA_PROBE_ERROR         /* any other error */
};
void ctr__cuda_reason(char *why, size_t n, int probe, int driver, int runtime, const char *error);
void ctr__cuda_why_none(char *why, size_t n);

/* Ordinal of the context's i-th CUDA device (0 for a CPU context, a NULL
 * context or i out of range): every GPU entry point takes its device from
 * here, never from the options. */
int ctr__context_gpu(const ctr_context *ctx, int i);
/* Arrays the caller holds in GPU memory: the CUDA ordinal p belongs to when it
 * is device or managed memory, -1 for host memory (pinned or not) and in a
 * build without CUDA. ctr__gpu_wait_for(device) waits for every stream of
 * that GPU (the producers of such an array, in any library). */
int ctr__gpu_memory_device(const void *p);
ctr_status ctr__gpu_wait_for(int device);
/* The arrays of entry point `fn` that callers may pass in GPU memory: n
 * pointers (NULL ones are host memory) named name[i] in the errors. gpu[i]
 * gets the ordinal of array i's GPU, or -1 for host memory. A GPU array is
 * CTR_E_INVALID_ARGUMENT naming it on a CPU context (or ctx NULL), and also
 * on a CUDA one when gpu_ok is 0 (an entry point that reads host memory
 * only); otherwise the producers of each array's GPU, on any stream,
 * finish first (ctr__gpu_wait_for). */
ctr_status ctr__gpu_arrays(const ctr_context *ctx, const char *fn, int gpu_ok, int n,
                          const void *const ptr[], const char *const name[], int gpu[]);
/* The same for one array a, or two (b absent: bname NULL), without the
 * ordinals. */
ctr_status ctr__gpu_rule(const ctr_context *ctx, const char *fn, int gpu_ok, const void *a,
                         const char *aname, const void *b, const char *bname);

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
 * negative value is bad too. sum: NULL, or gets the sum of the good values
 * (bad ones as 0) in double, the same bits for any thread count. */
int64_t ctr__values_count_nonneg(const float *v, int64_t n, double *sum);
int64_t ctr__values_sanitize_nonneg(float *v, int64_t n);
/* bad > 0: strict -> CTR_E_FORMAT naming `what` and the count; else a
 * warning through ctx's log with the count, CTR_OK. */
ctr_status ctr__values_report(const ctr_context *ctx, int strict, int64_t bad, const char *what);
/* The same for another kind of bad datum: "<what>: <bad> <kind>, <fate>". */
ctr_status ctr__values_report_kind(const ctr_context *ctx, int strict, int64_t bad,
                                   const char *what, const char *kind, const char *fate);
#define CTR__BAD_VALUES "values NaN, infinite or beyond +-1e+24"

/* ---- Backend tables (backend.c) --------------------------------------------
 * The first member of every modality's backend table (iterative/backend.h,
 * parbeam/backend.h, pet/backend.h): what the registries look up. */
typedef struct ctr__backend_head {
  const char *name;     /* "cpu", "cuda" */
  ctr_device_kind kind; /* CTR_DEVICE_CPU or CTR_DEVICE_CUDA */
  int built;            /* 0: known but not part of this build (every operation NULL) */
} ctr__backend_head;
/* The table among all[0, n) (pointers to their heads) of ctx's resolved
 * device kind (a NULL ctx: the CPU); CTR_E_UNSUPPORTED naming the kind when
 * none of them is built. */
ctr_status ctr__backend_pick(const ctr_context *ctx, const ctr__backend_head *const *all, int n,
                             const ctr__backend_head **out);

/* ---- Versioned public structs --------------------------------------------
 * A public struct that a caller fills, or that the library fills and that
 * may grow, starts with `unsigned version` and grows only at its end
 * (docs/api.md). Each one's versions are described once, in a
 * ctr__struct_desc (src/core/versions.c: ctr__struct_<name>, e.g.
 * ctr__struct_fdk_options), and the four functions below are the only code
 * that reads a version: a module calls ctr__struct_copy on every such struct
 * it is given and ctr__struct_store on every one it fills; the public
 * ctr_<name>_init functions are ctr__struct_init.
 *
 * A version is described by where it ends in the current layout (offsetof
 * the first member it lacks; sizeof for the current version): its layout is
 * that prefix of the current one, except that a versioned struct embedded by
 * value (ctr_fdk_stream_options.fdk, ctr_fdk_stream_report.plan) may have been at an
 * older, shorter version then: `nested` gives the version each embedded one
 * had. Rules the tables keep (ctr__struct_desc_check; test_struct_version):
 * an embedded versioned struct embeds none itself and has the alignment of
 * the struct around it (so the members after it shift by whole alignments
 * when it was shorter); the current version ends at sizeof.
 *
 * A new struct: its VERSION constant and INIT macro in the public header,
 * `unsigned version` first; one CTR__STRUCT_DEFINE_V1 line in
 * src/core/versions.c (which also defines ctr_<name>_init), its descriptor
 * declared below and listed in ctr__structs. A struct that grows: one more
 * row in its table (CTR__V_UPTO for the old last version; a struct with one
 * version gets its table written out, as ctr_fdk_options has) and its VERSION
 * constant + 1. */
#define CTR__STRUCT_MAX_NESTED 2
typedef struct ctr__struct_desc ctr__struct_desc;
typedef struct ctr__struct_version {
  size_t end;                              /* the version ends here in the current layout */
  unsigned nested[CTR__STRUCT_MAX_NESTED]; /* the version of each embedded versioned struct */
} ctr__struct_version;
struct ctr__struct_desc {
  const char *name;                    /* "ctr_fdk_options" (error messages) */
  size_t size, align;                  /* of the current version */
  const void *defaults;                /* the current version's defaults (its INIT macro) */
  unsigned current;                    /* versions 1 .. current are accepted */
  const ctr__struct_version *versions; /* versions[v - 1] */
  int nnested;                         /* versioned structs embedded by value */
  size_t nested_offset[CTR__STRUCT_MAX_NESTED]; /* their offsets now, ascending */
  const char *nested_name[CTR__STRUCT_MAX_NESTED];             /* member names ("fdk") */
  const ctr__struct_desc *nested_desc[CTR__STRUCT_MAX_NESTED]; /* their structs */
};
/* A table row: a version that ends before `member`; the current version. */
#define CTR__V_UPTO(type, member) { offsetof(type, member), { 0 } }
#define CTR__V_ALL(type) { sizeof(type), { 0 } }

/* Reads a struct the caller gives: *dst (current layout) = the defaults,
 * then the members of src's version from src (src NULL: the defaults only);
 * dst's version (and its embedded structs') = the current one. src's
 * version 0 or above the current one, or an embedded struct's version
 * outside what src's version holds, is CTR_E_INVALID_ARGUMENT naming the
 * struct, the version and the accepted range. */
ctr_status ctr__struct_copy(const ctr__struct_desc *d, void *dst, const void *src);
/* Fills a struct the caller gives: writes src (current layout) into dst in
 * dst's version, its members only (embedded versioned structs get the
 * version dst's version holds). dst's version is checked as above. */
ctr_status ctr__struct_store(const ctr__struct_desc *d, void *dst, const void *src);
/* CTR_OK if s is non-NULL with a version this library accepts (the check of
 * ctr__struct_store, for output structs checked before the work). */
ctr_status ctr__struct_check(const ctr__struct_desc *d, const void *s);
/* ctr_<name>_init: s = the defaults, in the layout of `version` (1 ..
 * current), s->version = version. */
ctr_status ctr__struct_init(const ctr__struct_desc *d, void *s, unsigned version);
/* 1 if s (checked) holds the member at [offset, offset + size) of the
 * current layout: for a struct the library updates in place (a caller's
 * ctr_value_counts), whose members before any embedded struct never move. */
int ctr__struct_holds(const ctr__struct_desc *d, const void *s, size_t offset, size_t size);
/* Bytes of version v's layout (0 for a version outside 1 .. current). */
size_t ctr__struct_size(const ctr__struct_desc *d, unsigned v);
/* Checks a descriptor against the rules above (the tests run it on every
 * entry of ctr__structs). */
ctr_status ctr__struct_desc_check(const ctr__struct_desc *d);
/* Every public versioned struct's descriptor, NULL-terminated. */
extern const ctr__struct_desc *const ctr__structs[];
extern const ctr__struct_desc ctr__struct_context_options, ctr__struct_circular_params,
    ctr__struct_helical_params,
    ctr__struct_fdk_options, ctr__struct_fdk_plan_request, ctr__struct_fdk_stream_options,
    ctr__struct_parallel_params, ctr__struct_fbp_options, ctr__struct_pet_params,
    ctr__struct_pet_kernel_params, ctr__struct_pet_sim_options, ctr__struct_pet_recon_options,
    ctr__struct_device_info, ctr__struct_volume_error, ctr__struct_stack_info, ctr__struct_fdk_plan,
    ctr__struct_fdk_stream_timings, ctr__struct_fdk_stream_report, ctr__struct_value_counts,
    ctr__struct_pet_view_info, ctr__struct_pet_recon_timings, ctr__struct_pet_metrics,
    ctr__struct_tuning, ctr__struct_corrections, ctr__struct_fbp_stream_options,
    ctr__struct_fbp_stream_report, ctr__struct_projector_options, ctr__struct_iterate_options,
    ctr__struct_fbp_timings,
    ctr__struct_iterate_plan, ctr__struct_iterate_report, ctr__struct_cluster_options,
    ctr__struct_file_format_info, ctr__struct_preview_options, ctr__struct_frame,
    ctr__struct_source_options, ctr__struct_source_status, ctr__struct_replay_options,
    ctr__struct_live_options, ctr__struct_live_state, ctr__struct_tune_report;

/* Human sizes: "1.5 GiB" into buf. */
const char *ctr__format_bytes(double bytes, char *buf, size_t n);

/* Number of threads for OpenMP regions. */
int ctr__num_threads(const ctr_context *ctx);

#ifdef __cplusplus
}
#endif

#endif
