/* Inline maths of the iterative projector, shared by the CPU and CUDA
 * backends and the double-precision reference (C99 and CUDA C), so that
 * every backend evaluates the same formulas on the same bits.
 *
 * Index space: voxel (i, j, k) has its centre at (i, j, k); a view maps a
 * point X of index space to (a, b, c) = P (X, 1), u = a / c, v = b / c in
 * detector pixels. The ray of pixel (u, v) starts at o + u ou + v ov and runs
 * along d + u du + v dv (index space; a cone-beam ray starts at the source,
 * a parallel-beam ray anywhere on its line).
 *
 * Joseph 1982: a ray steps along its dominant axis f (the axis it advances
 * most along, in voxels), one plane of voxels at a time; at plane i its
 * in-plane coordinates are p = A_p + i B_p and q = A_q + i B_q (the other two
 * axes, in increasing order), where the plane is sampled bilinearly (zero
 * outside the grid). The ray's value is len * sum of samples, len being the
 * ray's length per plane in mm. The adjoint gathers, for each voxel, every
 * ray whose sample at the voxel's plane weighs it: the pixels inside the
 * projection of the 2 x 2-voxel square around it, with the same A, B and
 * weights (1 - |p - j|)(1 - |q - k|).
 *
 * Bits: the forward projection and the adjoint must see the same p and q to
 * the last bit, and the CPU and the GPU should too. The ray parameters are
 * computed in double and rounded to float, positions as A + i B in float,
 * all with operations the compilers may not fuse (the CPU files are built
 * with -ffp-contract=off; on the GPU the _rn intrinsics are never
 * contracted). */
#ifndef CTR_ITMATH_H
#define CTR_ITMATH_H

#include "core/cylmath.h"
#include "core/projmath.h"

#include <math.h>
#include <stdint.h>


/* Zero border of the plane stacks on every side of every axis (voxels). A
 * ray's plane range keeps its in-plane positions within (-2.01, n + 1.01)
 * (the range's margin of one plane moves them by at most one voxel along a
 * non-dominant axis, and float positions stay within 1e-3 voxel of the
 * range's), so both bilinear neighbours of every sample lie inside the
 * border and no sample needs a clamp: those outside [-1, n] read zeros,
 * as the adjoint's weights of them are zero. (The range's margin is
 * CTR__IT_RANGE_MARGIN; 1.01 above allows for it.) */
#define CTR__IT_PAD 3
/* Margin of the adjoint's pixel boxes (pixels): the box of a footprint is
 * computed in float, the weights then decide exactly. */
#define CTR__IT_BOX_MARGIN 0.05f
/* The plane range of a ray covers the planes where its position (in
 * double) is within this many voxels of the grid's weights, far more than a
 * float position can differ (1e-3 voxel at 4096 voxels), so a ray never
 * skips a plane it weighs. */
#define CTR__IT_RANGE_MARGIN 1e-2

/* What the adjoint's pixel boxes need of a view (ctr__it_box_view). A flat
 * view (cyl[1] = 0): P maps index space to (a, b, c), u = a / c, v = b /
 * c. A curved view (a cylindrical detector, core/cylmath.h): P maps index
 * space to (l, h, s) in mm, the lateral offset, the height over the source
 * and the depth along the principal ray, and cyl = (u0, fu, v0, fv): u = u0
 * + fu atan2(l, s), v = v0 + fv h / hypot(l, s). Row-major. */
#define CTR__IT_CAMERA_FLOATS 16
typedef struct ctr__it_camera {
  float P[12];
  float cyl[4];
} ctr__it_camera;

/* One view: rays and the camera in index space. A flat detector's ray of
 * pixel (u, v) starts at o + u ou + v ov and runs along d + u du + v dv. A
 * curved one (curved = 1) starts at the source o (ou = ov = 0) and runs
 * along h(u) + d + v dv, h(u) the horizontal unit direction of column u
 * (cylmath.h's ctr__cyl_turn of view cyl) divided by the voxel sizes, and d,
 * dv with zero x and y components (so the in-plane line of a ray stepping
 * along x or y is the same for every row of a column, as on a flat
 * detector whose dv has zero x and y: its A_p, B_p and family). */
typedef struct ctr__it_view {
  double o[3], ou[3], ov[3]; /* ray origin = o + u ou + v ov */
  double d[3], du[3], dv[3]; /* ray direction = d + u du + v dv (curved: + h(u), du = 0) */
  ctr__cyl_view cyl;         /* curved: the detector's maps in mm */
  ctr__it_camera cam;        /* the adjoint's boxes */
  int curved;
  /* Column-separable (1) or not (0), and per family f (x, y) the run of
   * detector columns [run[f][0], run[f][1]] whose rays step along f (empty
   * when run[f][0] > run[f][1]): see "The adjoint of column-separable
   * views" below. */
  int cols;
  int run[2][2];
} ctr__it_view;

