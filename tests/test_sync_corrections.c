/* The synchrotron corrections (docs/synchrotron.md) against analytic or
 * synthetic cases: the Daubechies filters are orthonormal; the rotation
 * centre of phantom sinograms with known (non-integer) offsets is found
 * within 0.25 bin by both methods, on 180- and 360-degree scans and with the
 * axis near the detector's edge; dezinger removes spikes; both stripe
 * filters bring a striped phantom's reconstruction closer to the clean one
 * by a stated factor; Paganin's filter equals its formula applied on a large
 * canvas; a 360-degree offset-axis scan stitched reconstructs to the
 * 180-degree full-field result within a stated error. Built again for CUDA
 * (test_gpu_sync_corrections): dezinger, stripes and Paganin on the GPU. */
#include "harness.h"
#include "parbeam/sync.h"

#include <fftw3.h>

#ifdef CTR_TEST_CUDA
#define TEST_NAME "test_gpu_sync_corrections"
#define TEST_DEVICE CTR_DEVICE_CUDA
#else
#define TEST_NAME "test_sync_corrections"
#define TEST_DEVICE CTR_DEVICE_CPU
#endif

static ctr_context *g_ctx, *g_cpu;

static ctr_parallel_geometry *geometry(int64_t nb, int64_t na, double range, double axis) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = nb;
  p.nangles = na;
  p.angle_range_deg = range;
  p.axis = axis;
  ctr_parallel_geometry *g = NULL;
  CHECK_OK(ctr_parallel_create(&p, &g));
  return g;
}

/* A Shepp-Logan slice's sinogram (head radius 0.38 nbins mm, a bin = 1 mm). */
static float *sinogram(const ctr_parallel_geometry *g, ctr_phantom *ph) {
  const ctr_parallel_params *p = ctr_parallel_get_params(g);
  float *s = malloc(sizeof(float) * (size_t)(p->nbins * p->nangles));
  const double z = 0.0;
  CHECK_OK(ctr_phantom_sinogram(ph, g, 1, &z, 2, s));
  return s;
}

static double rms_diff(const float *a, const float *b, int64_t n, double *ref) {
  double d = 0, r = 0;
  for (int64_t i = 0; i < n; i++) {
    d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    r += (double)b[i] * b[i];
  }
  if (ref) *ref = sqrt(r / (double)n);
  return sqrt(d / (double)n);
}

static void test_daubechies(void) {
  for (int n = 1; n <= 10; n++) {
    double h[20];
    CHECK_OK(ctr__daubechies(n, h));
    double worst = 0, sum = 0;
    for (int k = 0; k < 2 * n; k++) sum += h[k];
    for (int m = 0; m < n; m++) {
      double dot = 0;
      for (int k = 0; k + 2 * m < 2 * n; k++) dot += h[k] * h[k + 2 * m];
      worst = fmax(worst, fabs(dot - (m == 0)));
    }
    CHECK_MSG(worst < 1e-9 && fabs(sum - sqrt(2.0)) < 1e-12, "db%d: orthonormality off by %g, sum %g",
              n, worst, sum);
  }
  double h[4];
  CHECK_OK(ctr__daubechies(2, h));
  CHECK_NEAR(h[3], (1 + sqrt(3.0)) / (4 * sqrt(2.0)), 1e-12);
}

/* centre found within 0.25 bin */
static void center_case(ctr_phantom *ph, int64_t nb, int64_t na, double range, double axis,
                        ctr_center_method m, double lo, double hi) {
  ctr_parallel_geometry *g = geometry(nb, na, range, axis);
  if (!g) return;
  float *s = sinogram(g, ph);
  double found = 0;
  ctr_center_method used = CTR_CENTER_AUTO;
  CHECK_OK(ctr_center_find(g_ctx, g, m, lo, hi, 1, s, &found, &used));
  CHECK_MSG(fabs(found - axis) <= 0.25, "%s on %lld angles over %g degrees: axis %.3f found %.3f",
            used == CTR_CENTER_VO ? "VO" : "correlation", (long long)na, range, axis, found);
  printf("  centre %-11s %4lld angles / %3g deg, %3lld bins: true %8.3f found %8.3f\n",
         used == CTR_CENTER_VO ? "VO" : "correlation", (long long)na, range, (long long)nb, axis,
         found);
  free(s);
  ctr_parallel_free(g);
}

