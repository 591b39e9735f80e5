/* Flat-field correction into sinograms (ctr_flatfield_sinograms) and image
 * averaging (ctr_flatfield_average): exact values on small synthetic data,
 * the sinogram layout, clamping, argument errors. */
#include "harness.h"

#include <stdint.h>

enum { NB = 7, NR = 5, NA = 4 };
#define PLANE ((size_t)NB * NR)

/* The documented formula, in double (flat <= dark: no calibration, 0). */
static float expected(double p, double f, double d, int *clamp) {
  const double den = f - d;
  *clamp = 0;
  if (!(den > 0.0)) return 0.0f;
  double r = (p - d) / den;
  if (!(r >= 1e-6)) {
    r = 1e-6;
    *clamp = 1;
  }
  return (float)-log(r);
}

/* Distinct values per (angle, row, bin), all strictly between dark and flat. */
static float proj_value(int a, int r, int b) { return (float)(200 + 30 * a + 7 * r + 3 * b); }
static float flat_value(int r, int b) { return (float)(1000 + 11 * r + 5 * b); }
static float dark_value(int r, int b) { return (float)(40 + r + 2 * b); }

static void check_layout(const void *proj, ctr_dtype dt, const float *flat, const float *dark,
                         int64_t row0, int64_t ns, const char *what) {
  float *sino = malloc(sizeof(float) * NB * NA * (size_t)ns);
  for (size_t i = 0; i < (size_t)NB * NA * (size_t)ns; i++) sino[i] = -12345.0f;
  int64_t clamped = -1;
  CHECK_OK(ctr_flatfield_sinograms(proj, dt, NB, NR, NA, flat, dark, row0, ns, sino, &clamped));
  CHECK_MSG(clamped == 0, "%s: %lld clamped", what, (long long)clamped);
  int bad = 0;
  double worst = 0;
  for (int64_t s = 0; s < ns; s++)
    for (int a = 0; a < NA; a++)
      for (int b = 0; b < NB; b++) {
        const int r = (int)(row0 + s);
        int c;
        const float e = expected(proj_value(a, r, b), flat_value(r, b),
                                 dark ? dark_value(r, b) : 0.0, &c);
        const float got = sino[((size_t)s * NA + (size_t)a) * NB + (size_t)b];
        const double diff = fabs((double)got - (double)e);
        if (diff > worst) worst = diff;
        if (diff > 1e-6 * fabs(e) + 1e-7) bad++;
      }
  CHECK_MSG(bad == 0, "%s: %d of %lld values differ from -log((p-d)/(f-d)) (worst %.3g)", what,
            bad, (long long)(NB * NA * ns), worst);
  free(sino);
}

static void test_values(void) {
  float *pf = malloc(sizeof(float) * PLANE * NA);
  uint16_t *pu = malloc(sizeof(uint16_t) * PLANE * NA);
  float flat[PLANE], dark[PLANE];
  for (int a = 0; a < NA; a++)
    for (int r = 0; r < NR; r++)
      for (int b = 0; b < NB; b++) {
        pf[(size_t)a * PLANE + (size_t)r * NB + (size_t)b] = proj_value(a, r, b);
        pu[(size_t)a * PLANE + (size_t)r * NB + (size_t)b] = (uint16_t)proj_value(a, r, b);
      }
  for (int r = 0; r < NR; r++)
    for (int b = 0; b < NB; b++) {
      flat[r * NB + b] = flat_value(r, b);
      dark[r * NB + b] = dark_value(r, b);
    }
  check_layout(pf, CTR_DTYPE_FLOAT32, flat, dark, 0, NR, "float32, dark, all rows");
  check_layout(pu, CTR_DTYPE_UINT16, flat, dark, 0, NR, "uint16, dark, all rows");
  check_layout(pf, CTR_DTYPE_FLOAT32, flat, NULL, 0, NR, "float32, no dark");
  check_layout(pu, CTR_DTYPE_UINT16, flat, NULL, 0, NR, "uint16, no dark");
  check_layout(pf, CTR_DTYPE_FLOAT32, flat, dark, 1, 3, "float32, rows [1, 4)");
  check_layout(pu, CTR_DTYPE_UINT16, flat, NULL, 4, 1, "uint16, last row");
  check_layout(pu, CTR_DTYPE_UINT16, flat, dark, 2, 2, "uint16, rows [2, 4)");
  free(pf);
  free(pu);
}