/* A ray as the forward projection and the adjoint use it. */
typedef struct ctr__it_ray {
  float A[2], B[2]; /* p = A[0] + i B[0], q = A[1] + i B[1] at plane i */
  float len;        /* mm of ray per plane */
  int f;            /* stepping axis 0 (x), 1 (y), 2 (z); 3 = the ray has no direction */
  int lo, hi;       /* planes [lo, hi] the ray may weigh (lo > hi: none) */
} ctr__it_ray;

/* The in-plane axes of stepping axis f: p then q. */
CTR_HD int ctr__it_paxis(int f) { return f == 0 ? 1 : 0; }
CTR_HD int ctr__it_qaxis(int f) { return f == 2 ? 1 : 2; }

/* The part of a ray's direction that varies with the column u: u du (flat),
 * or h(u) (curved: the fan angle's cos and sin by ctr__cyl_cossin, the
 * same bits on every backend, turned by ctr__cyl_turn, in index space). */
CTR_HD void ctr__it_ray_hu(const ctr__it_view *w, const double vox[3], double u, double hu[3]) {
  if (!w->curved) {
    for (int a = 0; a < 3; a++) hu[a] = CTR__DMUL(u, w->du[a]);
    return;
  }
  double cg, sg, h[2];
  ctr__cyl_cossin(CTR__DDIV(CTR__DADD(u, -w->cyl.u0), w->cyl.fu), &cg, &sg);
  ctr__cyl_turn(&w->cyl, cg, sg, h);
  hu[0] = CTR__DDIV(h[0], vox[0]);
  hu[1] = CTR__DDIV(h[1], vox[1]);
  hu[2] = 0.0;
}

/* The double-precision ray of pixel (u, v): its axis f, the in-plane lines
 * (A, B as doubles) and the mm per plane. Returns 0 for a degenerate
 * direction. */
CTR_HD int ctr__it_ray_f64(const ctr__it_view *w, const double vox[3], double u, double v,
                           double A[2], double B[2], double *len, int *f) {
  double o[3], d[3], hu[3];
  ctr__it_ray_hu(w, vox, u, hu);
  for (int a = 0; a < 3; a++) {
    o[a] = CTR__DADD(CTR__DADD(w->o[a], CTR__DMUL(u, w->ou[a])), CTR__DMUL(v, w->ov[a]));
    d[a] = CTR__DADD(CTR__DADD(w->d[a], hu[a]), CTR__DMUL(v, w->dv[a]));
  }
  const double ax = fabs(d[0]), ay = fabs(d[1]), az = fabs(d[2]);
  const int s = ax >= ay && ax >= az ? 0 : (ay >= az ? 1 : 2);
  if (!(fabs(d[s]) > 0.0)) return 0;
  const int p = ctr__it_paxis(s), q = ctr__it_qaxis(s);
  const double inv = CTR__DDIV(1.0, d[s]);
  B[0] = CTR__DMUL(d[p], inv);
  B[1] = CTR__DMUL(d[q], inv);
  A[0] = CTR__DADD(o[p], -CTR__DMUL(o[s], B[0]));
  A[1] = CTR__DADD(o[q], -CTR__DMUL(o[s], B[1]));
  const double mx = CTR__DMUL(d[0], vox[0]), my = CTR__DMUL(d[1], vox[1]),
               mz = CTR__DMUL(d[2], vox[2]);
  const double l2 = CTR__DADD(CTR__DADD(CTR__DMUL(mx, mx), CTR__DMUL(my, my)), CTR__DMUL(mz, mz));
  *len = CTR__DMUL(CTR__DSQRT(l2), fabs(inv));
  *f = s;
  return 1;
}

/* Planes t (real) with lo < A + t B < hi. */
CTR_HD void ctr__it_slab1(double A, double B, double lo, double hi, double *tlo, double *thi) {
  if (B == 0.0) {
    if (!(A > lo && A < hi)) *tlo = 1.0, *thi = -1.0; /* never */
    return;
  }
  double t1 = CTR__DDIV(CTR__DADD(lo, -A), B), t2 = CTR__DDIV(CTR__DADD(hi, -A), B);
  if (t1 > t2) {
    const double t = t1;
    t1 = t2;
    t2 = t;
  }
  if (t1 > *tlo) *tlo = t1;
  if (t2 < *thi) *thi = t2;
}

/* The float ray of pixel (u, v) for the grid box [b0, b1) (voxel indices per
 * axis; the whole grid, or a slab's): the planes it may weigh there (the
 * integers of the real range, one more plane on each side for safety). */
