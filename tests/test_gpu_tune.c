/* The autotuner on the GPU (src/conebeam/cuda/bp_tune.cu, src/pet/cuda/
 * pet_cuda.cu; docs/tuning.md, "Autotuning"): ctr_tune_fdk times the
 * candidates and writes kernels.json, a second call reads it, the FDK of a
 * tuned context is the default-parameter volume bit for bit with exact
 * interpolation, and so is the volume of every candidate the tuner timed
 * (any of them may win on some GPU); a hand-set field is never tuned and
 * tune=off tunes nothing. PET: every candidate with the same split gives the
 * same projections bit for bit (Z and the block do not change a voxel's
 * sum), and the tuned projector agrees with the default one to rounding.
 * No timing is asserted. Exits 77 (skipped) without a usable GPU. */
#include "harness.h"
#include "scratch_dir.h"

#include <math.h>
#include <stdlib.h>

#if CTR_HAVE_CUDA

static ctr_status make_ctx(const ctr_tuning *t, ctr_context **ctx) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  co.tuning = t;
  *ctx = NULL;
  return ctr_context_create(&co, ctx);
}

/* A context whose tuning table sets "k=v,k=v" (a candidate's text); tune
 * off so that the fields it leaves are the static defaults. */
static ctr_status ctx_with(const char *params, ctr_context **ctx) {
  ctr_tuning t;
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  t.tune = -1;
  char buf[128];
  snprintf(buf, sizeof buf, "%s", params);
  for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq) return CTR_E_INVALID_ARGUMENT;
    *eq = '\0';
    const ctr_status st = ctr_tuning_set(&t, kv, eq + 1);
    if (st != CTR_OK) return st;
  }
  return make_ctx(&t, ctx);
}

static void print_report(const ctr_tune_report *r) {
  printf("%s on %s, %s: %d of %d candidates in %.2f s%s; chosen %s %.4f ms (default %.4f ms)%s%s\n",
         r->family, r->gpu, r->problem, r->ncandidates, r->total, r->seconds,
         r->budget_hit ? " (budget spent)" : "", r->params, r->ms, r->default_ms,
         r->from_cache ? " [cached]" : "", r->note);
}

