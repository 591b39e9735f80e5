/* Geometry construction: circular orbits and arbitrary matrices, both reduced
 * to the canonical per-view form; validation; scan analysis for FDK weights. */
#include "geometry/geometry_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CTR__PI 3.14159265358979323846

static int finite_pos(double x) { return isfinite(x) && x > 0.0; }

static double dot3(const double *a, const double *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

ctr_status ctr__volume_validate(const ctr_volume_geometry *vol) {
  if (!vol) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "volume geometry is NULL");
  const int64_t n[3] = {vol->nx, vol->ny, vol->nz};
  const double s[3] = {vol->voxel_x, vol->voxel_y, vol->voxel_z};
  const double o[3] = {vol->offset_x, vol->offset_y, vol->offset_z};
  static const char axis[3] = {'x', 'y', 'z'};
  for (int i = 0; i < 3; i++) {
    if (n[i] < 1 || n[i] > (1 << 20))
      CTR_FAIL(CTR_E_GEOMETRY, "volume n%c = %lld: expected 1 .. 1048576 voxels", axis[i],
               (long long)n[i]);
    if (!finite_pos(s[i]))
      CTR_FAIL(CTR_E_GEOMETRY, "volume voxel_%c = %g: expected a finite size > 0 (mm)", axis[i],
               s[i]);
    if (!isfinite(o[i]))
      CTR_FAIL(CTR_E_GEOMETRY, "volume offset_%c = %g: expected a finite value (mm)", axis[i],
               o[i]);
  }
  return CTR_OK;
}

/* Solves A x = b for 3x3 A (row-major) by Cramer's rule; 0 if singular. */
static int solve3(const double A[9], const double b[3], double x[3]) {
  double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
               A[2] * (A[3] * A[7] - A[4] * A[6]);
  double scale = fabs(A[0]) + fabs(A[1]) + fabs(A[2]) + fabs(A[3]) + fabs(A[4]) + fabs(A[5]) +
                 fabs(A[6]) + fabs(A[7]) + fabs(A[8]);
  if (!isfinite(det) || fabs(det) <= 1e-14 * scale * scale * scale) return 0;
  for (int c = 0; c < 3; c++) {
    double B[9];
    memcpy(B, A, sizeof B);
    for (int r = 0; r < 3; r++) B[r * 3 + c] = b[r];
    x[c] = (B[0] * (B[4] * B[8] - B[5] * B[7]) - B[1] * (B[3] * B[8] - B[5] * B[6]) +
            B[2] * (B[3] * B[7] - B[4] * B[6])) /
           det;
  }
  return 1;
}

ctr_status ctr__view_from_matrix(const double Min[12], const char *what, ctr__view *out) {
  for (int i = 0; i < 12; i++)
    if (!isfinite(Min[i]))
      CTR_FAIL(CTR_E_GEOMETRY, "%s: matrix element %d is %g: expected a finite number", what, i,
               Min[i]);
  if (Min[11] == 0.0)
    CTR_FAIL(CTR_E_GEOMETRY,
             "%s: matrix element [2][3] is 0: the world origin lies in the source plane; "
             "the origin must be in front of the source",
             what);
  ctr__view v;
  memset(&v, 0, sizeof v);
  for (int i = 0; i < 12; i++) v.P[i] = Min[i] / Min[11];
  const double m1[3] = {v.P[0], v.P[1], v.P[2]};
  const double m2[3] = {v.P[4], v.P[5], v.P[6]};
  const double m3[3] = {v.P[8], v.P[9], v.P[10]};
  double n3 = sqrt(dot3(m3, m3));
  if (!(n3 > 0.0)) CTR_FAIL(CTR_E_GEOMETRY, "%s: matrix row 2 has a zero 3x3 part", what);
  v.dist = 1.0 / n3;
  double r3[3] = {m3[0] * v.dist, m3[1] * v.dist, m3[2] * v.dist};
  double n1[3] = {m1[0] * v.dist, m1[1] * v.dist, m1[2] * v.dist};
  double n2[3] = {m2[0] * v.dist, m2[1] * v.dist, m2[2] * v.dist};
  v.u0 = dot3(n1, r3);
  v.v0 = dot3(n2, r3);
  double n2p[3], n1p[3];
  for (int k = 0; k < 3; k++) n2p[k] = n2[k] - v.v0 * r3[k];
  v.fv = sqrt(dot3(n2p, n2p));
  if (!(v.fv > 0.0)) CTR_FAIL(CTR_E_GEOMETRY, "%s: matrix is degenerate (rows 1 and 2 parallel)", what);
  double r2[3] = {n2p[0] / v.fv, n2p[1] / v.fv, n2p[2] / v.fv};
  for (int k = 0; k < 3; k++) n1p[k] = n1[k] - v.u0 * r3[k];
  double skew = dot3(n1p, r2);
  for (int k = 0; k < 3; k++) n1p[k] -= skew * r2[k];
  v.fu = sqrt(dot3(n1p, n1p));
  if (!(v.fu > 0.0)) CTR_FAIL(CTR_E_GEOMETRY, "%s: matrix is degenerate (rows 0 and 2 parallel)", what);
  for (int k = 0; k < 3; k++) v.axis_u[k] = n1p[k] / v.fu;
  const double A[9] = {v.P[0], v.P[1], v.P[2], v.P[4], v.P[5], v.P[6], v.P[8], v.P[9], v.P[10]};
  const double b[3] = {-v.P[3], -v.P[7], -v.P[11]};
  if (!solve3(A, b, v.src))
    CTR_FAIL(CTR_E_GEOMETRY, "%s: the left 3x3 part of the matrix is singular", what);
  v.angle = atan2(v.src[1], v.src[0]);
  *out = v;
  return CTR_OK;
}

static double corner(const ctr_volume_geometry *vol, int axis, int hi) {
  const int64_t n = axis == 0 ? vol->nx : axis == 1 ? vol->ny : vol->nz;
  const double s = axis == 0 ? vol->voxel_x : axis == 1 ? vol->voxel_y : vol->voxel_z;
  const double o = axis == 0 ? vol->offset_x : axis == 1 ? vol->offset_y : vol->offset_z;
  return o + (hi ? 0.5 : -0.5) * (double)n * s;
}

ctr_status ctr__geometry_check_volume(const ctr_geometry *g, const ctr_volume_geometry *vol) {
  CTR_CHECK(ctr__volume_validate(vol));
  double lo[3], hi[3];
  for (int a = 0; a < 3; a++) {
    lo[a] = corner(vol, a, 0);
    hi[a] = corner(vol, a, 1);
  }
  for (int64_t i = 0; i < g->nviews; i++) {
    const ctr__view *v = &g->views[i];
    int inside = 1;
    for (int a = 0; a < 3; a++) inside &= v->src[a] >= lo[a] && v->src[a] <= hi[a];
    if (inside)
      CTR_FAIL(CTR_E_GEOMETRY,
               "view %lld: the source at (%.3g, %.3g, %.3g) mm lies inside the volume "
               "[%.3g, %.3g] x [%.3g, %.3g] x [%.3g, %.3g] mm; increase sid or shrink the volume",
               (long long)i, v->src[0], v->src[1], v->src[2], lo[0], hi[0], lo[1], hi[1], lo[2],
               hi[2]);
    for (int c = 0; c < 8; c++) {
      double p[3] = {c & 1 ? hi[0] : lo[0], c & 2 ? hi[1] : lo[1], c & 4 ? hi[2] : lo[2]};
      double w = v->P[8] * p[0] + v->P[9] * p[1] + v->P[10] * p[2] + v->P[11];
      if (!(w > 0.0))
        CTR_FAIL(CTR_E_GEOMETRY,
                 "view %lld: the volume corner (%.3g, %.3g, %.3g) mm lies behind the source "
                 "plane; increase sid or shrink the volume",
                 (long long)i, p[0], p[1], p[2]);
    }
  }
  return CTR_OK;
}