CTR_HD void ctr__it_ray_setup(const ctr__it_view *w, const double vox[3], const int64_t b0[3],
                        const int64_t b1[3], double u, double v, ctr__it_ray *r) {
  double A[2], B[2], len;
  int f;
  r->lo = 1;
  r->hi = 0;
  if (!ctr__it_ray_f64(w, vox, u, v, A, B, &len, &f)) {
    r->f = 3;
    r->A[0] = r->A[1] = r->B[0] = r->B[1] = r->len = 0.0f;
    return;
  }
  r->f = f;
  r->A[0] = (float)A[0];
  r->A[1] = (float)A[1];
  r->B[0] = (float)B[0];
  r->B[1] = (float)B[1];
  r->len = (float)len;
  const int p = ctr__it_paxis(f), q = ctr__it_qaxis(f);
  double tlo = (double)b0[f], thi = (double)(b1[f] - 1);
  const double m = CTR__IT_RANGE_MARGIN;
  ctr__it_slab1(A[0], B[0], (double)b0[p] - 1.0 - m, (double)b1[p] + m, &tlo, &thi);
  ctr__it_slab1(A[1], B[1], (double)b0[q] - 1.0 - m, (double)b1[q] + m, &tlo, &thi);
  if (!(tlo <= thi)) return;
  tlo = ceil(tlo) - 1.0;
  thi = floor(thi) + 1.0;
  if (tlo < (double)b0[f]) tlo = (double)b0[f];
  if (thi > (double)(b1[f] - 1)) thi = (double)(b1[f] - 1);
  r->lo = (int)tlo;
  r->hi = (int)thi;
}

/* The ray's in-plane position at plane i (the same bits on every backend). */
CTR_HD float ctr__it_pos(float A, float B, int i) {
  return CTR__FADD(A, CTR__FMUL((float)i, B));
}

/* The raw Joseph sum of a ray over planes [lo, hi] of a plane stack (the
 * slab zero-bordered by CTR__IT_PAD voxels): `base` points at voxel (0, 0)
 * of plane 0 of the stack, planes are `step` floats apart, in-plane q rows
 * `pitch` floats. Plane i of the grid is plane i - f0 of the stack and its q
 * coordinate is q - q0 there (a slab starting at slice z0: f0 = z0 for the
 * z axis, q0 = z0 when q is z). Positions are >= -3 (CTR__IT_PAD): the
 * truncation of p + 4 is floor(p) + 4. */
CTR_HD float ctr__it_ray_sum(const float *base, int64_t step, int pitch, const ctr__it_ray *r,
                             int lo, int hi, int f0, float q0) {
  float acc = 0.0f;
  const float *plane = base + (int64_t)(lo - f0) * step;
  for (int i = lo; i <= hi; i++, plane += step) {
    const float p = ctr__it_pos(r->A[0], r->B[0], i);
    const float q = CTR__FADD(ctr__it_pos(r->A[1], r->B[1], i), -q0);
    const int ip = (int)(p + 4.0f) - 4, iq = (int)(q + 4.0f) - 4;
    const float fp = p - (float)ip, fq = q - (float)iq;
    const float *c = plane + (iq * pitch + ip);
    acc += ctr__lerp2(c[0], c[1], c[pitch], c[pitch + 1], fp, fq);
  }
  return acc;
}

/* The weight of in-plane voxel (jp, kq) in a ray's sample at position
 * (p, q): the bilinear weight, 0 beyond one voxel. */
CTR_HD float ctr__it_weight(float p, float q, float jp, float kq) {
  const float wp = 1.0f - fabsf(CTR__FADD(p, -jp));
  const float wq = 1.0f - fabsf(CTR__FADD(q, -kq));
  return wp > 0.0f && wq > 0.0f ? wp * wq : 0.0f;
}

/* The pixels [u0, u1] x [v0, v1] of detector nu x nv whose centres lie in
 * [umin, umax] x [vmin, vmax] widened by CTR__IT_BOX_MARGIN. Empty when u0 >
 * u1 or v0 > v1. */
CTR_HD void ctr__it_box_pixels(float umin, float umax, float vmin, float vmax, int nu, int nv,
                               int *u0, int *u1, int *v0, int *v1) {
  const float lo_u = fmaxf(ceilf(umin - CTR__IT_BOX_MARGIN), 0.0f);
  const float hi_u = fminf(floorf(umax + CTR__IT_BOX_MARGIN), (float)(nu - 1));
  const float lo_v = fmaxf(ceilf(vmin - CTR__IT_BOX_MARGIN), 0.0f);
  const float hi_v = fminf(floorf(vmax + CTR__IT_BOX_MARGIN), (float)(nv - 1));
  /* NaN or an empty box: nothing (the comparisons are false for NaN). */
  if (!(lo_u <= hi_u) || !(lo_v <= hi_v)) {
    *u0 = *v0 = 1;
    *u1 = *v1 = 0;
    return;
  }
  *u0 = (int)lo_u;
  *u1 = (int)hi_u;
  *v0 = (int)lo_v;
  *v1 = (int)hi_v;
}

