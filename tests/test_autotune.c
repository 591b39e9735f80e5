/* The autotuner (src/core/autotune.c) without a GPU, with stand-in timings
 * and clocks: the search picks the fastest, keeps the default within the
 * margin, stops at its time budget with the best so far, never tunes a
 * hand-set parameter; the cache round-trips, is written atomically, and a
 * corrupt, foreign-version or unwritable one is a warning (never a crash),
 * an entry of another GPU, compute capability or driver is not reused; the
 * problem-class buckets and the parameters' text; the context's memo and
 * --force; the public cache entries and ctr_tune_fdk on a CPU context. */
#include "harness.h"
#include "scratch_dir.h"
#include "core/autotune.h"

#include <stdlib.h>

/* ---- Stand-ins ----------------------------------------------------------------- */

/* A 2-parameter space of its own (values 1..4 x blocks), no constraint. */
static const ctr__tune_space k_space = {
    "test-family", "a test space", 2,
    {{"bp_slices", CTR__TUNE_INT, 4, {1, 2, 4, 8}},
     {"bp_block", CTR__TUNE_BLOCK, 3,
      {CTR__TUNE_XY(32, 4), CTR__TUNE_XY(8, 8), CTR__TUNE_XY(16, 8)}}},
    NULL};

/* Times of a table: ms = base + a penalty per parameter value, with the
 * candidate (best_s, best_b) at `best_ms`. */
typedef struct fake {
  int best_s, best_b;
  double best_ms, base_ms;
  int timed;
  int fixed_s;     /* != 0: every timed candidate must carry it */
  int violations;  /* candidates timed with another value */
  double now, step; /* the stand-in clock: each timing advances it by step */
  int fail_at;     /* fail on this timing (1-based; 0: never) */
} fake;

static ctr_status fake_time(void *user, const int *v, double *ms) {
  fake *f = user;
  f->timed++;
  f->now += f->step;
  if (f->fail_at && f->timed == f->fail_at) CTR_FAIL(CTR_E_DEVICE, "stand-in failure on purpose");
  if (f->fixed_s && v[0] != f->fixed_s) f->violations++;
  *ms = v[0] == f->best_s && v[1] == f->best_b ? f->best_ms : f->base_ms + 0.01 * v[0];
  return CTR_OK;
}
static double fake_clock(void *u) { return ((fake *)u)->now; }

static void init_fake(fake *f) {
  memset(f, 0, sizeof *f);
  f->best_s = 2;
  f->best_b = CTR__TUNE_XY(8, 8);
  f->base_ms = 10.0;
  f->best_ms = 5.0;
}

static const int k_def[2] = {8, CTR__TUNE_XY(32, 4)};

/* ---- The search ------------------------------------------------------------------ */

