/* ASTRA's parallel3d_vec rows as ctr_parallel_params, when they are a
 * parallel-beam scan of slices about the z axis (docs/geometry.md, "Vector
 * geometries"). A bin of view a is t = (x, y) . u^ / |u| + (nu - 1)/2 -
 * d . u^ / |u| for a point (x, y) of any slice, which is ctr_parallel_params'
 * t = x cos(theta) + y sin(theta) + axis + axis_shift[a] (x, y in bins of
 * |u| mm) with theta the direction of u. */
#include "core/internal.h"

#include <math.h>
#include <stdio.h>

#define CTR__PAR_TOL 1e-9 /* relative: what counts as perpendicular / equal */

static double dot3(const double *a, const double *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* The tilt (radians) of a view whose u is horizontal: v's direction is
 * sin(tilt) (sin t, -cos t, 0) + cos(tilt) z, t the direction of u
 * (docs/geometry.md, "Laminography"); NAN when v points down (cos <= 0). */
static double view_tilt(const double *V) {
  const double *u = V + 6, *v = V + 9;
  const double nu = hypot(u[0], u[1]), nv = sqrt(dot3(v, v));
  if (!(nu > 0.0) || !(nv > 0.0)) return NAN;
  const double a = (v[0] * u[1] - v[1] * u[0]) / (nu * nv), b = v[2] / nv;
  return b > 0.0 ? atan2(a, b) : NAN;
}

static int tilted_scan(const double *V0) {
  const double t = view_tilt(V0); /* NAN (v down): the untilted checks, which say why */
  return isfinite(t) && fabs(sin(t)) > CTR__PAR_TOL;
}

/* A tilted view against view 0's tilt: u horizontal with view 0's length, v
 * perpendicular to u with u's length, the ray along v x u (either sense),
 * the detector centre on the axis point's row (d . v = 0). */
static const char *tilted_misfit(const double *V, const double *V0) {
  const double *r = V, *u = V + 6, *v = V + 9;
  const double nr = sqrt(dot3(r, r)), nu = sqrt(dot3(u, u)), nv = sqrt(dot3(v, v));
  const double t = view_tilt(V), t0 = view_tilt(V0);
  double d[3] = {v[1] * u[2] - v[2] * u[1], v[2] * u[0] - v[0] * u[2], v[0] * u[1] - v[1] * u[0]};
  const double c[3] = {r[1] * d[2] - r[2] * d[1], r[2] * d[0] - r[0] * d[2], r[0] * d[1] - r[1] * d[0]};
  if (fabs(u[2]) > CTR__PAR_TOL * nu)
    return "u (along a detector row) is not perpendicular to the rotation axis z";
  if (fabs(nu - sqrt(dot3(V0 + 6, V0 + 6))) > CTR__PAR_TOL * nu)
    return "|u| differs from view 0's: ctr_parallel_params has one pixel size";
  if (fabs(dot3(u, v)) > CTR__PAR_TOL * nu * nv || fabs(nv - nu) > CTR__PAR_TOL * nu)
    return "v is not perpendicular to u with u's length (a tilted scan's rows are square pixels)";
  if (!(fabs(t - t0) <= CTR__PAR_TOL))
    return "v's tilt from z differs from view 0's (or v points down): one tilt a scan";
  if (sqrt(dot3(c, c)) > CTR__PAR_TOL * nr * nu * nv)
    return "the ray is not perpendicular to the detector (along v x u)";
  if (fabs(dot3(V + 3, v)) > CTR__PAR_TOL * nv * (nv + sqrt(dot3(V + 3, V + 3))))
    return "the detector centre is off the row of the axis point (d . v != 0): "
           "ctr_parallel_params has no row offset";
  return NULL;
}

static ctr_status view_check(int64_t i, const double *V, const double *V0) {
  static const char *const names[12] = {"rayX", "rayY", "rayZ", "dX", "dY", "dZ",
                                        "uX",   "uY",   "uZ",   "vX", "vY", "vZ"};
  for (int k = 0; k < 12; k++)
    if (!isfinite(V[k]))
      CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "vectors", CTR__V_REAL(V[k]),
                           "vectors: view %lld: %s = %g: expected a finite number",
                           (long long)i, names[k], V[k]);
  const double *r = V, *u = V + 6, *v = V + 9;
  const double nr = sqrt(dot3(r, r)), nu = sqrt(dot3(u, u)), nv = sqrt(dot3(v, v));
  if (!(nr > 0.0) || !(nu > 0.0) || !(nv > 0.0))
    CTR_FAIL_FIELD(CTR_E_GEOMETRY, "vectors",
                   "vectors: view %lld: the %s vector is zero: expected a ray direction and "
                   "the pixel pitches u and v",
                   (long long)i, !(nr > 0.0) ? "ray" : !(nu > 0.0) ? "u" : "v");
  const char *what = NULL;
  if (tilted_scan(V0)) {
    what = tilted_misfit(V, V0);
    if (what)
      CTR_FAIL_FIELD_VALUE(CTR_E_UNSUPPORTED, "vectors", CTR__V_INT(i),
                           "vectors: view %lld: %s; a tilted scan (laminography) is "
                           "representable with u horizontal, v = |u| (sin(tilt) (sin t, -cos t, "
                           "0) + cos(tilt) z) and the ray along v x u (docs/geometry.md)",
                           (long long)i, what);
    return CTR_OK;
  }
  if (fabs(r[2]) > CTR__PAR_TOL * nr)
    what = "the ray is not perpendicular to the rotation axis z (a tilted beam or axis)";
  else if (fabs(u[2]) > CTR__PAR_TOL * nu)
    what = "u (along a detector row) is not perpendicular to z: the rows are not slices";
  else if (fabs(dot3(u, r)) > CTR__PAR_TOL * nu * nr)
    what = "u is not perpendicular to the ray (an oblique detector)";
  else if (hypot(v[0], v[1]) > CTR__PAR_TOL * nv)
    what = "v (along a detector column) is not along z";
  else if (fabs(nu - sqrt(dot3(V0 + 6, V0 + 6))) > CTR__PAR_TOL * nu)
    what = "|u| differs from view 0's: ctr_parallel_params has one pixel size";
  else if (fabs(v[2] - V0[11]) > CTR__PAR_TOL * nv || fabs(V[5] - V0[5]) > CTR__PAR_TOL * nv)
    what = "the detector rows lie at other heights than view 0's (dZ or vZ differ)";
  if (what)
    CTR_FAIL_FIELD_VALUE(CTR_E_UNSUPPORTED, "vectors", CTR__V_INT(i),
                         "vectors: view %lld: %s; ctr_parallel_params holds rays perpendicular "
                         "to z, u perpendicular to z and to the ray with one length, v along z "
                         "(use a cone-beam or iterative geometry otherwise)",
                         (long long)i, what);
  return CTR_OK;
}