static ctr_status geometry_alloc(int64_t nviews, ctr_geometry **out) {
  ctr_geometry *g = ctr__calloc(1, sizeof *g, "geometry");
  if (!g) return CTR_E_OUT_OF_MEMORY;
  g->nviews = nviews;
  g->views = ctr__calloc((size_t)nviews, sizeof *g->views, "geometry views");
  if (!g->views) {
    free(g);
    return CTR_E_OUT_OF_MEMORY;
  }
  *out = g;
  return CTR_OK;
}

/* Unwraps view azimuths so consecutive views differ by less than pi. */
static void unwrap_angles(ctr_geometry *g) {
  for (int64_t i = 1; i < g->nviews; i++) {
    double d = g->views[i].angle - g->views[i - 1].angle;
    d -= 2.0 * CTR__PI * floor((d + CTR__PI) / (2.0 * CTR__PI));
    g->views[i].angle = g->views[i - 1].angle + d;
  }
}

static ctr_status finish(ctr_geometry *g, const ctr_volume_geometry *vol, ctr_geometry **out) {
  unwrap_angles(g);
  ctr_status st = ctr__geometry_check_volume(g, vol);
  if (st != CTR_OK) {
    ctr_geometry_free(g);
    return st;
  }
  g->vol = *vol;
  *out = g;
  return CTR_OK;
}

/* `params` names the struct whose detector field errors name
 * ("ctr_circular_params", or a helix's "ctr_helical_params"). */
static ctr_status circular_validate(const ctr_circular_params *p, const char *params) {
  char det_field[48];
  snprintf(det_field, sizeof det_field, "%s.detector", params);
  if (!finite_pos(p->sid))
    CTR_FAIL(CTR_E_GEOMETRY, "sid = %g: expected a finite source-to-isocentre distance > 0 (mm)",
             p->sid);
  if (!finite_pos(p->sdd))
    CTR_FAIL(CTR_E_GEOMETRY, "sdd = %g: expected a finite source-to-detector distance > 0 (mm)",
             p->sdd);
  /* The detector lies beyond the isocentre: sdd <= sid puts it between the
   * source and the rotation axis (or on it), physically impossible. */
  if (!(p->sdd > p->sid))
    CTR_FAIL(CTR_E_GEOMETRY,
             "sdd = %g <= sid = %g: expected the source-to-detector distance to exceed the "
             "source-to-isocentre distance (the detector beyond the rotation axis); are the two "
             "swapped?", p->sdd, p->sid);
  if (p->nu < 1 || p->nu > (1 << 20))
    CTR_FAIL(CTR_E_GEOMETRY, "nu = %lld: expected 1 .. 1048576 detector columns", (long long)p->nu);
  if (p->nv < 1 || p->nv > (1 << 20))
    CTR_FAIL(CTR_E_GEOMETRY, "nv = %lld: expected 1 .. 1048576 detector rows", (long long)p->nv);
  if (!finite_pos(p->du)) CTR_FAIL(CTR_E_GEOMETRY, "du = %g: expected a pixel pitch > 0 (mm)", p->du);
  if (!finite_pos(p->dv)) CTR_FAIL(CTR_E_GEOMETRY, "dv = %g: expected a pixel pitch > 0 (mm)", p->dv);
  if (!isfinite(p->offset_u))
    CTR_FAIL(CTR_E_GEOMETRY, "offset_u = %g: expected a finite value (mm)", p->offset_u);
  if (!isfinite(p->offset_v))
    CTR_FAIL(CTR_E_GEOMETRY, "offset_v = %g: expected a finite value (mm)", p->offset_v);
  if (p->nviews < 1 || p->nviews > (1 << 24))
    CTR_FAIL(CTR_E_GEOMETRY, "nviews = %lld: expected 1 .. 16777216 views", (long long)p->nviews);
  if (p->angles_deg) {
    for (int64_t i = 0; i < p->nviews; i++)
      if (!isfinite(p->angles_deg[i]))
        CTR_FAIL(CTR_E_GEOMETRY, "angles_deg[%lld] = %g: expected a finite angle (degrees)",
                 (long long)i, p->angles_deg[i]);
  } else {
    if (!isfinite(p->angle_start_deg))
      CTR_FAIL(CTR_E_GEOMETRY, "angle_start_deg = %g: expected a finite angle", p->angle_start_deg);
    if (!isfinite(p->angle_range_deg) || p->angle_range_deg <= 0.0 || p->angle_range_deg > 720.0)
      CTR_FAIL(CTR_E_GEOMETRY, "angle_range_deg = %g: expected 0 < range <= 720 degrees",
               p->angle_range_deg);
  }
  if (p->direction != CTR_ROTATION_CCW && p->direction != CTR_ROTATION_CW)
    CTR_FAIL(CTR_E_GEOMETRY, "direction = %d: expected 1 (counter-clockwise) or -1 (clockwise)",
             (int)p->direction);
  if (p->detector != CTR_DETECTOR_FLAT && p->detector != CTR_DETECTOR_CYLINDRICAL)
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, det_field, CTR__V_INT(p->detector),
                         "detector = %d: expected 0 (flat) or 1 (cylindrical)", (int)p->detector);
  if (p->detector == CTR_DETECTOR_CYLINDRICAL) {
    /* Every column's outer edge within +-90 degrees of the principal ray:
     * the arc stays in front of the source (and the equiangular ramp kernel's
     * lags, at most the fan angle, below 180 degrees). */
    const double u0 = 0.5 * (double)(p->nu - 1) - p->offset_u / p->du;
    const double edge = (fmax(u0, (double)(p->nu - 1) - u0) + 0.5) * p->du / p->sdd;
    if (!(edge < 0.5 * CTR__PI))
      CTR_FAIL_FIELD(CTR_E_GEOMETRY, det_field,
                     "cylindrical detector: its farthest column edge is %.1f degrees from the "
                     "principal ray (nu %lld x du %g mm on an arc of radius sdd %g mm, offset_u "
                     "%g mm); expected below 90",
                     edge * 180.0 / CTR__PI, (long long)p->nu, p->du, p->sdd, p->offset_u);
  }
  return CTR_OK;
}

/* 1 when a scan spanning `span` degrees is radians read as degrees (*out
 * gets the span), else 0. */
static int span_says_radians(double span, double *out) {
  if (!(span < CTR_RADIANS_SPAN_DEG)) return 0;
  if (out) *out = span;
  return 1;
}

int ctr_angles_look_like_radians(const double *angles_deg, int64_t n, double range_deg,
                                 double *span_deg) {
  if (n < 2) return 0;
  double span = fabs(range_deg) * (double)(n - 1) / (double)n;
  if (angles_deg) {
    double lo = angles_deg[0], hi = angles_deg[0];
    for (int64_t i = 1; i < n; i++) {
      lo = fmin(lo, angles_deg[i]);
      hi = fmax(hi, angles_deg[i]);
    }
    span = hi - lo;
  }
  return span_says_radians(span, span_deg);
}

int ctr_geometry_angles_look_like_radians(const ctr_geometry *g, double *span_deg) {
  const int64_t n = g ? ctr_geometry_get_view_count(g) : 0;
  if (!g || !ctr_geometry_is_circular(g) || n < 2) return 0;
  /* each source's angle about the axis, unwrapped from view to view (a scan
   * read from radians moves by a small fraction of a degree a view) */
  double s[3], prev = 0, a = 0, lo = 0, hi = 0;
  for (int64_t i = 0; i < n; i++) {
    ctr_geometry_get_source(g, i, s);
    const double t = atan2(s[1], s[0]) * 57.295779513082320876798; /* degrees */
    if (i == 0) a = t;
    else a += remainder(t - prev, 360.0);
    prev = t;
    lo = i ? fmin(lo, a) : a;
    hi = i ? fmax(hi, a) : a;
  }
  return span_says_radians(hi - lo, span_deg);
}

/* Canonical matrix of a circular orbit at angle t (derivation in
 * docs/geometry.md). */
static void circular_matrix(const ctr_circular_params *p, double t, double P[12]) {
  const double d = p->sid, D = p->sdd, c = cos(t), s = sin(t);
  const double u0 = 0.5 * (double)(p->nu - 1) - p->offset_u / p->du;
  const double v0 = 0.5 * (double)(p->nv - 1) - p->offset_v / p->dv;
  const double fu = D / p->du, fv = D / p->dv;
  P[0] = (-fu * s - u0 * c) / d;
  P[1] = (fu * c - u0 * s) / d;
  P[2] = 0.0;
  P[3] = u0;
  P[4] = -v0 * c / d;
  P[5] = -v0 * s / d;
  P[6] = fv / d;
  P[7] = v0;
  P[8] = -c / d;
  P[9] = -s / d;
  P[10] = 0.0;
  P[11] = 1.0;
}