static void test_search(void) {
  fake f;
  int best[2] = {0, 0};
  ctr_tune_report *r = calloc(1, sizeof *r);
  REQUIRE(r != NULL);
  ctr__tune_search_opts o;
  memset(&o, 0, sizeof o);
  o.clock = fake_clock;

  /* the fastest wins; every candidate timed once, the default first */
  init_fake(&f);
  o.clock_user = &f;
  CHECK_OK(ctr__tune_search(&k_space, k_def, NULL, NULL, fake_time, &f, &o, best, r));
  CHECK(best[0] == 2 && best[1] == CTR__TUNE_XY(8, 8));
  CHECK_MSG(f.timed == 12 && r->total == 12 && r->ncandidates == 12, "%d timed, %d total",
            f.timed, r->total);
  CHECK(!strcmp(r->candidates[0].params, "bp_slices=8,bp_block=32x4"));
  CHECK(!strcmp(r->params, "bp_slices=2,bp_block=8x8") && r->ms == 5.0);
  CHECK(r->winner > 0 && !strcmp(r->candidates[r->winner].params, r->params));
  CHECK(!r->budget_hit);

  /* within the margin (3 %): the default stays */
  init_fake(&f);
  o.clock_user = &f;
  f.best_ms = (10.0 + 0.08) * 0.98; /* 2 % faster than the default's 10.08 */
  CHECK_OK(ctr__tune_search(&k_space, k_def, NULL, NULL, fake_time, &f, &o, best, r));
  CHECK(best[0] == 8 && best[1] == CTR__TUNE_XY(32, 4) && r->winner == 0);
  /* beyond it: replaced */
  init_fake(&f);
  o.clock_user = &f;
  f.best_ms = (10.0 + 0.08) * 0.96;
  CHECK_OK(ctr__tune_search(&k_space, k_def, NULL, NULL, fake_time, &f, &o, best, r));
  CHECK(best[0] == 2 && best[1] == CTR__TUNE_XY(8, 8));

  /* the budget: 1 s a timing, 4.5 s allowed: the default and four others,
   * the best of those kept */
  init_fake(&f);
  o.clock_user = &f;
  f.step = 1.0;
  f.best_s = 1, f.best_b = CTR__TUNE_XY(8, 8); /* the 2nd candidate after the default */
  o.budget_s = 4.5;
  CHECK_OK(ctr__tune_search(&k_space, k_def, NULL, NULL, fake_time, &f, &o, best, r));
  CHECK_MSG(f.timed == 5 && r->ncandidates == 5 && r->budget_hit, "%d timed", f.timed);
  CHECK(best[0] == 1 && best[1] == CTR__TUNE_XY(8, 8));
  /* the default is timed even when the budget is spent at once */
  init_fake(&f);
  o.clock_user = &f;
  f.step = 100.0;
  CHECK_OK(ctr__tune_search(&k_space, k_def, NULL, NULL, fake_time, &f, &o, best, r));
  CHECK(f.timed == 1 && best[0] == 8 && best[1] == CTR__TUNE_XY(32, 4) && r->budget_hit);
  o.budget_s = 0;

  /* a hand-set parameter is never tuned: every candidate carries it */
  init_fake(&f);
  o.clock_user = &f;
  f.fixed_s = 4;
  const int fixed[2] = {4, 0};
  CHECK_OK(ctr__tune_search(&k_space, k_def, fixed, NULL, fake_time, &f, &o, best, r));
  CHECK_MSG(f.violations == 0 && f.timed == 3, "%d violations, %d timed", f.violations, f.timed);
  CHECK(best[0] == 4);
  CHECK(!strcmp(r->candidates[0].params, "bp_slices=4,bp_block=32x4")); /* the default, with it */

  /* a failing timing is returned, *best untouched */
  init_fake(&f);
  o.clock_user = &f;
  f.fail_at = 3;
  best[0] = -7;
  CHECK_FAILS(ctr__tune_search(&k_space, k_def, NULL, NULL, fake_time, &f, &o, best, r),
              CTR_E_DEVICE, "on purpose");
  CHECK(best[0] == -7);

  /* the declared spaces: the cone-beam one has no Z' = 32 outside the
   * general kernel and only 32 .. 256 threads; the iterative one is empty */
  const ctr__tune_space *bp = ctr__tune_space_find("conebeam-bp");
  const ctr__tune_space *pet = ctr__tune_space_find("pet-projector");
  const ctr__tune_space *it = ctr__tune_space_find("iterative");
  REQUIRE(bp && pet && it);
  CHECK(it->nparams == 0 && !ctr__tune_space_find("nonsense"));
  const int z32[2] = {32, CTR__TUNE_XY(32, 4)}, big[2] = {8, CTR__TUNE_XY(32, 16)};
  const int general = 1, plain = 0;
  CHECK(!bp->allowed(z32, &plain) && bp->allowed(z32, &general) && !bp->allowed(big, &plain));
  /* every space's candidates fit in a report */
  for (int k = 0; ctr__tune_spaces[k]; k++) {
    int product = 1;
    for (int p = 0; p < ctr__tune_spaces[k]->nparams; p++)
      product *= ctr__tune_spaces[k]->params[p].nvalues;
    CHECK_MSG(product <= CTR_TUNE_MAX_CANDIDATES, "%s: %d candidates",
              ctr__tune_spaces[k]->family, product);
  }
  for (int i = 0; i < pet->params[1].nvalues; i++) {
    const int v = pet->params[1].values[i];
    CHECK(CTR__TUNE_X(v) * CTR__TUNE_Y(v) % 32 == 0 && CTR__TUNE_X(v) * CTR__TUNE_Y(v) <= 256);
  }
  free(r);
}

/* ---- Keys and text ------------------------------------------------------------------ */

