/* The autotuner (autotune.c; docs/tuning.md, "Autotuning"): for each
 * kernel family a declared parameter space (a table: the ctr_tuning keys it
 * tunes, their candidate values), a problem-class key (the family and the
 * sizes that matter, bucketed), a GPU key (device name, compute capability,
 * driver version), one JSON cache of winners ("kernels.json" in the
 * context's ctr_tuning.cache_dir), and a search that times candidates with
 * a caller's timing callback.
 *
 * The search's contract:
 *  - today's default is always a candidate, timed first, and stays the
 *    choice unless another candidate is faster by more than the margin
 *    (CTR__TUNE_MARGIN, 3 %): tuned parameters are never slower than the
 *    defaults by more than the timing's noise;
 *  - a parameter the user set by hand (its ctr_tuning field non-zero) is
 *    never tuned: every candidate carries the user's value;
 *  - a time budget (CTR__TUNE_BUDGET_S): once spent, the search stops and
 *    keeps the best found so far.
 * The cache is read and written whole; writes go to a temporary name and
 * are renamed (a crash never leaves half a file); a corrupt file, one of
 * another version or an entry of another GPU or driver is never used (a
 * warning names the file: the caller tunes again and the next store
 * rewrites it). Thread-safe: the context's memo keeps each class's winner
 * once chosen (one search per context and class, whoever asks). */
#ifndef CTR_AUTOTUNE_H
#define CTR_AUTOTUNE_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cJSON;

#define CTR__TUNE_MAX_PARAMS 4
#define CTR__TUNE_MAX_VALUES 12
/* Stop timing once this many seconds went by (the target: a new
 * problem class tuned in under 10 s, set-up included). */
#define CTR__TUNE_BUDGET_S 8.0
/* A candidate replaces the default only when faster by more than this. */
#define CTR__TUNE_MARGIN 0.03
#define CTR__TUNE_CACHE_NAME "kernels.json"
#define CTR__TUNE_CACHE_VERSION 1

/* A parameter's kind: an int, or a block shape X x Y (value X * 1024 + Y,
 * written "XxY"). */
typedef enum { CTR__TUNE_INT = 0, CTR__TUNE_BLOCK = 1 } ctr__tune_kind;
#define CTR__TUNE_XY(x, y) ((x) * 1024 + (y))
#define CTR__TUNE_X(v) ((v) / 1024)
#define CTR__TUNE_Y(v) ((v) % 1024)

typedef struct ctr__tune_param {
  const char *key; /* the ctr_tuning key it tunes (ctr_tuning_set's name) */
  ctr__tune_kind kind;
  int nvalues;
  int values[CTR__TUNE_MAX_VALUES];
} ctr__tune_param;

/* A family's declared space: the candidates are the product of its
 * parameters' values that `allowed` accepts (NULL: all). */
typedef struct ctr__tune_space {
  const char *family; /* "conebeam-bp", "pet-projector", "iterative" */
  const char *what;   /* one line for docs and `ctrecon tune --spaces` */
  int nparams;        /* 0: nothing to tune (the family has no launch parameters) */
  ctr__tune_param params[CTR__TUNE_MAX_PARAMS];
  int (*allowed)(const int *v, const void *problem);
} ctr__tune_space;

/* The declared spaces (autotune.c), NULL-terminated by family, and one by
 * name (NULL if none). */
extern const ctr__tune_space *const ctr__tune_spaces[];
const ctr__tune_space *ctr__tune_space_find(const char *family);

/* The GPU key: an entry is used only on a GPU with the same name, compute
 * capability and driver version. */
typedef struct ctr__tune_gpu {
  char name[256];
  int cc_major, cc_minor;
  int driver; /* cudaDriverGetVersion's */
} ctr__tune_gpu;

/* A size's bucket: the smallest of 2^k and 3 * 2^(k-1) at least n (n >= 1;
 * 0 for n <= 0): sizes within about 25 % share a class. */
int64_t ctr__tune_bucket(int64_t n);

/* Parameter values <-> text "key=value,key=value" (blocks as XxY). format:
 * 0 if it does not fit in n bytes. parse: 0 unless `text` names every
 * parameter of s once, with a declared value (a cache of an older space
 * is not used). */
int ctr__tune_format(const ctr__tune_space *s, const int *v, char *buf, size_t n);
int ctr__tune_parse(const ctr__tune_space *s, const char *text, int *v);

/* Times one candidate: milliseconds of the representative work into *ms.
 * An error stops the search and is returned. */
typedef ctr_status (*ctr__tune_time_fn)(void *user, const int *v, double *ms);

