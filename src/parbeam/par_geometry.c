/* Parallel-beam geometry: validation, resolved defaults, angular weights. */
#include "parbeam/parbeam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Each angle's weight: half the distance between its neighbours on the
 * circle of directions (period 180 degrees); a uniform half-turn gets
 * pi / n. With a tilted axis the views of a half-turn apart see other rays:
 * the period is 360 degrees and every weight is multiplied by cos(tilt) / 2
 * (docs/geometry.md, "Laminography": the Jacobian of the Fourier slices),
 * pi cos(tilt) / n for a uniform full turn. */
static ctr_status angle_weights(ctr_parallel_geometry *g) {
  const int64_t n = g->p.nangles;
  double *m = ctr__malloc(sizeof(double) * (size_t)n, "angle weights");
  int64_t *order = ctr__malloc(sizeof(int64_t) * (size_t)n, "angle weights");
  double *key = ctr__malloc(sizeof(double) * 2 * (size_t)n, "angle weights");
  if (!m || !order || !key) {
    free(m);
    free(order);
    free(key);
    return CTR_E_OUT_OF_MEMORY;
  }
  const int tilted = g->p.tilt_deg != 0.0;
  const double period = tilted ? 360.0 : 180.0;
  const double scale = tilted ? 0.5 * cos(g->p.tilt_deg * M_PI / 180.0) : 1.0;
  /* Angles reduced to [0, period), sorted with their index. */
  for (int64_t a = 0; a < n; a++) {
    double r = fmod(g->angles_deg[a], period);
    if (r < 0) r += period;
    key[2 * a] = r;
    key[2 * a + 1] = (double)a;
  }
  qsort(key, (size_t)n, 2 * sizeof(double), cmp_double);
  for (int64_t k = 0; k < n; k++) {
    const double prev = k > 0 ? key[2 * (k - 1)] : key[2 * (n - 1)] - period;
    const double next = k < n - 1 ? key[2 * (k + 1)] : key[0] + period;
    m[k] = n == 1 ? period : 0.5 * (next - prev);
    if (tilted) m[k] *= scale;
    order[k] = (int64_t)key[2 * k + 1];
  }
  for (int64_t k = 0; k < n; k++) g->weight[order[k]] = m[k] * M_PI / 180.0 / g->p.pixel_size;
  free(m);
  free(order);
  free(key);
  return CTR_OK;
}

ctr_status ctr_parallel_create(const ctr_parallel_params *p, ctr_parallel_geometry **out) {
  ctr_status st = CTR_OK;
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_parallel_create: out is NULL");
  *out = NULL;
  if (!p) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_parallel_create: params are NULL");
  ctr_parallel_params pc;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_parallel_params, &pc, p));
  p = &pc;
  if (p->nbins < 1 || p->nbins > (1 << 24))
    CTR_FAIL(CTR_E_GEOMETRY, "nbins = %lld: expected 1 .. 16777216", (long long)p->nbins);
  if (p->nangles < 1 || p->nangles > (1 << 24))
    CTR_FAIL(CTR_E_GEOMETRY, "nangles = %lld: expected 1 .. 16777216", (long long)p->nangles);
  if (p->nx < 0 || p->ny < 0 || p->nx > (1 << 20) || p->ny > (1 << 20))
    CTR_FAIL(CTR_E_GEOMETRY, "slice size %lld x %lld: expected 0 (= nbins) .. 1048576",
             (long long)p->nx, (long long)p->ny);
  /* 0 = 1; beyond these bounds the slices miss the detector or their values overflow */
  const int voxel_ok = p->voxel == 0 || (p->voxel >= 1e-6 && p->voxel <= 1e6);
  if (!voxel_ok || !(p->pixel_size == 0 || (p->pixel_size >= 1e-30 && p->pixel_size <= 1e9)))
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY,
                         voxel_ok ? "ctr_parallel_params.pixel_size" : "ctr_parallel_params.voxel",
                         CTR__V_REAL(voxel_ok ? p->pixel_size : p->voxel),
                         "voxel %g, pixel_size %g: expected a voxel of 1e-6 .. 1e6 bins and a "
                         "pixel_size of 1e-30 .. 1e9 mm (0 = 1)", p->voxel, p->pixel_size);
  if (p->axis != CTR_AXIS_CENTER && !isfinite(p->axis))
    CTR_FAIL(CTR_E_GEOMETRY, "axis %g: expected a finite bin position", p->axis);
  const int start_ok = fabs(p->angle_start_deg) <= 1e9;
  if (!p->angles_deg && (!start_ok || !(fabs(p->angle_range_deg) <= 1e9) ||
                         p->angle_range_deg == 0))
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY,
                         start_ok ? "ctr_parallel_params.angle_range_deg"
                                  : "ctr_parallel_params.angle_start_deg",
                         CTR__V_REAL(start_ok ? p->angle_range_deg : p->angle_start_deg),
                         "angle_start_deg %g, angle_range_deg %g: expected values within +-1e9 "
                         "degrees, range != 0", p->angle_start_deg, p->angle_range_deg);
  if (!(fabs(p->tilt_deg) < 90.0))
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "ctr_parallel_params.tilt_deg", CTR__V_REAL(p->tilt_deg),
                         "ctr_parallel_params.tilt_deg %g: expected degrees in (-90, 90) (0 = "
                         "tomography; 90 would "
                         "put the rotation axis along the beam)", p->tilt_deg);
  if (p->nrows < 0 || p->nrows > (1 << 20) || (p->tilt_deg != 0.0 && p->nrows < 1))
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "ctr_parallel_params.nrows", CTR__V_INT(p->nrows),
                         "ctr_parallel_params.nrows %lld: expected %s .. 1048576 (the detector "
                         "rows%s)",
                         (long long)p->nrows, p->tilt_deg != 0.0 ? "1" : "0",
                         p->tilt_deg != 0.0 ? "; a tilted axis needs them: a row is not a slice"
                                            : "; 0 = one per slice");
  ctr_parallel_geometry *g = ctr__calloc(1, sizeof *g, "parallel geometry");
  if (!g) return CTR_E_OUT_OF_MEMORY;
  g->p = *p;
  const int64_t n = p->nangles;
  g->angles_deg = ctr__malloc(sizeof(double) * (size_t)n, "angles");
  g->axis_shift = ctr__calloc((size_t)n, sizeof(double), "axis shifts");
  g->weight = ctr__malloc(sizeof(double) * (size_t)n, "angle weights");
  if (!g->angles_deg || !g->axis_shift || !g->weight) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  for (int64_t a = 0; a < n; a++) {
    const double t = p->angles_deg ? p->angles_deg[a]
                                   : p->angle_start_deg + (double)a * p->angle_range_deg / (double)n;
    if (!isfinite(t)) CTR_FAIL_GOTO(st, CTR_E_GEOMETRY, "angles_deg[%lld] = %g: expected a finite angle", (long long)a, t);
    g->angles_deg[a] = t;
    if (p->axis_shift) {
      if (!isfinite(p->axis_shift[a]))
        CTR_FAIL_GOTO(st, CTR_E_GEOMETRY, "axis_shift[%lld] = %g: expected a finite shift (bins)",
                      (long long)a, p->axis_shift[a]);
      g->axis_shift[a] = p->axis_shift[a];
    }
  }
  g->p.nx = p->nx ? p->nx : p->nbins;
  g->p.ny = p->ny ? p->ny : p->nbins;
  g->p.voxel = p->voxel > 0 ? p->voxel : 1.0;
  g->p.pixel_size = p->pixel_size > 0 ? p->pixel_size : 1.0;
  g->p.axis = p->axis == CTR_AXIS_CENTER ? 0.5 * (double)(p->nbins - 1) : p->axis;
  g->p.angles_deg = g->angles_deg;
  g->p.axis_shift = g->axis_shift;
  CTR_CHECK_GOTO(st, angle_weights(g));
  *out = g;
  return CTR_OK;
