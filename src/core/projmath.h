/* Inline projection and interpolation maths shared by the CPU and CUDA
 * backprojectors and the double-precision reference, so every backend
 * evaluates the same formulas. C99 and CUDA C. */
#ifndef CTR_PROJMATH_H
#define CTR_PROJMATH_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define CTR_HD static __host__ __device__ __forceinline__
#else
#define CTR_HD static inline
#endif

/* Floating-point operations that are never contracted into FMAs, so that the
 * CPU (files built with -ffp-contract=off) and the GPU (the _rn intrinsics,
 * which nvcc never fuses) round every step alike: for code that must give
 * the same bits on every backend (iterative/itmath.h, parbeam/lamino_math.h). */
#if defined(__CUDA_ARCH__)
#define CTR__FMUL(a, b) __fmul_rn((a), (b))
#define CTR__FADD(a, b) __fadd_rn((a), (b))
#define CTR__DMUL(a, b) __dmul_rn((a), (b))
#define CTR__DADD(a, b) __dadd_rn((a), (b))
#define CTR__DDIV(a, b) __ddiv_rn((a), (b))
#define CTR__DSQRT(a) __dsqrt_rn(a)
#define CTR__FDIV(a, b) __fdiv_rn((a), (b))
#define CTR__FSQRT(a) __fsqrt_rn(a)
#else
#define CTR__FMUL(a, b) ((a) * (b))
#define CTR__FADD(a, b) ((a) + (b))
#define CTR__DMUL(a, b) ((a) * (b))
#define CTR__DADD(a, b) ((a) + (b))
#define CTR__DDIV(a, b) ((a) / (b))
#define CTR__DSQRT(a) sqrt(a)
#define CTR__FDIV(a, b) ((a) / (b))
#define CTR__FSQRT(a) sqrtf(a)
#endif

/* Largest admissible magnitude of an input value (projections, sinograms,
 * histo-images): the ramp filter's FFT adds up to a padded row's worth of
 * values (< 2^17) in one frequency bin and the backprojection adds up to
 * ~1e5 weighted views, a gain below 1e14, so values up to 1e24 stay finite
 * in float (FLT_MAX ~ 3.4e38) with room to spare. Larger or non-finite
 * values fall under the data policy (docs/architecture.md: counted, replaced
 * by 0 and reported; an error when strict). */
#define CTR__VALUE_LIMIT 1.0e24f

/* 1 if x is finite and |x| <= CTR__VALUE_LIMIT (NaN compares false). */
CTR_HD int ctr__value_ok(float x) { return fabsf(x) <= CTR__VALUE_LIMIT; }

/* Border of zeros around a padded projection: one pixel before, two after, so
 * that after clamping u to [-1, nu] both bilinear neighbours exist and a
 * sample outside the detector reads exactly 0. */
#define CTR_PAD_LO 1
#define CTR_PAD_HI 2

/* Padded row length and image size for a detector. */
CTR_HD int ctr__padded_pitch(int64_t nu) { return (int)(nu + CTR_PAD_LO + CTR_PAD_HI); }
CTR_HD int64_t ctr__padded_size(int64_t nu, int64_t nv) {
  return (int64_t)ctr__padded_pitch(nu) * (nv + CTR_PAD_LO + CTR_PAD_HI);
}
/* Offset of pixel (0, 0) inside a padded image. */
CTR_HD int64_t ctr__padded_origin(int64_t nu) {
  return (int64_t)CTR_PAD_LO * ctr__padded_pitch(nu) + CTR_PAD_LO;
}

/* The general kernel's padded image of cells (src/conebeam/cuda/bp_general.cuh):
 * cells g in [-2, nu], h in [-2, nv], so rows of at least
 * CTR__BPG_MIN_PITCH(nu) cells (the pitch is chosen among the next
 * CTR__BPG_PITCH_SPAN lengths), CTR__BPG_ROWS(nv) rows, cell (0, 0)
 * CTR__BPG_ORIGIN(pitch) cells after the start of the view. */
#define CTR__BPG_LO 2 /* padding cells before column 0 and row 0 */
#define CTR__BPG_MIN_PITCH(nu) ((nu) + CTR__BPG_LO + 1)
#define CTR__BPG_PITCH_SPAN 64
#define CTR__BPG_ROWS(nv) ((nv) + CTR__BPG_LO + 1)
#define CTR__BPG_ORIGIN(pitch) ((long long)CTR__BPG_LO * (pitch) + CTR__BPG_LO)

/* Clamps (u, v) to [-1, nu] x [row0 - 1, row0 + nrows], returns the index
 * of the top-left neighbour in a padded image of rows [row0, row0 + nrows)
 * of the detector, of row length `pitch` (relative to its pixel (0, row0)),
 * and leaves the fractional offsets in *u, *v. The fractions and weights do
 * not depend on the window: a sample inside it is the whole detector's. */
