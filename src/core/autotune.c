/* The autotuner (autotune.h has the contract; docs/tuning.md, "Autotuning"):
 * the declared parameter spaces, the problem-class buckets, the search and
 * the one cache of winners, kernels.json. */
#include "core/autotune.h"

#include "core/json_keys.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- The declared spaces ----------------------------------------------------- */

/* Cone-beam backprojection (src/conebeam/cuda): Z', the slices one thread
 * accumulates (Lu et al. 2016's Z'), and the block shape. N' (views per
 * launch) is the plan's batch, bounded by the kernels' constant tables, so
 * it is not a launch parameter here. Problem: the variant's `int` (1: the
 * general kernel, which also takes Z' = 32). */
static int bp_allowed(const int *v, const void *problem) {
  const int general = problem && *(const int *)problem;
  const int threads = CTR__TUNE_X(v[1]) * CTR__TUNE_Y(v[1]);
  if (v[0] == 32 && !general) return 0;
  return threads >= 32 && threads <= 256 && (!general || threads % 32 == 0);
}

static const ctr__tune_space k_bp = {
    "conebeam-bp",
    "cone-beam backprojection (FDK): slices per thread x block shape",
    2,
    {{"bp_slices", CTR__TUNE_INT, 5, {16, 8, 4, 2, 1}},
     {"bp_block", CTR__TUNE_BLOCK, 8,
      {CTR__TUNE_XY(32, 4), CTR__TUNE_XY(8, 8), CTR__TUNE_XY(32, 8), CTR__TUNE_XY(16, 8),
       CTR__TUNE_XY(64, 2), CTR__TUNE_XY(64, 4), CTR__TUNE_XY(16, 16), CTR__TUNE_XY(32, 2)}}},
    bp_allowed};

/* The PET projectors (src/pet/cuda): slices per thread, block shape,
 * blocks sharing a tile's runs (0: the default count, derived per launch
 * from the grid), 64 candidates (what a ctr_tune_report holds). The run
 * entries per register pass (pet_lc) and constant memory (pet_const) are
 * not tuned: their defaults are bench_pet's (docs/tuning.md). */
static int pet_allowed(const int *v, const void *problem) {
  (void)problem;
  const int threads = CTR__TUNE_X(v[1]) * CTR__TUNE_Y(v[1]);
  return threads >= 32 && threads <= 256 && threads % 32 == 0;
}

static const ctr__tune_space k_pet = {
    "pet-projector",
    "TOF-PET DIRECT projectors: slices per thread x block shape x split",
    3,
    {{"pet_z", CTR__TUNE_INT, 4, {24, 16, 8, 1}},
     {"pet_block", CTR__TUNE_BLOCK, 4,
      {CTR__TUNE_XY(32, 4), CTR__TUNE_XY(48, 2), CTR__TUNE_XY(64, 2), CTR__TUNE_XY(32, 8)}},
     {"pet_split", CTR__TUNE_INT, 4, {0, 1, 2, 4}}},
    pet_allowed};

/* The iterative projector pair (src/iterative/cuda) has no runtime launch
 * parameter: its kernels' shapes are compile-time constants. Declared
 * empty, so the tool and the docs say so. */
static const ctr__tune_space k_iterative = {
    "iterative", "iterative forward and adjoint projectors: no runtime parameter", 0, {{0}}, NULL};

const ctr__tune_space *const ctr__tune_spaces[] = {&k_bp, &k_pet, &k_iterative, NULL};

const ctr__tune_space *ctr__tune_space_find(const char *family) {
  for (int i = 0; family && ctr__tune_spaces[i]; i++)
    if (!strcmp(ctr__tune_spaces[i]->family, family)) return ctr__tune_spaces[i];
  return NULL;
}

/* ---- Keys and text -------------------------------------------------------------- */

int64_t ctr__tune_bucket(int64_t n) {
  if (n <= 0) return 0;
  int64_t p = 1;
  while (p < n && p < ((int64_t)1 << 61)) {
    if (p >= 2 && p / 2 * 3 >= n) return p / 2 * 3;
    p *= 2;
  }
  return p;
}