static void test_center(void) {
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(40.0, 1.0, &ph));
  if (!ph) return;
  const double offsets[] = {0.0, 3.3, -7.62, 0.5};
  for (int i = 0; i < 4; i++) {
    const double c = 63.5 + offsets[i];
    center_case(ph, 128, 180, 180.0, c, CTR_CENTER_VO, 0, 0);
    center_case(ph, 128, 360, 360.0, c, CTR_CENTER_CORRELATION, 0, 0);
    center_case(ph, 128, 360, 360.0, c, CTR_CENTER_AUTO, 0, 0);
  }
  ctr_phantom_free(ph);
  /* the axis near the detector's right edge (a half-acquisition scan): a
   * small head off the axis, seen whole in half the turn */
  CHECK_OK(ctr_phantom_shepp_logan(30.0, 1.0, &ph));
  if (!ph) return;
  center_case(ph, 96, 360, 360.0, 80.35, CTR_CENTER_CORRELATION, 0, 0);
  center_case(ph, 96, 360, 360.0, 86.6, CTR_CENTER_AUTO, 60, 95);
  ctr_phantom_free(ph);
}

/* The axis found lies in the search range, even when the range misses the
 * true axis (--center-range 60:61 returned 62.25); a blank or all-zero scan
 * has no axis to find: an error, not the detector's centre. */
static void test_center_limits(void) {
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(40.0, 1.0, &ph));
  if (!ph) return;
  const ctr_center_method methods[2] = {CTR_CENTER_VO, CTR_CENTER_CORRELATION};
  const double ranges[3][2] = {{60, 61}, {70, 70.5}, {60, 60}};
  for (int k = 0; k < 2; k++) {
    ctr_parallel_geometry *g = geometry(128, 360, methods[k] == CTR_CENTER_VO ? 180.0 : 360.0, 66.8);
    if (!g) continue;
    float *s = sinogram(g, ph);
    for (int r = 0; r < 3; r++) {
      double found = -1;
      CHECK_OK(ctr_center_find(g_ctx, g, methods[k], ranges[r][0], ranges[r][1], 1, s, &found, NULL));
      CHECK_MSG(found >= ranges[r][0] && found <= ranges[r][1], "%s in [%g, %g]: found %.3f",
                k ? "correlation" : "VO", ranges[r][0], ranges[r][1], found);
    }
    for (int blank = 0; blank < 2; blank++) { /* all zero; a flat beam varying per angle */
      for (int64_t i = 0; i < 128 * 360; i++) s[i] = blank ? (float)(0.1 * (double)(i / 128 % 7)) : 0.0f;
      double found = -1;
      CHECK_FAILS(ctr_center_find(g_ctx, g, methods[k], 0, 0, 1, s, &found, NULL), CTR_E_GEOMETRY,
                  "no rotation axis can be found");
    }
    free(s);
    ctr_parallel_free(g);
  }
  ctr_phantom_free(ph);
}

