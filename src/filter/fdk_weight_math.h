/* FDK pre-weights as inline maths shared by the CPU filter and the CUDA
 * filter kernels (C99 and CUDA C). */
#ifndef CTR_FDK_WEIGHT_MATH_H
#define CTR_FDK_WEIGHT_MATH_H

#include <math.h>

#include "core/cylmath.h"
#include "core/projmath.h"

#define CTR__PI_D 3.14159265358979323846

/* Parker weight for a view at azimuth beta (radians from the scan start) and a
 * ray at fan angle gamma (radians, signed so that the conjugate ray is at
 * beta + pi - 2 gamma), for a scan of `range` radians. Parker 1982's formula
 * with his half fan angle replaced by the overscan delta = (range - pi) / 2:
 * the ramps up (beta < 2 (delta + gamma)) and down (beta > pi + 2 gamma) are
 * sin^2 and cos^2 of the same argument at conjugate rays, so every ray's
 * measurements sum to one for any delta >= the half fan angle, up to a full
 * turn (delta = pi / 2); docs/geometry.md, "Short scans". */
CTR_HD double ctr__parker_weight(double beta, double gamma, double range) {
  const double delta = 0.5 * (range - CTR__PI_D);
  if (beta < 0.0 || beta > CTR__PI_D + 2.0 * delta) return 0.0;
  if (beta < 2.0 * (delta + gamma)) {
    const double s = sin(0.25 * CTR__PI_D * beta / (delta + gamma));
    return s * s;
  }
  if (beta > CTR__PI_D + 2.0 * gamma) {
    const double s = sin(0.25 * CTR__PI_D * (CTR__PI_D + 2.0 * delta - beta) / (delta - gamma));
    return s * s;
  }
  return 1.0;
}

/* Redundancy weight of an offset (half-fan) detector on a full turn (Wang
 * 2002): x = the fan angle of the ray, signed positive towards the detector's
 * wide side, and x_o the half-width of the overlap's transition (radians,
 * > 0). The conjugate ray lies at -x (beta + pi - 2 gamma flips the fan
 * angle), and sin^2(pi/4 (1 + t)) + sin^2(pi/4 (1 - t)) = 1, so each ray's
 * two measurements sum to one; the derivative (pi/4) sin(pi/2 (1 + t)) / x_o
 * vanishes at t = +-1, so the weight is C1 where it meets 0 and 1. */
CTR_HD double ctr__offset_weight(double x, double x_o) {
  if (x <= -x_o) return 0.0;
  if (x >= x_o) return 1.0;
  const double s = sin(0.25 * CTR__PI_D * (1.0 + x / x_o));
  return s * s;
}

/* Per-view parameters of the pre-weights. */
typedef struct ctr__fdk_view_params {
  double u0, v0, fu, fv; /* principal point and distance in pixels */
  double beta;           /* azimuth from the scan start, middle of the interval */
  double range;          /* scan range (radians) */
  int u_sign;            /* +1 when u runs along the source's motion */
  int parker;            /* apply Parker weights */
  int offset_side;       /* offset detector: +1 / -1 when its wide side is at u > u0 /
                            u < u0 (Wang 2002 weights), 0: none */
  double offset_gamma;   /* half-width of the offset weights' transition (radians) */
  int curved;            /* cylindrical detector: the fan angle is (iu - u0) / fu and the
                            cosine weight cos(gamma) / sqrt(1 + tv^2) (core/cylmath.h) */
  float scale;           /* angular weight x redundancy / isocentre pitch */
} ctr__fdk_view_params;

/* Cosine x Parker x offset pre-weight of pixel (iu, iv). */
CTR_HD double ctr__fdk_pixel_weight(const ctr__fdk_view_params *p, double iu, double iv) {
  const double tu = (iu - p->u0) / p->fu, tv = (iv - p->v0) / p->fv;
  /* the fan angle: tu on a cylindrical detector, atan(tu) on a flat one */
  const double gamma = p->curved ? tu : atan(tu);
  double w = p->curved ? ctr__cyl_fdk_weight(gamma, tv) : 1.0 / sqrt(1.0 + tu * tu + tv * tv);
  if (p->parker) w *= ctr__parker_weight(p->beta, p->u_sign * gamma, p->range);
  /* fabs(fu): the side is counted in columns, whatever the matrix's sign. */
  if (p->offset_side) {
    const double x = p->offset_side * (iu - p->u0) / fabs(p->fu);
    w *= ctr__offset_weight(p->curved ? x : atan(x), p->offset_gamma);
  }
  return w;
}

#endif