static int value_text(const ctr__tune_param *p, int v, char *buf, size_t n) {
  const int w = p->kind == CTR__TUNE_BLOCK
                    ? snprintf(buf, n, "%dx%d", CTR__TUNE_X(v), CTR__TUNE_Y(v))
                    : snprintf(buf, n, "%d", v);
  return w >= 0 && (size_t)w < n;
}

int ctr__tune_format(const ctr__tune_space *s, const int *v, char *buf, size_t n) {
  size_t used = 0;
  if (n) buf[0] = '\0';
  for (int i = 0; i < s->nparams; i++) {
    char val[32];
    if (!value_text(&s->params[i], v[i], val, sizeof val)) return 0;
    const int w = snprintf(buf + used, n - used, "%s%s=%s", i ? "," : "", s->params[i].key, val);
    if (w < 0 || (size_t)w >= n - used) return 0;
    used += (size_t)w;
  }
  return 1;
}

/* A value of p's kind in text, any (strict 0: a hand-set value the space
 * does not declare, from the context's memo) or a declared one. */
static int parse_value(const ctr__tune_param *p, const char *text, int strict, int *out) {
  for (int j = 0; j < p->nvalues; j++) {
    char val[32];
    if (value_text(p, p->values[j], val, sizeof val) && !strcmp(val, text))
      return *out = p->values[j], 1;
  }
  int x = 0, y = 0, len = 0;
  if (strict) return 0;
  if (p->kind == CTR__TUNE_BLOCK)
    return sscanf(text, "%dx%d%n", &x, &y, &len) == 2 && !text[len] && x > 0 && y > 0 &&
           x < 1024 && y < 1024 && (*out = CTR__TUNE_XY(x, y), 1);
  return sscanf(text, "%d%n", &x, &len) == 1 && !text[len] && (*out = x, 1);
}

static int parse_values(const ctr__tune_space *s, const char *text, int strict, int *v) {
  int seen[CTR__TUNE_MAX_PARAMS] = {0};
  char buf[256];
  if (!text || strlen(text) >= sizeof buf) return 0;
  snprintf(buf, sizeof buf, "%s", text);
  int count = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) return 0;
    *eq = '\0';
    int p = 0;
    while (p < s->nparams && strcmp(s->params[p].key, tok)) p++;
    if (p == s->nparams || seen[p]) return 0;
    if (!parse_value(&s->params[p], eq + 1, strict, &v[p])) return 0;
    seen[p] = 1;
    count++;
  }
  return count == s->nparams;
}

int ctr__tune_parse(const ctr__tune_space *s, const char *text, int *v) {
  return parse_values(s, text, 1, v);
}

/* ---- The search -------------------------------------------------------------------- */

static double default_clock(void *u) {
  (void)u;
  return ctr__now_s();
}