/* The pixel box [u0, u1] x [v0, v1] of detector nu x nv holding every pixel
 * centre whose ray crosses the plane rectangle around point X (index space)
 * that extends hp voxels along axis p and hq along q (hp = hq = 1: the
 * square of one voxel's weights): the projections of its four corners,
 * widened by CTR__IT_BOX_MARGIN. Empty when u0 > u1 or v0 > v1. Every
 * corner lies in front of the source (c > 0), which the projector checks
 * when it is created (within one voxel of the grid). */
CTR_HD void ctr__it_box(const float P[12], float x, float y, float z, int p, int q, float hp,
                        float hq, int nu, int nv, int *u0, int *u1, int *v0, int *v1) {
  const float a = P[0] * x + P[1] * y + P[2] * z + P[3];
  const float b = P[4] * x + P[5] * y + P[6] * z + P[7];
  const float c = P[8] * x + P[9] * y + P[10] * z + P[11];
  float umin = 1e30f, umax = -1e30f, vmin = 1e30f, vmax = -1e30f;
  for (int s = 0; s < 4; s++) {
    const float sp = (s & 1) ? hp : -hp, sq = (s & 2) ? hq : -hq;
    const float ca = a + sp * P[p] + sq * P[q];
    const float cb = b + sp * P[4 + p] + sq * P[4 + q];
    const float cc = c + sp * P[8 + p] + sq * P[8 + q];
    const float rc = 1.0f / cc;
    const float cu = ca * rc, cv = cb * rc;
    umin = fminf(umin, cu);
    umax = fmaxf(umax, cu);
    vmin = fminf(vmin, cv);
    vmax = fmaxf(vmax, cv);
  }
  ctr__it_box_pixels(umin, umax, vmin, vmax, nu, nv, u0, u1, v0, v1);
}

/* The squared distance from the source (origin) to the segment from (l0,
 * s0) to (l1, s1) of the horizontal plane (mm). */
CTR_HD float ctr__it_seg_dist2(float l0, float s0, float l1, float s1) {
  const float el = l1 - l0, es = s1 - s0, e2 = el * el + es * es;
  float t = e2 > 0.0f ? -(l0 * el + s0 * es) / e2 : 0.0f;
  t = fminf(fmaxf(t, 0.0f), 1.0f);
  const float l = l0 + t * el, s = s0 + t * es;
  return l * l + s * s;
}

/* A loop the GPU compiler keeps rolled (the curved box's corners: fewer
 * registers and spills in the adjoint kernel than unrolled). */
#if defined(__CUDACC__)
#define CTR__IT_ROLLED _Pragma("unroll 1")
#else
#define CTR__IT_ROLLED
#endif

/* ctr__it_box for a curved view (camera cam, ctr__it_camera): the columns
 * from the azimuths of the rectangle's four corners seen from the source
 * (the azimuth is monotone along each edge, the rectangle lying in front
 * of the source), the rows from the heights h of the corners over the
 * horizontal distances r: v = v0 + fv h / r is monotone in h and in r, and
 * r over the rectangle lies between the least distance of its edges and
 * the largest of its corners (r is convex). Both widened by
 * CTR__IT_BOX_MARGIN; empty as ctr__it_box. */
CTR_HD void ctr__it_box_cyl(const ctr__it_camera *cam, float x, float y, float z, int p, int q,
                            float hp, float hq, int nu, int nv, int *u0, int *u1, int *v0,
                            int *v1) {
  const float *P = cam->P;
  const float l = P[0] * x + P[1] * y + P[2] * z + P[3];
  const float h = P[4] * x + P[5] * y + P[6] * z + P[7];
  const float sd = P[8] * x + P[9] * y + P[10] * z + P[11];
  float gmin = 1e30f, gmax = -1e30f, hmin = 1e30f, hmax = -1e30f, rmax2 = 0.0f, rmin2 = 1e30f;
  CTR__IT_ROLLED
  for (int c = 0; c < 4; c++) {
    /* corner c and the next one around the rectangle (0, 1, 3, 2): the edge between them */
    const int n = c == 0 ? 1 : (c == 1 ? 3 : (c == 3 ? 2 : 0));
    const float sp = (c & 1) ? hp : -hp, sq = (c & 2) ? hq : -hq;
    const float np = (n & 1) ? hp : -hp, nq = (n & 2) ? hq : -hq;
    const float cl = l + sp * P[p] + sq * P[q], cs = sd + sp * P[8 + p] + sq * P[8 + q];
    const float ch = h + sp * P[4 + p] + sq * P[4 + q];
    const float nl = l + np * P[p] + nq * P[q], ns = sd + np * P[8 + p] + nq * P[8 + q];
    const float g = atan2f(cl, cs);
    gmin = fminf(gmin, g);
    gmax = fmaxf(gmax, g);
    hmin = fminf(hmin, ch);
    hmax = fmaxf(hmax, ch);
    rmax2 = fmaxf(rmax2, cl * cl + cs * cs);
    rmin2 = fminf(rmin2, ctr__it_seg_dist2(cl, cs, nl, ns));
  }
  const float iu0 = cam->cyl[0], fu = cam->cyl[1], iv0 = cam->cyl[2], fv = cam->cyl[3];
  const float ga = iu0 + fu * gmin, gb = iu0 + fu * gmax;
  const float ilo = 1.0f / sqrtf(rmax2), ihi = 1.0f / sqrtf(rmin2);
  const float va = fv * hmin * ilo, vb = fv * hmin * ihi, vc = fv * hmax * ilo, vd = fv * hmax * ihi;
  ctr__it_box_pixels(fminf(ga, gb), fmaxf(ga, gb), iv0 + fminf(fminf(va, vb), fminf(vc, vd)),
                     iv0 + fmaxf(fmaxf(va, vb), fmaxf(vc, vd)), nu, nv, u0, u1, v0, v1);
}