/* View i of a circular orbit at angle a_deg, moved up by zs mm (a helix's
 * view; 0: the circle's): the matrix applied to (x, y, z - zs), which
 * changes row 1's constant only (P[2] = P[10] = 0). */
static ctr_status orbit_view(const ctr_circular_params *p, double a_deg, double zs, int64_t i,
                             ctr__view *out) {
  double P[12];
  circular_matrix(p, a_deg * CTR__PI / 180.0, P);
  if (zs != 0.0) P[7] -= P[6] * zs;
  char what[48];
  snprintf(what, sizeof what, "view %lld", (long long)i);
  return ctr__view_from_matrix(P, what, out);
}

ctr_status ctr_geometry_create_circular(const ctr_circular_params *p,
                                        const ctr_volume_geometry *vol, ctr_geometry **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_geometry_create_circular: out is NULL");
  *out = NULL;
  if (!p) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "circular parameters are NULL");
  ctr_circular_params pc;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_circular_params, &pc, p));
  p = &pc;
  CTR_CHECK(circular_validate(p, "ctr_circular_params"));
  CTR_CHECK(ctr__volume_validate(vol));
  ctr_geometry *g = NULL;
  CTR_CHECK(geometry_alloc(p->nviews, &g));
  g->angles_deg = ctr__malloc((size_t)p->nviews * sizeof(double), "angle list");
  if (!g->angles_deg) {
    ctr_geometry_free(g);
    return CTR_E_OUT_OF_MEMORY;
  }
  g->nu = p->nu;
  g->nv = p->nv;
  g->du = p->du;
  g->dv = p->dv;
  g->circular = 1;
  g->curved = p->detector == CTR_DETECTOR_CYLINDRICAL;
  g->circ = *p;
  for (int64_t i = 0; i < p->nviews; i++) {
    double a = p->angles_deg ? p->angles_deg[i]
                             : p->angle_start_deg + (double)p->direction * (double)i *
                                                        p->angle_range_deg / (double)p->nviews;
    g->angles_deg[i] = a;
    ctr_status st = orbit_view(p, a, 0.0, i, &g->views[i]);
    if (st != CTR_OK) {
      ctr_geometry_free(g);
      return st;
    }
  }
  g->circ.angles_deg = g->angles_deg;
  return finish(g, vol, out);
}

/* ---- Helical orbits ------------------------------------------------------ */

/* The circular orbit a helix winds along (its matrices at z = 0). */
static ctr_circular_params helix_circle(const ctr_helical_params *p) {
  ctr_circular_params c = CTR_CIRCULAR_PARAMS_INIT;
  c.sid = p->sid;
  c.sdd = p->sdd;
  c.nu = p->nu;
  c.nv = p->nv;
  c.du = p->du;
  c.dv = p->dv;
  c.offset_u = p->offset_u;
  c.offset_v = p->offset_v;
  c.nviews = p->nviews;
  c.angle_start_deg = p->angle_start_deg;
  c.angle_range_deg = p->angle_range_deg;
  c.direction = p->direction;
  c.detector = p->detector;
  return c;
}

/* View i's source height on helix p (mm). */
static double helix_source_z(const ctr_helical_params *p, int64_t i) {
  const double turned = (double)i * (p->angle_range_deg / (double)p->nviews);
  return p->z0_mm + p->pitch_mm * turned / 360.0;
}

static ctr_status helical_validate(const ctr_helical_params *p) {
  if (!isfinite(p->pitch_mm))
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "ctr_helical_params.pitch_mm", CTR__V_REAL(p->pitch_mm),
                         "pitch_mm = %g: expected a finite table feed per turn (mm)", p->pitch_mm);
  if (p->pitch_mm == 0.0)
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "ctr_helical_params.pitch_mm", CTR__V_REAL(0.0),
                         "pitch_mm = 0: a helix of pitch 0 is a circular orbit; use "
                         "ctr_geometry_create_circular (JSON \"type\": \"circular\")");
  if (!isfinite(p->z0_mm))
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "ctr_helical_params.z0_mm", CTR__V_REAL(p->z0_mm),
                         "z0_mm = %g: expected a finite source height of view 0 (mm)", p->z0_mm);
  if (!(p->window_deg >= 0.0 && p->window_deg <= 90.0) &&
      p->window_deg != CTR_HELIX_WINDOW_AUTO)
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "ctr_helical_params.window_deg",
                         CTR__V_REAL(p->window_deg),
                         "window_deg = %g: expected 0 .. 90 degrees (FDK's window smoothing "
                         "width), or CTR_HELIX_WINDOW_AUTO (-1: the widest the pitch allows, up "
                         "to 10)", p->window_deg);
  if (p->nviews < 2 || p->nviews > (1 << 24))
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "ctr_helical_params.nviews", CTR__V_INT(p->nviews),
                         "nviews = %lld: expected 2 .. 16777216 views", (long long)p->nviews);
  if (!(isfinite(p->angle_range_deg) && p->angle_range_deg > 0.0 &&
        p->angle_range_deg <= 3.6e6))
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "ctr_helical_params.angle_range_deg",
                         CTR__V_REAL(p->angle_range_deg),
                         "angle_range_deg = %g: expected 0 < range <= 3600000 degrees (10000 "
                         "turns)", p->angle_range_deg);
  ctr_circular_params c = helix_circle(p);
  c.angle_range_deg = 360.0; /* checked above: a helix's range may exceed the circle's */
  return circular_validate(&c, "ctr_helical_params");
}

ctr_status ctr_geometry_create_helical(const ctr_helical_params *p,
                                       const ctr_volume_geometry *vol, ctr_geometry **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_geometry_create_helical: out is NULL");
  *out = NULL;
  if (!p) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "helical parameters are NULL");
  ctr_helical_params hp;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_helical_params, &hp, p));
  p = &hp;
  CTR_CHECK(helical_validate(p));
  CTR_CHECK(ctr__volume_validate(vol));
  const ctr_circular_params c = helix_circle(p);
  ctr_geometry *g = NULL;
  CTR_CHECK(geometry_alloc(p->nviews, &g));
  g->nu = p->nu;
  g->nv = p->nv;
  g->du = p->du;
  g->dv = p->dv;
  g->helical = 1;
  g->curved = p->detector == CTR_DETECTOR_CYLINDRICAL;
  g->hel = *p;
  const double step = p->angle_range_deg / (double)p->nviews;
  for (int64_t i = 0; i < p->nviews; i++) {
    const double turned = (double)i * step; /* degrees of rotation since view 0 */
    const double a = p->angle_start_deg + (double)p->direction * turned;
    ctr_status st = orbit_view(&c, a, helix_source_z(p, i), i, &g->views[i]);
    if (st != CTR_OK) {
      ctr_geometry_free(g);
      return st;
    }
  }
  return finish(g, vol, out);
}

int ctr_geometry_get_helical(const ctr_geometry *g, ctr_helical_params *p) {
  if (!g || !g->helical) return 0;
  if (p) *p = g->hel;
  return 1;
}

/* The largest window (radians) the pitch keeps within its limit: s with
 * |pitch| = limit(s), from limit(s) = limit(0) pi / (pi + s); -1 when the
 * pitch exceeds limit(0). */
static double helix_widest_window(const ctr_geometry *g) {
  const double l0 = ctr__helix_pitch_limit(g, 0.0), p = fabs(g->hel.pitch_mm);
  if (!(p <= l0 * (1.0 + 1e-9))) return -1.0;
  return fmax(CTR__PI * (l0 / p - 1.0), 0.0);
}

