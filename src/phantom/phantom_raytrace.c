/* Exact line integrals through ellipsoid phantoms and cone-beam projection of
 * a whole geometry. */
#include "phantom/phantom_internal.h"

#include "geometry/geometry_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double ctr__phantom_ray(const ctr_phantom *ph, const double o[3], const double d[3], int clip,
                        double tmin) {
  double sum = 0.0;
  for (int64_t k = 0; k < ph->n; k++) {
    const ctr__ellipsoid_pre *e = &ph->pre[k];
    const double *R = e->R;
    double p[3], q[3];
    for (int i = 0; i < 3; i++) {
      p[i] = R[3 * i] * o[0] + R[3 * i + 1] * o[1] + R[3 * i + 2] * o[2] - e->Rc[i];
      q[i] = R[3 * i] * d[0] + R[3 * i + 1] * d[1] + R[3 * i + 2] * d[2];
    }
    double chord = ctr__unit_sphere_chord(p, q, clip, tmin);
    if (chord > 0.0) sum += e->density * chord;
  }
  return sum;
}

double ctr_phantom_line_integral(const ctr_phantom *p, const double origin[3],
                                 const double dir[3]) {
  if (!p || !origin || !dir) return NAN;
  /* Normalised here so that the result is in mm whatever the caller's scale;
   * a zero or non-finite direction has no line and gives NaN. */
  double len = sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
  if (!(len > 0.0) || !isfinite(len)) return NAN;
  const double d[3] = {dir[0] / len, dir[1] / len, dir[2] / len};
  return ctr__phantom_ray(p, origin, d, 0, 0.0);
}

/* Per-view data that every ray of the view shares. */
typedef struct view_data {
  double minv[9]; /* inverse of the left 3x3 of P: pixel (u, v, 1) -> ray direction */
  double src[3];
  int cyl;          /* a cylindrical detector: rays from ctr__cyl_ray (core/cylmath.h) */
  ctr__cyl_view cv;
} view_data;

/* Per view and ellipsoid: the source in the unit-sphere frame and the
 * ellipsoid's bounding rectangle on the detector (pixel indices), used to skip
 * ellipsoids a ray cannot hit. */
typedef struct view_ellipsoid {
  double p[3];
  double umin, umax, vmin, vmax;
} view_ellipsoid;

static int invert3(const double m[9], double inv[9]) {
  double c00 = m[4] * m[8] - m[5] * m[7];
  double c01 = m[5] * m[6] - m[3] * m[8];
  double c02 = m[3] * m[7] - m[4] * m[6];
  double det = m[0] * c00 + m[1] * c01 + m[2] * c02;
  double scale = fabs(m[0]) + fabs(m[1]) + fabs(m[2]) + fabs(m[3]) + fabs(m[4]) + fabs(m[5]) +
                 fabs(m[6]) + fabs(m[7]) + fabs(m[8]);
  if (!isfinite(det) || fabs(det) <= 1e-14 * scale * scale * scale) return 0;
  double r = 1.0 / det;
  inv[0] = c00 * r;
  inv[1] = (m[2] * m[7] - m[1] * m[8]) * r;
  inv[2] = (m[1] * m[5] - m[2] * m[4]) * r;
  inv[3] = c01 * r;
  inv[4] = (m[0] * m[8] - m[2] * m[6]) * r;
  inv[5] = (m[2] * m[3] - m[0] * m[5]) * r;
  inv[6] = c02 * r;
  inv[7] = (m[1] * m[6] - m[0] * m[7]) * r;
  inv[8] = (m[0] * m[4] - m[1] * m[3]) * r;
  return 1;
}

/* Returns 0 when the view's matrix is singular (the caller raises, on the
 * calling thread). */