/* The pixel box of a plane rectangle (ctr__it_box's arguments) for a flat
 * or a curved view. */
CTR_HD void ctr__it_box_view(const ctr__it_camera *cam, float x, float y, float z, int p, int q,
                             float hp, float hq, int nu, int nv, int *u0, int *u1, int *v0,
                             int *v1) {
  if (cam->cyl[1] != 0.0f)
    ctr__it_box_cyl(cam, x, y, z, p, q, hp, hq, nu, nv, u0, u1, v0, v1);
  else
    ctr__it_box(cam->P, x, y, z, p, q, hp, hq, nu, nv, u0, u1, v0, v1);
}

/* ---- The adjoint's gather ------------------------------------------------- */

/* Voxels per column of the gather. */
#define CTR__IT_COLUMN 8

/* A batch's ray tables hold per ray (A_p, B_p, A_q, B_q) (`line`, 4 floats)
 * and (Y, f) (`yf`, 2 floats): Y = y len, f the stepping axis or 3 for a ray
 * that weighs no voxel. Reads of one entry (vector loads on the GPU). */
#if defined(__CUDACC__)
#define CTR__IT_YF(yf, r, Y, F)                           \
  do {                                                    \
    const float2 ctr__e = ((const float2 *)(yf))[r];      \
    (Y) = ctr__e.x;                                       \
    (F) = ctr__e.y;                                       \
  } while (0)
#define CTR__IT_LINE(line, r, L)                          \
  do {                                                    \
    const float4 ctr__l = ((const float4 *)(line))[r];    \
    (L)[0] = ctr__l.x;                                    \
    (L)[1] = ctr__l.y;                                    \
    (L)[2] = ctr__l.z;                                    \
    (L)[3] = ctr__l.w;                                    \
  } while (0)
#else
#define CTR__IT_YF(yf, r, Y, F) ((Y) = (yf)[2 * (r)], (F) = (yf)[2 * (r) + 1])
#define CTR__IT_LINE(line, r, L) \
  ((L)[0] = (line)[4 * (r)], (L)[1] = (line)[4 * (r) + 1], (L)[2] = (line)[4 * (r) + 2], \
   (L)[3] = (line)[4 * (r) + 3])
#endif

/* The gather of one view (camera cam, tables line / yf of nu x nv rays, the
 * families present in fam) at the column of voxels (i, j, k0 + s), s < nk
 * (nk <= CTR__IT_COLUMN): acc[s * stride] += the sum over the rays of Y times
 * their weight of the voxel (ctr__it_weight at the ray's position in the
 * voxel's plane). For rays stepping along x or y (q = z) the column's voxels
 * share one pixel box (the projection of its 2 x (nk + 1) rectangle) and a
 * ray weighs at most two of them (floor(q) and the next); rays stepping
 * along z take each voxel's own box. Each voxel's terms come in the order
 * of a gather of that voxel alone (families, then rows, then columns). */