/* FDK's window (radians): the given one, or the automatic choice. */
static double helix_window_rad(const ctr_geometry *g) {
  if (g->hel.window_deg != CTR_HELIX_WINDOW_AUTO) return g->hel.window_deg * CTR__PI / 180.0;
  const double widest = helix_widest_window(g);
  return widest < 0.0 ? 0.0 : fmin(widest, CTR__HELIX_AUTO_MAX_DEG * CTR__PI / 180.0);
}

double ctr_geometry_get_helix_window(const ctr_geometry *g, int *automatic) {
  if (automatic) *automatic = 0;
  if (!g || !g->helical) return NAN;
  if (g->hel.window_deg != CTR_HELIX_WINDOW_AUTO) return g->hel.window_deg;
  if (automatic) *automatic = 1;
  if (helix_widest_window(g) < 0.0) return -1.0;
  return helix_window_rad(g) * 180.0 / CTR__PI;
}

int ctr__geometry_helix(const ctr_geometry *g, ctr__helix_fdk *h) {
  if (!g || !g->helical) return 0;
  h->kz = 2.0 * CTR__PI / g->hel.pitch_mm;
  h->s = helix_window_rad(g);
  return 1;
}

double ctr__helix_pitch_limit(const ctr_geometry *g, double s) {
  /* On the axis (c = 1) view i puts height z at row v0 + fv (z - src_z) /
   * dist, and src_z - z = pitch d / (2 pi) for the window's |d| <= pi + s. */
  double limit = INFINITY;
  for (int64_t i = 0; i < g->nviews; i++) {
    const ctr__view *v = &g->views[i];
    const double rows = fmin(v->v0 + 0.5, (double)g->nv - 0.5 - v->v0);
    limit = fmin(limit, 2.0 * CTR__PI * fmax(rows, 0.0) * v->dist / (fabs(v->fv) * (CTR__PI + s)));
  }
  return limit;
}

void ctr__helix_slab_views(const ctr_geometry *g, int64_t z0, int64_t nz, int64_t *v0,
                           int64_t *v1) {
  *v0 = 0;
  *v1 = g->nviews;
  ctr__helix_fdk h;
  if (!ctr__geometry_helix(g, &h) || nz < 1) return;
  const ctr_volume_geometry *v = &g->vol;
  const double za = ctr__voxel_coord(z0, v->nz, v->voxel_z, v->offset_z);
  const double zb = ctr__voxel_coord(z0 + nz - 1, v->nz, v->voxel_z, v->offset_z);
  const double lo = fmin(za, zb), hi = fmax(za, zb);
  const double reach = (CTR__PI + h.s) / fabs(h.kz); /* |d| < pi + s */
  int64_t first = -1, last = -1;
  for (int64_t i = 0; i < g->nviews; i++) {
    const double zs = g->views[i].src[2];
    const double gap = zs < lo ? lo - zs : zs > hi ? zs - hi : 0.0;
    if (gap < reach) {
      if (first < 0) first = i;
      last = i;
    }
  }
  if (first < 0) { /* no view reaches the slab: none is needed */
    *v0 = *v1 = 0;
    return;
  }
  *v0 = first > 0 ? first - 1 : 0;
  *v1 = last + 2 < g->nviews ? last + 2 : g->nviews;
}

ctr_status ctr__helix_fdk_check(const ctr_geometry *g) {
  ctr__helix_fdk h;
  if (!ctr__geometry_helix(g, &h)) return CTR_OK;
  const double limit = ctr__helix_pitch_limit(g, h.s), p = fabs(g->hel.pitch_mm);
  if (p <= limit * (1.0 + 1e-9)) return CTR_OK;
  const double height = (double)g->nv * g->dv * g->hel.sid / g->hel.sdd;
  if (g->hel.window_deg == CTR_HELIX_WINDOW_AUTO)
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "ctr_helical_params.pitch_mm",
                         CTR__V_REAL(g->hel.pitch_mm),
                         "pitch_mm = %g: helical FDK takes at most %.4g mm a turn on this "
                         "detector, its window narrowed to 0 (%.3f of the detector's height at "
                         "the rotation axis, %.4g mm): beyond it a voxel on the axis leaves the "
                         "detector's rows within the 360 degrees of views its window weights; "
                         "use a smaller pitch, or an iterative solver (ctr_iterate)",
                         g->hel.pitch_mm, limit, limit / height, height);
  CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "ctr_helical_params.pitch_mm",
                 CTR__V_REAL(g->hel.pitch_mm), "pitch_mm = %g: helical FDK takes at most %.4g mm a turn on this detector with "
                 "window_deg = %g (%.3f of the detector's height at the rotation axis, %.4g mm): "
                 "beyond it a voxel on the axis leaves the detector's rows within the 360 + 2 x "
                 "%g degrees of views its window weights; use a smaller pitch or window_deg, or "
                 "an iterative solver (ctr_iterate)",
                 g->hel.pitch_mm, limit, g->hel.window_deg, limit / height, height,
                 g->hel.window_deg);
}

ctr_status ctr_geometry_create_matrices(int64_t nu, int64_t nv, double du, double dv,
                                        int64_t nviews, const double *matrices,
                                        const ctr_volume_geometry *vol, ctr_geometry **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_geometry_create_matrices: out is NULL");
  *out = NULL;
  if (nu < 1 || nu > (1 << 20))
    CTR_FAIL(CTR_E_GEOMETRY, "nu = %lld: expected 1 .. 1048576 detector columns", (long long)nu);
  if (nv < 1 || nv > (1 << 20))
    CTR_FAIL(CTR_E_GEOMETRY, "nv = %lld: expected 1 .. 1048576 detector rows", (long long)nv);
  if (!(isfinite(du) && du >= 0.0)) CTR_FAIL(CTR_E_GEOMETRY, "du = %g: expected >= 0 (mm; 0 = unknown)", du);
  if (!(isfinite(dv) && dv >= 0.0)) CTR_FAIL(CTR_E_GEOMETRY, "dv = %g: expected >= 0 (mm; 0 = unknown)", dv);
  if (nviews < 1 || nviews > (1 << 24))
    CTR_FAIL(CTR_E_GEOMETRY, "nviews = %lld: expected 1 .. 16777216 views", (long long)nviews);
  if (!matrices) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "matrices is NULL");
  return ctr__geometry_from_matrices(nu, nv, du, dv, nviews, matrices, "matrices", vol, out);
}

ctr_status ctr__geometry_from_matrices(int64_t nu, int64_t nv, double du, double dv,
                                       int64_t nviews, const double *matrices, const char *label,
                                       const ctr_volume_geometry *vol, ctr_geometry **out) {
  CTR_CHECK(ctr__volume_validate(vol));
  ctr_geometry *g = NULL;
  CTR_CHECK(geometry_alloc(nviews, &g));
  g->nu = nu;
  g->nv = nv;
  g->du = du;
  g->dv = dv;
  const int brackets = !strcmp(label, "matrices");
  for (int64_t i = 0; i < nviews; i++) {
    char what[64];
    snprintf(what, sizeof what, brackets ? "%s[%lld]" : "%s: view %lld", label, (long long)i);
    ctr_status st = ctr__view_from_matrix(matrices + 12 * i, what, &g->views[i]);
    if (st != CTR_OK) {
      ctr_geometry_free(g);
      return st;
    }
  }
  return finish(g, vol, out);
}

