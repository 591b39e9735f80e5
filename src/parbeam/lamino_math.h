/* Inline maths of the laminographic backprojection (a tilted rotation
 * axis, docs/geometry.md "Laminography"), shared by the CPU backprojector,
 * its double-precision reference and the GPU's (C99 and CUDA C), so that
 * the CPU and the GPU give the same bits.
 *
 * For voxel (i, j, k) and a view's constants (ctr__lamino_views) the bin and
 * the row are
 *   t = u3 + j u1 + i u0,   r = v3 + k v2 + j v1 + i v0     (double, this order)
 * and the view adds w times the filtered views at (t, r): linear, the
 * bilinear blend of the four neighbours (each 0 off the detector); nearest,
 * the value at (floor(t + 0.5), floor(r + 0.5)). Every double step is one
 * rounding (CTR__DMUL / CTR__DADD: never fused into an FMA, on either side),
 * so both backends see the same t, r and sample; the float backprojectors
 * then accumulate each voxel's (float) terms over the views in view order. */
#ifndef CTR_PARBEAM_LAMINO_MATH_H
#define CTR_PARBEAM_LAMINO_MATH_H

#include "core/projmath.h"

#include <math.h>
#include <stdint.h>

/* Per view of a tilted geometry, for slices of nz: the bin t = u . (i, j,
 * k, 1) and the row r = v . (i, j, k, 1) of voxel (i, j, k) (slice pixel
 * indices), and the angle's backprojection weight w (radians / pixel_size). */
typedef struct ctr__lamino_view {
  double u[4], v[4], w;
} ctr__lamino_view;

/* The bin and row of voxel (i, j, k) in view w. */
CTR_HD void ctr__lamino_position(const ctr__lamino_view *w, int64_t i, int64_t j, int64_t k,
                                 double *t, double *r) {
  const double di = (double)i, dj = (double)j, dk = (double)k;
  *t = CTR__DADD(CTR__DADD(w->u[3], CTR__DMUL(dj, w->u[1])), CTR__DMUL(di, w->u[0]));
  *r = CTR__DADD(CTR__DADD(CTR__DADD(w->v[3], CTR__DMUL(dk, w->v[2])), CTR__DMUL(dj, w->v[1])),
                 CTR__DMUL(di, w->v[0]));
}

/* The filtered views' value at (t, r) of view a (0 off the detector):
 * views nb bins x na angles x nr rows, bins fastest. nearest: the nearest
 * sample; else bilinear. */
CTR_HD double ctr__lamino_sample(const float *sino, int64_t nb, int64_t na, int64_t nr,
                                 int64_t a, double t, double r, int nearest) {
  if (nearest) {
    const double bt = floor(CTR__DADD(t, 0.5)), br = floor(CTR__DADD(r, 0.5));
    if (bt < 0.0 || bt >= (double)nb || br < 0.0 || br >= (double)nr) return 0.0;
    return sino[((int64_t)br * na + a) * nb + (int64_t)bt];
  }
  const double t0 = floor(t), r0 = floor(r);
  const double ft = CTR__DADD(t, -t0), fr = CTR__DADD(r, -r0);
  if (t0 < -1.0 || t0 >= (double)nb || r0 < -1.0 || r0 >= (double)nr) return 0.0;
  const int64_t it = (int64_t)t0, ir = (int64_t)r0;
  double v = 0.0;
  for (int dr = 0; dr < 2; dr++) {
    const int64_t row = ir + dr;
    if (row < 0 || row >= nr) continue;
    const float *q = sino + (row * na + a) * nb;
    const double wr = dr ? fr : CTR__DADD(1.0, -fr);
    if (it >= 0) v = CTR__DADD(v, CTR__DMUL(CTR__DMUL(wr, CTR__DADD(1.0, -ft)), (double)q[it]));
    if (it + 1 < nb) v = CTR__DADD(v, CTR__DMUL(CTR__DMUL(wr, ft), (double)q[it + 1]));
  }
  return v;
}

/* View a's term of voxel (i, j, k): w times the sample at its position. */
CTR_HD double ctr__lamino_term(const ctr__lamino_view *w, const float *sino, int64_t nb, int64_t na,
                               int64_t nr, int64_t a, int64_t i, int64_t j, int64_t k,
                               int nearest) {
  double t, r;
  ctr__lamino_position(w, i, j, k, &t, &r);
  return CTR__DMUL(w->w, ctr__lamino_sample(sino, nb, na, nr, a, t, r, nearest));
}

#endif