CTR_HD void ctr__it_gather_column(const ctr__it_camera *cam, const float *line, const float *yf, int nu,
                                  int nv, int fam, int i, int j, int k0, int nk, float *acc,
                                  int stride) {
  const float zc = (float)k0 + 0.5f * (float)(nk - 1), zh = 0.5f * (float)(nk + 1);
  for (int f = 0; f < 2; f++) {
    if (!(fam & (1 << f))) continue;
    const int pa = f == 0 ? 1 : 0, fi = f == 0 ? i : j;
    const float jp = (float)(f == 0 ? j : i), ff = (float)f;
    int u0, u1, v0, v1;
    ctr__it_box_view(cam, (float)i, (float)j, zc, pa, 2, 1.0f, zh, nu, nv, &u0, &u1, &v0, &v1);
    for (int v = v0; v <= v1; v++)
      for (int u = u0; u <= u1; u++) {
        const int64_t r = (int64_t)v * nu + u;
        float Y, F, L[4];
        CTR__IT_YF(yf, r, Y, F);
        if (F != ff) continue;
        CTR__IT_LINE(line, r, L);
        const float p = ctr__it_pos(L[0], L[1], fi);
        if (!(fabsf(CTR__FADD(p, -jp)) < 1.0f)) continue; /* weighs no voxel of the column */
        const float q = ctr__it_pos(L[2], L[3], fi);
        const int s0 = (int)floorf(q) - k0;
        for (int s = s0; s <= s0 + 1; s++) {
          if (s < 0 || s >= nk) continue;
          const float w = ctr__it_weight(p, q, jp, (float)(k0 + s));
          if (w > 0.0f) acc[s * stride] += Y * w;
        }
      }
  }
  if (!(fam & 4)) return;
  for (int s = 0; s < nk; s++) { /* rays stepping along z: each voxel's own plane */
    const int k = k0 + s;
    int u0, u1, v0, v1;
    ctr__it_box_view(cam, (float)i, (float)j, (float)k, 0, 1, 1.0f, 1.0f, nu, nv, &u0, &u1, &v0,
                     &v1);
    for (int v = v0; v <= v1; v++)
      for (int u = u0; u <= u1; u++) {
        const int64_t r = (int64_t)v * nu + u;
        float Y, F, L[4];
        CTR__IT_YF(yf, r, Y, F);
        if (F != 2.0f) continue;
        CTR__IT_LINE(line, r, L);
        const float w =
            ctr__it_weight(ctr__it_pos(L[0], L[1], k), ctr__it_pos(L[2], L[3], k), (float)i, (float)j);
        if (w > 0.0f) acc[s * stride] += Y * w;
      }
  }
}

/* ---- The adjoint of column-separable views -------------------------------- */

/* A view is column-separable when every ray of a detector column has the
 * same stepping axis f (x or y, never z) and the same in-plane line (A_p,
 * B_p) to the last bit: the rays' origins and directions have x and y parts
 * that do not depend on v (ov and dv have zero x and y components, as on
 * every circular or helical orbit whose detector columns are parallel to
 * the rotation axis, and in parallel beam without a tilt). The projector
 * checks it per view when it is created (ctr__it_view.cols, the family
 * runs of columns), and the table builders confirm it bit for bit per batch
 * (CTR__IT_FAM_SPLIT below) before the separable gather is used.
 *
 * Then the weight of ray (u, v) at voxel (i, j, k) of its plane factors into
 * wp(u) wq(u, v): the in-plane weight 1 - |p - j| depends on the column only.
 * The adjoint's sum over a view's rays at a voxel becomes
 *     sum over columns u of wp(u, j) T(u, k),   T(u, k) = sum over rows v of wq Y,
 * and T(u, k) is shared by every voxel of the column's plane that the column
 * weighs, so it is computed once for a tile of voxels (both backends: the
 * GPU's k_adjoint, the CPU's sep_tile) instead of once a voxel: per voxel
 * and view about 2.1 ray samples for the 8.4 (ray, weight) pairs of the
 * plain gather's candidates (bench/NOTES.md, "The separable adjoint"). Each
 * voxel adds, per view, family x then y, its columns in increasing u, wp T;
 * T sums its rows in increasing v; the CPU and the GPU compute the same T
 * (the same walk below) and sums in the same order, whatever the tiles:
 * they differ only where the GPU fuses a multiply and an add. */

/* Set in a batch's family bits by the table builders when a view marked
 * column-separable has a ray whose line or family differs from its column's
 * (ctr__it_sep_check): the view then takes the plain gather. */
#define CTR__IT_FAM_SPLIT 8

/* The check of one ray of a column-separable view: 1 when the ray (its
 * table entry: family f, 3 for a ray that weighs nothing, and A_p, B_p)
 * agrees with its column's line (cp = the column table's A_p, B_p) and with
 * the view's runs. */
CTR_HD int ctr__it_sep_check(const ctr__it_view *w, const float *cp, int u, int f, float Ap,
                             float Bp) {
  if (f == 3) return 1;
  if (f == 2 || u < w->run[f][0] || u > w->run[f][1]) return 0;
  return Ap == cp[0] && Bp == cp[1];
}

/* The (q half of the) line and the (Y, f) of ray r of a batch's tables. */
#if defined(__CUDACC__)
#define CTR__IT_LINEQ(line, r, Aq, Bq)                         \
  do {                                                         \
    const float2 ctr__q = ((const float2 *)(line))[2 * (r) + 1]; \
    (Aq) = ctr__q.x;                                           \
    (Bq) = ctr__q.y;                                           \
  } while (0)
