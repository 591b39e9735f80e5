/* The data policy for non-finite and out-of-range values (docs/architecture.md,
 * "Bad values"): FDK, FBP and FBP's flat/dark correction count NaN, infinite
 * and beyond-limit values, replace them, warn with the count through the
 * context's log (or fill ctr_value_counts), and fail with CTR_E_FORMAT in
 * strict mode; PET reconstruction does the same for bad counts; non-finite
 * results never leave the library.
 *
 * Built twice: test_values on the CPU backend and, with CTR_TEST_CUDA,
 * test_gpu_values on a CUDA context (exit 77, skipped, without a GPU): the
 * same policy on both backends. */
#include "harness.h"

#include <float.h>
#ifndef CTR_TEST_CUDA
#include <omp.h>

#include "core/internal.h"
#endif

#ifdef CTR_TEST_CUDA
#define TEST_NAME "test_gpu_values"
#define TEST_DEVICE CTR_DEVICE_CUDA
/* Results of the same data agree to float rounding on the GPU. */
static int same(const float *a, const float *b, int64_t n) {
  double e = 0, s = 0;
  for (int64_t i = 0; i < n; i++) {
    e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    s += (double)b[i] * b[i];
  }
  return s > 0 ? sqrt(e / s) < 1e-5 : e == 0;
}
#else
#define TEST_NAME "test_values"
#define TEST_DEVICE CTR_DEVICE_CPU
static int same(const float *a, const float *b, int64_t n) {
  return memcmp(a, b, sizeof(float) * (size_t)n) == 0;
}
#endif

static char g_warning[1024];
static int g_warnings;

static void on_log(void *user, ctr_log_level level, const char *message) {
  (void)user;
  if (level != CTR_LOG_WARNING) return;
  g_warnings++;
  snprintf(g_warning, sizeof g_warning, "%s", message);
}

static ctr_context *make_context(void) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = TEST_DEVICE;
  co.log = on_log;
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(&co, &ctx));
  return ctx;
}

static void reset_log(void) {
  g_warnings = 0;
  g_warning[0] = '\0';
}

static int64_t count_nonfinite(const float *v, int64_t n) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) bad += !isfinite(v[i]);
  return bad;
}

/* ---- FDK ------------------------------------------------------------------ */