/* Hand-computed values: half the flat is -log(0.5); the flat itself 0. */
static void test_known_values(void) {
  const float proj[4] = {50.0f, 100.0f, 30.0f, 10.0f}; /* 1 angle, 1 row, 4 bins */
  const float flat[4] = {100.0f, 100.0f, 110.0f, 10.0f};
  const float dark[4] = {0.0f, 0.0f, 10.0f, 0.0f};
  float sino[4] = {-1, -1, -1, -1};
  int64_t clamped = -1;
  CHECK_OK(ctr_flatfield_sinograms(proj, CTR_DTYPE_FLOAT32, 4, 1, 1, flat, dark, 0, 1, sino,
                                   &clamped));
  CHECK_NEAR(sino[0], log(2.0), 1e-7);
  CHECK(sino[1] == 0.0f);
  CHECK_NEAR(sino[2], log(5.0), 1e-6); /* (30 - 10) / (110 - 10) = 0.2 */
  CHECK(sino[3] == 0.0f);
  CHECK(clamped == 0);
}

static void test_clamping(void) {
  /* 2 angles x 2 rows x 3 bins, uint16. Row 0: bin 0 flat == dark (no
   * calibration: 0, not counted as clamped), bin 1
   * projection below the dark (negative ratio), bin 2 fine. Row 1: bin 0
   * projection == dark (ratio 0), bin 1 tiny positive ratio (< eps), bin 2
   * above the flat (ratio > 1, not clamped). */
  const uint16_t proj[12] = {500, 5, 60, 10, 11, 300,   /* angle 0 */
                             500, 5, 60, 10, 11, 300};  /* angle 1 */
  const float flat[6] = {10, 110, 110, 1e7f, 2e7f, 200};
  const float dark[6] = {10, 10, 10, 10, 10.9999f, 0};
  float sino[12];
  int64_t clamped = -1;
  CHECK_OK(ctr_flatfield_sinograms(proj, CTR_DTYPE_UINT16, 3, 2, 2, flat, dark, 0, 2, sino,
                                   &clamped));
  const float big = (float)-log(1e-6);
  /* sinogram 0 (row 0), angle 0 and 1 */
  for (int a = 0; a < 2; a++) {
    CHECK(sino[(0 * 2 + a) * 3 + 0] == 0.0f);
    CHECK_NEAR(sino[(0 * 2 + a) * 3 + 1], big, 1e-5);
    CHECK_NEAR(sino[(0 * 2 + a) * 3 + 2], log(2.0), 1e-6);
    CHECK_NEAR(sino[(1 * 2 + a) * 3 + 0], big, 1e-5);
    CHECK_NEAR(sino[(1 * 2 + a) * 3 + 1], big, 1e-5);
    CHECK_NEAR(sino[(1 * 2 + a) * 3 + 2], -log(1.5), 1e-6);
  }
  CHECK_MSG(clamped == 6, "clamped %lld, expected 6", (long long)clamped);
  for (int i = 0; i < 12; i++) CHECK(isfinite(sino[i]));
  /* The count is optional; the values are the same without it. */
  float again[12];
  CHECK_OK(ctr_flatfield_sinograms(proj, CTR_DTYPE_UINT16, 3, 2, 2, flat, dark, 0, 2, again, NULL));
  CHECK(memcmp(sino, again, sizeof sino) == 0);
  /* Only row 1: 4 clamped. */
  CHECK_OK(ctr_flatfield_sinograms(proj, CTR_DTYPE_UINT16, 3, 2, 2, flat, dark, 1, 1, again,
                                   &clamped));
  CHECK_MSG(clamped == 4, "clamped %lld, expected 4", (long long)clamped);
  CHECK(memcmp(again, sino + 6, 6 * sizeof(float)) == 0);
  /* A NaN in float projections is clamped and counted too. */
  const float pn[3] = {NAN, 50.0f, 50.0f};
  const float fn[3] = {100.0f, 100.0f, 100.0f};
  float sn[3];
  CHECK_OK(ctr_flatfield_sinograms(pn, CTR_DTYPE_FLOAT32, 3, 1, 1, fn, NULL, 0, 1, sn, &clamped));
  CHECK(clamped == 1);
  CHECK_NEAR(sn[0], big, 1e-5);
  CHECK_NEAR(sn[1], log(2.0), 1e-7);
}