static int same(const int *a, const int *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

/* Candidate number `index` of the product, with fixed parameters taken as
 * set; 0 if the product has fewer or `allowed` refuses it (*end 1 past the
 * last). */
static int candidate(const ctr__tune_space *s, const int *fixed, int index, int *v, int *end) {
  int rest = index;
  for (int p = s->nparams - 1; p >= 0; p--) {
    const ctr__tune_param *q = &s->params[p];
    if (fixed && fixed[p]) {
      v[p] = fixed[p];
      continue;
    }
    v[p] = q->values[rest % q->nvalues];
    rest /= q->nvalues;
  }
  *end = rest > 0;
  return !*end;
}

static void record(ctr_tune_report *r, const ctr__tune_space *s, const int *v, double ms) {
  if (!r || r->ncandidates >= CTR_TUNE_MAX_CANDIDATES) return;
  ctr_tune_candidate *c = &r->candidates[r->ncandidates++];
  if (!ctr__tune_format(s, v, c->params, sizeof c->params))
    snprintf(c->params, sizeof c->params, "?");
  c->ms = ms;
}

ctr_status ctr__tune_search(const ctr__tune_space *s, const int *def, const int *fixed,
                            const void *problem, ctr__tune_time_fn time, void *user,
                            const ctr__tune_search_opts *o, int *best, ctr_tune_report *r) {
  const double budget = o && o->budget_s > 0 ? o->budget_s : CTR__TUNE_BUDGET_S;
  const double margin = o && o->margin > 0 ? o->margin : CTR__TUNE_MARGIN;
  double (*clock)(void *) = o && o->clock ? o->clock : default_clock;
  void *cu = o ? o->clock_user : NULL;
  const ctr_context *log = o ? o->log : NULL;
  int d[CTR__TUNE_MAX_PARAMS] = {0}, top[CTR__TUNE_MAX_PARAMS], v[CTR__TUNE_MAX_PARAMS];
  for (int p = 0; p < s->nparams; p++)
    d[p] = fixed && fixed[p] ? fixed[p] : def ? def[p] : s->params[p].values[0];
  /* how many candidates there are, for the report and the progress lines */
  int total = 1, end = 0;
  for (int i = 0; !end; i++)
    if (candidate(s, fixed, i, v, &end) && !same(v, d, s->nparams) &&
        (!s->allowed || s->allowed(v, problem)))
      total++;
  if (r) r->total = total, r->ncandidates = 0, r->winner = -1, r->budget_hit = 0;
  const double t0 = clock(cu);
  double d_ms = 0, top_ms;
  char text[96];
  CTR_CHECK(time(user, d, &d_ms));
  record(r, s, d, d_ms);
  ctr__tune_format(s, d, text, sizeof text);
  ctr__log(log, CTR_LOG_DEBUG, "tune %s: 1/%d %s (default) %.4f ms", s->family, total, text, d_ms);
  memcpy(top, d, sizeof top);
  top_ms = d_ms;
  int timed = 1, stopped = 0;
  end = 0;
  for (int i = 0; !end; i++) {
    if (!candidate(s, fixed, i, v, &end) || same(v, d, s->nparams) ||
        (s->allowed && !s->allowed(v, problem)))
      continue;
    if (clock(cu) - t0 >= budget) {
      stopped = 1;
      break;
    }
    double ms = 0;
    CTR_CHECK(time(user, v, &ms));
    record(r, s, v, ms);
    timed++;
    ctr__tune_format(s, v, text, sizeof text);
    ctr__log(log, CTR_LOG_DEBUG, "tune %s: %d/%d %s %.4f ms", s->family, timed, total, text, ms);
    if (ms < top_ms) memcpy(top, v, sizeof top), top_ms = ms;
  }
  /* the default stays unless beaten by more than the margin */
  if (!(top_ms < d_ms * (1.0 - margin))) memcpy(top, d, sizeof top), top_ms = d_ms;
  memcpy(best, top, (size_t)s->nparams * sizeof *best);
  if (r) {
    r->budget_hit = stopped;
    r->ms = top_ms;
    r->default_ms = d_ms;
    r->winner = 0;
    ctr__tune_format(s, top, r->params, sizeof r->params);
    for (int i = 0; i < r->ncandidates; i++)
      if (!strcmp(r->candidates[i].params, r->params)) {
        r->winner = i;
        break;
      }
    r->seconds = clock(cu) - t0;
  }
  ctr__tune_format(s, top, text, sizeof text);
  ctr__log(log, CTR_LOG_INFO,
           "tune %s: %d of %d candidates timed%s; chosen %s, %.4f ms (default %.4f ms)",
           s->family, timed, total, stopped ? " (time budget spent)" : "", text, top_ms, d_ms);
  return CTR_OK;
}

/* ---- The cache ------------------------------------------------------------------------ */

int ctr__tune_cache_path(const char *dir, char *buf, size_t n) {
  return dir && *dir && snprintf(buf, n, "%s/" CTR__TUNE_CACHE_NAME, dir) < (int)n;
}

char *ctr__tune_read_text(const char *path, int *missing) {
  FILE *f = fopen(path, "rb");
  if (missing) *missing = !f && errno == ENOENT;
  if (!f) return NULL;
  char *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    const long n = ftell(f);
    if (n >= 0 && n < (1 << 24) && fseek(f, 0, SEEK_SET) == 0) {
      buf = malloc((size_t)n + 1);
      if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) buf[n] = '\0';
      else {
        free(buf);
        buf = NULL;
      }
    }
  }
  fclose(f);
  return buf;
}

