/* Vector geometries, ASTRA's `cone_vec` rows (docs/geometry.md, "Vector
 * geometries"): validation naming the view, the exact conversion to the
 * canonical matrices and back, and the recognition of a circular orbit
 * written as vectors, which then builds that orbit (the same matrices). */
#include "geometry/geometry_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The literal of geometry.c: a circular orbit's angles go to radians the
 * same way here and there, or the recognition could not reproduce them. */
#define CTR__PI 3.14159265358979323846

static const char *const k_names[12] = {"srcX", "srcY", "srcZ", "dX", "dY", "dZ",
                                        "uX",   "uY",   "uZ",   "vX", "vY", "vZ"};

static double dot3(const double *a, const double *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross3(const double *a, const double *b, double *o) {
  o[0] = a[1] * b[2] - a[2] * b[1];
  o[1] = a[2] * b[0] - a[0] * b[2];
  o[2] = a[0] * b[1] - a[1] * b[0];
}

static double norm3(const double *a) { return sqrt(dot3(a, a)); }

void ctr__circular_vectors(const ctr_circular_params *p, double a_deg, double o[12]) {
  const double t = a_deg * CTR__PI / 180.0, c = cos(t), s = sin(t);
  const double k = p->sid - p->sdd; /* the principal point lies at k (c, s, 0) */
  o[0] = p->sid * c;
  o[1] = p->sid * s;
  o[2] = 0.0;
  o[3] = k * c - p->offset_u * s;
  o[4] = k * s + p->offset_u * c;
  o[5] = p->offset_v;
  o[6] = -p->du * s;
  o[7] = p->du * c;
  o[8] = 0.0;
  o[9] = 0.0;
  o[10] = 0.0;
  o[11] = p->dv;
}

/* ---- Validation ---------------------------------------------------------- */

static ctr_status view_validate(int64_t nu, int64_t nv, int64_t i, const double *V,
                                const double lo[3], const double hi[3]) {
  char val[96];
  for (int k = 0; k < 12; k++)
    if (!isfinite(V[k]))
      CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "vectors", CTR__V_REAL(V[k]),
                           "vectors: view %lld: %s = %g: expected a finite number (mm)",
                           (long long)i, k_names[k], V[k]);
  const double *s = V, *d = V + 3, *u = V + 6, *v = V + 9;
  const double nu_ = norm3(u), nv_ = norm3(v);
  if (!(nu_ > 0.0) || !(nv_ > 0.0)) {
    const double *z = nu_ > 0.0 ? v : u;
    snprintf(val, sizeof val, "(%g, %g, %g)", z[0], z[1], z[2]);
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "vectors", val,
                         "vectors: view %lld: %s = %s is zero: expected the vector from pixel "
                         "(0, 0) to (%s) in mm (the pixel pitch)",
                         (long long)i, nu_ > 0.0 ? "v" : "u", val, nu_ > 0.0 ? "0, 1" : "1, 0");
  }
  double n[3];
  cross3(u, v, n);
  const double nn = norm3(n);
  if (!(nn > 1e-9 * nu_ * nv_)) {
    snprintf(val, sizeof val, "u = (%g, %g, %g), v = (%g, %g, %g)", u[0], u[1], u[2], v[0], v[1],
             v[2]);
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "vectors", val,
                         "vectors: view %lld: %s are parallel: expected a flat detector spanned "
                         "by u (along a row) and v (along a column)",
                         (long long)i, val);
  }
  const double hu = 0.5 * (double)(nu - 1), hv = 0.5 * (double)(nv - 1);
  double sd[3];
  for (int k = 0; k < 3; k++) sd[k] = s[k] - (d[k] - hu * u[k] - hv * v[k]);
  if (!(fabs(dot3(sd, n)) > 1e-9 * nn * norm3(sd))) {
    snprintf(val, sizeof val, "(%g, %g, %g)", s[0], s[1], s[2]);
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "vectors", val,
                         "vectors: view %lld: the source %s mm lies on the detector plane: "
                         "expected it at a distance from the detector",
                         (long long)i, val);
  }
  int inside = 1;
  for (int a = 0; a < 3; a++) inside &= s[a] >= lo[a] && s[a] <= hi[a];
  if (inside) {
    snprintf(val, sizeof val, "(%g, %g, %g)", s[0], s[1], s[2]);
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "vectors", val,
                         "vectors: view %lld: the source %s mm lies inside the volume [%g, %g] x "
                         "[%g, %g] x [%g, %g] mm: expected it outside",
                         (long long)i, val, lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]);
  }
  return CTR_OK;
}