static void test_dezinger(void) {
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(40.0, 0.02, &ph));
  ctr_parallel_geometry *g = geometry(128, 120, 180.0, CTR_AXIS_CENTER);
  if (!ph || !g) return;
  float *clean = sinogram(g, ph), *s = malloc(sizeof(float) * 128 * 120);
  memcpy(s, clean, sizeof(float) * 128 * 120);
  int64_t spikes = 0;
  for (int64_t i = 37; i < 128 * 120; i += 997, spikes++) s[i] += (i % 2 ? 3.0f : -3.0f);
  ctr_corrections c = CTR_CORRECTIONS_INIT;
  c.dezinger = 0.5;
  int64_t replaced = 0;
  CHECK_OK(ctr_sinogram_dezinger(g_ctx, &c, 128, 120, 1, s, &replaced));
  double worst = 0;
  for (int64_t i = 0; i < 128 * 120; i++) worst = fmax(worst, fabs(s[i] - clean[i]));
  CHECK_MSG(replaced >= spikes && worst < 0.5, "dezinger: %lld replaced for %lld spikes, worst "
            "error %g", (long long)replaced, (long long)spikes, worst);
  free(clean);
  free(s);
  ctr_phantom_free(ph);
  ctr_parallel_free(g);
}

/* Stripes: offsets (either sign) on some bins of every projection (detector pixels
 * miscalibrated) make rings in the slice. The sample: a Shepp-Logan head of
 * radius 0.3 of the field, off the axis by 0.2 of it. */
static void test_stripes(void) {
  const int64_t nb = 256, na = 360;
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.3 * nb, 0.02, &ph));
  ctr_parallel_geometry *g = geometry(nb, na, 180.0, 0.5 * (double)(nb - 1) + 0.2 * (double)nb);
  if (!ph || !g) return;
  float *clean = sinogram(g, ph), *striped = malloc(sizeof(float) * (size_t)(nb * na));
  float *work = malloc(sizeof(float) * (size_t)(nb * na));
  float *r_clean = malloc(sizeof(float) * (size_t)(nb * nb)), *r = malloc(sizeof(float) * (size_t)(nb * nb));
  memcpy(striped, clean, sizeof(float) * (size_t)(nb * na));
  for (int64_t b = 9; b < nb - 9; b += 17)
    for (int64_t a = 0; a < na; a++) striped[a * nb + b] += (float)((b % 2 ? 0.05 : -0.05) * (1 + b % 3));
  const int64_t sd[3] = {nb, na, 1}, vd[3] = {nb, nb, 1};
  ctr_array va = ctr_array_make(r_clean, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array sa = ctr_array_make(clean, CTR_DTYPE_FLOAT32, 3, sd);
  CHECK_OK(ctr_fbp(g_cpu, g, NULL, &sa, &va));
  sa = ctr_array_make(striped, CTR_DTYPE_FLOAT32, 3, sd);
  va = ctr_array_make(r, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_fbp(g_cpu, g, NULL, &sa, &va));
  double ref = 0;
  const double before = rms_diff(r, r_clean, nb * nb, &ref);
  const ctr_stripe_method methods[2] = {CTR_STRIPE_SORTING, CTR_STRIPE_WAVELET};
  const double factor[2] = {0.5, 0.5};
  for (int k = 0; k < 2; k++) {
    ctr_corrections c = CTR_CORRECTIONS_INIT;
    c.stripe = methods[k];
    memcpy(work, striped, sizeof(float) * (size_t)(nb * na));
    CHECK_OK(ctr_sinogram_remove_stripes(g_ctx, &c, nb, na, 1, work));
    sa = ctr_array_make(work, CTR_DTYPE_FLOAT32, 3, sd);
    CHECK_OK(ctr_fbp(g_cpu, g, NULL, &sa, &va));
    const double after = rms_diff(r, r_clean, nb * nb, NULL);
    CHECK_MSG(after < factor[k] * before, "%s: RMS difference to the clean slice %.3g after, %.3g "
              "before (expected below %.2f x)", k ? "wavelet-FFT" : "sorting", after, before,
              factor[k]);
    printf("  stripes %-11s RMS vs clean slice: %.3g -> %.3g (%.0f %% of it; slice RMS %.3g)\n",
           k ? "wavelet-FFT" : "sorting", before, after, 100 * after / before, ref);
  }
  /* the CPU's wavelet-FFT filter does not depend on the thread count: its
   * column passes (blocks of 16 columns) and notch (columns shared out) give
   * each value the same arithmetic whichever thread computes it; level 8
   * with db10 makes the deepest bands shorter than the filter (the period
   * wraps more than once) */
  for (int deep = 0; deep < 2; deep++) {
    ctr_corrections c = CTR_CORRECTIONS_INIT;
    c.stripe = CTR_STRIPE_WAVELET;
    if (deep) c.stripe_level = 8, c.stripe_wavelet = 10;
    float *one = malloc(sizeof(float) * (size_t)(nb * na));
    ctr_context *t1 = NULL, *t3 = NULL;
    ctr_context_options o = CTR_CONTEXT_OPTIONS_INIT;
    o.device = CTR_DEVICE_CPU;
    o.num_threads = 1;
    CHECK_OK(ctr_context_create(&o, &t1));
    o.num_threads = 3;
    CHECK_OK(ctr_context_create(&o, &t3));
    if (one && t1 && t3) {
      memcpy(one, striped, sizeof(float) * (size_t)(nb * na));
      memcpy(work, striped, sizeof(float) * (size_t)(nb * na));
      CHECK_OK(ctr_sinogram_remove_stripes(t1, &c, nb, na, 1, one));
      CHECK_OK(ctr_sinogram_remove_stripes(t3, &c, nb, na, 1, work));
      CHECK_MSG(!memcmp(one, work, sizeof(float) * (size_t)(nb * na)),
                "wavelet-FFT (level %d, db%d): 1 and 3 threads differ", c.stripe_level,
                c.stripe_wavelet);
    }
    ctr_context_free(t1);
    ctr_context_free(t3);
    free(one);
  }
  free(clean);
  free(striped);
  free(work);
  free(r_clean);
  free(r);
  ctr_phantom_free(ph);
  ctr_parallel_free(g);
}