static const char *const k_root[] = {"version", "entries"};
static const char *const k_entry[] = {"family", "gpu", "cc", "driver", "class",
                                      "params", "ms", "default_ms"};
#define N_ENTRY ((int)(sizeof k_entry / sizeof k_entry[0]))

/* The entries of a valid, current cache (NULL otherwise, *root then what
 * was parsed, or NULL); *why says what was wrong ("" for a missing file). */
static cJSON *load(const char *path, cJSON **root, const char **why) {
  int missing = 0;
  *root = NULL;
  *why = "";
  char *text = ctr__tune_read_text(path, &missing);
  if (!text) {
    if (!missing) *why = "cannot be read";
    return NULL;
  }
  *root = cJSON_Parse(text);
  free(text);
  if (!cJSON_IsObject(*root)) {
    *why = "is not a JSON object";
    return NULL;
  }
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(*root, "version");
  cJSON *e = cJSON_GetObjectItemCaseSensitive(*root, "entries");
  if (!cJSON_IsNumber(v) || v->valuedouble != CTR__TUNE_CACHE_VERSION) {
    *why = "is of another version";
    return NULL;
  }
  int ok = cJSON_IsArray(e) &&
           ctr__json_check_members(CTR__TUNE_CACHE_NAME, "", *root, k_root, 2) == CTR_OK;
  const cJSON *x;
  cJSON_ArrayForEach(x, e) {
    ok = ok && cJSON_IsObject(x) &&
         ctr__json_check_members(CTR__TUNE_CACHE_NAME, "entries[]", x, k_entry, N_ENTRY) == CTR_OK;
    for (int i = 0; ok && i < N_ENTRY; i++) {
      const cJSON *m = cJSON_GetObjectItemCaseSensitive(x, k_entry[i]);
      ok = i == 2 || i == 3 || i >= 6 ? cJSON_IsNumber(m) : cJSON_IsString(m);
    }
  }
  if (!ok) {
    ctr_error_clear();
    *why = "is corrupt";
    return NULL;
  }
  return e;
}

static int str_is(const cJSON *e, const char *name, const char *want) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(e, name);
  return cJSON_IsString(x) && !strcmp(x->valuestring, want);
}
static double num(const cJSON *e, const char *name) {
  return cJSON_GetObjectItemCaseSensitive(e, name)->valuedouble;
}

/* Same family, GPU name and class (the entry this one replaces). */
static int same_slot(const cJSON *e, const char *family, const ctr__tune_gpu *g, const char *cls) {
  return str_is(e, "family", family) && str_is(e, "gpu", g->name) && str_is(e, "class", cls);
}

int ctr__tune_cache_lookup(const ctr_context *ctx, const char *dir, const ctr__tune_space *s,
                           const ctr__tune_gpu *gpu, const char *problem_class, int *v,
                           double *ms) {
  char path[4096];
  if (!ctr__tune_cache_path(dir, path, sizeof path)) return 0;
  cJSON *root;
  const char *why;
  const cJSON *entries = load(path, &root, &why), *e;
  if (!entries && *why)
    ctr__log(ctx, CTR_LOG_WARNING, "kernel cache '%s' %s: ignored (tuning again; the next "
             "result rewrites it)", path, why);
  int found = 0;
  const double cc = gpu->cc_major * 10 + gpu->cc_minor;
  cJSON_ArrayForEach(e, entries) {
    if (!same_slot(e, s->family, gpu, problem_class) || num(e, "cc") != cc ||
        num(e, "driver") != gpu->driver)
      continue;
    found = ctr__tune_parse(s, cJSON_GetObjectItemCaseSensitive(e, "params")->valuestring, v);
    if (found && ms) *ms = num(e, "ms");
    break;
  }
  cJSON_Delete(root);
  return found;
}

/* mkdir -p of the directory part of path. */
static void make_parents(const char *path) {
  char p[4096];
  snprintf(p, sizeof p, "%s", path);
  for (char *c = p + 1; *c; c++)
    if (*c == '/') {
      *c = '\0';
      mkdir(p, 0777);
      *c = '/';
    }
}