static ctr_status vectors_validate(int64_t nu, int64_t nv, int64_t nviews, const double *V,
                                   const ctr_volume_geometry *vol) {
  if (nu < 1 || nu > (1 << 20))
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "nu", CTR__V_INT(nu),
                         "nu = %lld: expected 1 .. 1048576 detector columns", (long long)nu);
  if (nv < 1 || nv > (1 << 20))
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "nv", CTR__V_INT(nv),
                         "nv = %lld: expected 1 .. 1048576 detector rows", (long long)nv);
  if (nviews < 1 || nviews > (1 << 24))
    CTR_FAIL_FIELD_VALUE(CTR_E_GEOMETRY, "nviews", CTR__V_INT(nviews),
                         "nviews = %lld: expected 1 .. 16777216 views", (long long)nviews);
  if (!V) CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "vectors", "vectors is NULL");
  CTR_CHECK(ctr__volume_validate(vol));
  const double n[3] = {(double)vol->nx, (double)vol->ny, (double)vol->nz};
  const double sz[3] = {vol->voxel_x, vol->voxel_y, vol->voxel_z};
  const double off[3] = {vol->offset_x, vol->offset_y, vol->offset_z};
  double lo[3], hi[3];
  for (int a = 0; a < 3; a++) {
    lo[a] = off[a] - 0.5 * n[a] * sz[a];
    hi[a] = off[a] + 0.5 * n[a] * sz[a];
  }
  for (int64_t i = 0; i < nviews; i++) CTR_CHECK(view_validate(nu, nv, i, V + 12 * i, lo, hi));
  return CTR_OK;
}

/* ---- Vectors -> matrix ----------------------------------------------------- */

/* The ray from the source s through pixel (iu, iv) has the direction
 * M (iu, iv, 1) with M = [u v w], w = (centre of pixel (0, 0)) - s; a point
 * x on it is x - s = c M (iu, iv, 1), c > 0 in front of the source. Hence
 * (a, b, c) = M^-1 (x - s): P = [M^-1 | -M^-1 s], and M^-1 has the rows
 * (v x w, w x u, u x v) / (u . (v x w)). */
static void vectors_matrix(int64_t nu, int64_t nv, const double V[12], double P[12]) {
  const double *s = V, *d = V + 3, *u = V + 6, *v = V + 9;
  const double hu = 0.5 * (double)(nu - 1), hv = 0.5 * (double)(nv - 1);
  double w[3], r[3][3];
  for (int k = 0; k < 3; k++) w[k] = d[k] - hu * u[k] - hv * v[k] - s[k];
  cross3(v, w, r[0]);
  cross3(w, u, r[1]);
  cross3(u, v, r[2]);
  const double det = dot3(u, r[0]);
  for (int row = 0; row < 3; row++) {
    for (int k = 0; k < 3; k++) P[4 * row + k] = r[row][k] / det;
    P[4 * row + 3] = -dot3(P + 4 * row, s);
  }
}

/* ---- A circular orbit written as vectors --------------------------------- */

static double round_digits(double x, int digits) {
  char b[48];
  snprintf(b, sizeof b, "%.*g", digits, x);
  return strtod(b, NULL);
}

/* The values a recovered parameter may have been written as: itself, its
 * neighbours, and the decimals of 12 to 16 digits closest to it. */