/* The sorting filter's medians return zeros unsigned (ctr__zero_unsigned),
 * on the CPU and the GPU alike: a sinogram of -0 and +0 in any mix comes
 * back as +0 bits everywhere (each value is a median of zeros), whichever
 * zero each median picked. */
static void test_zero_sign(void) {
  const int64_t nb = 23, na = 17, n = nb * na * 2;
  float *v = malloc(sizeof(float) * (size_t)n);
  REQUIRE(v);
  for (int64_t i = 0; i < n; i++) v[i] = th_uniform(0.0, 1.0) < 0.5 ? -0.0f : 0.0f;
  ctr_corrections c = CTR_CORRECTIONS_INIT;
  c.stripe = CTR_STRIPE_SORTING;
  CHECK_OK(ctr_sinogram_remove_stripes(g_ctx, &c, nb, na, 2, v));
  int64_t negative = 0;
  for (int64_t i = 0; i < n; i++) negative += v[i] != 0.0f || signbit(v[i]);
  CHECK_MSG(negative == 0, "sorting filter: %lld of %lld values are not +0", (long long)negative,
            (long long)n);
  free(v);
}

#ifdef CTR_TEST_CUDA
/* The sorting filter picks values (sorts and medians, no arithmetic): the
 * GPU's must give the CPU's bits, for several sinograms in one call (the GPU
 * sorts them in batches) with ties and signed zeros (ordered by angle, as
 * the CPU's comparison finds -0 and +0 equal). */
static void test_sorting_bits(void) {
  const int64_t nb = 37, na = 29, ns = 5, n = nb * na * ns;
  float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
  REQUIRE(a && b);
  for (int64_t i = 0; i < n; i++) {
    const double u = th_uniform(0.0, 1.0);
    /* a few levels only: many ties; some -0 and +0 */
    a[i] = u < 0.1 ? -0.0f : u < 0.2 ? 0.0f : (float)((int)(u * 7.0) - 3) * 0.25f;
  }
  memcpy(b, a, sizeof(float) * (size_t)n);
  ctr_corrections c = CTR_CORRECTIONS_INIT;
  c.stripe = CTR_STRIPE_SORTING;
  CHECK_OK(ctr_sinogram_remove_stripes(g_cpu, &c, nb, na, ns, a));
  CHECK_OK(ctr_sinogram_remove_stripes(g_ctx, &c, nb, na, ns, b));
  CHECK_MSG(!memcmp(a, b, sizeof(float) * (size_t)n), "sorting filter: the GPU's values differ from the CPU's");
  free(a);
  free(b);
}
#endif

