/* FDK pre-weights as inline maths shared by the CPU filter and the CUDA
 * filter kernels (C99 and CUDA C). */
#ifndef CTR_FDK_WEIGHT_MATH_H
#define CTR_FDK_WEIGHT_MATH_H

#include <math.h>

#include "core/projmath.h"

#define CTR__PI_D 3.14159265358979323846

/* Parker weight for a view at azimuth beta (radians from the scan start) and a
 * ray at fan angle gamma (radians, signed so that the conjugate ray is at
 * beta + pi - 2 gamma), for a scan of `range` radians (generalised overscan:
 * delta = (range - pi) / 2). */
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

/* Per-view parameters of the pre-weights. */
typedef struct ctr__fdk_view_params {
  double u0, v0, fu, fv; /* principal point and distance in pixels */
  double beta;           /* azimuth from the scan start, middle of the interval */
  double range;          /* scan range (radians) */
  int u_sign;            /* +1 when u runs along the source's motion */
  int parker;            /* apply Parker weights */
  float scale;           /* angular weight x redundancy / isocentre pitch */
} ctr__fdk_view_params;

/* Cosine x Parker pre-weight of pixel (iu, iv). */
CTR_HD double ctr__fdk_pixel_weight(const ctr__fdk_view_params *p, double iu, double iv) {
  const double tu = (iu - p->u0) / p->fu, tv = (iv - p->v0) / p->fv;
  double w = 1.0 / sqrt(1.0 + tu * tu + tv * tv);
  if (p->parker) w *= ctr__parker_weight(p->beta, p->u_sign * atan(tu), p->range);
  return w;
}

#endif
