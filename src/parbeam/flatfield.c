/* Flat-field correction, -log and transposition of projections into
 * sinograms (ctr_flatfield_sinograms), and averaging of flat / dark images
 * (ctr_flatfield_average). CPU, OpenMP. */
#include "core/internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Smallest transmission kept: -log(eps) ~ 13.8 bounds dead pixels. */
#define CTR__FLAT_EPS 1e-6

/* Pixels per block in ctr_flatfield_average: the double accumulators of one
 * block stay in L1 while every image's slice of it streams through. */
#define CTR__AVG_BLOCK 2048

static ctr_status check_dtype(const char *fn, const char *what, ctr_dtype dtype) {
  if (dtype != CTR_DTYPE_FLOAT32 && dtype != CTR_DTYPE_UINT16)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %s has dtype %d (%s): expected float32 or uint16", fn,
             what, (int)dtype, ctr_dtype_name(dtype));
  return CTR_OK;
}

/* a * b * c elements of `es` bytes fit in size_t and int64_t. */
static int fits(int64_t a, int64_t b, int64_t c, size_t es) {
  const uint64_t limit = (uint64_t)INT64_MAX < (uint64_t)SIZE_MAX ? (uint64_t)INT64_MAX
                                                                   : (uint64_t)SIZE_MAX;
  uint64_t n = (uint64_t)a;
  if ((uint64_t)b > limit / n) return 0;
  n *= (uint64_t)b;
  if ((uint64_t)c > limit / n) return 0;
  n *= (uint64_t)c;
  return n <= limit / es;
}

/* A flat / dark pair that calibrates: both finite, flat > dark. */
static inline int flat_ok(double f, double d) { return f - d > 0.0 && isfinite(f) && isfinite(d); }

int64_t ctr__flat_bad_pixels(const float *flat, const float *dark, int64_t n) {
  int64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
  for (int64_t i = 0; i < n; i++) bad += !flat_ok(flat[i], dark ? dark[i] : 0.0);
  return bad;
}

/* -log of the flat-fielded value of one pixel: 0 where flat and dark do not
 * calibrate (ctr__flat_bad_pixels counts those); *clamped counts pixels
 * whose ratio is below eps (or NaN). */
static inline float flat_log(double p, double f, double d, int64_t *clamped) {
  if (!flat_ok(f, d)) return 0.0f;
  double ratio = (p - d) / (f - d);
  if (!(ratio >= CTR__FLAT_EPS)) {
    ratio = CTR__FLAT_EPS;
    (*clamped)++;
  }
  return (float)-log(ratio);
}

ctr_status ctr_flatfield_sinograms(const void *proj, ctr_dtype dtype, int64_t nbins,
                                   int64_t nrows, int64_t nangles, const float *flat,
                                   const float *dark, int64_t row0, int64_t nslices,
                                   float *sino, int64_t *clamped) {
  static const char *fn = "ctr_flatfield_sinograms";
  if (clamped) *clamped = 0;
  if (!proj) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: proj is NULL", fn);
  if (!flat) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: flat is NULL", fn);
  if (!sino) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: sino is NULL", fn);
  CTR_CHECK(check_dtype(fn, "proj", dtype));
  if (nbins <= 0 || nrows <= 0 || nangles <= 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "%s: nbins, nrows and nangles must be > 0, got %lld x %lld x %lld", fn,
             (long long)nbins, (long long)nrows, (long long)nangles);
  if (!fits(nbins, nrows, nangles, ctr_dtype_size(dtype)))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %lld x %lld x %lld projections do not fit in memory "
             "addresses", fn, (long long)nbins, (long long)nrows, (long long)nangles);
  if (nslices <= 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: nslices must be >= 1, got %lld", fn,
             (long long)nslices);
  if (row0 < 0 || row0 >= nrows || nslices > nrows - row0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "%s: rows [%lld, %lld) (row0 %lld, nslices %lld) are outside the projections' "
             "rows [0, %lld)", fn, (long long)row0, (long long)row0 + (long long)nslices,
             (long long)row0, (long long)nslices, (long long)nrows);
  if (!fits(nbins, nslices, nangles, sizeof(float)))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %lld x %lld x %lld sinograms do not fit in memory "
             "addresses", fn, (long long)nbins, (long long)nangles, (long long)nslices);

  const size_t nb = (size_t)nbins, plane = (size_t)nbins * (size_t)nrows;
  const size_t r0 = (size_t)row0 * nb;
  int64_t total = 0;
  /* One projection per iteration: its rows [row0, row0 + nslices) are read
   * in order (one contiguous run) and each lands in row a of its sinogram. A
   * few rows (a live preview's: 3 x 32 x 2048 pixels, well under a millisecond)
   * stay on the caller's thread: a team's fork costs more, and much more where
   * other threads hold cores (a team waits for its slowest thread). */
  const int team = (double)nangles * (double)nslices * (double)nbins >= (double)(1 << 20);