/* Paganin's filter on a bump far from the edges equals its formula applied
 * on a canvas 6.4 times as large (where the padding cannot matter). */
static void test_paganin(void) {
  ctr_corrections c = CTR_CORRECTIONS_INIT;
  c.paganin_delta_beta = 300;
  c.energy_kev = 20;
  c.distance_mm = 200;
  const double pixel = 0.002;
  const int64_t n = 160, big = 1024;
  float *img = malloc(sizeof(float) * (size_t)(n * n));
  double *canvas = fftw_malloc(sizeof(double) * (size_t)(big * big));
  fftw_complex *spec = fftw_malloc(sizeof(fftw_complex) * (size_t)(big * (big / 2 + 1)));
  for (int64_t i = 0; i < big * big; i++) canvas[i] = 1.0;
  for (int64_t y = 0; y < n; y++)
    for (int64_t x = 0; x < n; x++) {
      const double dx = (double)x - 78.3, dy = (double)y - 81.1;
      const double v = 1.0 - 0.1 * exp(-(dx * dx + dy * dy) / (2 * 3.0 * 3.0));
      img[y * n + x] = (float)v;
      canvas[(y + (big - n) / 2) * big + x + (big - n) / 2] = v;
    }
  CHECK_OK(ctr_paganin_filter(g_ctx, &c, pixel, n, n, 1, img));
  fftw_plan f = fftw_plan_dft_r2c_2d((int)big, (int)big, canvas, spec, FFTW_ESTIMATE);
  fftw_plan b = fftw_plan_dft_c2r_2d((int)big, (int)big, spec, canvas, FFTW_ESTIMATE);
  fftw_execute(f);
  for (int64_t y = 0; y < big; y++)
    for (int64_t x = 0; x <= big / 2; x++) {
      const double fy = (double)(y <= big / 2 ? y : y - big) / (double)big;
      const double h = ctr_paganin_response(&c, pixel, (double)x / (double)big, fy) / (double)(big * big);
      spec[y * (big / 2 + 1) + x][0] *= h;
      spec[y * (big / 2 + 1) + x][1] *= h;
    }
  fftw_execute(b);
  /* the formula itself at one frequency */
  const double u = 0.1 / pixel, lambda = 1.23984198e-6 / 20.0;
  CHECK_NEAR(ctr_paganin_response(&c, pixel, 0.1, 0.0), 1.0 / (1.0 + M_PI * lambda * 200 * 300 * u * u), 1e-12);
  double worst = 0, dip = 0;
  for (int64_t y = 0; y < n; y++)
    for (int64_t x = 0; x < n; x++) {
      const double want = canvas[(y + (big - n) / 2) * big + x + (big - n) / 2];
      worst = fmax(worst, fabs(img[y * n + x] - want));
      dip = fmax(dip, 1.0 - want);
    }
  CHECK_MSG(worst < 1e-3 * dip && dip > 0.005, "Paganin: largest difference to the formula %.3g "
            "(the filtered bump's depth %.3g)", worst, dip);
  printf("  Paganin vs its formula on a 1024^2 canvas: max |diff| %.2g for a bump %.3g deep "
         "(margin %lld px)\n", worst, dip, (long long)ctr_paganin_margin(&c, pixel));
  fftw_destroy_plan(f);
  fftw_destroy_plan(b);
  fftw_free(canvas);
  fftw_free(spec);
  free(img);
}