#define NCAND 10
static void candidates(double x, double out[NCAND]) {
  out[0] = x;
  out[1] = nextafter(x, INFINITY);
  out[2] = nextafter(x, -INFINITY);
  out[3] = nextafter(out[1], INFINITY);
  out[4] = nextafter(out[2], -INFINITY);
  for (int d = 12; d <= 16; d++) out[5 + d - 12] = round_digits(x, d);
}

static int same12(const double *a, const double *b) {
  for (int k = 0; k < 12; k++)
    if (a[k] != b[k]) return 0;
  return 1;
}

/* The angle (degrees) whose view of the orbit p is V bit for bit: tried
 * near the source's azimuth, unwrapped towards `near` (the previous view's
 * angle) when have_near, and one turn either way. 1 if found. */
static int match_angle(const ctr_circular_params *p, const double *V, double near, int have_near,
                       double *a_out) {
  const double t = atan2(V[1], V[0]) * 180.0 / CTR__PI;
  const double base[4] = {have_near ? t + 360.0 * nearbyint((near - t) / 360.0) : t, t,
                          t + 360.0, t - 360.0};
  double c[NCAND], W[12];
  for (int b = 0; b < 4; b++) {
    candidates(base[b], c);
    for (int k = 0; k < NCAND; k++) {
      ctr__circular_vectors(p, c[k], W);
      if (same12(W, V)) {
        *a_out = c[k];
        return 1;
      }
    }
  }
  return 0;
}

/* The circular orbit's parameters fitting view 0, tried over the
 * candidates of each recovered value. */
static int match_first(ctr_circular_params *p, const double *V, double *a0) {
  const double t = atan2(V[1], V[0]), c = cos(t), s = sin(t);
  const double k = V[3] * c + V[4] * s, ou = -V[3] * s + V[4] * c;
  double cs[NCAND], cu[NCAND], co[NCAND + 1], cd[NCAND];
  candidates(hypot(V[0], V[1]), cs);
  candidates(hypot(V[6], V[7]), cu);
  candidates(ou, co);
  co[NCAND] = 0.0;
  for (int is = 0; is < NCAND; is++) {
    candidates(cs[is] - k, cd);
    for (int id = 0; id < NCAND; id++)
      for (int iu = 0; iu < NCAND; iu++)
        for (int io = 0; io <= NCAND; io++) {
          p->sid = cs[is];
          p->sdd = cd[id];
          p->du = cu[iu];
          p->offset_u = co[io];
          if (!(p->sid > 0.0 && p->sdd > p->sid && p->du > 0.0)) continue;
          if (match_angle(p, V, 0.0, 0, a0)) return 1;
        }
  }
  return 0;
}

/* 1 when every view is, bit for bit, ctr__circular_vectors of one orbit
 * (p, with the angle list `angles`); the orbit's matrices are then those of
 * ctr_geometry_create_circular. */
static int recognise_circular(int64_t nu, int64_t nv, int64_t n, const double *V,
                              ctr_circular_params *p, double *angles) {
  for (int64_t i = 0; i < n; i++) {
    const double *w = V + 12 * i;
    if (w[2] != 0.0 || w[8] != 0.0 || w[9] != 0.0 || w[10] != 0.0 || w[11] != V[11] ||
        w[5] != V[5])
      return 0;
  }
  if (!(V[11] > 0.0)) return 0;
  p->nu = nu;
  p->nv = nv;
  p->dv = V[11];
  p->offset_v = V[5];
  p->nviews = n;
  p->angles_deg = angles;
  if (!match_first(p, V, &angles[0])) return 0;
  for (int64_t i = 1; i < n; i++)
    if (!match_angle(p, V + 12 * i, angles[i - 1], 1, &angles[i])) return 0;
  return 1;
}

/* ---- The public functions ------------------------------------------------ */

