/* Parallel-beam sinograms and slices of ellipsoid phantoms (docs/parallel-beam.md).
 *
 * A tilted axis (laminography, docs/geometry.md): the row at height z (mm)
 * of angle theta is the plane z ev + span(eu, d) of ctr__lamino_axes, the
 * ray of bin t in it P(l) = d_t eu + z ev + l d, the same d_t; at tilt 0
 * this is the plane below (computed by the untilted code, the same bits).
 *
 * The ray of angle theta and bin t in the plane z is the line
 *   P(l) = d (cos theta, sin theta, 0) + (0, 0, z) + l (-sin theta, cos theta, 0)
 * with d = (t - axis - axis_shift[a]) * pixel_size mm, so a point (x, y) in
 * bins lies on the ray of bin t = x cos + y sin + axis + shift: the
 * backprojectors' formula. The integral is the exact chord of every
 * ellipsoid (ctr__unit_sphere_chord, as ctr_phantom_line_integral), in mm.
 * A density in 1/mm gives the dimensionless attenuation a detector sees,
 * and FBP (whose angular weights carry 1/pixel_size) returns the density. */
#include "parbeam/parbeam.h"
#include "phantom/phantom_internal.h"

#include <math.h>
#include <string.h>

/* Per ellipsoid and angle: the ray's start and direction in the unit-sphere
 * frame are linear in d: p(d) = p0 + d pd, q constant. */
typedef struct sino_ell {
  double p0[3], pd[3], q[3];
  double dmin, dmax; /* the ellipsoid's bounding box projected on the d axis (mm) */
} sino_ell;

typedef struct sino_job {
  const ctr_phantom *ph;
  const ctr_parallel_geometry *g;
  const double *z;
  int s;
  float *out;
  sino_ell *ell;    /* [thread][ellipsoid] */
  int64_t *active;  /* [thread][ellipsoid] */
} sino_job;

static void sino_row(void *arg, int tid, int64_t r) {
  const sino_job *j = arg;
  const ctr_parallel_geometry *g = j->g;
  const int64_t nb = g->p.nbins, na = g->p.nangles, a = r % na, sl = r / na, n = j->ph->n;
  const int tilted = ctr__par_tilted(g);
  const double ps = g->p.pixel_size;
  const double z = j->z ? j->z[sl] : ((double)sl - 0.5 * (double)(g->p.nrows - 1)) * ps;
  const double th = g->angles_deg[a] * M_PI / 180.0, c = cos(th), s = sin(th);
  double o[3] = {0.0, 0.0, z}, u[3] = {c, s, 0.0}, dir[3] = {-s, c, 0.0}, ev[3] = {0.0, 0.0, 1.0};
  if (tilted) { /* the plane of the row: its rays along d, at height z along ev */
    ctr__lamino_axes(g->angles_deg[a], g->p.tilt_deg, u, ev, dir);
    for (int i = 0; i < 3; i++) o[i] = z * ev[i];
  }
  sino_ell *ell = j->ell + (size_t)tid * (size_t)n;
  int64_t *active = j->active + (size_t)tid * (size_t)n;
  float *row = j->out + r * nb;
  int64_t na_ = 0;
  for (int64_t k = 0; k < n; k++) {
    const ctr__ellipsoid_pre *e = &j->ph->pre[k];
    if (!tilted && (z < e->lo[2] || z > e->hi[2])) continue; /* the plane misses it */
    if (tilted) { /* the box's extent along ev */
      double lo = INFINITY, hi = -INFINITY;
      for (int corner = 0; corner < 8; corner++) {
        const double x = (corner & 1) ? e->hi[0] : e->lo[0], y = (corner & 2) ? e->hi[1] : e->lo[1],
                     zz = (corner & 4) ? e->hi[2] : e->lo[2];
        const double h = x * ev[0] + y * ev[1] + zz * ev[2];
        lo = fmin(lo, h);
        hi = fmax(hi, h);
      }
      const double margin = 1e-9 * (1.0 + fabs(lo) + fabs(hi));
      if (z < lo - margin || z > hi + margin) continue;
    }
    sino_ell *w = &ell[na_];
    for (int i = 0; i < 3; i++) {
      const double *R = e->R + 3 * i;
      w->p0[i] = R[0] * o[0] + R[1] * o[1] + R[2] * o[2] - e->Rc[i];
      w->pd[i] = R[0] * u[0] + R[1] * u[1] + R[2] * u[2];
      w->q[i] = R[0] * dir[0] + R[1] * dir[1] + R[2] * dir[2];
    }
    double lo = INFINITY, hi = -INFINITY;
    for (int corner = 0; corner < 4; corner++) {
      const double x = (corner & 1) ? e->hi[0] : e->lo[0], y = (corner & 2) ? e->hi[1] : e->lo[1];
      const double d = x * c + y * s;
      lo = fmin(lo, d);
      hi = fmax(hi, d);
    }
    const double margin = 1e-9 * (1.0 + fabs(lo) + fabs(hi));
    w->dmin = lo - margin;
    w->dmax = hi + margin;
    active[na_++] = k;
  }
  if (na_ == 0) {
    memset(row, 0, sizeof(float) * (size_t)nb);
    return;
  }
  const double t0 = g->p.axis + g->axis_shift[a];
  const int S = j->s;
  const double inv = 1.0 / (double)S;
  for (int64_t b = 0; b < nb; b++) {
    double sum = 0.0;
    for (int m = 0; m < S; m++) {
      const double d = ((double)b + ((m + 0.5) * inv - 0.5) - t0) * ps;
      for (int64_t k = 0; k < na_; k++) {
        const sino_ell *w = &ell[k];
        if (d < w->dmin || d > w->dmax) continue;
        const double p[3] = {w->p0[0] + d * w->pd[0], w->p0[1] + d * w->pd[1],
                             w->p0[2] + d * w->pd[2]};
        const double chord = ctr__unit_sphere_chord(p, w->q, 0, 0.0);
        if (chord > 0.0) sum += j->ph->pre[active[k]].density * chord;
      }
    }
    row[b] = (float)(sum * inv);
  }
}