static void test_fdk(ctr_context *ctx) {
  const int64_t n = 16, det = 24, nviews = 24;
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 64;
  p.sdd = 96;
  p.nu = p.nv = det;
  p.du = p.dv = 1.5;
  p.nviews = nviews;
  ctr_volume_geometry vol = {n, n, n, 1.0, 1.0, 1.0, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  if (!g) return;
  const int64_t np = det * det * nviews, nv = n * n * n;
  float *proj = malloc(sizeof(float) * (size_t)np), *out = malloc(sizeof(float) * (size_t)nv);
  for (int64_t i = 0; i < np; i++) proj[i] = (float)th_uniform(0.0, 2.0);
  /* Four bad values in the first batch: NaN, Inf, near FLT_MAX (finite, but
   * the filter overflows it to NaN voxels) and beyond the limit. */
  proj[5] = NAN;
  proj[det * det + 77] = INFINITY;
  proj[2 * det * det + 300] = 0.9f * FLT_MAX;
  proj[3 * det * det + 301] = -1e30f;
  const int64_t pd[3] = {det, det, nviews}, vd[3] = {n, n, n};
  const ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(out, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  reset_log();
  CHECK_OK(ctr_fdk_stream_memory(ctx, g, &so, &pa, &va, &rep));
  CHECK_MSG(count_nonfinite(out, nv) == 0, "%lld non-finite voxels",
            (long long)count_nonfinite(out, nv));
  CHECK_MSG(rep.nonfinite == 4, "report.nonfinite %lld, expected 4", (long long)rep.nonfinite);
  CHECK(rep.out_nonfinite == 0);
  CHECK(isfinite(rep.min) && isfinite(rep.max));
  CHECK_MSG(g_warnings == 1 && strstr(g_warning, "4 values") && strstr(g_warning, "NaN"),
            "%d warnings, last '%s'", g_warnings, g_warning);
  /* The replaced values are 0: the same volume as zeros there. */
  float *clean = malloc(sizeof(float) * (size_t)np), *out2 = malloc(sizeof(float) * (size_t)nv);
  memcpy(clean, proj, sizeof(float) * (size_t)np);
  clean[5] = clean[det * det + 77] = clean[2 * det * det + 300] = clean[3 * det * det + 301] = 0;
  const ctr_array ca = ctr_array_make(clean, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va2 = ctr_array_make(out2, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_fdk(ctx, g, NULL, &ca, &va2));
  CHECK(same(out, out2, nv));
  /* Strict: an error naming the count, nothing logged as a warning. */
  so.fdk.strict = 1;
  reset_log();
  CHECK_FAILS(ctr_fdk_stream_memory(ctx, g, &so, &pa, &va, NULL), CTR_E_FORMAT,
              "projections: 4 values NaN, infinite or beyond +-1e+24: expected none");
  CHECK(g_warnings == 0);
  ctr_fdk_options fo = CTR_FDK_OPTIONS_INIT;
  fo.strict = 1;
  CHECK_FAILS(ctr_fdk(ctx, g, &fo, &pa, &va), CTR_E_FORMAT, "strict");
  /* The two public halves: ctr_fdk_filter (in place) and ctr_fdk_backproject. */
  float *half = malloc(sizeof(float) * (size_t)np);
  memcpy(half, proj, sizeof(float) * (size_t)np);
  fo.strict = 0;
  reset_log();
  CHECK_OK(ctr_fdk_filter(ctx, g, &fo, 0, nviews, half));
  CHECK_MSG(count_nonfinite(half, np) == 0, "%lld non-finite filtered values",
            (long long)count_nonfinite(half, np));
  CHECK_MSG(g_warnings == 1 && strstr(g_warning, "ctr_fdk_filter: projections: 4 values"),
            "%d warnings, last '%s'", g_warnings, g_warning);
  memcpy(half, proj, sizeof(float) * (size_t)np);
  fo.strict = 1;
  CHECK_FAILS(ctr_fdk_filter(ctx, g, &fo, 0, nviews, half), CTR_E_FORMAT,
              "ctr_fdk_filter: projections: 4 values");
  CHECK(isnan(half[5])); /* strict: an error before anything is changed */
  memset(out, 0, sizeof(float) * (size_t)nv);
  CHECK_FAILS(ctr_fdk_backproject(ctx, g, &fo, 0, nviews, half, &va), CTR_E_FORMAT,
              "ctr_fdk_backproject: filtered views: 4 values");
  CHECK(count_nonfinite(out, nv) == 0);
  fo.strict = 0;
  reset_log();
  CHECK_OK(ctr_fdk_backproject(ctx, g, &fo, 0, nviews, half, &va));
  CHECK(count_nonfinite(out, nv) == 0);
  CHECK_MSG(g_warnings == 1 && strstr(g_warning, "filtered views: 4 values"), "%d warnings, last '%s'",
            g_warnings, g_warning);
  free(half);
  /* The documented limit: values of 1e24 everywhere still give finite
   * voxels and count as admissible. */
  for (int64_t i = 0; i < np; i++) proj[i] = 1e24f;
  CHECK_OK(ctr_fdk_stream_memory(ctx, g, &so, &pa, &va, &rep));
  CHECK(rep.nonfinite == 0 && count_nonfinite(out, nv) == 0);
  free(proj);
  free(out);
  free(clean);
  free(out2);
  ctr_geometry_free(g);
}

/* ---- FBP ------------------------------------------------------------------ */

static ctr_parallel_geometry *parallel(int64_t nb, int64_t na, double pixel_size) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = nb;
  p.nangles = na;
  p.pixel_size = pixel_size;
  ctr_parallel_geometry *g = NULL;
  CHECK_OK(ctr_parallel_create(&p, &g));
  return g;
}

static void test_fbp_sinograms(ctr_context *ctx) {
  const int64_t nb = 32, na = 40, ns = 2, n = nb * na * ns, plane = nb * nb;
  ctr_parallel_geometry *g = parallel(nb, na, 0);
  if (!g) return;
  float *sino = malloc(sizeof(float) * (size_t)n), *out = malloc(sizeof(float) * (size_t)(plane * ns));
  for (int64_t i = 0; i < n; i++) sino[i] = (float)th_uniform(0.0, 1.0);
  sino[3] = NAN;
  sino[nb * na + 50] = -INFINITY;
  sino[nb * na + 70] = 1e30f;
  const int64_t sd[3] = {nb, na, ns}, vd[3] = {nb, nb, ns};
  const ctr_array sa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array va = ctr_array_make(out, CTR_DTYPE_FLOAT32, 3, vd);
  /* Default: replaced, one warning with the count. */
  reset_log();
  CHECK_OK(ctr_fbp(ctx, g, NULL, &sa, &va));
  CHECK_MSG(count_nonfinite(out, plane * ns) == 0, "%lld non-finite slice values",
            (long long)count_nonfinite(out, plane * ns));
  CHECK_MSG(g_warnings == 1 && strstr(g_warning, "sinograms: 3 values"), "%d warnings, last '%s'",
            g_warnings, g_warning);
  /* The same as zeros there. */
  float *clean = malloc(sizeof(float) * (size_t)n), *out2 = malloc(sizeof(float) * (size_t)(plane * ns));
  memcpy(clean, sino, sizeof(float) * (size_t)n);
  clean[3] = clean[nb * na + 50] = clean[nb * na + 70] = 0.0f;
  const ctr_array ca = ctr_array_make(clean, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array va2 = ctr_array_make(out2, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_fbp(ctx, g, NULL, &ca, &va2));
  CHECK(same(out, out2, plane * ns));
  /* Counts collected by the caller: no warning. */
  ctr_value_counts counts = CTR_VALUE_COUNTS_INIT;
  ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
  o.counts = &counts;
  reset_log();
  CHECK_OK(ctr_fbp(ctx, g, &o, &sa, &va));
  CHECK(counts.input == 3 && counts.output == 0 && g_warnings == 0);
  /* Strict: an error. */
  o.strict = 1;
  CHECK_FAILS(ctr_fbp(ctx, g, &o, &sa, &va), CTR_E_FORMAT, "sinograms: 3 values NaN");
  /* The two halves: ctr_fbp_filter (in place) replaces them too; strict, it
   * refuses before changing anything. */
  CHECK_FAILS(ctr_fbp_filter(ctx, g, &o, ns, sino), CTR_E_FORMAT,
              "ctr_fbp_filter: sinograms: 3 values NaN");
  CHECK(isnan(sino[3]));
  o.strict = 0;
  counts.input = 0;
  CHECK_OK(ctr_fbp_filter(ctx, g, &o, ns, sino));
  CHECK(counts.input == 3 && count_nonfinite(sino, n) == 0);
  CHECK_OK(ctr_fbp_backproject(ctx, g, &o, ns, sino, out));
  CHECK(count_nonfinite(out, plane * ns) == 0);
  free(sino);
  free(clean);
  free(out);
  free(out2);
  ctr_parallel_free(g);
}

/* Results that overflow (a tiny pixel size scales them by 1e30): the output
 * check replaces and counts them. */
static void test_fbp_output(ctr_context *ctx) {
  const int64_t nb = 16, na = 20, n = nb * na, plane = nb * nb;
  ctr_parallel_geometry *g = parallel(nb, na, 1e-30);
  if (!g) return;
  float *sino = malloc(sizeof(float) * (size_t)n), *out = malloc(sizeof(float) * (size_t)plane);
  for (int64_t i = 0; i < n; i++) sino[i] = 1e20f;
  const int64_t sd[3] = {nb, na, 1}, vd[3] = {nb, nb, 1};
  const ctr_array sa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array va = ctr_array_make(out, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_value_counts counts = CTR_VALUE_COUNTS_INIT;
  ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
  o.counts = &counts;
  CHECK_OK(ctr_fbp(ctx, g, &o, &sa, &va));
  CHECK_MSG(counts.output > 0 && count_nonfinite(out, plane) == 0,
            "counts.output %lld, %lld non-finite values", (long long)counts.output,
            (long long)count_nonfinite(out, plane));
  o.strict = 1;
  CHECK_FAILS(ctr_fbp(ctx, g, &o, &sa, &va), CTR_E_FORMAT, "slices");
  /* ctr_fbp_backproject checks its slices too. */
  o.strict = 0;
  counts.output = 0;
  CHECK_OK(ctr_fbp_filter(ctx, g, &o, 1, sino));
  CHECK_OK(ctr_fbp_backproject(ctx, g, &o, 1, sino, out));
  CHECK(counts.output > 0 && count_nonfinite(out, plane) == 0);
  free(sino);
  free(out);
  ctr_parallel_free(g);
}

/* Flat/dark pixels that cannot calibrate: flat 0 (no dark), flat = dark, NaN
 * flat, dark > flat. Each gives sinogram value 0, is counted once per pixel
 * in counts.calibration and is an error in strict mode; a projection below
 * its dark is a clamped transmission, counted per projection. */
static void test_fbp_flatfield(ctr_context *ctx) {
  const int64_t nb = 16, na = 20, nrows = 1, plane = nb * nb;
  ctr_parallel_geometry *g = parallel(nb, na, 0);
  if (!g) return;
  float *proj = malloc(sizeof(float) * (size_t)(nb * na)), flat[16], dark[16];
  for (int64_t b = 0; b < nb; b++) {
    flat[b] = 1000.0f;
    dark[b] = 10.0f;
  }
  flat[0] = 0.0f;
  dark[0] = 0.0f;
  flat[1] = dark[1] = 20.0f;
  flat[2] = NAN;
  dark[3] = 2000.0f;
  for (int64_t a = 0; a < na; a++)
    for (int64_t b = 0; b < nb; b++) proj[a * nb + b] = b == 5 ? 5.0f : 500.0f; /* bin 5 < dark */
  float sino[16 * 20];
  CHECK_OK(ctr_flatfield_sinograms(proj, CTR_DTYPE_FLOAT32, nb, nrows, na, flat, dark, 0, 1, sino,
                                   NULL));
  for (int64_t a = 0; a < na; a++)
    for (int b = 0; b < 4; b++)
      CHECK_MSG(sino[a * nb + b] == 0.0f, "angle %lld bin %d: %g, expected 0 (no calibration)",
                (long long)a, b, sino[a * nb + b]);
  const int64_t pd[3] = {nb, nrows, na}, vd[3] = {nb, nb, 1};
  const ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  float *out = malloc(sizeof(float) * (size_t)plane);
  ctr_array va = ctr_array_make(out, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_value_counts counts = CTR_VALUE_COUNTS_INIT;
  ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
  o.counts = &counts;
  CHECK_OK(ctr_fbp_projections(ctx, g, &o, &pa, flat, dark, 0, &va));
#ifdef CTR_TEST_CUDA
  const int64_t clamps = 0; /* the GPU path clamps without counting */
#else
  const int64_t clamps = na;
#endif
  CHECK_MSG(counts.calibration == 4 && counts.clamped == clamps && counts.input == 0,
            "calibration %lld (expected 4), clamped %lld (expected %lld)",
            (long long)counts.calibration, (long long)counts.clamped, (long long)clamps);
  /* Without counts: warnings through the log. */
  reset_log();
  CHECK_OK(ctr_fbp_projections(ctx, g, NULL, &pa, flat, dark, 0, &va));
  CHECK_MSG(g_warnings == 1 + (clamps > 0), "%d warnings, last '%s'", g_warnings, g_warning);
  o.strict = 1;
  CHECK_FAILS(ctr_fbp_projections(ctx, g, &o, &pa, flat, dark, 0, &va), CTR_E_FORMAT,
              "flat/dark: 4 pixels with flat <= dark");
  /* Only the clamps left: still an error in strict mode (CPU: the GPU path
   * does not count them). */
  flat[0] = flat[1] = flat[2] = 1000.0f;
  dark[0] = dark[1] = dark[3] = 10.0f;
#ifndef CTR_TEST_CUDA
  CHECK_FAILS(ctr_fbp_projections(ctx, g, &o, &pa, flat, dark, 0, &va), CTR_E_FORMAT,
              "20 transmissions");
#endif
  free(proj);
  free(out);
  ctr_parallel_free(g);
}

/* ---- PET ------------------------------------------------------------------ */

/* Bad counts in memory (NaN, negative) are used as 0 with a warning, or are
 * an error in strict mode; counts replaced when loading (h->replaced) are an
 * error in strict mode; the image stays finite. */
static void test_pet(ctr_context *ctx) {
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  p.nx = p.ny = 16;
  p.nz = 4;
  p.voxel = 8.0;
  p.n_azimuth = 4;
  p.n_copolar = 1;
  ctr_pet_kernel_params k = CTR_PET_KERNEL_PARAMS_INIT;
  ctr_pet_system *s = NULL;
  ctr_pet_projector *pr = NULL;
  ctr_pet_histo *h = NULL;
  CHECK_OK(ctr_pet_system_create(&p, &k, &s));
  CHECK_OK(ctr_pet_projector_create(ctx, s, &pr));
  CHECK_OK(ctr_pet_histo_create(&p, 1, &h));
  if (!pr || !h) return;
  const int64_t nvox = p.nx * p.ny * p.nz, n = nvox * h->nviews;
  for (int64_t i = 0; i < n; i++) h->counts[i] = (float)th_uniform(0.5, 2.0);
  for (int64_t i = 0; i < n; i++) h->factors[i] = (float)th_uniform(0.8, 1.2);
  float *img = malloc(sizeof(float) * (size_t)nvox), *ref = malloc(sizeof(float) * (size_t)nvox);
  ctr_pet_recon_options o = CTR_PET_RECON_OPTIONS_INIT;
  o.algorithm = CTR_PET_MLEM;
  o.iterations = 2;
  /* The reference: zeros where the bad values will be. */
  const float factor = h->factors[2 * nvox + 7];
  h->counts[5] = h->counts[nvox + 100] = h->factors[2 * nvox + 7] = 0.0f;
  memset(ref, 0, sizeof(float) * (size_t)nvox);
  CHECK_OK(ctr_pet_reconstruct(pr, h, &o, ref, NULL));
  h->counts[5] = NAN;
  h->counts[nvox + 100] = -3.0f;
  h->factors[2 * nvox + 7] = INFINITY;
  reset_log();
  memset(img, 0, sizeof(float) * (size_t)nvox);
  CHECK_OK(ctr_pet_reconstruct(pr, h, &o, img, NULL));
  CHECK_MSG(count_nonfinite(img, nvox) == 0, "%lld non-finite voxels",
            (long long)count_nonfinite(img, nvox));
  CHECK(same(img, ref, nvox));
  CHECK_MSG(g_warnings == 1 && strstr(g_warning, "histo-images: 3 counts or factors"),
            "%d warnings, last '%s'", g_warnings, g_warning);
  /* the caller's data are left as they are */
  CHECK(isnan(h->counts[5]) && h->counts[nvox + 100] == -3.0f && isinf(h->factors[2 * nvox + 7]));
  o.strict = 1;
  CHECK_FAILS(ctr_pet_reconstruct(pr, h, &o, img, NULL), CTR_E_FORMAT,
              "histo-images: 3 counts or factors NaN, infinite, negative");
  h->counts[5] = h->counts[nvox + 100] = 0.0f;
  h->factors[2 * nvox + 7] = factor;
  h->replaced = 3; /* as ctr_pet_histo_load reports replaced values */
  CHECK_FAILS(ctr_pet_reconstruct(pr, h, &o, img, NULL), CTR_E_FORMAT,
              "3 counts or factors NaN, infinite, negative or beyond +-1e+24 were replaced by 0 when loaded");
  o.strict = 0;
  CHECK_OK(ctr_pet_reconstruct(pr, h, &o, img, NULL));
  free(img);
  free(ref);
  ctr_pet_histo_free(h);
  ctr_pet_projector_free(pr);
  ctr_pet_system_free(s);
}

#ifndef CTR_TEST_CUDA
/* The counts' check and sum in one pass (PET's uniform start): bad values
 * counted and summed as 0, the sum within double rounding of a long double
 * reference and the same bits at 1 and 3 threads (pieces fixed by n). */
static void test_count_nonneg_sum(void) {
  const int64_t sizes[] = {0, 1, 4095, 4096, 4097, 1000003};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    const int64_t n = sizes[k];
    float *v = malloc(sizeof(float) * (size_t)(n + 1));
    long double ref = 0;
    int64_t want_bad = 0;
    for (int64_t i = 0; i < n; i++) {
      v[i] = (float)th_uniform(0.0, 1000.0);
      if (i % 1009 == 7) v[i] = (i / 1009) % 3 == 0 ? NAN : (i / 1009) % 3 == 1 ? -1.0f : 2e24f;
      const int ok = v[i] >= 0 && isfinite(v[i]) && v[i] <= 1e24f;
      want_bad += !ok;
      ref += ok ? v[i] : 0;
    }
    double s1 = -1, s3 = -2;
    omp_set_num_threads(1);
    const int64_t b1 = ctr__values_count_nonneg(v, n, &s1);
    omp_set_num_threads(3);
    const int64_t b3 = ctr__values_count_nonneg(v, n, &s3);
    CHECK_MSG(b1 == want_bad && b3 == want_bad && ctr__values_count_nonneg(v, n, NULL) == want_bad,
              "n %lld: %lld / %lld bad values, expected %lld", (long long)n, (long long)b1,
              (long long)b3, (long long)want_bad);
    CHECK_MSG(memcmp(&s1, &s3, sizeof s1) == 0, "n %lld: sum %.17g at 1 thread, %.17g at 3",
              (long long)n, s1, s3);
    CHECK_MSG(fabsl((long double)s1 - ref) <= 1e-12L * (ref > 1 ? ref : 1), "n %lld: sum %.17g, expected %.17Lg",
              (long long)n, s1, ref);
    free(v);
  }
}
#endif

int main(void) {
#ifdef CTR_TEST_CUDA
  if (ctr_cuda_get_device_count() < 1) {
    printf("test_gpu_values: SKIPPED (no usable GPU)\n");
    return 77;
  }
#endif
  ctr_context *ctx = make_context();
  if (!ctx) return th_finish(TEST_NAME);
  test_fdk(ctx);
  test_fbp_sinograms(ctx);
  test_fbp_output(ctx);
  test_fbp_flatfield(ctx);
  test_pet(ctx);
#ifndef CTR_TEST_CUDA
  test_count_nonneg_sum();
#endif
  ctr_context_free(ctx);
  return th_finish(TEST_NAME);
}