/* A 360-degree scan on a 96-bin detector with the axis at 80.5 or 80.3 (a
 * field of view of 162 bins), stitched, against the 180-degree scan of a
 * 162-bin detector with the same axis: exact where the mirrored bins fall on
 * bins (2 x axis an integer), within 8 % (RMS, relative) where they fall
 * between and are interpolated (Keys' cubic; measured 5.9 %, linear 7.7 %,
 * the half-bin sampling of the sharp phantom's edges). */
static void stitch_case(double axis, double tol);
static void test_stitch(void) {
  stitch_case(80.5, 1e-6);
  stitch_case(80.3, 0.08);
}

/* axis: the 360-degree scan's; tol: the RMS difference allowed, relative */
static void stitch_case(double axis, double tol) {
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(70.0, 0.02, &ph));
  ctr_parallel_geometry *g = geometry(96, 720, 360.0, axis), *out = NULL;
  if (!ph || !g) return;
  CHECK_OK(ctr_stitch_360_geometry(g, &out));
  if (!out) return;
  const ctr_parallel_params *o = ctr_parallel_get_params(out);
  CHECK(o->nbins == 162 && o->nangles == 360 && fabs(o->axis - axis) < 1e-12);
  ctr_parallel_params fp = *o;
  fp.angles_deg = NULL;
  fp.angle_start_deg = 0;
  fp.angle_range_deg = 180;
  ctr_parallel_geometry *full = NULL;
  CHECK_OK(ctr_parallel_create(&fp, &full));
  float *s = sinogram(g, ph), *st = malloc(sizeof(float) * (size_t)(o->nbins * o->nangles));
  float *sf = sinogram(full, ph);
  CHECK_OK(ctr_stitch_360(g, out, 1, s, st));
  const int64_t nx = o->nx, px = nx * nx;
  float *r1 = malloc(sizeof(float) * (size_t)px), *r2 = malloc(sizeof(float) * (size_t)px);
  const int64_t sd[3] = {o->nbins, o->nangles, 1}, vd[3] = {nx, nx, 1};
  ctr_array sa = ctr_array_make(st, CTR_DTYPE_FLOAT32, 3, sd), va = ctr_array_make(r1, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_fbp(g_cpu, out, NULL, &sa, &va));
  sa = ctr_array_make(sf, CTR_DTYPE_FLOAT32, 3, sd);
  va = ctr_array_make(r2, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_fbp(g_cpu, full, NULL, &sa, &va));
  double ref = 0;
  const double d = rms_diff(r1, r2, px, &ref);
  CHECK_MSG(d <= tol * ref, "axis %.2f: stitched 360-degree scan vs the full 180-degree one: RMS "
            "%.3g (slice RMS %.3g), expected below %g of it", axis, d, ref, tol);
  printf("  360 stitched (axis %.2f) vs 180 full field: RMS difference %.3g = %.2f %% of the "
         "slice's\n", axis, d, 100 * d / ref);
  free(s);
  free(st);
  free(sf);
  free(r1);
  free(r2);
  ctr_parallel_free(full);
  ctr_parallel_free(out);
  ctr_parallel_free(g);
  ctr_phantom_free(ph);
}

int main(void) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = TEST_DEVICE;
  if (ctr_context_create(&co, &g_ctx) != CTR_OK) {
#ifdef CTR_TEST_CUDA
    printf("no usable GPU: skipped\n");
    return 77;
#else
    return 1;
#endif
  }
  co.device = CTR_DEVICE_CPU;
  CHECK_OK(ctr_context_create(&co, &g_cpu));
  test_daubechies();
  test_center();
  test_center_limits();
  test_dezinger();
  test_stripes();
  test_zero_sign();
#ifdef CTR_TEST_CUDA
  test_sorting_bits();
#endif
  test_paganin();
  test_stitch();
  ctr_context_free(g_ctx);
  ctr_context_free(g_cpu);
  return th_finish(TEST_NAME);
}