ctr_status ctr_geometry_clone(const ctr_geometry *g, ctr_geometry **out) {
  if (!g || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_geometry_clone: NULL argument");
  *out = NULL;
  ctr_geometry *c = NULL;
  CTR_CHECK(geometry_alloc(g->nviews, &c));
  ctr__view *views = c->views;
  *c = *g;
  c->views = views;
  c->angles_deg = NULL;
  c->vectors = NULL;
  memcpy(c->views, g->views, (size_t)g->nviews * sizeof *g->views);
  if (g->angles_deg) {
    c->angles_deg = ctr__malloc((size_t)g->nviews * sizeof(double), "angle list");
    if (!c->angles_deg) {
      ctr_geometry_free(c);
      return CTR_E_OUT_OF_MEMORY;
    }
    memcpy(c->angles_deg, g->angles_deg, (size_t)g->nviews * sizeof(double));
    c->circ.angles_deg = c->angles_deg;
  }
  if (g->vectors) {
    c->vectors = ctr__malloc((size_t)g->nviews * 12 * sizeof(double), "geometry vectors");
    if (!c->vectors) {
      ctr_geometry_free(c);
      return CTR_E_OUT_OF_MEMORY;
    }
    memcpy(c->vectors, g->vectors, (size_t)g->nviews * 12 * sizeof(double));
  }
  *out = c;
  return CTR_OK;
}

void ctr__geometry_row_band(const ctr_geometry *g, int64_t z0, int64_t nz, int64_t *row0,
                            int64_t *nrows) {
  if (g->helical) { /* helical FDK clamps to the detector's edge rows: all of them */
    *row0 = 0;
    *nrows = g->nv;
    return;
  }
  const ctr_volume_geometry *v = &g->vol;
  const double xs[2] = {ctr__voxel_coord(0, v->nx, v->voxel_x, v->offset_x),
                        ctr__voxel_coord(v->nx - 1, v->nx, v->voxel_x, v->offset_x)};
  const double ys[2] = {ctr__voxel_coord(0, v->ny, v->voxel_y, v->offset_y),
                        ctr__voxel_coord(v->ny - 1, v->ny, v->voxel_y, v->offset_y)};
  const double zs[2] = {ctr__voxel_coord(z0, v->nz, v->voxel_z, v->offset_z),
                        ctr__voxel_coord(z0 + nz - 1, v->nz, v->voxel_z, v->offset_z)};
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; g->curved && i < g->nviews; i++) {
    /* v = v0 + fv z / r: monotone in z and in r, the horizontal distance
     * from the source, which over the box's columns lies between the
     * least depth s of a corner (r >= s) and the largest r of a corner (r
     * is convex in (x, y)). */
    ctr__cyl_view c;
    ctr__geometry_cyl_view(g, i, &c);
    double rlo = INFINITY, rhi = 0.0;
    for (int k = 0; k < 4; k++) {
      const double x = xs[k & 1], y = ys[k >> 1];
      const double sd = c.d - x * c.ct - y * c.st, l = -x * c.st + y * c.ct;
      rlo = fmin(rlo, sd);
      rhi = fmax(rhi, sqrt(sd * sd + l * l));
    }
    for (int k = 0; k < 4; k++) {
      const double t = c.v0 + c.fv * zs[k & 1] / (k >> 1 ? rhi : rlo);
      lo = t < lo ? t : lo;
      hi = t > hi ? t : hi;
    }
  }
  for (int64_t i = 0; !g->curved && i < g->nviews; i++) {
    const double *P = g->views[i].P;
    for (int k = 0; k < 8; k++) {
      const double x = xs[k & 1], y = ys[(k >> 1) & 1], z = zs[k >> 2];
      const double b = P[4] * x + P[5] * y + P[6] * z + P[7];
      const double c = P[8] * x + P[9] * y + P[10] * z + P[11];
      const double t = b / c;
      lo = t < lo ? t : lo;
      hi = t > hi ? t : hi;
    }
  }
  /* sampled rows: floor(v) and floor(v) + 1 of every v in [lo, hi] */
  int64_t a = isfinite(lo) ? (int64_t)floor(lo) - 2 : 0;
  int64_t e = isfinite(hi) ? (int64_t)floor(hi) + 1 + 2 : g->nv - 1;
  if (a < 0) a = 0;
  if (e > g->nv - 1) e = g->nv - 1;
  if (e < a) { /* the slab misses the detector: a row to read all the same */
    a = a > g->nv - 1 ? g->nv - 1 : a;
    e = a;
  }
  *row0 = a;
  *nrows = e - a + 1;
}

ctr_status ctr__geometry_rows(const ctr_geometry *g, int64_t row0, int64_t nrows,
                              ctr_geometry **out) {
  *out = NULL;
  if (row0 < 0 || nrows < 1 || row0 + nrows > g->nv)
    CTR_FAIL(CTR_E_INTERNAL, "detector rows [%lld, %lld) outside [0, %lld)", (long long)row0,
             (long long)(row0 + nrows), (long long)g->nv);
  CTR_CHECK(ctr_geometry_clone(g, out));
  free((*out)->vectors); /* they describe the whole detector */
  (*out)->vectors = NULL;
  (*out)->row0 = g->row0 + row0;
  (*out)->nv = nrows;
  return CTR_OK;
}

ctr_status ctr__geometry_columns(const ctr_geometry *g, int64_t pad_lo, int64_t nu,
                                 ctr_geometry **out) {
  *out = NULL;
  if (pad_lo < 0 || nu < pad_lo + g->nu)
    CTR_FAIL(CTR_E_INTERNAL, "detector columns [%lld, %lld) do not hold [0, %lld)",
             (long long)-pad_lo, (long long)(nu - pad_lo), (long long)g->nu);
  CTR_CHECK(ctr_geometry_clone(g, out));
  free((*out)->vectors); /* they describe the real detector */
  (*out)->vectors = NULL;
  (*out)->circular = 0; /* its parameters describe the real detector */
  (*out)->nu = nu;
  for (int64_t i = 0; i < g->nviews; i++) {
    ctr__view *v = &(*out)->views[i];
    for (int q = 0; q < 4; q++) v->P[q] += (double)pad_lo * v->P[8 + q];
    v->u0 += (double)pad_lo;
  }
  return CTR_OK;
}

void ctr_geometry_free(ctr_geometry *g) {
  if (!g) return;
  free(g->views);
  free(g->angles_deg);
  free(g->vectors);
  free(g);
}

int64_t ctr_geometry_get_view_count(const ctr_geometry *g) { return g->nviews; }

void ctr_geometry_get_detector(const ctr_geometry *g, int64_t *nu, int64_t *nv, double *du,
                           double *dv) {
  if (nu) *nu = g->nu;
  if (nv) *nv = g->nv;
  if (du) *du = g->du;
  if (dv) *dv = g->dv;
}

ctr_volume_geometry ctr_geometry_get_volume(const ctr_geometry *g) { return g->vol; }

ctr_status ctr_geometry_set_volume(ctr_geometry *g, const ctr_volume_geometry *vol) {
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_geometry_set_volume: geometry is NULL");
  CTR_CHECK(ctr__geometry_check_volume(g, vol));
  g->vol = *vol;
  return CTR_OK;
}

void ctr_geometry_get_matrix(const ctr_geometry *g, int64_t i, double out[12]) {
  memcpy(out, g->views[i].P, 12 * sizeof(double));
}

void ctr_geometry_get_source(const ctr_geometry *g, int64_t i, double out[3]) {
  memcpy(out, g->views[i].src, 3 * sizeof(double));
}

int ctr_geometry_is_circular(const ctr_geometry *g) {
  for (int64_t i = 0; i < g->nviews; i++) {
    const double *P = g->views[i].P;
    if (P[2] != 0.0 || P[10] != 0.0) return 0;
  }
  return 1;
}

ctr_detector_shape ctr_geometry_get_detector_shape(const ctr_geometry *g) {
  return g && g->curved ? CTR_DETECTOR_CYLINDRICAL : CTR_DETECTOR_FLAT;
}

int ctr__geometry_cyl_view(const ctr_geometry *g, int64_t i, ctr__cyl_view *out) {
  if (!g->curved) return 0;
  if (out) {
    const ctr__view *v = &g->views[i];
    out->ct = cos(v->angle);
    out->st = sin(v->angle);
    out->d = v->dist;
    out->u0 = v->u0;
    out->fu = v->fu;
    out->v0 = v->v0;
    out->fv = v->fv;
    out->zs = g->helical ? helix_source_z(&g->hel, i) : 0.0;
  }
  return 1;
}

ctr_status ctr__geometry_require_flat(const ctr_geometry *g, const char *what, const char *field) {
  if (!g || !g->curved) return CTR_OK;
  CTR_FAIL_FIELD(CTR_E_UNSUPPORTED, field,
                 "%s: a cylindrical (curved) detector is not supported here (its pixels do not "
                 "follow a projection matrix); use a flat detector, or FDK and the phantom "
                 "projections, which support it (docs/geometry.md, \"Curved (cylindrical) "
                 "detectors\")",
                 what);
}

