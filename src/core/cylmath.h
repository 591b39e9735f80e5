/* Inline maps of a cylindrical (curved) detector on a circular or helical orbit, shared
 * by the CPU and CUDA backprojectors, the double-precision reference, the
 * FDK weights and the exact phantom projections, so every backend evaluates
 * the same formulas (docs/geometry.md, "Curved (cylindrical) detectors").
 * C99 and CUDA C.
 *
 * A view at source azimuth t (source at (d cos t, d sin t, zs): zs = 0 on a
 * circular orbit, the view's source height on a helix) has columns on
 * an arc of radius sdd about the vertical line through the source, equally
 * spaced in the fan angle gamma (fu = sdd / du columns per radian), rows
 * along z (fv = sdd / dv rows per mm of height at distance 1). For a point
 * (x, y, z):
 *   s = d - x cos t - y sin t        depth along the principal ray
 *   l = -x sin t + y cos t           lateral offset, along the flat u axis
 *   gamma = atan2(l, s),  r = hypot(s, l)
 *   u = u0 + fu gamma,  v = v0 + fv (z - zs) / r,  FDK weight (d / r)^2. */
#ifndef CTR_CYLMATH_H
#define CTR_CYLMATH_H

#include "core/projmath.h"

/* One view of a cylindrical detector in pixel units: cos t, sin t, the
 * source-to-axis distance d (mm), the principal point (u0, v0), fu, fv
 * (sdd / du, sdd / dv) and the source's height zs (mm). */
typedef struct ctr__cyl_view {
  double ct, st, d;
  double u0, fu, v0, fv;
  double zs;
} ctr__cyl_view;

/* The fan angle gamma (radians) and the horizontal distance r (mm) from the
 * source of the column through (x, y): constant along z. */
CTR_HD void ctr__cyl_column(double ct, double st, double d, double x, double y, double *gamma,
                            double *r) {
  const double s = d - x * ct - y * st, l = -x * st + y * ct;
  *gamma = atan2(l, s);
  *r = sqrt(s * s + l * l);
}

/* Pixel position (u, v) and FDK distance weight (d / r)^2 of a point. */
CTR_HD void ctr__cyl_project(const ctr__cyl_view *p, double x, double y, double z, double *u,
                             double *v, double *w) {
  double gamma, r;
  ctr__cyl_column(p->ct, p->st, p->d, x, y, &gamma, &r);
  *u = p->u0 + p->fu * gamma;
  *v = p->v0 + p->fv * (z - p->zs) / r;
  *w = (p->d / r) * (p->d / r);
}

/* The horizontal unit direction from the source at fan angle gamma (cos
 * and sin given): the principal ray -(cos t, sin t) turned by gamma towards
 * the u axis (-sin t, cos t). */
CTR_HD void ctr__cyl_turn(const ctr__cyl_view *p, double cg, double sg, double h[2]) {
  h[0] = CTR__DADD(-CTR__DMUL(cg, p->ct), -CTR__DMUL(sg, p->st));
  h[1] = CTR__DADD(-CTR__DMUL(cg, p->st), CTR__DMUL(sg, p->ct));
}

/* The direction from the source to the centre of pixel (u, v), scaled so
 * that its horizontal part has unit length: the pixel lies at
 * source + sdd * dir. */
CTR_HD void ctr__cyl_ray(const ctr__cyl_view *p, double u, double v, double dir[3]) {
  const double g = (u - p->u0) / p->fu;
  ctr__cyl_turn(p, cos(g), sin(g), dir);
  dir[2] = (v - p->v0) / p->fv;
}

/* cos and sin of a fan angle |g| <= pi / 2 from their Taylor series to
 * degree 26 (truncation below 1e-21), Horner in g^2 with operations that
 * are never contracted: the same bits on the host and the device, which
 * the libraries' cos and sin do not promise. The iterative projector's rays
 * use it (iterative/itmath.h). */
CTR_HD void ctr__cyl_cossin(double g, double *c, double *s) {
  const double g2 = CTR__DMUL(g, g);
  double pc = 1.0, ps = 1.0;
  for (int k = 13; k >= 1; k--) {
    /* cos: 1 - g2 / (2k-1)(2k) (1 - ...); sin: 1 - g2 / (2k)(2k+1) (1 - ...) */
    pc = CTR__DADD(1.0, -CTR__DMUL(CTR__DDIV(g2, (double)((2 * k - 1) * (2 * k))), pc));
    ps = CTR__DADD(1.0, -CTR__DMUL(CTR__DDIV(g2, (double)((2 * k) * (2 * k + 1))), ps));
  }
  *c = pc;
  *s = CTR__DMUL(g, ps);
}

/* Float forms for the fast backprojectors. From a voxel column's depth s and
 * lateral offset l (mm): its column u and 1 / r. */
CTR_HD void ctr__cyl_map_f(float s, float l, float u0, float fu, float *u, float *ir) {
  *ir = 1.0f / sqrtf(s * s + l * l);
  *u = u0 + fu * atan2f(l, s);
}

/* Per voxel column (x, y): u, the scale of v's z term (fv / r) and the
 * weight (d / r)^2. */
CTR_HD void ctr__cyl_column_f(float ct, float st, float d, float u0, float fu, float fv, float x,
                              float y, float *u, float *vz, float *w) {
  float ir;
  ctr__cyl_map_f(d - x * ct - y * st, -x * st + y * ct, u0, fu, u, &ir);
  *vz = fv * ir;
  *w = (d * ir) * (d * ir);
}

/* FDK pre-weight of a cylindrical detector's pixel (fan angle gamma, height
 * ratio tv = v_mm / sdd): the equiangular fan's cos(gamma) times the cone's
 * sdd / sqrt(sdd^2 + v_mm^2) (Kak & Slaney 1988, Sec. 3.4.2; Feldkamp et al.
 * 1984 for the cone factor). */
CTR_HD double ctr__cyl_fdk_weight(double gamma, double tv) {
  return cos(gamma) / sqrt(1.0 + tv * tv);
}

#endif