CTR_HD int ctr__bilinear_setup_rows(int pitch, int nu, int row0, int nrows, float *u, float *v) {
  /* One comparison per statement so compilers if-convert to min/max. */
  float x = *u > -1.0f ? *u : -1.0f;
  x = x < (float)nu ? x : (float)nu;
  const float lo = (float)(row0 - 1), hi = (float)(row0 + nrows);
  float y = *v > lo ? *v : lo;
  y = y < hi ? y : hi;
  /* x, y >= -1, so truncation of x + 1 is floor(x) + 1 (no floorf call). */
  const int iu = (int)(x + 1.0f) - 1, iv = (int)(y + 1.0f) - 1;
  *u = x - (float)iu;
  *v = y - (float)iv;
  return (iv - row0) * pitch + iu;
}

/* The whole detector: clamps (u, v) to [-1, nu] x [-1, nv], returns the
 * index of the top-left neighbour relative to pixel (0, 0). */
CTR_HD int ctr__bilinear_setup(int pitch, int nu, int nv, float *u, float *v) {
  return ctr__bilinear_setup_rows(pitch, nu, 0, nv, u, v);
}

/* ctr__bilinear_setup with positions in double: the fractional offsets keep
 * full precision at large pixel indices (a float index near 1000 is only
 * good to 6e-5 pixel), then go to float for the blend. */
CTR_HD int ctr__bilinear_setup_f64(int pitch, int nu, int nv, double u, double v, float *fu,
                                   float *fv) {
  u = u > -1.0 ? u : -1.0;
  u = u < (double)nu ? u : (double)nu;
  v = v > -1.0 ? v : -1.0;
  v = v < (double)nv ? v : (double)nv;
  const int iu = (int)(u + 1.0) - 1, iv = (int)(v + 1.0) - 1;
  *fu = (float)(u - (double)iu);
  *fv = (float)(v - (double)iv);
  return iv * pitch + iu;
}

/* ctr__bilinear_setup for a position given as an integer anchor plus a small
 * float offset (iu0 + fu, iv0 + fv): the fractions come from the offset
 * alone, so they are as precise as a float near zero, whatever the anchor. */
CTR_HD int ctr__bilinear_setup_split(int pitch, int nu, int nv, int iu0, float fu, int iv0,
                                     float fv, float *ou, float *ov) {
  const float lu = (float)(-1 - iu0), hu = (float)(nu - iu0); /* [-1, nu] in offsets */
  const float lv = (float)(-1 - iv0), hv = (float)(nv - iv0);
  fu = fu > lu ? fu : lu;
  fu = fu < hu ? fu : hu;
  fv = fv > lv ? fv : lv;
  fv = fv < hv ? fv : hv;
  const float gu = floorf(fu), gv = floorf(fv);
  *ou = fu - gu;
  *ov = fv - gv;
  return (iv0 + (int)gv) * pitch + iu0 + (int)gu;
}

/* Bilinear blend of the four neighbours with fractional offsets (fu, fv). */
CTR_HD float ctr__lerp2(float q00, float q01, float q10, float q11, float fu, float fv) {
  const float top = q00 + fu * (q01 - q00);
  const float bot = q10 + fu * (q11 - q10);
  return top + fv * (bot - top);
}

/* Bilinear sample of a padded image. `base` points at pixel (0, 0) inside the
 * padding, `pitch` is the padded row length; (u, v) are pixel indices with
 * centres at integers. The padded image holds fewer than 2^31 pixels. Zero
 * further than one pixel outside the detector, like ctr__bilinear_zero_f64. */
CTR_HD float ctr__bilinear_padded_rows(const float *base, int pitch, int nu, int row0,
                                       int nrows, float u, float v) {
  /* Indexed loads (not pointer arithmetic) let compilers emit gathers. */
  const int i = ctr__bilinear_setup_rows(pitch, nu, row0, nrows, &u, &v);
  return ctr__lerp2(base[i], base[i + 1], base[i + pitch], base[i + pitch + 1], u, v);
}

CTR_HD float ctr__bilinear_padded(const float *base, int pitch, int nu, int nv, float u,
                                  float v) {
  return ctr__bilinear_padded_rows(base, pitch, nu, 0, nv, u, v);
}

/* Reference bilinear sample in double of an unpadded float image: pixels
 * outside [0, nu) x [0, nv) count as 0. */
CTR_HD double ctr__bilinear_zero_f64(const float *img, int64_t nu, int64_t nv, double u,
                                     double v) {
  if (!(u > -1.0 && u < (double)nu && v > -1.0 && v < (double)nv)) return 0.0;
  const double fu0 = u + 1.0, fv0 = v + 1.0;
  const int64_t iu = (int64_t)fu0 - 1, iv = (int64_t)fv0 - 1;
  const double fu = u - (double)iu, fv = v - (double)iv;
  double q[4] = {0, 0, 0, 0};
  for (int k = 0; k < 4; k++) {
    const int64_t x = iu + (k & 1), y = iv + (k >> 1);
    if (x >= 0 && x < nu && y >= 0 && y < nv) q[k] = img[y * nu + x];
  }
  const double top = q[0] + fu * (q[1] - q[0]);
  const double bot = q[2] + fu * (q[3] - q[2]);
  return top + fv * (bot - top);
}

#endif
