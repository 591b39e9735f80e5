/* Phantom construction: validation, the Shepp-Logan table, precomputation of
 * the per-ellipsoid quantities and the accessors. */
#include "phantom/phantom_internal.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define CTR__DEG2RAD (3.14159265358979323846 / 180.0)

/* 3D modified (high-contrast) Shepp-Logan head in the unit cube [-1, 1]^3:
 * density, ax, ay, az, cx, cy, cz, phi, theta, psi (docs/phantoms.md). */
static const double k_shepp_logan[10][10] = {
    {1.0, .6900, .920, .810, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {-.8, .6624, .874, .780, 0.0, -.0184, 0.0, 0.0, 0.0, 0.0},
    {-.2, .1100, .310, .220, .22, 0.0, 0.0, -18.0, 0.0, 10.0},
    {-.2, .1600, .410, .280, -.22, 0.0, 0.0, 18.0, 0.0, 10.0},
    {.1, .2100, .250, .410, 0.0, .35, -.15, 0.0, 0.0, 0.0},
    {.1, .0460, .046, .050, 0.0, .1, .25, 0.0, 0.0, 0.0},
    {.1, .0460, .046, .050, 0.0, -.1, .25, 0.0, 0.0, 0.0},
    {.1, .0460, .023, .050, -.08, -.605, 0.0, 0.0, 0.0, 0.0},
    {.1, .0230, .023, .020, 0.0, -.606, 0.0, 0.0, 0.0, 0.0},
    {.1, .0230, .046, .020, .06, -.605, 0.0, 0.0, 0.0, 0.0},
};

void ctr__ellipsoid_rotation(const ctr_ellipsoid *e, double A[9]) {
  double phi = e->phi_deg * CTR__DEG2RAD, theta = e->theta_deg * CTR__DEG2RAD,
         psi = e->psi_deg * CTR__DEG2RAD;
  double cphi = cos(phi), sphi = sin(phi), cth = cos(theta), sth = sin(theta), cpsi = cos(psi),
         spsi = sin(psi);
  A[0] = cpsi * cphi - cth * sphi * spsi;
  A[1] = cpsi * sphi + cth * cphi * spsi;
  A[2] = spsi * sth;
  A[3] = -spsi * cphi - cth * sphi * cpsi;
  A[4] = -spsi * sphi + cth * cphi * cpsi;
  A[5] = cpsi * sth;
  A[6] = sth * sphi;
  A[7] = -sth * cphi;
  A[8] = cth;
}

static void precompute(const ctr_ellipsoid *e, ctr__ellipsoid_pre *out) {
  double A[9];
  ctr__ellipsoid_rotation(e, A);
  const double a[3] = {e->ax, e->ay, e->az};
  out->density = e->density;
  out->c[0] = e->cx;
  out->c[1] = e->cy;
  out->c[2] = e->cz;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) out->R[3 * i + j] = A[3 * i + j] / a[i];
  for (int i = 0; i < 3; i++)
    out->Rc[i] = out->R[3 * i] * out->c[0] + out->R[3 * i + 1] * out->c[1] +
                 out->R[3 * i + 2] * out->c[2];
  /* The surface is c + A^T D u with |u| = 1, so its extent along world axis j
   * is |(A^T D)_j.| = sqrt(sum_i (A_ij a_i)^2). */
  for (int j = 0; j < 3; j++) {
    double s = 0.0;
    for (int i = 0; i < 3; i++) s += (A[3 * i + j] * a[i]) * (A[3 * i + j] * a[i]);
    double h = sqrt(s);
    out->lo[j] = out->c[j] - h;
    out->hi[j] = out->c[j] + h;
  }
}

static ctr_status check_ellipsoid(const ctr_ellipsoid *e, int64_t i) {
  const struct {
    const char *name;
    double v;
    int positive;
  } f[] = {{"density", e->density, 0}, {"cx", e->cx, 0},         {"cy", e->cy, 0},
           {"cz", e->cz, 0},           {"ax", e->ax, 1},         {"ay", e->ay, 1},
           {"az", e->az, 1},           {"phi_deg", e->phi_deg, 0}, {"theta_deg", e->theta_deg, 0},
           {"psi_deg", e->psi_deg, 0}};
  for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
    if (!isfinite(f[k].v) || (f[k].positive && !(f[k].v > 0.0)))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ellipsoid %lld: %s is %g, expected a finite number%s",
               (long long)i, f[k].name, f[k].v, f[k].positive ? " > 0" : "");
  }
  return CTR_OK;
}

ctr_status ctr_phantom_from_ellipsoids(const ctr_ellipsoid *e, int64_t n, ctr_phantom **out) {
  ctr_status st = CTR_OK;
  ctr_phantom *p = NULL;
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_from_ellipsoids: out is NULL");
  *out = NULL;
  if (n < 1) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_from_ellipsoids: n is %lld, expected >= 1",
                      (long long)n);
  if (!e) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_from_ellipsoids: e is NULL");
  for (int64_t i = 0; i < n; i++) CTR_CHECK(check_ellipsoid(&e[i], i));

  p = ctr__calloc(1, sizeof *p, "phantom");
  if (!p) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "phantom: out of memory");
  p->n = n;
  p->e = ctr__calloc((size_t)n, sizeof *p->e, "phantom ellipsoids");
  p->pre = ctr__calloc((size_t)n, sizeof *p->pre, "phantom ellipsoid tables");
  if (!p->e || !p->pre) {
    st = CTR_E_OUT_OF_MEMORY; /* detail set by ctr__calloc */
    goto cleanup;
  }
  memcpy(p->e, e, (size_t)n * sizeof *e);
  for (int64_t i = 0; i < n; i++) precompute(&p->e[i], &p->pre[i]);
  *out = p;
  p = NULL;