static int prepare_view(const ctr_phantom *ph, const ctr_geometry *g, int64_t view, view_data *vd,
                        view_ellipsoid *ve) {
  double P[12], M[9];
  ctr_geometry_get_matrix(g, view, P);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) M[3 * i + j] = P[4 * i + j];
  if (!invert3(M, vd->minv)) return 0;
  ctr_geometry_get_source(g, view, vd->src);
  vd->cyl = ctr__geometry_cyl_view(g, view, &vd->cv);
  for (int64_t k = 0; k < ph->n; k++) {
    const ctr__ellipsoid_pre *e = &ph->pre[k];
    view_ellipsoid *w = &ve[k];
    for (int i = 0; i < 3; i++)
      w->p[i] = e->R[3 * i] * vd->src[0] + e->R[3 * i + 1] * vd->src[1] +
                e->R[3 * i + 2] * vd->src[2] - e->Rc[i];
    /* The projection of a box lying wholly in front of the source is the hull
     * of its projected corners; otherwise no rectangle bounds it. */
    w->umin = w->vmin = INFINITY;
    w->umax = w->vmax = -INFINITY;
    int in_front = 1;
    for (int corner = 0; corner < 8 && in_front; corner++) {
      const double x[3] = {(corner & 1) ? e->hi[0] : e->lo[0], (corner & 2) ? e->hi[1] : e->lo[1],
                           (corner & 4) ? e->hi[2] : e->lo[2]};
      double a = P[0] * x[0] + P[1] * x[1] + P[2] * x[2] + P[3];
      double b = P[4] * x[0] + P[5] * x[1] + P[6] * x[2] + P[7];
      double c = P[8] * x[0] + P[9] * x[1] + P[10] * x[2] + P[11];
      if (!(c > 0.0)) {
        in_front = 0;
        break;
      }
      double u = a / c, v = b / c;
      w->umin = fmin(w->umin, u);
      w->umax = fmax(w->umax, u);
      w->vmin = fmin(w->vmin, v);
      w->vmax = fmax(w->vmax, v);
    }
    if (in_front && vd->cyl) {
      /* The tangent plane's bounds to the arc's: u = u0 + fu atan((u_flat -
       * u0) / fu) is monotone, and |v - v0| shrinks by cos(gamma) <= 1. */
      const ctr__cyl_view *c = &vd->cv;
      w->umin = c->u0 + c->fu * atan((w->umin - c->u0) / c->fu);
      w->umax = c->u0 + c->fu * atan((w->umax - c->u0) / c->fu);
      w->vmin = fmin(w->vmin, c->v0);
      w->vmax = fmax(w->vmax, c->v0);
    }
    if (in_front) {
      /* Margin for the rounding of the corner projections. */
      double mu = 1e-6 * (1.0 + fabs(w->umin) + fabs(w->umax));
      double mv = 1e-6 * (1.0 + fabs(w->vmin) + fabs(w->vmax));
      w->umin -= mu;
      w->umax += mu;
      w->vmin -= mv;
      w->vmax += mv;
    } else {
      w->umin = w->vmin = -INFINITY;
      w->umax = w->vmax = INFINITY;
    }
  }
  return 1;
}

/* One detector row of one view. `active` is scratch for n indices. */
static void project_row(const ctr_phantom *ph, const view_data *vd, const view_ellipsoid *ve,
                        int64_t nu, int64_t iv, int s, int64_t *active, float *row) {
  const double half = 0.5 - 0.5 / s; /* largest sub-pixel offset */
  int64_t na = 0;
  for (int64_t k = 0; k < ph->n; k++)
    if (ve[k].vmax >= iv - half && ve[k].vmin <= iv + half) active[na++] = k;
  if (na == 0) {
    memset(row, 0, (size_t)nu * sizeof *row);
    return;
  }
  const double *mi = vd->minv;
  const double inv_rays = 1.0 / ((double)s * s);
  for (int64_t iu = 0; iu < nu; iu++) {
    double sum = 0.0;
    for (int sv = 0; sv < s; sv++) {
      double v = (double)iv + ((sv + 0.5) / s - 0.5);
      for (int su = 0; su < s; su++) {
        double u = (double)iu + ((su + 0.5) / s - 0.5);
        /* M d = (u, v, 1) puts the ray in front of the source (c = t > 0). */
        double d[3] = {mi[0] * u + mi[1] * v + mi[2], mi[3] * u + mi[4] * v + mi[5],
                       mi[6] * u + mi[7] * v + mi[8]};
        if (vd->cyl) ctr__cyl_ray(&vd->cv, u, v, d);
        double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        d[0] /= len;
        d[1] /= len;
        d[2] /= len;
        for (int64_t a = 0; a < na; a++) {
          int64_t k = active[a];
          const view_ellipsoid *w = &ve[k];
          if (u < w->umin || u > w->umax || v < w->vmin || v > w->vmax) continue;
          const double *R = ph->pre[k].R;
          double q[3] = {R[0] * d[0] + R[1] * d[1] + R[2] * d[2],
                         R[3] * d[0] + R[4] * d[1] + R[5] * d[2],
                         R[6] * d[0] + R[7] * d[1] + R[8] * d[2]};
          /* Half line from the source: matter behind the source casts nothing. */
          double chord = ctr__unit_sphere_chord(w->p, q, 1, 0.0);
          if (chord > 0.0) sum += ph->pre[k].density * chord;
        }
      }
    }
    row[iu] = (float)(sum * inv_rays);
  }
}