#else
#define CTR__IT_LINEQ(line, r, Aq, Bq) ((Aq) = (line)[4 * (r) + 2], (Bq) = (line)[4 * (r) + 3])
#endif

/* T(u, k0 + s) += the rows v0 .. v1 of column u (rays of family ff only) at
 * plane fi: each ray's sample q = A_q + fi B_q weighs slices floor(q) (1 -
 * frac) and floor(q) + 1 (frac), Joseph's linear weights along q. T points
 * at slot 0 of nk slots with one spare slot before and after it (T[-1] and
 * T[nk], which catch the weights of the slices beside the range and are
 * ignored), so a ray needs one range test. Rows in increasing v. */
CTR_HD void ctr__it_sep_walk(const float *line, const float *yf, int64_t nu, int u, int v0, int v1,
                             float ff, int fi, int k0, int nk, float *T, int tstride) {
  const float ffi = (float)fi;
  for (int v = v0; v <= v1; v++) {
    const int64_t r = (int64_t)v * nu + u;
    float Y, F, Aq, Bq;
    CTR__IT_YF(yf, r, Y, F);
    if (F != ff) continue;
    CTR__IT_LINEQ(line, r, Aq, Bq);
    const float q = CTR__FADD(Aq, CTR__FMUL(ffi, Bq));
    const float fl = floorf(q);
    const float s = fl - (float)k0; /* in float: q may lie far outside the range */
    if (!(s >= -1.0f && s <= (float)(nk - 1))) continue;
    const int s0 = (int)s;
    const float fr = CTR__FADD(q, -fl);
    T[s0 * tstride] += (1.0f - fr) * Y;
    T[(s0 + 1) * tstride] += fr * Y;
  }
}

/* The in-plane weight of column line (Ap, Bp) at plane fi for voxel jp
 * (0 beyond one voxel). */
CTR_HD float ctr__it_sep_wp(float Ap, float Bp, int fi, float jp) {
  const float p = ctr__it_pos(Ap, Bp, fi);
  const float wp = 1.0f - fabsf(CTR__FADD(p, -jp));
  return wp > 0.0f ? wp : 0.0f;
}

/* ---- The fast pair's view weights ------------------------------------------ */

/* Views the fast pair's adjoint weights and backprojects at a time (the
 * CUDA backend's kernel takes their inverses and scales as arguments). */
#define CTR__IT_FAST_CHUNK 32

/* One view of the fast pair: the inverse of its world matrix M (the 3 x 3
 * part of the projection matrix, row-major) and scale = V |det M| (voxel
 * volume V, mm^3). */
typedef struct ctr__it_fast_view {
  double inv[9];
  double scale;
} ctr__it_fast_view;

/* The fast pair's weight W(u, v) = V |det M| |M^-1 (u, v, 1)| of pixel (u, v)
 * (projector.c): the same double operations, rounded to float once, on the
 * host and the device. */
CTR_HD float ctr__it_fast_weight(const ctr__it_fast_view *w, double u, double v) {
  const double *m = w->inv;
  const double dx = CTR__DADD(CTR__DADD(CTR__DMUL(m[0], u), CTR__DMUL(m[1], v)), m[2]);
  const double dy = CTR__DADD(CTR__DADD(CTR__DMUL(m[3], u), CTR__DMUL(m[4], v)), m[5]);
  const double dz = CTR__DADD(CTR__DADD(CTR__DMUL(m[6], u), CTR__DMUL(m[7], v)), m[8]);
  const double n2 = CTR__DADD(CTR__DADD(CTR__DMUL(dx, dx), CTR__DMUL(dy, dy)), CTR__DMUL(dz, dz));
  return (float)CTR__DMUL(w->scale, CTR__DSQRT(n2));
}

/* ---- Elementwise steps of the algorithms (host and device alike) ---------- */

CTR_HD float ctr__it_comb(float a, float x, float b, float y) {
  return CTR__FADD(CTR__FMUL(a, x), CTR__FMUL(b, y));
}
CTR_HD float ctr__it_recip(float x, float threshold) {
  return x > threshold ? CTR__FDIV(1.0f, x) : 0.0f;
}
CTR_HD float ctr__it_clip(float v, float lo, float hi) { return fminf(fmaxf(v, lo), hi); }

/* TV on the voxel grid (unit spacing): forward differences, zero across the
 * last plane; div = -grad^T. At voxel (i, j, k) = index c of an n volume:
 * z = clip(g + mu div P) and the dual step P = (P + tau grad z) / max(1,
 * |P + tau grad z|) (Beck and Teboulle 2009b, GP with the box inside). P
 * holds three volumes (x, y and z components). */