/* Layout on a larger, odd-sized case with OpenMP: every value carries its
 * (angle, row, bin) so that a misplaced one is caught. */
static void test_transpose_large(void) {
  const int64_t nb = 131, nr = 37, na = 53, row0 = 5, ns = 29;
  float *proj = malloc(sizeof(float) * (size_t)(nb * nr * na));
  float *flat = malloc(sizeof(float) * (size_t)(nb * nr));
  float *sino = malloc(sizeof(float) * (size_t)(nb * na * ns));
  for (int64_t i = 0; i < nb * nr; i++) flat[i] = 1.0f;
  /* p = exp(-code) so -log(p) = code (within float rounding). */
  for (int64_t a = 0; a < na; a++)
    for (int64_t r = 0; r < nr; r++)
      for (int64_t b = 0; b < nb; b++)
        proj[(a * nr + r) * nb + b] = (float)exp(-(double)(a * 0.01 + r * 0.1 + b * 0.001));
  int64_t clamped = -1;
  CHECK_OK(ctr_flatfield_sinograms(proj, CTR_DTYPE_FLOAT32, nb, nr, na, flat, NULL, row0, ns, sino,
                                   &clamped));
  CHECK(clamped == 0);
  int bad = 0;
  for (int64_t s = 0; s < ns; s++)
    for (int64_t a = 0; a < na; a++)
      for (int64_t b = 0; b < nb; b++) {
        const double code = a * 0.01 + (row0 + s) * 0.1 + b * 0.001;
        if (fabs(sino[(s * na + a) * nb + b] - code) > 2e-6 * (1 + code)) bad++;
      }
  CHECK_MSG(bad == 0, "%d misplaced or wrong sinogram values", bad);
  free(proj);
  free(flat);
  free(sino);
}

static void test_average(void) {
  const uint16_t u[3 * 4] = {1, 2, 3, 65535, 2, 2, 4, 65535, 4, 2, 6, 65534};
  float out[4] = {-1, -1, -1, -1};
  CHECK_OK(ctr_flatfield_average(u, CTR_DTYPE_UINT16, 4, 3, out));
  CHECK(out[0] == (float)(7.0 / 3.0));
  CHECK(out[1] == 2.0f);
  CHECK(out[2] == 13.0f / 3.0f);
  CHECK(out[3] == (float)((65535.0 * 2 + 65534.0) / 3.0));
  const float f[2 * 3] = {1.5f, -2.0f, 1e6f, 2.5f, 4.0f, 1e6f + 1.0f};
  float fo[3];
  CHECK_OK(ctr_flatfield_average(f, CTR_DTYPE_FLOAT32, 3, 2, fo));
  CHECK(fo[0] == 2.0f);
  CHECK(fo[1] == 1.0f);
  CHECK(fo[2] == 1000000.5f);
  /* One image: a copy. */
  float one[6];
  CHECK_OK(ctr_flatfield_average(f, CTR_DTYPE_FLOAT32, 6, 1, one));
  CHECK(memcmp(one, f, sizeof one) == 0);

  /* More pixels than one block, odd count: each pixel's mean of k-dependent
   * values, exact in float. */
  const int64_t npix = 5000, n = 5;
  uint16_t *big = malloc(sizeof(uint16_t) * (size_t)(npix * n));
  float *avg = malloc(sizeof(float) * (size_t)npix);
  for (int64_t k = 0; k < n; k++)
    for (int64_t i = 0; i < npix; i++) big[k * npix + i] = (uint16_t)(i % 1000 + 10 * k);
  CHECK_OK(ctr_flatfield_average(big, CTR_DTYPE_UINT16, npix, n, avg));
  int bad = 0;
  for (int64_t i = 0; i < npix; i++)
    if (avg[i] != (float)(i % 1000 + 20)) bad++;
  CHECK_MSG(bad == 0, "%d wrong averages", bad);
  free(big);
  free(avg);
}