void ctr__geometry_project(const ctr_geometry *g, int64_t i, const double p[3], double *u,
                           double *v, double *c) {
  const double *P = g->views[i].P;
  *c = P[8] * p[0] + P[9] * p[1] + P[10] * p[2] + P[11];
  ctr__cyl_view cv;
  if (ctr__geometry_cyl_view(g, i, &cv)) {
    double w;
    ctr__cyl_project(&cv, p[0], p[1], p[2], u, v, &w);
    return;
  }
  *u = (P[0] * p[0] + P[1] * p[1] + P[2] * p[2] + P[3]) / *c;
  *v = (P[4] * p[0] + P[5] * p[1] + P[6] * p[2] + P[7]) / *c;
}

/* Whether voxel centre p projects inside the detector (and in front of the
 * source) in view v. */
static int seen_in_view(const ctr_geometry *g, const ctr__view *v, const double p[3]) {
  double u, w, c;
  ctr__geometry_project(g, v - g->views, p, &u, &w, &c);
  return c > 0 && u >= -0.5 && u <= (double)g->nu - 0.5 && w >= -0.5 && w <= (double)g->nv - 0.5;
}

/* The same across the detector only (u): whether the fan of view v holds p,
 * whatever the rows. */
static int seen_in_fan(const ctr_geometry *g, const ctr__view *v, const double p[3]) {
  double u, w, c;
  ctr__geometry_project(g, v - g->views, p, &u, &w, &c);
  return c > 0 && u >= -0.5 && u <= (double)g->nu - 0.5;
}

static int seen_in_every_fan(const ctr_geometry *g, const double p[3]) {
  for (int64_t v = 0; v < g->nviews; v++)
    if (!seen_in_fan(g, &g->views[v], p)) return 0;
  return 1;
}

static int seen_in_every_view(const ctr_geometry *g, const double p[3]) {
  for (int64_t v = 0; v < g->nviews; v++)
    if (!seen_in_view(g, &g->views[v], p)) return 0;
  return 1;
}

/* A circular orbit's view azimuths in [0, 2 pi), sorted, with their views. */
typedef struct orbit_angle {
  double t;
  int64_t view;
} orbit_angle;

static int cmp_orbit_angle(const void *a, const void *b) {
  const double x = ((const orbit_angle *)a)->t, y = ((const orbit_angle *)b)->t;
  return (x > y) - (x < y);
}

/* The views of a circular orbit whose azimuths are nearest to t on either
 * side (circularly): first index with angle >= t, and the one before. */
static void orbit_neighbours(const orbit_angle *a, int64_t n, double t, int64_t out[2]) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (a[mid].t < t) lo = mid + 1;
    else hi = mid;
  }
  out[0] = a[lo % n].view;
  out[1] = a[(lo + n - 1) % n].view;
}

/* Circular orbits in O(log n) views per point. A point at radius r < sid
 * and azimuth phi, seen from the source at azimuth t, lands at
 *   u = u0 + fu r sin(psi) / (sid - r cos(psi)),  w = v0 + fv z / (sid - r cos(psi)),
 * depth (sid - r cos(psi)) / sid, with psi = phi - t (docs/geometry.md's
 * matrix). Along the circle u has one maximum (cos psi = r / sid, sin psi > 0)
 * and one minimum (the mirror angle), and the depth one minimum (psi = 0)
 * and one maximum (psi = pi), each rising and falling monotonically between
 * them. Over a finite set of views such a function takes its extremes at the
 * views adjacent to the continuous extremes, so checking the (at most 8)
 * views next to psi = +-acos(r / sid), 0 and pi decides the point exactly
 * as checking every view does. Points at r >= sid are checked view by view. */
static int seen_circular(const ctr_geometry *g, const orbit_angle *a, const double p[3]) {
  const double r = hypot(p[0], p[1]), d = g->circ.sid;
  if (!(r < d)) return seen_in_every_view(g, p);
  const double phi = atan2(p[1], p[0]), ps = acos(r / d), two_pi = 2.0 * CTR__PI;
  const double crit[4] = {0.0, CTR__PI, ps, -ps};
  for (int k = 0; k < 4; k++) {
    double t = fmod(phi - crit[k], two_pi);
    if (t < 0) t += two_pi;
    int64_t v[2];
    orbit_neighbours(a, g->nviews, t, v);
    if (!seen_in_view(g, &g->views[v[0]], p) || !seen_in_view(g, &g->views[v[1]], p)) return 0;
  }
  return 1;
}

/* Sample idx of an m[0] x m[1] x m[2] grid spread over the volume's voxel
 * centres (corners included): its position p (mm); 1 when p lies in the
 * field of view, the volume's inscribed cylinder about z. */
static int fov_sample(const ctr_volume_geometry *vol, const int64_t m[3], const int64_t idx[3],
                      double p[3]) {
  const int64_t n[3] = {vol->nx, vol->ny, vol->nz};
  const double s[3] = {vol->voxel_x, vol->voxel_y, vol->voxel_z};
  const double o[3] = {vol->offset_x, vol->offset_y, vol->offset_z};
  for (int a = 0; a < 3; a++) {
    const int64_t vi = m[a] > 1 ? idx[a] * (n[a] - 1) / (m[a] - 1) : 0;
    p[a] = ctr__voxel_coord(vi, n[a], s[a], o[a]);
  }
  const double rx = 0.5 * (double)n[0] * s[0], ry = 0.5 * (double)n[1] * s[1];
  const double dx = (p[0] - o[0]) / rx, dy = (p[1] - o[1]) / ry;
  return dx * dx + dy * dy <= 1.0;
}

/* The sample grid's size along each axis: n voxels, at most `most` samples. */
static void fov_grid(const ctr_volume_geometry *vol, int64_t most, int64_t m[3]) {
  const int64_t n[3] = {vol->nx, vol->ny, vol->nz};
  for (int a = 0; a < 3; a++) m[a] = n[a] < most ? n[a] : most;
}

double ctr_geometry_coverage(const ctr_geometry *g) {
  const ctr_volume_geometry *vol = &g->vol;
  int64_t m[3];
  fov_grid(vol, 17, m);
  /* Circular orbits: the sorted azimuths (views in any order and count,
   * angle lists included); without memory for them, every view is checked. */
  orbit_angle *orbit = NULL;
  if (g->circular && g->angles_deg && g->nviews > 8) {
    orbit = malloc((size_t)g->nviews * sizeof *orbit);
    if (orbit) {
      for (int64_t i = 0; i < g->nviews; i++) {
        double t = fmod(g->angles_deg[i] * CTR__PI / 180.0, 2.0 * CTR__PI);
        orbit[i].t = t < 0 ? t + 2.0 * CTR__PI : t;
        orbit[i].view = i;
      }
      qsort(orbit, (size_t)g->nviews, sizeof *orbit, cmp_orbit_angle);
    }
  }
  int64_t inside = 0, total = 0;
  for (int64_t k = 0; k < m[2]; k++)
    for (int64_t j = 0; j < m[1]; j++)
      for (int64_t i = 0; i < m[0]; i++) {
        const int64_t idx[3] = {i, j, k};
        double p[3];
        if (!fov_sample(vol, m, idx, p)) continue;
        inside += orbit ? seen_circular(g, orbit, p)
                  : g->helical ? seen_in_every_fan(g, p) /* a helix's rows move on */
                               : seen_in_every_view(g, p);
        total++;
      }
  free(orbit);
  return total ? (double)inside / (double)total : 0.0;
}

/* ------------------------------------------------------------------------- */

static int cmp_by_beta(const void *a, const void *b, void *ctx) {
  const double *beta = ctx;
  double x = beta[*(const int64_t *)a], y = beta[*(const int64_t *)b];
  return (x > y) - (x < y);
}

