/* Shared state of the phantom module: the phantom object and the per-ellipsoid
 * quantities that ray tracing and voxelisation precompute once. */
#ifndef CTR_PHANTOM_INTERNAL_H
#define CTR_PHANTOM_INTERNAL_H

#include "core/internal.h"

#include <math.h>

/* Everything about an ellipsoid that does not depend on the ray or the point.
 * R = D^-1 A maps a world offset from the centre to the unit-sphere frame, so
 * a point x is inside iff |R x - Rc|^2 <= 1. */
typedef struct ctr__ellipsoid_pre {
  double density;
  double c[3];
  double R[9]; /* row-major */
  double Rc[3];
  double lo[3], hi[3]; /* axis-aligned bounding box, mm */
} ctr__ellipsoid_pre;

struct ctr_phantom {
  int64_t n;
  ctr_ellipsoid *e;
  ctr__ellipsoid_pre *pre; /* n entries, built at construction (phantoms are immutable) */
};

/* A (world -> ellipsoid frame) for the z-x-z Euler angles of e, row-major. */
void ctr__ellipsoid_rotation(const ctr_ellipsoid *e, double A[9]);

/* Length in t of {t > tmin : |p + t q|^2 <= 1}: the chord of the unit sphere
 * along p + t q (q != 0), clipped to t > tmin; clip = 0 ignores tmin (whole
 * line). The discriminant is written as |q|^2 - |p x q|^2 (Lagrange's identity)
 * rather than (p.q)^2 - |q|^2 (|p|^2 - 1), which cancels catastrophically when
 * the ray starts far away (a source 1 m from a 2 mm ellipsoid). */
static inline double ctr__unit_sphere_chord(const double p[3], const double q[3], int clip,
                                            double tmin) {
  double qq = q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
  double x0 = p[1] * q[2] - p[2] * q[1];
  double x1 = p[2] * q[0] - p[0] * q[2];
  double x2 = p[0] * q[1] - p[1] * q[0];
  double disc = qq - (x0 * x0 + x1 * x1 + x2 * x2);
  if (disc <= 0.0) return 0.0;
  double h = sqrt(disc) / qq; /* half chord */
  if (!clip) return 2.0 * h;
  double tm = -(p[0] * q[0] + p[1] * q[1] + p[2] * q[2]) / qq; /* chord midpoint */
  double t1 = tm - h, t2 = tm + h;
  /* 2h directly when unclipped: t2 - t1 loses digits when tm is large. */
  if (t1 >= tmin) return 2.0 * h;
  return t2 > tmin ? t2 - tmin : 0.0;
}

/* Integral of the phantom along o + t d (d a unit vector), whole line or, with
 * clip, t > tmin only. */
double ctr__phantom_ray(const ctr_phantom *ph, const double o[3], const double d[3], int clip,
                        double tmin);

/* Work on one row (a detector row, a row of voxels) by thread `tid`. */
typedef void (*ctr__phantom_row_fn)(void *arg, int tid, int64_t row);

/* Runs fn for rows [0, nrows) on `nthreads` OpenMP threads (thread ids
 * 0 .. nthreads-1) in one parallel region, reporting progress about 50 times
 * and at the end from the calling thread; a cancelling callback stops the
 * remaining rows and gives CTR_E_CANCELLED. */
ctr_status ctr__phantom_rows(const ctr_context *ctx, const char *stage, int64_t nrows,
                             int nthreads, ctr__phantom_row_fn fn, void *arg);

/* Checks that `vol` is a usable grid (positive sizes, finite spacing/offsets);
 * `what` names it in the detail. */
ctr_status ctr__phantom_check_volume(const ctr_volume_geometry *vol, const char *what);

#endif