static void test_errors(void) {
  float p[6] = {1, 2, 3, 4, 5, 6}, f[6] = {9, 9, 9, 9, 9, 9}, s[6];
  int64_t c = 99;
  CHECK_FAILS(ctr_flatfield_sinograms(NULL, CTR_DTYPE_FLOAT32, 3, 2, 1, f, NULL, 0, 1, s, &c),
              CTR_E_INVALID_ARGUMENT, "proj is NULL");
  CHECK(c == 0);
  CHECK_FAILS(ctr_flatfield_sinograms(p, CTR_DTYPE_FLOAT32, 3, 2, 1, NULL, NULL, 0, 1, s, &c),
              CTR_E_INVALID_ARGUMENT, "flat is NULL");
  CHECK_FAILS(ctr_flatfield_sinograms(p, CTR_DTYPE_FLOAT32, 3, 2, 1, f, NULL, 0, 1, NULL, &c),
              CTR_E_INVALID_ARGUMENT, "sino is NULL");
  CHECK_FAILS(ctr_flatfield_sinograms(p, (ctr_dtype)7, 3, 2, 1, f, NULL, 0, 1, s, &c),
              CTR_E_INVALID_ARGUMENT, "expected float32 or uint16");
  CHECK_FAILS(ctr_flatfield_sinograms(p, CTR_DTYPE_FLOAT32, 0, 2, 1, f, NULL, 0, 1, s, &c),
              CTR_E_INVALID_ARGUMENT, "must be > 0");
  CHECK_FAILS(ctr_flatfield_sinograms(p, CTR_DTYPE_FLOAT32, 3, 2, -1, f, NULL, 0, 1, s, &c),
              CTR_E_INVALID_ARGUMENT, "must be > 0");
  CHECK_FAILS(ctr_flatfield_sinograms(p, CTR_DTYPE_FLOAT32, 3, 2, 1, f, NULL, 1, 2, s, &c),
              CTR_E_INVALID_ARGUMENT, "rows [1, 3)");
  CHECK_FAILS(ctr_flatfield_sinograms(p, CTR_DTYPE_FLOAT32, 3, 2, 1, f, NULL, -1, 1, s, &c),
              CTR_E_INVALID_ARGUMENT, "[0, 2)");
  CHECK_FAILS(ctr_flatfield_sinograms(p, CTR_DTYPE_FLOAT32, 3, 2, 1, f, NULL, 2, 1, s, &c),
              CTR_E_INVALID_ARGUMENT, "outside");
  CHECK_FAILS(ctr_flatfield_sinograms(p, CTR_DTYPE_FLOAT32, 3, 2, 1, f, NULL, 0, 0, s, &c),
              CTR_E_INVALID_ARGUMENT, "nslices must be >= 1");
  CHECK_FAILS(ctr_flatfield_sinograms(p, CTR_DTYPE_FLOAT32, INT64_MAX / 2, 4, 1, f, NULL, 0, 1, s,
                                      &c),
              CTR_E_INVALID_ARGUMENT, "do not fit");
  /* The whole range is fine. */
  CHECK_OK(ctr_flatfield_sinograms(p, CTR_DTYPE_FLOAT32, 3, 2, 1, f, NULL, 0, 2, s, &c));
  CHECK_NEAR(s[4], log(9.0 / 5.0), 1e-6);

  float o[3];
  CHECK_FAILS(ctr_flatfield_average(NULL, CTR_DTYPE_FLOAT32, 3, 2, o), CTR_E_INVALID_ARGUMENT,
              "images is NULL");
  CHECK_FAILS(ctr_flatfield_average(p, CTR_DTYPE_FLOAT32, 3, 2, NULL), CTR_E_INVALID_ARGUMENT,
              "out is NULL");
  CHECK_FAILS(ctr_flatfield_average(p, (ctr_dtype)0, 3, 2, o), CTR_E_INVALID_ARGUMENT,
              "expected float32 or uint16");
  CHECK_FAILS(ctr_flatfield_average(p, CTR_DTYPE_FLOAT32, 0, 2, o), CTR_E_INVALID_ARGUMENT,
              "npix 0");
  CHECK_FAILS(ctr_flatfield_average(p, CTR_DTYPE_FLOAT32, 3, 0, o), CTR_E_INVALID_ARGUMENT, "n 0");
  CHECK_FAILS(ctr_flatfield_average(p, CTR_DTYPE_FLOAT32, INT64_MAX / 2, 3, o),
              CTR_E_INVALID_ARGUMENT, "do not fit");
}

int main(void) {
  test_known_values();
  test_values();
  test_clamping();
  test_transpose_large();
  test_average();
  test_errors();
  return th_finish("test_flatfield");
}