ctr_status ctr__tune_write_json(const char *path, const struct cJSON *root) {
  char tmp[4200];
  char *text = cJSON_Print(root);
  if (!text) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "kernel cache text");
  make_parents(path);
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  const size_t len = strlen(text);
  const int ok = f && fwrite(text, 1, len, f) == len && fflush(f) == 0 && fsync(fileno(f)) == 0;
  const int err = errno;
  if (f) fclose(f);
  free(text);
  if (!ok || rename(tmp, path) != 0) {
    const int e2 = ok ? errno : err;
    unlink(tmp);
    CTR_FAIL(CTR_E_IO, "cannot write the kernel cache '%s': %s", path, strerror(e2));
  }
  return CTR_OK;
}

ctr_status ctr__tune_cache_store(const char *dir, const ctr__tune_space *s,
                                 const ctr__tune_gpu *gpu, const char *problem_class,
                                 const int *v, double ms, double default_ms) {
  char path[4096], params[256];
  if (!ctr__tune_cache_path(dir, path, sizeof path))
    CTR_FAIL_FIELD(CTR_E_IO, "ctr_tuning.cache_dir", "no directory for the kernel cache: set "
                   "ctr_tuning.cache_dir, XDG_CACHE_HOME or HOME");
  if (!ctr__tune_format(s, v, params, sizeof params))
    CTR_FAIL(CTR_E_INTERNAL, "tuned parameters of %s do not fit the cache's text", s->family);
  cJSON *root;
  const char *why;
  cJSON *entries = load(path, &root, &why);
  if (!entries) { /* missing, corrupt or another version: a fresh cache */
    cJSON_Delete(root);
    root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "version", CTR__TUNE_CACHE_VERSION);
    entries = cJSON_AddArrayToObject(root, "entries");
  }
  for (int i = cJSON_GetArraySize(entries) - 1; i >= 0; i--)
    if (same_slot(cJSON_GetArrayItem(entries, i), s->family, gpu, problem_class))
      cJSON_DeleteItemFromArray(entries, i);
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "family", s->family);
  cJSON_AddStringToObject(e, "gpu", gpu->name);
  cJSON_AddNumberToObject(e, "cc", gpu->cc_major * 10 + gpu->cc_minor);
  cJSON_AddNumberToObject(e, "driver", gpu->driver);
  cJSON_AddStringToObject(e, "class", problem_class);
  cJSON_AddStringToObject(e, "params", params);
  cJSON_AddNumberToObject(e, "ms", ms);
  cJSON_AddNumberToObject(e, "default_ms", default_ms);
  cJSON_AddItemToArray(entries, e);
  const ctr_status st = ctr__tune_write_json(path, root);
  cJSON_Delete(root);
  return st;
}

ctr_status ctr__tune_cache_clear(const char *dir, const char *family, int *removed) {
  char path[4096];
  int n = 0;
  if (removed) *removed = 0;
  if (!ctr__tune_cache_path(dir, path, sizeof path))
    CTR_FAIL_FIELD(CTR_E_IO, "ctr_tuning.cache_dir", "no directory for the kernel cache: set "
                   "ctr_tuning.cache_dir, XDG_CACHE_HOME or HOME");
  cJSON *root;
  const char *why;
  cJSON *entries = load(path, &root, &why);
  ctr_status st = CTR_OK;
  if (!entries || !family || !*family) {
    n = entries ? cJSON_GetArraySize(entries) : 0;
    if (unlink(path) != 0 && errno != ENOENT)
      st = ctr__error_set(CTR_E_IO, "cannot remove the kernel cache '%s': %s", path,
                          strerror(errno));
  } else {
    for (int i = cJSON_GetArraySize(entries) - 1; i >= 0; i--)
      if (str_is(cJSON_GetArrayItem(entries, i), "family", family))
        cJSON_DeleteItemFromArray(entries, i), n++;
    if (n) st = ctr__tune_write_json(path, root);
  }
  cJSON_Delete(root);
  if (removed && st == CTR_OK) *removed = n;
  return st;
}