ctr_status ctr__scan_analyse(const ctr_geometry *g, ctr__scan *out) {
  memset(out, 0, sizeof *out);
  const int64_t n = g->nviews;
  ctr_status st = CTR_OK;
  int64_t *order = NULL;
  out->dbeta = ctr__malloc((size_t)n * sizeof(double), "angular weights");
  out->beta = ctr__malloc((size_t)n * sizeof(double), "view azimuths");
  out->u_sign = ctr__malloc((size_t)n * sizeof(int), "detector orientation");
  order = ctr__malloc((size_t)n * sizeof(int64_t), "view order");
  if (!out->dbeta || !out->beta || !out->u_sign || !order) {
    st = CTR_E_OUT_OF_MEMORY; /* detail set by ctr__malloc */
    goto cleanup;
  }
  out->direction = (n > 1 && g->views[n - 1].angle < g->views[0].angle) ? -1 : 1;
  double bmin = INFINITY, bmax = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    double b = out->direction * g->views[i].angle;
    out->beta[i] = b;
    if (b < bmin) bmin = b;
    if (b > bmax) bmax = b;
    order[i] = i;
  }
  for (int64_t i = 0; i < n; i++) out->beta[i] -= bmin;
  qsort_r(order, (size_t)n, sizeof *order, cmp_by_beta, out->beta);
  double spacing = n > 1 ? (bmax - bmin) / (double)(n - 1) : 2.0 * CTR__PI;
  out->range = (bmax - bmin) + spacing;
  out->full = out->range >= 2.0 * CTR__PI - 0.5 * spacing;
  if (g->helical) {
    /* a helix's views are uniform along one unwrapped angle: each covers its
     * step (the window, not the wrap, handles the turns' redundancy) */
    const double d = g->hel.angle_range_deg * CTR__PI / 180.0 / (double)n;
    for (int64_t i = 0; i < n; i++) out->dbeta[i] = d;
    out->range = (double)n * d;
    out->full = out->range >= 2.0 * CTR__PI - 0.5 * d;
  }
  for (int64_t k = 0; k < n && !g->helical; k++) {
    int64_t i = order[k];
    double prev, next;
    if (n == 1) {
      out->dbeta[i] = 2.0 * CTR__PI;
      break;
    }
    if (k > 0) prev = out->beta[order[k - 1]];
    else prev = out->full ? out->beta[order[n - 1]] - 2.0 * CTR__PI : out->beta[i] - spacing;
    if (k < n - 1) next = out->beta[order[k + 1]];
    else next = out->full ? out->beta[order[0]] + 2.0 * CTR__PI : out->beta[i] + spacing;
    out->dbeta[i] = 0.5 * (next - prev);
  }
  for (int64_t i = 0; i < n; i++) {
    const ctr__view *v = &g->views[i];
    double a = v->angle;
    double tangent[3] = {-sin(a) * out->direction, cos(a) * out->direction, 0.0};
    out->u_sign[i] = dot3(v->axis_u, tangent) >= 0.0 ? 1 : -1;
  }
cleanup:
  free(order);
  if (st != CTR_OK) ctr__scan_free(out);
  return st;
}

void ctr__scan_free(ctr__scan *s) {
  if (!s) return;
  free(s->dbeta);
  free(s->beta);
  free(s->u_sign);
  s->dbeta = s->beta = NULL;
  s->u_sign = NULL;
}

int ctr__pair_mirror(const ctr_geometry *g) {
  int m = -1;
  for (int64_t i = 0; i < g->nviews; i++) {
    const ctr__view *v = &g->views[i];
    const double twice = 2.0 * v->v0, r = floor(twice + 0.5);
    if (fabs(twice - r) > 1e-6 || r < 0 || r > 2.0 * (double)g->nv) return -1;
    if (m >= 0 && (int)r != m) return -1;
    m = (int)r;
    /* v + v' = 2 v0 for mirrored points needs row 1 = v0 * row 2 off z. */
    const double *P = v->P;
    const double s = fabs(v->v0) + 1.0;
    if (fabs(P[4] - v->v0 * P[8]) > 1e-9 * s * (fabs(P[8]) + 1e-30) + 1e-12 ||
        fabs(P[5] - v->v0 * P[9]) > 1e-9 * s * (fabs(P[9]) + 1e-30) + 1e-12 ||
        fabs(P[7] - v->v0 * P[11]) > 1e-9 * s)
      return -1;
  }
  return m;
}

int ctr__bp_pair_possible(const ctr_geometry *g, int64_t z0, int64_t nz) {
  return ctr_geometry_is_circular(g) && g->vol.offset_z == 0.0 && z0 == 0 && nz == g->vol.nz &&
         ctr__pair_mirror(g) >= 0;
}

/* ---- What FDK can reconstruct (ctr_geometry_fdk_check) -------------------- */

/* Source heights and distances from the z axis agree to this fraction of the
 * mean distance on a circular-planar orbit: a C-arm's orbit wobbles by a
 * millimetre or two at 750 mm (RabbitCT), which FDK's matrices absorb; a
 * helix climbs by a detector's height per turn. */
#define CTR__ORBIT_TOL 1e-2
/* Samples across the field of view (x, y) and along z for the fan test. */
#define CTR__FAN_SAMPLES 15
#define CTR__FAN_SAMPLES_Z 3
#define CTR__FDK_INSTEAD "use an iterative solver instead (ctr_iterate)"

/* 1 when every source lies on one circle about the z axis in one plane;
 * else 0 and the spread in why. */
static int orbit_circular_planar(const ctr_geometry *g, char *why, size_t cap) {
  double zmin = INFINITY, zmax = -INFINITY, rmin = INFINITY, rmax = -INFINITY;
  for (int64_t i = 0; i < g->nviews; i++) {
    const double *s = g->views[i].src, r = hypot(s[0], s[1]);
    zmin = fmin(zmin, s[2]);
    zmax = fmax(zmax, s[2]);
    rmin = fmin(rmin, r);
    rmax = fmax(rmax, r);
  }
  const double tol = CTR__ORBIT_TOL * 0.5 * (rmin + rmax);
  if (zmax - zmin <= tol && rmax - rmin <= tol) return 1;
  snprintf(why, cap,
           "the sources are not on one circle in one plane about the z axis (source z %.4g .. "
           "%.4g mm, distance from the axis %.4g .. %.4g mm: a helix or another non-circular "
           "orbit), and FDK reconstructs circular orbits only: " CTR__FDK_INSTEAD,
           zmin, zmax, rmin, rmax);
  return 0;
}

double ctr__geometry_fan(const ctr_geometry *g) {
  double half = 0.0;
  for (int64_t i = 0; i < g->nviews; i++) {
    const ctr__view *v = &g->views[i];
    const double a = fmax(fabs(-0.5 - v->u0), fabs((double)g->nu - 0.5 - v->u0));
    half = fmax(half, ctr__geometry_fan_angle(g, v, a));
  }
  return 2.0 * half;
}

/* The angle over which the sources see p in their fan: the angular weights
 * of the views whose fan holds it (radians). */
static double fan_arc(const ctr_geometry *g, const ctr__scan *sc, const double p[3]) {
  double arc = 0.0;
  for (int64_t i = 0; i < g->nviews; i++)
    if (seen_in_fan(g, &g->views[i], p)) arc += sc->dbeta[i];
  return arc;
}

/* ---- Offset (half-fan) detectors (ctr_geometry_offset_detector) ---------- */

/* An upper bound on the distance from the rotation axis of the field of
 * view's voxel centres (the volume's inscribed cylinder about its centre). */
static double fov_radius(const ctr_volume_geometry *vol) {
  const double rx = 0.5 * (double)(vol->nx - 1) * vol->voxel_x;
  const double ry = 0.5 * (double)(vol->ny - 1) * vol->voxel_y;
  return hypot(vol->offset_x, vol->offset_y) + fmax(rx, ry);
}

int ctr__offset_detector(const ctr_geometry *g, const ctr__scan *sc) {
  if (!sc->full || g->nviews < 2) return 0;
  const double R = fov_radius(&g->vol);
  int narrow_short = 0;
  for (int64_t i = 0; i < g->nviews; i++) {
    const ctr__view *v = &g->views[i];
    const double d = hypot(v->src[0], v->src[1]), f = fabs(v->fu);
    if (!(R < d) || !(f > 0)) return 0;
    /* A ray at fan angle gamma passes d sin(gamma) from the axis. */
    const double need = asin(R / d);
    const double lo = v->u0 + 0.5, hi = (double)g->nu - 0.5 - v->u0; /* pixel edges */
    if (ctr__geometry_fan_angle(g, v, fmax(lo, hi)) < need) return 0; /* truncated on both sides */
    if (!(v->u0 > 0.0 && v->u0 < (double)(g->nu - 1))) return 0; /* no overlap */
    if (ctr__geometry_fan_angle(g, v, fmin(lo, hi)) < need) narrow_short = 1;
  }
  return narrow_short;
}