static void test_keys(void) {
  CHECK(ctr__tune_bucket(0) == 0 && ctr__tune_bucket(1) == 1 && ctr__tune_bucket(2) == 2);
  CHECK(ctr__tune_bucket(3) == 3 && ctr__tune_bucket(4) == 4 && ctr__tune_bucket(5) == 6);
  CHECK(ctr__tune_bucket(500) == 512 && ctr__tune_bucket(512) == 512);
  CHECK(ctr__tune_bucket(513) == 768 && ctr__tune_bucket(768) == 768);
  CHECK(ctr__tune_bucket(769) == 1024 && ctr__tune_bucket(1248) == 1536);
  /* every bucket holds its sizes within a factor 4/3 or 3/2 */
  for (int64_t n = 2; n < 5000; n++) {
    const int64_t b = ctr__tune_bucket(n);
    if (!(b >= n && b * 2 <= n * 3)) {
      CHECK_MSG(0, "bucket of %lld is %lld", (long long)n, (long long)b);
      break;
    }
  }
  int v[2] = {0, 0};
  char text[96];
  const int w[2] = {16, CTR__TUNE_XY(8, 8)};
  CHECK(ctr__tune_format(&k_space, w, text, sizeof text) && !strcmp(text, "bp_slices=16,bp_block=8x8"));
  CHECK(!ctr__tune_format(&k_space, w, text, 10)); /* does not fit */
  CHECK(ctr__tune_parse(&k_space, "bp_block=8x8,bp_slices=2", v) && v[0] == 2 &&
        v[1] == CTR__TUNE_XY(8, 8));
  static const char *const bad[] = {"bp_slices=2", "bp_slices=3,bp_block=8x8",
                                    "bp_slices=2,bp_block=9x9", "bp_slices=2,bp_slices=2",
                                    "bp_slices=2,bp_block=8x8,x=1", "", "bp_slices2,bp_block=8x8"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK_MSG(!ctr__tune_parse(&k_space, bad[i], v), "'%s' parsed", bad[i]);
}

/* ---- The cache ------------------------------------------------------------------------ */

static int g_warnings;
static char g_last_warning[1024];
static void on_log(void *user, ctr_log_level level, const char *message) {
  (void)user;
  if (level != CTR_LOG_WARNING) return;
  g_warnings++;
  snprintf(g_last_warning, sizeof g_last_warning, "%s", message);
}

static ctr_status make_ctx(const ctr_tuning *t, ctr_context **ctx) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  co.tuning = t;
  co.log = on_log;
  *ctx = NULL;
  return ctr_context_create(&co, ctx);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static ctr__tune_gpu gpu(const char *name, int major, int minor, int driver) {
  ctr__tune_gpu g;
  memset(&g, 0, sizeof g);
  snprintf(g.name, sizeof g.name, "%s", name);
  g.cc_major = major, g.cc_minor = minor, g.driver = driver;
  return g;
}

static void test_cache(void) {
  const ctr__tune_gpu h200 = gpu("NVIDIA H200", 9, 0, 13000);
  const ctr__tune_gpu other_driver = gpu("NVIDIA H200", 9, 0, 12080);
  const ctr__tune_gpu other_cc = gpu("NVIDIA H200", 8, 9, 13000);
  const ctr__tune_gpu other_name = gpu("NVIDIA H100 80GB HBM3", 9, 0, 13000);
  char dir[512];
  snprintf(dir, sizeof dir, "%s", P("cache"));
  const int w[2] = {4, CTR__TUNE_XY(16, 8)}, w2[2] = {2, CTR__TUNE_XY(8, 8)};
  int v[2] = {0, 0};
  double ms = 0;
  ctr_context *ctx = NULL;
  CHECK_OK(make_ctx(NULL, &ctx));
  REQUIRE(ctx != NULL);

  /* round trip, one entry per family, GPU and class */
  CHECK(!ctr__tune_cache_lookup(ctx, dir, &k_space, &h200, "a", v, &ms)); /* no file yet */
  CHECK_OK(ctr__tune_cache_store(dir, &k_space, &h200, "a", w, 1.5, 2.0));
  CHECK(ctr__tune_cache_lookup(ctx, dir, &k_space, &h200, "a", v, &ms) && v[0] == 4 &&
        v[1] == CTR__TUNE_XY(16, 8) && ms == 1.5);
  CHECK(!ctr__tune_cache_lookup(ctx, dir, &k_space, &h200, "b", v, &ms)); /* other class */
  CHECK_OK(ctr__tune_cache_store(dir, &k_space, &h200, "b", w2, 3.0, 3.0));
  CHECK(ctr__tune_cache_lookup(ctx, dir, &k_space, &h200, "a", v, NULL) && v[0] == 4);
  CHECK(ctr__tune_cache_lookup(ctx, dir, &k_space, &h200, "b", v, NULL) && v[0] == 2);
  /* atomic: no temporary left beside it */
  CHECK(exists(P("cache/kernels.json")) && count_temporaries() == 0);

  /* another driver, compute capability or GPU: not reused */
  CHECK(!ctr__tune_cache_lookup(ctx, dir, &k_space, &other_driver, "a", v, NULL));
  CHECK(!ctr__tune_cache_lookup(ctx, dir, &k_space, &other_cc, "a", v, NULL));
  CHECK(!ctr__tune_cache_lookup(ctx, dir, &k_space, &other_name, "a", v, NULL));
  /* a result on the new driver replaces the old driver's entry */
  CHECK_OK(ctr__tune_cache_store(dir, &k_space, &other_driver, "a", w2, 1.0, 1.0));
  CHECK(ctr__tune_cache_lookup(ctx, dir, &k_space, &other_driver, "a", v, NULL) && v[0] == 2);
  CHECK(!ctr__tune_cache_lookup(ctx, dir, &k_space, &h200, "a", v, NULL));
  long long size = 0;
  char *text = (char *)read_all(P("cache/kernels.json"), &size);
  int entries = 0;
  for (char *p = text; p && (p = strstr(p, "\"family\"")); p++) entries++;
  CHECK_MSG(entries == 2, "%d entries", entries);
  free(text);
  CHECK(g_warnings == 0);

  /* corrupt or foreign files: a warning naming the file, never used, and
   * rewritten by the next store */
  static const char *const bad[] = {
      "{ not json",
      "[]",
      "{\"version\": 2, \"entries\": []}",
      "{\"version\": 1, \"entries\": {}}",
      "{\"version\": 1, \"entries\": [{\"family\": \"test-family\"}]}",
      "{\"version\": 1, \"entries\": [], \"extra\": 1}",
      "{\"version\": 1, \"entries\": [{\"family\": \"test-family\", \"gpu\": \"NVIDIA H200\", "
      "\"cc\": 90, \"driver\": 13000, \"class\": \"a\", \"params\": 5, \"ms\": 1, "
      "\"default_ms\": 1}]}",
      "{\"version\": 1, \"entries\": [{\"family\": \"test-family\", \"gpu\": \"NVIDIA H200\", "
      "\"cc\": 90, \"driver\": 13000, \"class\": \"a\", \"params\": \"bp_slices=3,bp_block=8x8\", "
      "\"ms\": 1, \"default_ms\": 1}]}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_text(P("cache/kernels.json"), bad[i]);
    g_warnings = 0;
    CHECK_MSG(!ctr__tune_cache_lookup(ctx, dir, &k_space, &h200, "a", v, NULL), "'%s' used", bad[i]);
    /* the last one is valid JSON with an undeclared value: unused, silently */
    if (i + 1 < sizeof bad / sizeof bad[0])
      CHECK_MSG(g_warnings == 1 && strstr(g_last_warning, "kernels.json") &&
                    strstr(g_last_warning, "ignored"),
                "'%s': %d warnings, '%s'", bad[i], g_warnings, g_last_warning);
    CHECK_OK(ctr__tune_cache_store(dir, &k_space, &h200, "a", w, 1.5, 2.0));
    CHECK(ctr__tune_cache_lookup(ctx, dir, &k_space, &h200, "a", v, NULL) && v[0] == 4);
  }
  /* an unwritable directory: CTR_E_IO, nothing left; no directory at all */
  FILE *plain = fopen(P("plain"), "w");
  if (plain) fclose(plain);
  CHECK_FAILS(ctr__tune_cache_store(P("plain/sub"), &k_space, &h200, "a", w, 1, 1), CTR_E_IO,
              "kernel cache");
  CHECK_FAILS(ctr__tune_cache_store(NULL, &k_space, &h200, "a", w, 1, 1), CTR_E_IO, "cache_dir");
  CHECK(!ctr__tune_cache_lookup(ctx, NULL, &k_space, &h200, "a", v, NULL));
  CHECK(count_temporaries() == 0);

  /* clear: one family, then all */
  const ctr__tune_space *bp = ctr__tune_space_find("conebeam-bp");
  const int wb[2] = {8, CTR__TUNE_XY(8, 8)};
  CHECK_OK(ctr__tune_cache_store(dir, bp, &h200, "a", wb, 1.0, 1.0));
  int removed = -1;
  CHECK_OK(ctr__tune_cache_clear(dir, "test-family", &removed));
  CHECK(removed == 1 && !ctr__tune_cache_lookup(ctx, dir, &k_space, &h200, "a", v, NULL));
  CHECK(ctr__tune_cache_lookup(ctx, dir, bp, &h200, "a", v, NULL) && v[0] == 8);
  CHECK_OK(ctr__tune_cache_clear(dir, NULL, &removed));
  CHECK(removed == 1 && !exists(P("cache/kernels.json")));
  CHECK_OK(ctr__tune_cache_clear(dir, NULL, &removed)); /* nothing there: no error */
  CHECK(removed == 0);
  ctr_context_free(ctx);
}

/* ---- Through the context: memo, cache, force, hand-set --------------------------- */

static void test_get(void) {
  const ctr__tune_gpu h200 = gpu("NVIDIA H200", 9, 0, 13000);
  ctr_tuning t;
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  t.cache_dir = P("get");
  ctr_context *ctx = NULL;
  CHECK_OK(make_ctx(&t, &ctx));
  REQUIRE(ctx != NULL);
  ctr_tune_report *r = calloc(1, sizeof *r);
  REQUIRE(r != NULL);
  fake f;
  init_fake(&f);
  ctr__tune_request q;
  memset(&q, 0, sizeof q);
  q.space = &k_space, q.gpu = &h200, q.problem_class = "lattice=64", q.def = k_def;
  q.time = fake_time, q.user = &f;
  int best[2];
  CHECK(!ctr__tune_known(ctx, &q, best, r));
  CHECK_OK(ctr__tune_get(ctx, &q, best, r)); /* searched */
  CHECK(f.timed == 12 && best[0] == 2 && !r->from_cache && exists(P("get/kernels.json")));
  CHECK(!strcmp(r->family, "test-family") && !strcmp(r->gpu, "NVIDIA H200"));
  CHECK_OK(ctr__tune_get(ctx, &q, best, r)); /* the context's memo */
  CHECK(f.timed == 12 && best[0] == 2 && r->from_cache);
  ctr_context_free(ctx);
  CHECK_OK(make_ctx(&t, &ctx)); /* a new context: from the cache */
  REQUIRE(ctx != NULL);
  CHECK(ctr__tune_known(ctx, &q, best, r) && best[0] == 2 && r->from_cache && r->ms == 5.0);
  CHECK_OK(ctr__tune_get(ctx, &q, best, r));
  CHECK(f.timed == 12 && best[0] == 2);
  q.force = 1; /* timed again, whatever is known */
  f.best_s = 1;
  CHECK_OK(ctr__tune_get(ctx, &q, best, r));
  CHECK(f.timed == 24 && best[0] == 1 && !r->from_cache);
  q.force = 0;
  CHECK_OK(ctr__tune_get(ctx, &q, best, r));
  CHECK(f.timed == 24 && best[0] == 1);
  ctr_context_free(ctx);

  /* hand-set: the cached winner is not used when it differs, the search
   * keeps the set value, and its result is not written to the cache */
  t.cache_dir = P("get");
  CHECK_OK(make_ctx(&t, &ctx));
  REQUIRE(ctx != NULL);
  const int fixed[2] = {4, 0};
  q.fixed = fixed;
  f.fixed_s = 4;
  f.violations = 0;
  CHECK_OK(ctr__tune_get(ctx, &q, best, r));
  CHECK(f.timed == 27 && f.violations == 0 && best[0] == 4);
  ctr_context_free(ctx);
  int v[2];
  CHECK(ctr__tune_cache_lookup(NULL, P("get"), &k_space, &h200, "lattice=64", v, NULL) && v[0] == 1);
  free(r);
}

/* ---- The public entries ---------------------------------------------------------------- */

static void test_public(void) {
  ctr_tuning t;
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  t.cache_dir = P("pub");
  ctr_context *ctx = NULL;
  CHECK_OK(make_ctx(&t, &ctx));
  REQUIRE(ctx != NULL);
  const ctr__tune_gpu h200 = gpu("NVIDIA H200", 9, 0, 13000);
  const ctr__tune_space *bp = ctr__tune_space_find("conebeam-bp");
  const ctr__tune_space *pet = ctr__tune_space_find("pet-projector");
  const int wb[2] = {8, CTR__TUNE_XY(8, 8)}, wp[3] = {24, CTR__TUNE_XY(48, 2), 0};
  CHECK_OK(ctr__tune_cache_store(P("pub"), bp, &h200, "exact views=64", wb, 1.0, 1.2));
  CHECK_OK(ctr__tune_cache_store(P("pub"), pet, &h200, "lattice=144", wp, 2.0, 2.0));
  write_text(P("pub/fbp-kernels.json"), "{\"version\": 1, \"entries\": []}");
  size_t need = 0;
  CHECK_OK(ctr_tune_cache_list(ctx, NULL, 0, &need));
  char *text = malloc(need);
  REQUIRE(text != NULL);
  CHECK_OK(ctr_tune_cache_list(ctx, text, need, NULL));
  CHECK_MSG(strstr(text, "2 entries") && strstr(text, "conebeam-bp") &&
                strstr(text, "bp_slices=8,bp_block=8x8") && strstr(text, "pet-projector") &&
                strstr(text, "driver 13000") && strstr(text, "fbp-kernels.json"),
            "%s", text);
  char small[8];
  CHECK_OK(ctr_tune_cache_list(ctx, small, sizeof small, NULL)); /* truncated, terminated */
  CHECK(strlen(small) == sizeof small - 1);
  free(text);
  int removed = -1;
  CHECK_FAILS(ctr_tune_cache_clear(ctx, "bogus", &removed), CTR_E_INVALID_ARGUMENT, "bogus");
  CHECK_OK(ctr_tune_cache_clear(ctx, "pet-projector", &removed));
  CHECK(removed == 1);
  CHECK_OK(ctr_tune_cache_clear(ctx, "fbp-kernel", &removed));
  CHECK(removed == 1 && !exists(P("pub/fbp-kernels.json")) && exists(P("pub/kernels.json")));
  CHECK_OK(ctr_tune_cache_clear(ctx, NULL, &removed));
  CHECK(removed == 1 && !exists(P("pub/kernels.json")));

  /* nothing to tune on the CPU */
  ctr_circular_params p = th_circular_params(500, 1000, 32, 32, 1, 1, 16, CTR_DETECTOR_FLAT);
  ctr_volume_geometry vol = {16, 16, 16, 1, 1, 1, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  ctr_tune_report *r = calloc(1, sizeof *r);
  if (r) { /* the report is a versioned struct: version 0 is refused, naming it */
    CHECK_FAILS(ctr_tune_fdk(ctx, g, NULL, 0, r), CTR_E_INVALID_ARGUMENT, "ctr_tune_report");
    CHECK_OK(ctr_tune_report_init(r, CTR_TUNE_REPORT_VERSION));
  }
  if (g && r)
    CHECK_FAILS(ctr_tune_fdk(ctx, g, NULL, 0, r), CTR_E_UNSUPPORTED, "no launch parameters");
  CHECK_FAILS(ctr_tune_fdk(ctx, NULL, NULL, 0, r), CTR_E_INVALID_ARGUMENT, "required");
  ctr_pet_params pp = CTR_PET_PARAMS_INIT;
  pp.nx = pp.ny = 16, pp.nz = 8, pp.n_azimuth = 4, pp.n_copolar = 1;
  ctr_pet_kernel_params kp = CTR_PET_KERNEL_PARAMS_INIT;
  ctr_pet_system *s = NULL;
  CHECK_OK(ctr_pet_system_create(&pp, &kp, &s));
  if (s && r) CHECK_FAILS(ctr_tune_pet(ctx, s, 0, r), CTR_E_UNSUPPORTED, "no launch parameters");
  ctr_pet_system_free(s);
  free(r);
  ctr_geometry_free(g);
  ctr_context_free(ctx);
}

int main(void) {
  if (!scratch_open("autotune")) return 1;
  test_search();
  test_keys();
  test_cache();
  test_get();
  test_public();
  scratch_close();
  return th_finish("test_autotune");
}