typedef struct ctr__tune_search_opts {
  double budget_s;           /* 0: CTR__TUNE_BUDGET_S */
  double margin;             /* 0: CTR__TUNE_MARGIN */
  double (*clock)(void *u);  /* seconds; NULL: ctr__now_s (tests pass a stand-in) */
  void *clock_user;
  const ctr_context *log;    /* progress lines (info) through its log, or NULL */
} ctr__tune_search_opts;

/* The search (the contract above). def: today's defaults, a member of the
 * space for this problem; fixed[p] != 0: parameter p set by hand to that
 * value (the default and every candidate take it; def NULL or fixed NULL:
 * none). `problem` goes to the space's `allowed`. r (may be NULL) gets
 * every candidate timed, in order, the default first (r->candidates[0]),
 * and the winner; *best its values. Errors of `time` are returned, *best
 * then untouched. */
ctr_status ctr__tune_search(const ctr__tune_space *s, const int *def, const int *fixed,
                            const void *problem, ctr__tune_time_fn time, void *user,
                            const ctr__tune_search_opts *o, int *best, ctr_tune_report *r);

/* The cache file "kernels.json" in dir (NULL or "": none; 0). */
int ctr__tune_cache_path(const char *dir, char *buf, size_t n);
/* 1 and the winner's values in v (and its time in *ms, may be NULL) when
 * the cache in dir has an entry for this family, GPU and class whose
 * parameters parse in s; 0 otherwise. A corrupt or foreign-version file is
 * a warning through ctx's log (ctx may be NULL), never an error. */
int ctr__tune_cache_lookup(const ctr_context *ctx, const char *dir, const ctr__tune_space *s,
                           const ctr__tune_gpu *gpu, const char *problem_class, int *v,
                           double *ms);
/* Records (or replaces: same family, GPU name and class, any driver) an
 * entry; a corrupt or foreign-version file is replaced by a fresh one.
 * Atomic. CTR_E_IO without dir or when it cannot be written. */
ctr_status ctr__tune_cache_store(const char *dir, const ctr__tune_space *s,
                                 const ctr__tune_gpu *gpu, const char *problem_class,
                                 const int *v, double ms, double default_ms);
/* Removes the entries of `family` (NULL or "": the whole file). *removed
 * (may be NULL) gets their count. A missing file is no error. */
ctr_status ctr__tune_cache_clear(const char *dir, const char *family, int *removed);

/* The file helpers of the caches (this one and the FBP kernel choice's,
 * src/parbeam/fbp_tune.c): a whole file of at most 16 MiB as a string
 * (malloc'd; NULL when missing, *missing then 1 (may be NULL), unreadable
 * or larger), and a JSON document written to `path` through a temporary
 * name beside it and renamed (its directories made first); CTR_E_IO naming
 * the file when it cannot be written, nothing left behind. */
char *ctr__tune_read_text(const char *path, int *missing);
ctr_status ctr__tune_write_json(const char *path, const struct cJSON *root);

/* The public entries' report: begin checks the caller's (a versioned
 * struct) and gives a zeroed one of the current layout to fill; end stores
 * it in the caller's when st is CTR_OK, frees it and returns st (or the
 * store's error). */
ctr_status ctr__tune_report_begin(const ctr_tune_report *report, ctr_tune_report **r);
ctr_status ctr__tune_report_end(ctr_tune_report *report, ctr_tune_report *r, ctr_status st);

/* What a modality asks: the parameters for (space, gpu, class). In order:
 * the context's memo, unless force; the cache (unless force); else the
 * search, whose winner is memoised and stored (a cache that cannot be
 * written costs a search in the next context, nothing more). *best gets
 * the values; r (may be NULL) the report (from_cache 1 when nothing was
 * timed). The caller checks ctr_tuning.tune first. */
typedef struct ctr__tune_request {
  const ctr__tune_space *space;
  const ctr__tune_gpu *gpu;
  const char *problem_class;
  const int *def, *fixed;
  const void *problem;
  ctr__tune_time_fn time;
  void *user;
  int force;
} ctr__tune_request;
ctr_status ctr__tune_get(const ctr_context *ctx, const ctr__tune_request *q, int *best,
                         ctr_tune_report *r);
/* The first two steps of ctr__tune_get alone (nothing timed: a caller
 * checks it before it sets up the timing's buffers): 1 and *best (and r)
 * when the memo or the cache has the class (never with force), else 0. */
int ctr__tune_known(const ctr_context *ctx, const ctr__tune_request *q, int *best,
                    ctr_tune_report *r);

#ifdef __cplusplus
}
#endif
#endif