static ctr_status build(int64_t nu, int64_t nv, int64_t nviews, const double *vectors,
                        const ctr_volume_geometry *vol, ctr_geometry **out) {
  ctr_status st = CTR_OK;
  double *angles = ctr__malloc((size_t)nviews * sizeof(double), "angle list");
  double *mats = NULL;
  if (!angles) return CTR_E_OUT_OF_MEMORY;
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  if (recognise_circular(nu, nv, nviews, vectors, &p, angles)) {
    st = ctr_geometry_create_circular(&p, vol, out);
  } else {
    mats = ctr__malloc((size_t)nviews * 12 * sizeof(double), "matrices");
    if (!mats) {
      st = CTR_E_OUT_OF_MEMORY;
      goto cleanup;
    }
    for (int64_t i = 0; i < nviews; i++) vectors_matrix(nu, nv, vectors + 12 * i, mats + 12 * i);
    st = ctr__geometry_from_matrices(nu, nv, norm3(vectors + 6), norm3(vectors + 9), nviews, mats,
                                     "vectors", vol, out);
  }
cleanup:
  free(angles);
  free(mats);
  return st;
}

ctr_status ctr_geometry_create_vectors(int64_t nu, int64_t nv, int64_t nviews,
                                       const double *vectors, const ctr_volume_geometry *vol,
                                       ctr_geometry **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_geometry_create_vectors: out is NULL");
  *out = NULL;
  CTR_CHECK(vectors_validate(nu, nv, nviews, vectors, vol));
  ctr_status st = build(nu, nv, nviews, vectors, vol, out);
  if (st == CTR_E_GEOMETRY) { /* the volume behind a source: the views' field */
    char detail[900];
    snprintf(detail, sizeof detail, "%s", ctr_error_detail());
    return ctr__error_set_field(st, "vectors", "%s", detail);
  }
  if (st != CTR_OK) return st;
  const size_t bytes = (size_t)nviews * 12 * sizeof(double);
  (*out)->vectors = ctr__malloc(bytes, "geometry vectors");
  if (!(*out)->vectors) {
    ctr_geometry_free(*out);
    *out = NULL;
    return CTR_E_OUT_OF_MEMORY;
  }
  memcpy((*out)->vectors, vectors, bytes);
  return CTR_OK;
}

/* From the matrix: M = A^-1 (A its left 3x3 part) has the columns u, v, w
 * of vectors_matrix up to one scale, which c = 1 at the origin (P[11] = 1)
 * fixes so that the detector plane passes through the origin; a known pitch
 * fixes it to |u| = du instead. In a window of rows (row0 > 0) pixel (0, 0)
 * is row row0 of the matrix's detector. */
static void matrix_vectors(const ctr_geometry *g, int64_t i, double o[12]) {
  const double *P = g->views[i].P, *s = g->views[i].src;
  double m[3][3];
  cross3(P + 4, P + 8, m[0]);
  cross3(P + 8, P, m[1]);
  cross3(P, P + 4, m[2]);
  const double det = dot3(P, m[0]);
  for (int j = 0; j < 3; j++)
    for (int k = 0; k < 3; k++) m[j][k] /= det;
  const double lambda = g->du > 0.0 ? g->du / norm3(m[0]) : 1.0;
  const double hu = 0.5 * (double)(g->nu - 1), hv = 0.5 * (double)(g->nv - 1);
  const double r0 = (double)g->row0;
  for (int k = 0; k < 3; k++) {
    const double u = lambda * m[0][k], v = lambda * m[1][k];
    o[k] = s[k];
    o[3 + k] = s[k] + lambda * m[2][k] + r0 * v + hu * u + hv * v;
    o[6 + k] = u;
    o[9 + k] = v;
  }
}

void ctr_geometry_get_vectors(const ctr_geometry *g, int64_t i, double out[12]) {
  if (g->vectors) {
    memcpy(out, g->vectors + 12 * i, 12 * sizeof(double));
  } else if (g->circular && g->row0 == 0 && g->circ.nv == g->nv) {
    ctr__circular_vectors(&g->circ, g->angles_deg[i], out);
  } else {
    matrix_vectors(g, i, out);
  }
}