CTR_HD float ctr__it_tv_primal_at(const float *g, const float *P, int64_t c, int64_t nvox,
                                  int64_t i, int64_t j, int64_t k, const int64_t n[3], float mu,
                                  float lo, float hi) {
  const int64_t st[3] = {1, n[0], n[0] * n[1]};
  const int64_t at[3] = {i, j, k};
  float div = 0.0f;
  for (int a = 0; a < 3; a++) {
    const float *Pa = P + a * nvox;
    const float here = at[a] < n[a] - 1 ? Pa[c] : 0.0f;
    const float before = at[a] > 0 ? Pa[c - st[a]] : 0.0f;
    div = CTR__FADD(div, CTR__FADD(here, -before));
  }
  return ctr__it_clip(CTR__FADD(g[c], CTR__FMUL(mu, div)), lo, hi);
}

CTR_HD void ctr__it_tv_dual_at(float *P, const float *z, int64_t c, int64_t nvox, int64_t i,
                               int64_t j, int64_t k, const int64_t n[3], float tau) {
  const int64_t st[3] = {1, n[0], n[0] * n[1]};
  const int64_t at[3] = {i, j, k};
  float q[3];
  float norm2 = 0.0f;
  for (int a = 0; a < 3; a++) {
    const float grad = at[a] < n[a] - 1 ? CTR__FADD(z[c + st[a]], -z[c]) : 0.0f;
    q[a] = CTR__FADD(P[a * nvox + c], CTR__FMUL(tau, grad));
    norm2 = CTR__FADD(norm2, CTR__FMUL(q[a], q[a]));
  }
  const float norm = CTR__FSQRT(norm2);
  const float scale = norm > 1.0f ? CTR__FDIV(1.0f, norm) : 1.0f;
  for (int a = 0; a < 3; a++) P[a * nvox + c] = CTR__FMUL(q[a], scale);
}

/* ---- The roughness penalty of PWLS ---------------------------------------- */

/* R(x) = the sum over every pair {j, k} of 6-neighbours of the voxel grid
 * (each pair once; free boundary: pairs inside the volume only) of
 * psi(x_j - x_k), psi(t) = t^2 / 2 (quadratic) or Huber's psi_delta(t) =
 * t^2 / 2 for |t| <= delta, delta |t| - delta^2 / 2 beyond. Its gradient is
 * dR/dx_j = sum_k psi'(x_j - x_k) = sum_k w(x_j - x_k) (x_j - x_k) with
 * Huber's curvature w(t) = psi'(t) / t = min(1, delta / |t|) (1 for the
 * quadratic: delta infinite), and the Hessian of the quadratic (or of
 * Huber's quadratic surrogate at x, Huber 1981) is H_w v = sum_k w_jk (v_j -
 * v_k). One operation gives them all, per voxel c = (i, j, k):
 *   out_c = sum over the 6-neighbours m in the volume of w(x_c - x_m) (v_c - v_m),
 * w = 1 when x is NULL (the quadratic), and with v NULL the diagonal sum_m
 * w(x_c - x_m) (the number of neighbours for the quadratic). So grad R(x) =
 * op(x, x), H v = op(NULL, v) or op(x, v), diag H = op(x, NULL). Neighbours
 * in the order -x, +x, -y, +y, -z, +z, float operations never contracted:
 * the same bits on every backend and for any split of the volume into z
 * slabs (a slab reads the planes beside it, its one-plane halos). */
CTR_HD float ctr__it_huber_curvature(float t, float delta) {
  const float a = fabsf(t);
  return a <= delta ? 1.0f : CTR__FDIV(delta, a);
}

CTR_HD float ctr__it_penalty_at(const float *x, const float *v, int64_t c, int64_t i, int64_t j,
                                int64_t k, const int64_t n[3], float delta) {
  const int64_t st[3] = {1, n[0], n[0] * n[1]};
  const int64_t at[3] = {i, j, k};
  float acc = 0.0f;
  for (int a = 0; a < 3; a++)
    for (int s = -1; s <= 1; s += 2) {
      if (s < 0 ? at[a] == 0 : at[a] == n[a] - 1) continue;
      const int64_t m = c + s * st[a];
      const float w = x ? ctr__it_huber_curvature(CTR__FADD(x[c], -x[m]), delta) : 1.0f;
      acc = CTR__FADD(acc, v ? CTR__FMUL(w, CTR__FADD(v[c], -v[m])) : w);
    }
  return acc;
}

/* The count weight of a ray of log-transformed transmission data b: its
 * expected counts i0 exp(-b), computed in double and rounded once (the
 * float exponentials of the CPU and the GPU differ in their last bits; the
 * double ones agree but within an ulp of double, which the rounding to
 * float hides but for about one value in 2^29). */
CTR_HD float ctr__it_count_weight(float b, double i0) {
  return (float)CTR__DMUL(i0, exp(-(double)b));
}

#endif