cleanup:
  ctr_parallel_free(g);
  return st;
}

void ctr_parallel_free(ctr_parallel_geometry *g) {
  if (!g) return;
  free(g->angles_deg);
  free(g->axis_shift);
  free(g->weight);
  free(g);
}

const ctr_parallel_params *ctr_parallel_get_params(const ctr_parallel_geometry *g) { return g ? &g->p : NULL; }

double ctr_parallel_get_weight(const ctr_parallel_geometry *g, int64_t a) {
  return g && a >= 0 && a < g->p.nangles ? g->weight[a] * g->p.pixel_size : 0.0;
}

void ctr__par_angles(const ctr_parallel_geometry *g, int64_t a0, int64_t n, ctr__par_angle *out) {
  const double x0 = -0.5 * (double)(g->p.nx - 1) * g->p.voxel;
  const double y0 = -0.5 * (double)(g->p.ny - 1) * g->p.voxel;
  for (int64_t k = 0; k < n; k++) {
    const double th = g->angles_deg[a0 + k] * M_PI / 180.0;
    const double c = cos(th), s = sin(th);
    out[k].c = c * g->p.voxel;
    out[k].s = s * g->p.voxel;
    out[k].t0 = x0 * c + y0 * s + g->p.axis + g->axis_shift[a0 + k];
    out[k].w = g->weight[a0 + k];
  }
}

int ctr__par_tilted(const ctr_parallel_geometry *g) { return g->p.tilt_deg != 0.0; }

void ctr__lamino_axes(double theta_deg, double tilt_deg, double eu[3], double ev[3], double d[3]) {
  const double th = theta_deg * M_PI / 180.0, ph = tilt_deg * M_PI / 180.0;
  const double c = cos(th), s = sin(th), cp = cos(ph), sp = sin(ph);
  eu[0] = c, eu[1] = s, eu[2] = 0.0;
  ev[0] = sp * s, ev[1] = -sp * c, ev[2] = cp;
  d[0] = -cp * s, d[1] = cp * c, d[2] = sp;
}

void ctr__lamino_views(const ctr_parallel_geometry *g, int64_t nz, int64_t a0, int64_t n,
                       ctr__lamino_view *out) {
  const double cx = 0.5 * (double)(g->p.nx - 1), cy = 0.5 * (double)(g->p.ny - 1);
  const double cz = 0.5 * (double)(nz - 1), vx = g->p.voxel;
  for (int64_t k = 0; k < n; k++) {
    double eu[3], ev[3], d[3];
    ctr__lamino_axes(g->angles_deg[a0 + k], g->p.tilt_deg, eu, ev, d);
    ctr__lamino_view *w = &out[k];
    w->u[0] = vx * eu[0];
    w->u[1] = vx * eu[1];
    w->u[2] = 0.0;
    w->u[3] = g->p.axis + g->axis_shift[a0 + k] - cx * w->u[0] - cy * w->u[1];
    w->v[0] = vx * ev[0];
    w->v[1] = vx * ev[1];
    w->v[2] = ev[2];
    w->v[3] = 0.5 * (double)(g->p.nrows - 1) - cx * w->v[0] - cy * w->v[1] - cz * w->v[2];
    w->w = g->weight[a0 + k];
  }
}
