/* Helical FDK's redundancy window as inline maths shared by the CPU
 * backprojector, the CUDA general kernel and the double-precision
 * references (C99 and CUDA C); docs/geometry.md, "Helical orbits".
 *
 * View i contributes to a voxel at height z with the weight w(d) of the
 * distance d = beta_i - beta_c(z) between its azimuth and the azimuth at
 * which the source passes z. On a helix of pitch p the source climbs p per
 * 2 pi, so d = 2 pi (src_z[i] - z) / p: the window needs the view's source
 * height only. With smoothing width s (0 <= s < pi):
 *   w(d) = 1                                        |d| <= pi - s
 *        = cos^2(pi (|d| - (pi - s)) / (4 s))       pi - s < |d| < pi + s
 *        = 0                                        |d| >= pi + s
 * For d in the upper transition, |d - 2 pi| - (pi - s) = 2 s - (|d| - (pi -
 * s)), so the two cosines' arguments sum to pi / 2 and w(d) + w(d - 2 pi) =
 * 1 for every d: a ray's measurements one turn apart sum to one (Wang et
 * al. 1993's generalised Feldkamp with a smooth window). */
#ifndef CTR_HELIX_WEIGHT_MATH_H
#define CTR_HELIX_WEIGHT_MATH_H

#include <math.h>

#include "core/projmath.h"

#define CTR__HELIX_PI 3.14159265358979323846

/* w(d) in double: the CPU's per-row weights and the references. */
CTR_HD double ctr__helix_window(double d, double s) {
  const double a = fabs(d);
  if (a <= CTR__HELIX_PI - s) return 1.0;
  if (a >= CTR__HELIX_PI + s) return 0.0;
  const double c = cos(0.25 * CTR__HELIX_PI * (a - (CTR__HELIX_PI - s)) / s);
  return c * c;
}

/* The same in float for the GPU's per-update weights (cosf; the transition's
 * argument is below pi / 2, where float's cosine is good to a few ulp). */
CTR_HD float ctr__helix_window_f(float d, float s) {
  const float pi = 3.14159265358979f, a = fabsf(d);
  if (a <= pi - s) return 1.0f;
  if (a >= pi + s) return 0.0f;
  const float c = cosf(0.25f * pi * (a - (pi - s)) / s);
  return c * c;
}

/* The window's argument of a view whose source is at height src_z for a
 * voxel at height z, kz = 2 pi / pitch (radians per mm). */
CTR_HD double ctr__helix_arg(double src_z, double z, double kz) { return kz * (src_z - z); }

#endif