int ctr_geometry_offset_detector(const ctr_geometry *g) {
  if (!g) return 0;
  ctr__scan sc;
  if (ctr__scan_analyse(g, &sc) != CTR_OK) return 0;
  const int r = ctr__offset_detector(g, &sc);
  ctr__scan_free(&sc);
  return r;
}

/* 1 when the orbit spans a short scan (180 deg plus the fan, half a step
 * spared) and every sample of the field of view is in the fan of every view
 * (the views FDK's weights count on), or when it is an offset detector on a
 * full turn and `offset_weights` (FDK weights it); else 0 and what fails in
 * why. */
static int fov_short_scan(const ctr_geometry *g, const ctr__scan *sc, int offset_weights,
                          char *why, size_t cap) {
  double step = 0.0, total = 0.0;
  for (int64_t i = 0; i < g->nviews; i++) {
    step = fmax(step, sc->dbeta[i]);
    total += sc->dbeta[i];
  }
  const double fan = ctr__geometry_fan(g), spare = 0.5 * step + 1e-9, deg = 180.0 / CTR__PI;
  if (!sc->full && sc->range < CTR__PI + fan - spare) {
    snprintf(why, cap,
             "the orbit covers %.1f deg, less than a short scan (180 deg plus the fan angle, "
             "180 + %.1f deg), and FDK needs a short scan's data: " CTR__FDK_INSTEAD,
             sc->range * deg, fan * deg);
    return 0;
  }
  /* FDK weights the redundancy (Wang 2002) and filters the rows extended
   * beyond the narrow edge (docs/geometry.md, "Offset detectors"); a
   * backend that does not extend them refuses the run itself. */
  if (ctr__offset_detector(g, sc)) {
    if (offset_weights) return 1;
    snprintf(why, cap,
             "an offset (half-fan) detector on a full turn without its redundancy weights "
             "(ctr_fdk_options.offset_weight off): the rays the overlap sees twice count "
             "twice; set offset_weight to auto or wang, or: " CTR__FDK_INSTEAD);
    return 0;
  }
  int64_t m[3], lacking = 0, total_samples = 0;
  fov_grid(&g->vol, CTR__FAN_SAMPLES, m);
  if (m[2] > CTR__FAN_SAMPLES_Z) m[2] = CTR__FAN_SAMPLES_Z;
  double least = INFINITY;
  for (int64_t k = 0; k < m[2]; k++)
    for (int64_t j = 0; j < m[1]; j++)
      for (int64_t i = 0; i < m[0]; i++) {
        const int64_t idx[3] = {i, j, k};
        double p[3];
        if (!fov_sample(&g->vol, m, idx, p)) continue;
        const double arc = fan_arc(g, sc, p);
        least = fmin(least, arc);
        lacking += arc < total - spare;
        total_samples++;
      }
  if (!lacking) return 1;
  snprintf(why, cap,
           "%.1f %% of the field of view is outside the detector's fan in some views (the "
           "least seen part in %.1f of the orbit's %.1f deg): a detector narrower than the "
           "volume, or an offset (half-fan) detector that is not on a full turn or whose "
           "wide side does not reach the field of view's edge (ctr_geometry_offset_detector), "
           "and FDK's weights need every voxel in every view of a circle or short scan: "
           CTR__FDK_INSTEAD,
           100.0 * (double)lacking / (double)total_samples, least * deg, total * deg);
  return 0;
}

/* A helix: its pitch within helical FDK's limit, and every slice of the
 * volume inside the heights whose whole window of views the scan holds
 * (docs/geometry.md, "Helical orbits"); else 0 and what fails in why. */
static int helix_fdk_ok(const ctr_geometry *g, char *why, size_t cap) {
  if (ctr__helix_fdk_check(g) != CTR_OK) {
    snprintf(why, cap, "%s", ctr_error_detail());
    return 0;
  }
  double zlo = INFINITY, zhi = -INFINITY;
  for (int64_t i = 0; i < g->nviews; i++) {
    zlo = fmin(zlo, g->views[i].src[2]);
    zhi = fmax(zhi, g->views[i].src[2]);
  }
  const double s = helix_window_rad(g);
  const double reach = fabs(g->hel.pitch_mm) * (CTR__PI + s) / (2.0 * CTR__PI);
  const ctr_volume_geometry *v = &g->vol;
  const double z0 = ctr__voxel_coord(0, v->nz, v->voxel_z, v->offset_z);
  const double z1 = ctr__voxel_coord(v->nz - 1, v->nz, v->voxel_z, v->offset_z);
  if (z0 >= zlo + reach - 1e-9 * reach && z1 <= zhi - reach + 1e-9 * reach) return 1;
  snprintf(why, cap,
           "the volume's slices z %.4g .. %.4g mm reach beyond the heights %.4g .. %.4g mm whose "
           "whole window of views (360 + 2 x %g degrees about the turn that passes them) the "
           "helix holds: slices outside get part of their weights (too low values); shrink or "
           "move the volume along z, or scan a longer helix",
           z0, z1, zlo + reach, zhi - reach, s * 180.0 / CTR__PI);
  return 0;
}

static ctr_status fdk_check(const ctr_geometry *g, int offset_weights, int *ok, char *why,
                            size_t cap) {
  char none[1];
  if (!g || !ok)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_geometry_fdk_check: geometry and ok are required");
  if (!why || !cap) {
    why = none;
    cap = sizeof none;
  }
  why[0] = '\0';
  *ok = g->helical ? helix_fdk_ok(g, why, cap) : orbit_circular_planar(g, why, cap);
  if (!*ok) return CTR_OK;
  ctr__scan sc;
  CTR_CHECK(ctr__scan_analyse(g, &sc));
  *ok = fov_short_scan(g, &sc, offset_weights, why, cap);
  ctr__scan_free(&sc);
  return CTR_OK;
}

ctr_status ctr_geometry_fdk_check(const ctr_geometry *g, int *ok, char *why, size_t cap) {
  return fdk_check(g, 1, ok, why, cap);
}

ctr_status ctr_fdk_check_geometry(const ctr_geometry *g, const ctr_fdk_options *opts, int *ok,
                                  char *why, size_t cap) {
  ctr_fdk_options o;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_fdk_options, &o, opts));
  if (g) CTR_CHECK(ctr__helix_fdk_check(g)); /* FDK refuses it outright: the same error */
  return fdk_check(g, o.offset_weight != CTR_OFFSET_WEIGHT_OFF, ok, why, cap);
}

ctr_status ctr__fdk_geometry_report(const ctr_context *ctx, const ctr_geometry *g,
                                    const ctr_fdk_options *o) {
  CTR_CHECK(ctr__helix_fdk_check(g)); /* refused, not warned about: FDK cannot weight it */
  int automatic = 0;
  const double window = ctr_geometry_get_helix_window(g, &automatic);
  if (automatic)
    ctr__log(ctx, CTR_LOG_INFO,
             "helical FDK: window_deg not set: using %.4g degrees, the widest (up to %g) that "
             "pitch_mm = %g allows on this detector", window, CTR__HELIX_AUTO_MAX_DEG,
             g->hel.pitch_mm);
  if (o->geometry_checked) return CTR_OK;
  int ok;
  char why[768];
  CTR_CHECK(fdk_check(g, o->offset_weight != CTR_OFFSET_WEIGHT_OFF, &ok, why, sizeof why));
  if (ok) return CTR_OK;
  if (o->strict)
    CTR_FAIL_FIELD(CTR_E_GEOMETRY, "ctr_fdk_options.strict",
                   "FDK cannot reconstruct this geometry (refused: "
             "ctr_fdk_options.strict): %s", why);
  ctr__log(ctx, CTR_LOG_WARNING, "FDK cannot reconstruct this geometry, the volume will be "
           "wrong: %s", why);
  return CTR_OK;
}