ctr_status ctr_parallel_params_from_vectors(int64_t nu, int64_t nv, int64_t nviews,
                                            const double *vectors, double *angles_deg,
                                            double *axis_shift, ctr_parallel_params *out,
                                            double *row_z) {
  if (nu < 1 || nu > (1 << 24))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "nu", CTR__V_INT(nu),
                         "nu = %lld: expected 1 .. 16777216 detector columns", (long long)nu);
  if (nv < 1 || nv > (1 << 24))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "nv", CTR__V_INT(nv),
                         "nv = %lld: expected 1 .. 16777216 detector rows", (long long)nv);
  if (nviews < 1 || nviews > (1 << 24))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "nviews", CTR__V_INT(nviews),
                         "nviews = %lld: expected 1 .. 16777216 views", (long long)nviews);
  if (!vectors) CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "vectors", "vectors is NULL");
  if (!angles_deg || !axis_shift || !out)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_parallel_params_from_vectors: angles_deg, axis_shift and out are required");
  for (int64_t i = 0; i < nviews; i++) CTR_CHECK(view_check(i, vectors + 12 * i, vectors));
  const double pitch = sqrt(dot3(vectors + 6, vectors + 6));
  for (int64_t i = 0; i < nviews; i++) {
    const double *V = vectors + 12 * i;
    const double n = hypot(V[6], V[7]), ux = V[6] / n, uy = V[7] / n;
    angles_deg[i] = atan2(uy, ux) * (180.0 / 3.14159265358979323846);
    axis_shift[i] = -(V[3] * ux + V[4] * uy) / pitch;
  }
  CTR_CHECK(ctr_parallel_params_init(out, CTR_PARALLEL_PARAMS_VERSION));
  out->nbins = nu;
  out->nangles = nviews;
  out->angles_deg = angles_deg;
  out->axis = 0.5 * (double)(nu - 1);
  out->axis_shift = axis_shift;
  out->pixel_size = pitch;
  if (tilted_scan(vectors)) { /* laminography: rows of their own, heights along v */
    out->tilt_deg = view_tilt(vectors) * (180.0 / 3.14159265358979323846);
    out->nrows = nv;
    if (row_z)
      for (int64_t r = 0; r < nv; r++) row_z[r] = ((double)r - 0.5 * (double)(nv - 1)) * pitch;
    return CTR_OK;
  }
  if (row_z)
    for (int64_t r = 0; r < nv; r++)
      row_z[r] = vectors[5] + ((double)r - 0.5 * (double)(nv - 1)) * vectors[11];
  return CTR_OK;
}