#pragma omp parallel for schedule(static) reduction(+ : total) if (team)
  for (int64_t a = 0; a < nangles; a++) {
    int64_t count = 0;
    for (int64_t s = 0; s < nslices; s++) {
      const size_t in = (size_t)a * plane + r0 + (size_t)s * nb;
      const float *f = flat + r0 + (size_t)s * nb;
      const float *d = dark ? dark + r0 + (size_t)s * nb : NULL;
      float *out = sino + ((size_t)s * (size_t)nangles + (size_t)a) * nb;
      if (dtype == CTR_DTYPE_UINT16) {
        const uint16_t *p = (const uint16_t *)proj + in;
        if (d)
          for (size_t b = 0; b < nb; b++) out[b] = flat_log(p[b], f[b], d[b], &count);
        else
          for (size_t b = 0; b < nb; b++) out[b] = flat_log(p[b], f[b], 0.0, &count);
      } else {
        const float *p = (const float *)proj + in;
        if (d)
          for (size_t b = 0; b < nb; b++) out[b] = flat_log(p[b], f[b], d[b], &count);
        else
          for (size_t b = 0; b < nb; b++) out[b] = flat_log(p[b], f[b], 0.0, &count);
      }
    }
    total += count;
  }
  if (clamped) *clamped = total;
  return CTR_OK;
}

ctr_status ctr_flatfield_average(const void *images, ctr_dtype dtype, int64_t npix, int64_t n,
                              float *out) {
  static const char *fn = "ctr_flatfield_average";
  if (!images) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: images is NULL", fn);
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: out is NULL", fn);
  CTR_CHECK(check_dtype(fn, "images", dtype));
  if (npix <= 0 || n <= 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: npix and n must be > 0, got npix %lld, n %lld", fn,
             (long long)npix, (long long)n);
  if (!fits(npix, n, 1, ctr_dtype_size(dtype)))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %lld images of %lld pixels do not fit in memory "
             "addresses", fn, (long long)n, (long long)npix);

  const int64_t nblocks = (npix + CTR__AVG_BLOCK - 1) / CTR__AVG_BLOCK;
  const double dn = (double)n;
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < nblocks; blk++) {
    double acc[CTR__AVG_BLOCK];
    const size_t i0 = (size_t)blk * CTR__AVG_BLOCK;
    const size_t len = (size_t)(npix - (int64_t)i0) < CTR__AVG_BLOCK
                           ? (size_t)(npix - (int64_t)i0)
                           : (size_t)CTR__AVG_BLOCK;
    memset(acc, 0, len * sizeof acc[0]);
    for (int64_t k = 0; k < n; k++) {
      const size_t off = (size_t)k * (size_t)npix + i0;
      if (dtype == CTR_DTYPE_UINT16) {
        const uint16_t *p = (const uint16_t *)images + off;
        for (size_t i = 0; i < len; i++) acc[i] += p[i];
      } else {
        const float *p = (const float *)images + off;
        for (size_t i = 0; i < len; i++) acc[i] += p[i];
      }
    }
    for (size_t i = 0; i < len; i++) out[i0 + i] = (float)(acc[i] / dn);
  }
  return CTR_OK;
}