cleanup:
  ctr_phantom_free(p);
  return st;
}

ctr_status ctr_phantom_shepp_logan(double radius, double scale, ctr_phantom **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_shepp_logan: out is NULL");
  *out = NULL;
  if (!isfinite(radius) || !(radius > 0.0))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "shepp_logan: radius is %g, expected a finite number > 0 (mm)",
             radius);
  if (!isfinite(scale))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "shepp_logan: scale is %g, expected a finite number", scale);
  ctr_ellipsoid e[10];
  for (int i = 0; i < 10; i++) {
    const double *r = k_shepp_logan[i];
    e[i].density = r[0] * scale;
    e[i].ax = r[1] * radius;
    e[i].ay = r[2] * radius;
    e[i].az = r[3] * radius;
    e[i].cx = r[4] * radius;
    e[i].cy = r[5] * radius;
    e[i].cz = r[6] * radius;
    e[i].phi_deg = r[7];
    e[i].theta_deg = r[8];
    e[i].psi_deg = r[9];
  }
  return ctr_phantom_from_ellipsoids(e, 10, out);
}

ctr_status ctr_phantom_disk_stack(double radius, double thickness, double gap, double scale,
                                  ctr_phantom **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_disk_stack: out is NULL");
  *out = NULL;
  const double v[3] = {radius, thickness, gap};
  static const char *const name[3] = {"radius", "thickness", "gap"};
  for (int i = 0; i < 3; i++)
    if (!isfinite(v[i]) || !(v[i] > 0.0))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_disk_stack: %s is %g, expected a finite "
               "number > 0 (mm)", name[i], v[i]);
  if (!isfinite(scale))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_disk_stack: scale is %g, expected a finite "
             "number", scale);
  /* three coaxial oblate ellipsoids, bottom to top, each a different value */
  static const double k_density[3] = {1.0, 0.5, 0.75};
  ctr_ellipsoid e[3];
  memset(e, 0, sizeof e);
  for (int i = 0; i < 3; i++) {
    e[i].density = k_density[i] * scale;
    e[i].ax = e[i].ay = radius;
    e[i].az = 0.5 * thickness;
    e[i].cz = (double)(i - 1) * (thickness + gap);
  }
  return ctr_phantom_from_ellipsoids(e, 3, out);
}

void ctr_phantom_free(ctr_phantom *p) {
  if (!p) return;
  free(p->e);
  free(p->pre);
  free(p);
}

int64_t ctr_phantom_get_ellipsoid_count(const ctr_phantom *p) { return p ? p->n : 0; }

const ctr_ellipsoid *ctr_phantom_get_ellipsoids(const ctr_phantom *p) { return p ? p->e : NULL; }

ctr_status ctr__phantom_check_volume(const ctr_volume_geometry *vol, const char *what) {
  if (!vol) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: volume geometry is NULL", what);
  const int64_t n[3] = {vol->nx, vol->ny, vol->nz};
  const double vs[3] = {vol->voxel_x, vol->voxel_y, vol->voxel_z};
  const double off[3] = {vol->offset_x, vol->offset_y, vol->offset_z};
  const char *ax = "xyz";
  for (int i = 0; i < 3; i++) {
    if (n[i] < 1)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: volume n%c is %lld, expected >= 1", what, ax[i],
               (long long)n[i]);
    if (!isfinite(vs[i]) || !(vs[i] > 0.0))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: volume voxel_%c is %g, expected a finite number > 0",
               what, ax[i], vs[i]);
    if (!isfinite(off[i]))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: volume offset_%c is %g, expected a finite number",
               what, ax[i], off[i]);
  }
  return CTR_OK;
}

ctr_status ctr__phantom_rows(const ctr_context *ctx, const char *stage, int64_t nrows,
                             int nthreads, ctr__phantom_row_fn fn, void *arg) {
  ctr_status st = CTR_OK;
  int stop = 0;
  int64_t done = 0;
  const int64_t step = nrows / 50 > 1 ? nrows / 50 : 1;
  int64_t next = step; /* touched by thread 0 only */
  /* One region with progress from inside it, rather than a region per chunk
   * of rows with progress in between: on a loaded machine every region's
   * closing barrier waits for a preempted thread, which made small calls
   * 10x slower. */
#pragma omp parallel num_threads(nthreads)
  {
    int tid = 0;
#ifdef _OPENMP
    tid = omp_get_thread_num();
#endif
#pragma omp for schedule(dynamic, 1)
    for (int64_t r = 0; r < nrows; r++) {
      int halt;
#pragma omp atomic read
      halt = stop;
      if (halt) continue;
      fn(arg, tid, r);
      int64_t d;
#pragma omp atomic capture
      d = ++done;
      /* The callback and the thread-local error detail belong to the calling
       * thread, which is thread 0 of the team. */
      if (tid == 0 && d >= next && d < nrows) {
        next = d + step;
        st = ctr__progress(ctx, stage, (double)d / (double)nrows);
        if (st != CTR_OK) {
#pragma omp atomic write
          stop = 1;
        }
      }
    }
  }
  if (st == CTR_OK) st = ctr__progress(ctx, stage, 1.0);
  return st;
}