/* Shared state of one projection; per-thread slots indexed by thread id keep
 * the data of the view each thread last worked on. */
typedef struct project_job {
  const ctr_phantom *ph;
  const ctr_geometry *g;
  int64_t nu, nv;
  int s;
  float *img;
  view_data *vd;   /* [thread] */
  int64_t *cached; /* [thread]: view held in vd / ve, -1 = none */
  view_ellipsoid *ve; /* [thread][ellipsoid] */
  int64_t *active;    /* [thread][ellipsoid] */
} project_job;

static void project_job_row(void *arg, int tid, int64_t r) {
  project_job *j = arg;
  const int64_t n = j->ph->n, view = r / j->nv, iv = r % j->nv;
  view_data *vd = &j->vd[tid];
  view_ellipsoid *ve = &j->ve[tid * n];
  /* Views were checked to be invertible before the parallel region. */
  if (j->cached[tid] != view) {
    prepare_view(j->ph, j->g, view, vd, ve);
    j->cached[tid] = view;
  }
  project_row(j->ph, vd, ve, j->nu, iv, j->s, &j->active[tid * n], j->img + r * j->nu);
}

ctr_status ctr_phantom_project(ctr_context *ctx, const ctr_phantom *p, const ctr_geometry *g,
                               int supersample, ctr_array *out) {
  ctr_status st = CTR_OK;

  if (!p) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_project: phantom is NULL");
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_project: geometry is NULL");
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_project: out is NULL");
  if (supersample < 1 || supersample > 64)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_project: supersample is %d, expected 1..64",
             supersample);
  int64_t nu, nv, nviews = ctr_geometry_get_view_count(g);
  ctr_geometry_get_detector(g, &nu, &nv, NULL, NULL);
  if (out->dtype != CTR_DTYPE_FLOAT32)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_project: out dtype is %s, expected float32",
             ctr_dtype_name(out->dtype));
  if (out->ndim != 3 || out->dims[0] != nu || out->dims[1] != nv || out->dims[2] != nviews) {
    char got[96] = "";
    int len = 0;
    for (int i = 0; i < out->ndim && i < CTR_MAX_DIMS && len < (int)sizeof got - 24; i++)
      len += snprintf(got + len, sizeof got - (size_t)len, "%s%lld", i ? " x " : "",
                      (long long)out->dims[i]);
    CTR_FAIL(CTR_E_SIZE_MISMATCH,
             "ctr_phantom_project: out is %s (ndim %d), expected nu x nv x nviews = "
             "%lld x %lld x %lld",
             out->ndim > 0 ? got : "empty", out->ndim, (long long)nu, (long long)nv,
             (long long)nviews);
  }
  if (!out->data) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_project: out data is NULL");

  for (int64_t i = 0; i < nviews; i++) {
    double P[12], M[9], inv[9];
    ctr_geometry_get_matrix(g, i, P);
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 3; c++) M[3 * r + c] = P[4 * r + c];
    if (!invert3(M, inv))
      CTR_FAIL(CTR_E_GEOMETRY,
               "ctr_phantom_project: view %lld: the left 3x3 of the projection matrix is "
               "singular, expected an invertible matrix",
               (long long)i);
  }

  project_job job = {p, g, nu, nv, supersample, out->data, NULL, NULL, NULL, NULL};
  const int nthreads = ctr__num_threads(ctx);
  const size_t n = (size_t)p->n, nt = (size_t)nthreads;
  job.vd = ctr__calloc(nt, sizeof *job.vd, "phantom projection view tables");
  job.cached = ctr__malloc(nt * sizeof *job.cached, "phantom projection view cache");
  job.ve = ctr__calloc(nt * n, sizeof *job.ve, "phantom projection ellipsoid tables");
  job.active = ctr__calloc(nt * n, sizeof *job.active, "phantom projection scratch");
  if (!job.vd || !job.cached || !job.ve || !job.active) {
    st = CTR_E_OUT_OF_MEMORY; /* detail set by ctr__calloc */
    goto cleanup;
  }
  for (size_t t = 0; t < nt; t++) job.cached[t] = -1;
  st = ctr__phantom_rows(ctx, "projecting phantom", nviews * nv, nthreads, project_job_row, &job);
cleanup:
  free(job.vd);
  free(job.cached);
  free(job.ve);
  free(job.active);
  return st;
}