static void test_fdk(void) {
  const int64_t n = 96, det = 128, nviews = 90;
  ctr_circular_params p = th_circular_params(256, 384, det, det, 1.5, 1.5, nviews, CTR_DETECTOR_FLAT);
  ctr_volume_geometry vol = {n, n, n, 1, 1, 1, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  REQUIRE(g != NULL);
  const int64_t np = det * det * nviews, nvox = n * n * n;
  float *proj = th_randoms(np, 0.0, 1.0), *ref = malloc(sizeof(float) * nvox),
        *out = malloc(sizeof(float) * nvox);
  ctr_tune_report *r = calloc(1, sizeof *r), *r2 = calloc(1, sizeof *r2);
  REQUIRE(proj && ref && out && r && r2);
  CHECK_OK(ctr_tune_report_init(r, CTR_TUNE_REPORT_VERSION));
  CHECK_OK(ctr_tune_report_init(r2, CTR_TUNE_REPORT_VERSION));
  int64_t pd[3] = {det, det, nviews}, vd[3] = {n, n, n};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array ra = ctr_array_make(ref, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array oa = ctr_array_make(out, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.interp = CTR_INTERP_EXACT;

  /* the default parameters: tune off */
  ctr_tuning t;
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  t.tune = -1;
  ctr_context *off = NULL;
  CHECK_OK(make_ctx(&t, &off));
  CHECK_OK(ctr_fdk(off, g, &o, &pa, &ra));
  CHECK_OK(ctr_tune_fdk(off, g, &o, 1, r)); /* off: nothing tuned */
  CHECK_MSG(r->ncandidates == 0 && strstr(r->note, "off"), "note '%s'", r->note);
  ctr_context_free(off);

  /* tuned, into a cache of the test's own */
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  t.cache_dir = P("cache");
  t.tune = 0; /* the default: FDK runs tune their shape */
  ctr_context *on = NULL;
  CHECK_OK(make_ctx(&t, &on));
  REQUIRE(on != NULL);
  CHECK_OK(ctr_tune_fdk(on, g, &o, 1, r));
  print_report(r);
  CHECK_MSG(!r->from_cache && r->ncandidates >= 2 && r->winner >= 0 && r->params[0],
            "%d candidates, winner %d, '%s', note '%s'", r->ncandidates, r->winner, r->params,
            r->note);
  CHECK(!strcmp(r->family, "conebeam-bp") && strstr(r->problem, "exact"));
  CHECK(exists(P("cache/kernels.json")));
  /* the defaults come first and nothing beats them by less than the margin */
  CHECK(r->default_ms > 0 && (r->winner == 0 || r->ms < 0.97 * r->default_ms));
  /* cached now, for this context and a new one */
  CHECK_OK(ctr_tune_fdk(on, g, &o, 0, r2));
  CHECK(r2->from_cache && !strcmp(r2->params, r->params));
  ctr_context *on2 = NULL;
  CHECK_OK(make_ctx(&t, &on2));
  CHECK_OK(ctr_tune_fdk(on2, g, &o, 0, r2));
  CHECK(r2->from_cache && !strcmp(r2->params, r->params));
  ctr_context_free(on2);
  /* the tuned run: the default volume, bit for bit */
  memset(out, 0xff, sizeof(float) * nvox);
  CHECK_OK(ctr_fdk(on, g, &o, &pa, &oa));
  CHECK(memcmp(out, ref, sizeof(float) * nvox) == 0);
  ctr_context_free(on);

  /* every candidate timed: the same volume (any of them may win elsewhere) */
  int differ = 0;
  for (int i = 0; i < r->ncandidates; i++) {
    ctr_context *c = NULL;
    CHECK_OK(ctx_with(r->candidates[i].params, &c));
    if (!c) continue;
    memset(out, 0xff, sizeof(float) * nvox);
    CHECK_OK(ctr_fdk(c, g, &o, &pa, &oa));
    if (memcmp(out, ref, sizeof(float) * nvox)) {
      differ++;
      fprintf(stderr, "candidate %s: another volume\n", r->candidates[i].params);
    }
    ctr_context_free(c);
  }
  CHECK_MSG(differ == 0, "%d of %d candidates gave another volume", differ, r->ncandidates);

  /* a hand-set field is never tuned */
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  t.cache_dir = P("cache");
  t.tune = 0; /* the default: FDK runs tune their shape */
  t.bp_slices = 2;
  CHECK_OK(make_ctx(&t, &on));
  if (on) {
    CHECK_OK(ctr_tune_fdk(on, g, &o, 1, r));
    int other = 0;
    for (int i = 0; i < r->ncandidates; i++) other += !strstr(r->candidates[i].params, "bp_slices=2,");
    CHECK_MSG(r->ncandidates >= 1 && other == 0 && strstr(r->params, "bp_slices=2,"),
              "%d candidates, %d without bp_slices=2, chosen '%s'", r->ncandidates, other, r->params);
    ctr_context_free(on);
  }
  /* both set: nothing to tune */
  t.bp_block_x = 32, t.bp_block_y = 4;
  CHECK_OK(make_ctx(&t, &on));
  if (on) {
    CHECK_OK(ctr_tune_fdk(on, g, &o, 1, r));
    CHECK_MSG(r->ncandidates == 0 && strstr(r->note, "by hand"), "note '%s'", r->note);
    ctr_context_free(on);
  }
  /* texture interpolation (the default) tunes too, in its own class */
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  t.cache_dir = P("cache");
  t.tune = 0; /* the default: FDK runs tune their shape */
  CHECK_OK(make_ctx(&t, &on));
  if (on) {
    o.interp = CTR_INTERP_TEXTURE;
    CHECK_OK(ctr_tune_fdk(on, g, &o, 0, r));
    print_report(r);
    CHECK(r->ncandidates >= 2 && strstr(r->problem, "tex"));
    CHECK_OK(ctr_fdk(on, g, &o, &pa, &oa));
    ctr_context_free(on);
  }
  free(proj), free(ref), free(out), free(r), free(r2);
  ctr_geometry_free(g);
}

/* Tuning by default: a run at the default `tune` on a fresh cache (1024^2 x 64, the pair
 * kernels of a centred circular orbit) tunes its shape on its own slab before it runs (the
 * cache then holds the class, which ctr_tune_fdk finds), and gives the default volume bit for
 * bit (exact). */
static void test_fdk_slab(void) {
  const int64_t n = 1024, nz = 64, nu = 256, nv = 48, nviews = 40;
  ctr_circular_params p = th_circular_params(1500, 2000, nu, nv, 6.0, 6.0, nviews, CTR_DETECTOR_FLAT);
  ctr_volume_geometry vol = {n, n, nz, 1, 1, 1, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  REQUIRE(g != NULL);
  const int64_t np = nu * nv * nviews, nvox = n * n * nz;
  float *proj = th_randoms(np, 0.0, 1.0), *ref = malloc(sizeof(float) * nvox),
        *out = malloc(sizeof(float) * nvox);
  ctr_tune_report *r = calloc(1, sizeof *r);
  REQUIRE(proj && ref && out && r);
  CHECK_OK(ctr_tune_report_init(r, CTR_TUNE_REPORT_VERSION));
  int64_t pd[3] = {nu, nv, nviews}, vd[3] = {n, n, nz};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array ra = ctr_array_make(ref, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array oa = ctr_array_make(out, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.interp = CTR_INTERP_EXACT;
  ctr_tuning t;
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  t.tune = -1;
  ctr_context *c = NULL;
  CHECK_OK(make_ctx(&t, &c));
  if (c) CHECK_OK(ctr_fdk(c, g, &o, &pa, &ra));
  ctr_context_free(c);
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  t.cache_dir = P("cache_slab"); /* tune stays at its default, 0 */
  c = NULL;
  CHECK_OK(make_ctx(&t, &c));
  if (c) {
    CHECK(!exists(P("cache_slab/kernels.json")));
    memset(out, 0xff, sizeof(float) * nvox);
    CHECK_OK(ctr_fdk(c, g, &o, &pa, &oa)); /* tunes first: the cache is written */
    CHECK(memcmp(out, ref, sizeof(float) * nvox) == 0);
    CHECK_MSG(exists(P("cache_slab/kernels.json")), "the default run wrote no tuning cache");
    CHECK_OK(ctr_tune_fdk(c, g, &o, 0, r));
    print_report(r);
    CHECK_MSG(r->from_cache && strstr(r->problem, "pair") && strstr(r->problem, "slab="),
              "1024^2 x 64: from cache %d, problem '%s', note '%s'", r->from_cache, r->problem,
              r->note);
  }
  ctr_context_free(c);
  free(proj), free(ref), free(out), free(r);
  ctr_geometry_free(g);
}

/* Relative difference of two arrays (max |a - b| / max |a|). */
static double rel_diff(const float *a, const float *b, int64_t n) {
  double d = 0, m = 0;
  for (int64_t i = 0; i < n; i++) {
    d = fmax(d, fabs((double)a[i] - b[i]));
    m = fmax(m, fabs((double)a[i]));
  }
  return m > 0 ? d / m : d;
}

/* Forward and back projections of view `view` into out (2 n floats). */
static ctr_status project_both(ctr_context *ctx, ctr_pet_system *s, const float *img, float *out,
                               int64_t n) {
  ctr_pet_projector *pj = NULL;
  ctr_status st = ctr_pet_projector_create(ctx, s, &pj);
  if (st != CTR_OK) return st;
  st = ctr_pet_project(pj, CTR_PET_FORWARD, 1, img, out);
  if (st == CTR_OK) st = ctr_pet_project(pj, CTR_PET_BACK, 1, img, out + n);
  ctr_pet_projector_free(pj);
  return st;
}

static void test_pet(void) {
  ctr_pet_params pp = CTR_PET_PARAMS_INIT;
  pp.nx = pp.ny = 64, pp.nz = 20, pp.n_azimuth = 6, pp.n_copolar = 1;
  ctr_pet_kernel_params kp = CTR_PET_KERNEL_PARAMS_INIT;
  ctr_pet_system *s = NULL;
  CHECK_OK(ctr_pet_system_create(&pp, &kp, &s));
  REQUIRE(s != NULL);
  const int64_t n = pp.nx * pp.ny * pp.nz;
  float *img = th_randoms(n, 0.0, 1.0), *ref = malloc(sizeof(float) * 2 * n),
        *ref1 = malloc(sizeof(float) * 2 * n), *out = malloc(sizeof(float) * 2 * n);
  ctr_tune_report *r = calloc(1, sizeof *r);
  REQUIRE(img && ref && ref1 && out && r);
  CHECK_OK(ctr_tune_report_init(r, CTR_TUNE_REPORT_VERSION));
  ctr_context *c = NULL;
  CHECK_OK(ctx_with("tune=off", &c)); /* the defaults */
  CHECK_OK(project_both(c, s, img, ref, n));
  ctr_context_free(c);
  CHECK_OK(ctx_with("pet_split=1", &c)); /* the defaults with one block a tile */
  CHECK_OK(project_both(c, s, img, ref1, n));
  ctr_context_free(c);

  ctr_tuning t;
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  t.cache_dir = P("cache");
  CHECK_OK(make_ctx(&t, &c));
  REQUIRE(c != NULL);
  CHECK_OK(ctr_tune_pet(c, s, 1, r));
  print_report(r);
  CHECK_MSG(r->ncandidates >= 2 && r->params[0] && !strcmp(r->family, "pet-projector"),
            "%d candidates, '%s', note '%s'", r->ncandidates, r->params, r->note);
  CHECK_OK(project_both(c, s, img, out, n)); /* the tuned projector */
  const double e = rel_diff(ref, out, 2 * n);
  CHECK_MSG(e < 1e-5, "tuned vs default projections: %g", e);
  ctr_context_free(c);
  int same_split = 0, differ = 0;
  for (int i = 0; i < r->ncandidates; i++) {
    if (!strstr(r->candidates[i].params, "pet_split=1")) continue;
    same_split++;
    CHECK_OK(ctx_with(r->candidates[i].params, &c));
    if (!c) continue;
    CHECK_OK(project_both(c, s, img, out, n));
    if (memcmp(out, ref1, sizeof(float) * 2 * n)) {
      differ++;
      fprintf(stderr, "candidate %s: other projections\n", r->candidates[i].params);
    }
    ctr_context_free(c);
  }
  CHECK_MSG(same_split >= 1 && differ == 0, "%d of %d candidates at split 1 differ", differ,
            same_split);
  free(img), free(ref), free(ref1), free(out), free(r);
  ctr_pet_system_free(s);
}

int main(void) {
  if (ctr_cuda_get_device_count() < 1) {
    printf("test_gpu_tune: SKIPPED (no usable GPU)\n");
    return 77;
  }
  if (!scratch_open("gpu_tune")) return 1;
  test_fdk();
  test_fdk_slab();
  test_pet();
  scratch_close();
  return th_finish("test_gpu_tune");
}
#else
int main(void) {
  printf("test_gpu_tune: SKIPPED (built without CUDA)\n");
  return 77;
}
#endif