/* ---- What a modality asks --------------------------------------------------------------- */

/* The context's memo key of a request. */
static void memo_key(const ctr__tune_request *q, char *key, size_t n) {
  snprintf(key, n, "tune|%s|%s|%d.%d|%d|%s", q->space->family, q->gpu->name, q->gpu->cc_major,
           q->gpu->cc_minor, q->gpu->driver, q->problem_class);
}

static void report_head(const ctr__tune_request *q, ctr_tune_report *r) {
  memset(r, 0, sizeof *r);
  snprintf(r->family, sizeof r->family, "%s", q->space->family);
  snprintf(r->gpu, sizeof r->gpu, "%s", q->gpu->name);
  snprintf(r->problem, sizeof r->problem, "%s", q->problem_class);
  r->winner = -1;
}

int ctr__tune_known(const ctr_context *ctx, const ctr__tune_request *q, int *best,
                    ctr_tune_report *r) {
  const ctr__tune_space *s = q->space;
  char key[CTR__MEMO_KEY], text[CTR__MEMO_VALUE];
  int v[CTR__TUNE_MAX_PARAMS] = {0};
  double ms = 0;
  if (q->force) return 0;
  memo_key(q, key, sizeof key);
  int found = ctr__context_memo_get(ctx, key, text, sizeof text) && parse_values(s, text, 0, v);
  if (!found)
    found = ctr__tune_cache_lookup(ctx, ctr__tuning(ctx)->cache_dir, s, q->gpu, q->problem_class,
                                   v, &ms);
  /* a hand-set parameter always wins: a cached winner that differs in one
   * (set since) is not used */
  for (int p = 0; found && q->fixed && p < s->nparams; p++)
    if (q->fixed[p] && q->fixed[p] != v[p]) found = 0;
  ctr_error_clear();
  if (!found) return 0;
  memcpy(best, v, (size_t)s->nparams * sizeof *best);
  if (r) {
    report_head(q, r);
    r->from_cache = 1;
    r->ms = ms;
    ctr__tune_format(s, v, r->params, sizeof r->params);
  }
  if (ctr__tune_format(s, v, text, sizeof text)) ctr__context_memo_put(ctx, key, text);
  return 1;
}

ctr_status ctr__tune_get(const ctr_context *ctx, const ctr__tune_request *q, int *best,
                         ctr_tune_report *r) {
  const ctr__tune_space *s = q->space;
  const char *dir = ctr__tuning(ctx)->cache_dir;
  char key[CTR__MEMO_KEY], text[CTR__MEMO_VALUE];
  int v[CTR__TUNE_MAX_PARAMS] = {0};
  if (ctr__tune_known(ctx, q, best, r)) return CTR_OK;
  memo_key(q, key, sizeof key);
  ctr_tune_report local;
  ctr_tune_report *rr = r ? r : &local;
  report_head(q, rr);
  ctr__tune_search_opts o;
  memset(&o, 0, sizeof o);
  o.log = ctx;
  CTR_CHECK(ctr__tune_search(s, q->def, q->fixed, q->problem, q->time, q->user, &o, v, rr));
  memcpy(best, v, (size_t)s->nparams * sizeof *best);
  if (ctr__tune_format(s, v, text, sizeof text)) ctr__context_memo_put(ctx, key, text);
  /* only a complete search is kept on disk: one cut by hand-set fields is
   * this context's */
  int any_fixed = 0;
  for (int p = 0; q->fixed && p < s->nparams; p++) any_fixed |= q->fixed[p] != 0;
  if (!any_fixed && ctr__tune_cache_store(dir, s, q->gpu, q->problem_class, v, rr->ms,
                                          rr->default_ms) != CTR_OK) {
    ctr__log(ctx, CTR_LOG_DEBUG, "kernel cache not written: %s", ctr_error_detail());
    ctr_error_clear();
  }
  return CTR_OK;
}

/* ---- The public entries ------------------------------------------------------------------ */