static ctr_status check_common(const char *fn, const ctr_phantom *ph,
                               const ctr_parallel_geometry *g, int supersample, const void *out) {
  if (!ph) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: phantom is NULL", fn);
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: geometry is NULL", fn);
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (supersample < 1 || supersample > 64)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: supersample is %d, expected 1..64", fn, supersample);
  return CTR_OK;
}

ctr_status ctr_phantom_sinogram(const ctr_phantom *ph, const ctr_parallel_geometry *g,
                                int64_t nslices, const double *z, int supersample,
                                float *out) {
  CTR_CHECK(check_common("ctr_phantom_sinogram", ph, g, supersample, out));
  if (nslices < 1)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_sinogram: nslices is %lld, expected >= 1",
             (long long)nslices);
  if (!z && !ctr__par_tilted(g))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_sinogram: z is NULL");
  for (int64_t s = 0; z && s < nslices; s++)
    if (!isfinite(z[s]))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_sinogram: z[%lld] is %g, expected a finite plane (mm)",
               (long long)s, z[s]);
  const int nthreads = ctr__num_threads(NULL);
  const size_t n = (size_t)ph->n + 1, nt = (size_t)nthreads;
  sino_job job = {ph, g, z, supersample, out, NULL, NULL};
  job.ell = ctr__malloc(nt * n * sizeof *job.ell, "phantom sinogram tables");
  job.active = ctr__malloc(nt * n * sizeof *job.active, "phantom sinogram tables");
  ctr_status st = CTR_OK;
  if (!job.ell || !job.active)
    st = CTR_E_OUT_OF_MEMORY; /* detail set by ctr__malloc */
  else
    st = ctr__phantom_rows(NULL, "phantom sinogram", nslices * g->p.nangles, nthreads, sino_row,
                           &job);
  free(job.ell);
  free(job.active);
  return st;
}

ctr_status ctr_phantom_slice(const ctr_phantom *ph, const ctr_parallel_geometry *g, double z,
                             int supersample, float *out) {
  CTR_CHECK(check_common("ctr_phantom_slice", ph, g, supersample, out));
  if (!isfinite(z))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_slice: z is %g, expected a finite plane (mm)", z);
  const int64_t nx = g->p.nx, ny = g->p.ny;
  const double h = g->p.voxel * g->p.pixel_size; /* pixel edge, mm */
  const int S = supersample;
  const double inv = 1.0 / ((double)S * S);
#pragma omp parallel for schedule(dynamic, 4) num_threads(ctr__num_threads(NULL))
  for (int64_t j = 0; j < ny; j++) {
    for (int64_t i = 0; i < nx; i++) {
      double sum = 0.0;
      for (int my = 0; my < S; my++) {
        const double y = ((double)j - 0.5 * (double)(ny - 1) + (my + 0.5) / S - 0.5) * h;
        for (int mx = 0; mx < S; mx++) {
          const double pt[3] = {((double)i - 0.5 * (double)(nx - 1) + (mx + 0.5) / S - 0.5) * h,
                                y, z};
          sum += ctr_phantom_density(ph, pt);
        }
      }
      out[j * nx + i] = (float)(sum * inv);
    }
  }
  return CTR_OK;
}