ctr_status ctr__tune_report_begin(const ctr_tune_report *report, ctr_tune_report **r) {
  *r = NULL;
  CTR_CHECK(ctr__struct_check(&ctr__struct_tune_report, report));
  *r = ctr__calloc(1, sizeof **r, "tuning report");
  return *r ? CTR_OK : CTR_E_OUT_OF_MEMORY;
}

ctr_status ctr__tune_report_end(ctr_tune_report *report, ctr_tune_report *r, ctr_status st) {
  r->version = CTR_TUNE_REPORT_VERSION;
  if (st == CTR_OK) st = ctr__struct_store(&ctr__struct_tune_report, report, r);
  free(r);
  return st;
}

ctr_status ctr_tune_cache_clear(const ctr_context *ctx, const char *family, int *removed) {
  if (!ctx) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_tune_cache_clear: ctx is NULL");
  if (family && *family && !ctr__tune_space_find(family) && strcmp(family, "fbp-kernel"))
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "family",
                   "ctr_tune_cache_clear: family '%s': expected conebeam-bp, pet-projector or "
                   "fbp-kernel (or NULL for all)", family);
  const char *dir = ctr__tuning(ctx)->cache_dir;
  int n = 0;
  if (!family || !*family || strcmp(family, "fbp-kernel"))
    CTR_CHECK(ctr__tune_cache_clear(dir, family, &n));
  if (!family || !*family || !strcmp(family, "fbp-kernel")) {
    /* the parallel-beam kernel choice keeps its own file (src/parbeam/fbp_tune.c) */
    char path[4096];
    if (dir && *dir && snprintf(path, sizeof path, "%s/fbp-kernels.json", dir) < (int)sizeof path &&
        unlink(path) == 0)
      n++;
  }
  if (removed) *removed = n;
  return CTR_OK;
}

/* One line an entry into buf (as much as fits); *needed the whole text's
 * bytes with its 0. */
ctr_status ctr_tune_cache_list(const ctr_context *ctx, char *buf, size_t n, size_t *needed) {
  if (!ctx || (!buf && n))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_tune_cache_list: ctx is NULL, or buf NULL with n > 0");
  char path[4096];
  size_t used = 0;
  if (n) buf[0] = '\0';
#define PUT(...)                                                                    \
  do {                                                                              \
    const int w_ = snprintf(used < n ? buf + used : NULL, used < n ? n - used : 0, __VA_ARGS__); \
    if (w_ > 0) used += (size_t)w_;                                                 \
  } while (0)
  const char *dir = ctr__tuning(ctx)->cache_dir;
  if (!ctr__tune_cache_path(dir, path, sizeof path)) {
    PUT("no kernel cache directory (set ctr_tuning.cache_dir, XDG_CACHE_HOME or HOME)\n");
  } else {
    cJSON *root;
    const char *why;
    const cJSON *entries = load(path, &root, &why), *e;
    if (!entries)
      PUT("%s: %s\n", path, *why ? why : "no entries");
    else
      PUT("%s: %d entr%s\n", path, cJSON_GetArraySize(entries),
          cJSON_GetArraySize(entries) == 1 ? "y" : "ies");
    cJSON_ArrayForEach(e, entries) {
      const double cc = num(e, "cc");
      PUT("  %s | %s (cc %d.%d, driver %d) | %s | %s | %.4f ms (default %.4f ms)\n",
          cJSON_GetObjectItemCaseSensitive(e, "family")->valuestring,
          cJSON_GetObjectItemCaseSensitive(e, "gpu")->valuestring, (int)cc / 10, (int)cc % 10,
          (int)num(e, "driver"), cJSON_GetObjectItemCaseSensitive(e, "class")->valuestring,
          cJSON_GetObjectItemCaseSensitive(e, "params")->valuestring, num(e, "ms"),
          num(e, "default_ms"));
    }
    cJSON_Delete(root);
    snprintf(path, sizeof path, "%s/fbp-kernels.json", dir);
    if (access(path, F_OK) == 0) PUT("%s: the parallel-beam kernel choice (fbp-kernel)\n", path);
  }
#undef PUT
  if (needed) *needed = used + 1;
  return CTR_OK;
}
