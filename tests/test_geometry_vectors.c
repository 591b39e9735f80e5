/* Vector geometries (ASTRA's cone_vec and parallel3d_vec rows;
 * docs/geometry.md, "Vector geometries"): a circular orbit written as
 * vectors gives the bytes of the circular orbit (matrices, phantom
 * projections, FDK volume); vectors -> matrices -> vectors round trips; a
 * tilted orbit as vectors projects as the same orbit as matrices; every
 * validation error names its field and view; the JSON "vectors" form round
 * trips; representable parallel3d_vec rows become ctr_parallel_params. */
#include <ctrecon.h>

#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846

static ctr_circular_params orbit(int64_t n, int64_t nviews, double start, double offset_u) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 4.0 * n;
  p.sdd = 6.0 * n;
  p.nu = p.nv = n + 16;
  p.du = p.dv = 1.5 * n / (double)p.nu * 1.35;
  p.offset_u = offset_u;
  p.offset_v = 0.25;
  p.nviews = nviews;
  p.angle_start_deg = start;
  return p;
}

static double *vectors_of(const ctr_geometry *g) {
  const int64_t n = ctr_geometry_get_view_count(g);
  double *V = malloc(sizeof(double) * 12 * (size_t)n);
  for (int64_t i = 0; i < n; i++) ctr_geometry_get_vectors(g, i, V + 12 * i);
  return V;
}

static int same_matrices(const ctr_geometry *a, const ctr_geometry *b) {
  if (ctr_geometry_get_view_count(a) != ctr_geometry_get_view_count(b)) return 0;
  for (int64_t i = 0; i < ctr_geometry_get_view_count(a); i++) {
    double Pa[12], Pb[12];
    ctr_geometry_get_matrix(a, i, Pa);
    ctr_geometry_get_matrix(b, i, Pb);
    if (memcmp(Pa, Pb, sizeof Pa)) return 0;
  }
  return 1;
}

/* Phantom projections (and with fdk, the FDK volume) of g. */
static float *project(const ctr_geometry *g, const ctr_phantom *ph) {
  int64_t nu, nv;
  ctr_geometry_get_detector(g, &nu, &nv, NULL, NULL);
  const int64_t nviews = ctr_geometry_get_view_count(g);
  float *proj = malloc(sizeof(float) * (size_t)(nu * nv * nviews));
  const int64_t d[3] = {nu, nv, nviews};
  ctr_array a = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, d);
  CHECK_OK(ctr_phantom_project(NULL, ph, g, 1, &a));
  return proj;
}

static float *fdk(const ctr_geometry *g, float *proj) {
  int64_t nu, nv;
  ctr_geometry_get_detector(g, &nu, &nv, NULL, NULL);
  const ctr_volume_geometry v = ctr_geometry_get_volume(g);
  float *vol = malloc(sizeof(float) * (size_t)(v.nx * v.ny * v.nz));
  const int64_t pd[3] = {nu, nv, ctr_geometry_get_view_count(g)}, vd[3] = {v.nx, v.ny, v.nz};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  CHECK_OK(ctr_fdk(NULL, g, &o, &pa, &va));
  return vol;
}

/* The target: the circular orbit as vectors is the circular orbit,
 * byte for byte, for several orbits (uniform angles from odd starts, an
 * angle list, an offset detector, clockwise). */
static void test_circular_bytes(void) {
  const int64_t n = 32;
  const ctr_volume_geometry vol = {n, n, n, 1.0, 1.0, 1.0, 0, 0, 0};
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.5 * n * 0.95, 1.0, &ph));
  double list[7] = {-12.5, 3.0, 51.4285714285714306, 100.1, 200.3, 271.17, 359.9};
  for (int c = 0; c < 4; c++) {
    ctr_circular_params p = orbit(n, c == 0 ? 90 : 45, c == 1 ? 33.3 : 0.0, c == 2 ? 3.7 : 0.0);
    if (c == 2) p.direction = CTR_ROTATION_CW;
    if (c == 3) {
      p.nviews = 7;
      p.angles_deg = list;
    }
    if (c == 1) p.angle_range_deg = 200;
    ctr_geometry *g = NULL, *h = NULL;
    CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
    REQUIRE(g);
    double *V = vectors_of(g);
    CHECK_OK(ctr_geometry_create_vectors(p.nu, p.nv, p.nviews, V, &vol, &h));
    REQUIRE(h);
    CHECK_MSG(same_matrices(g, h), "orbit %d: the matrices differ from the circular orbit's", c);
    CHECK_MSG(ctr_geometry_is_circular(h), "orbit %d: not circular", c);
    if (c < 2) {
      float *pg = project(g, ph), *ph_ = project(h, ph);
      const size_t bytes = sizeof(float) * (size_t)(p.nu * p.nv * p.nviews);
      CHECK_MSG(!memcmp(pg, ph_, bytes), "orbit %d: the phantom projections differ", c);
      float *vg = fdk(g, pg), *vh = fdk(h, ph_);
      CHECK_MSG(!memcmp(vg, vh, sizeof(float) * (size_t)(n * n * n)),
                "orbit %d: the FDK volumes differ", c);
      free(pg), free(ph_), free(vg), free(vh);
    }
    /* the kept vectors come back as given */
    double W[12];
    ctr_geometry_get_vectors(h, p.nviews - 1, W);
    CHECK(!memcmp(W, V + 12 * (p.nviews - 1), sizeof W));
    free(V);
    ctr_geometry_free(g);
    ctr_geometry_free(h);
  }
  ctr_phantom_free(ph);
}

/* ASTRA's own formula for its `cone` geometry (angle theta from -y, source
 * at (sin, -cos) DSO, detector at DOD beyond the origin) is the circular
 * orbit at t = theta - 90 degrees, to rounding (another formula: the
 * general path, equal to ~1e-12). */
static void test_astra_cone(void) {
  const int64_t n = 16, nviews = 24, nu = 40, nv = 30;
  const double dso = 100, dod = 60, du = 0.9, dv = 1.1;
  const ctr_volume_geometry vol = {n, n, n, 1.0, 1.0, 1.0, 0, 0, 0};
  double V[12 * 24];
  for (int64_t i = 0; i < nviews; i++) {
    const double th = 2 * PI * (double)i / (double)nviews, s = sin(th), c = cos(th);
    double *w = V + 12 * i;
    w[0] = s * dso, w[1] = -c * dso, w[2] = 0;
    w[3] = -s * dod, w[4] = c * dod, w[5] = 0;
    w[6] = c * du, w[7] = s * du, w[8] = 0;
    w[9] = 0, w[10] = 0, w[11] = dv;
  }
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = dso, p.sdd = dso + dod, p.nu = nu, p.nv = nv, p.du = du, p.dv = dv;
  p.nviews = nviews, p.angle_start_deg = -90;
  ctr_geometry *g = NULL, *h = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  CHECK_OK(ctr_geometry_create_vectors(nu, nv, nviews, V, &vol, &h));
  REQUIRE(g && h);
  double worst = 0;
  for (int64_t i = 0; i < nviews; i++) {
    double A[12], B[12];
    ctr_geometry_get_matrix(g, i, A);
    ctr_geometry_get_matrix(h, i, B);
    for (int k = 0; k < 12; k++) worst = fmax(worst, fabs(A[k] - B[k]) / (1e-3 + fabs(A[k])));
  }
  CHECK_MSG(worst < 1e-12, "ASTRA cone as cone_vec vs circular: %g", worst);
  ctr_geometry_free(g);
  ctr_geometry_free(h);
}

/* A tilted, wobbling orbit with a rotated detector. */
static void tilted(int64_t nviews, int64_t nu, int64_t nv, double *V) {
  for (int64_t i = 0; i < nviews; i++) {
    const double t = 2 * PI * i / nviews + th_uniform(-0.01, 0.01);
    const double tilt = th_uniform(-0.2, 0.2), roll = th_uniform(-0.3, 0.3);
    const double sid = 120 + th_uniform(-3, 3), sdd = 190 + th_uniform(-3, 3);
    const double e[3] = {cos(t) * cos(tilt), sin(t) * cos(tilt), sin(tilt)};
    const double a[3] = {-sin(t), cos(t), 0};
    double b[3] = {e[1] * a[2] - e[2] * a[1], e[2] * a[0] - e[0] * a[2], e[0] * a[1] - e[1] * a[0]};
    double *w = V + 12 * i;
    for (int k = 0; k < 3; k++) {
      const double uu = cos(roll) * a[k] + sin(roll) * b[k], vv = -sin(roll) * a[k] + cos(roll) * b[k];
      w[k] = sid * e[k] + th_uniform(-1, 1);
      w[3 + k] = (sid - sdd) * e[k] + th_uniform(-2, 2);
      w[6 + k] = 1.3 * uu;
      w[9 + k] = 1.1 * vv;
    }
  }
  (void)nu, (void)nv;
}

static void test_round_trip_and_tilted(void) {
  const int64_t n = 24, nviews = 40, nu = 48, nv = 40;
  const ctr_volume_geometry vol = {n, n, n, 1.0, 1.0, 1.0, 0, 0, 0};
  double *V = malloc(sizeof(double) * 12 * nviews), *M = malloc(sizeof(double) * 12 * nviews);
  tilted(nviews, nu, nv, V);
  ctr_geometry *g = NULL, *h = NULL;
  CHECK_OK(ctr_geometry_create_vectors(nu, nv, nviews, V, &vol, &g));
  REQUIRE(g);
  CHECK(!ctr_geometry_is_circular(g));
  for (int64_t i = 0; i < nviews; i++) ctr_geometry_get_matrix(g, i, M + 12 * i);
  const double du = sqrt(V[6] * V[6] + V[7] * V[7] + V[8] * V[8]);
  const double dv = sqrt(V[9] * V[9] + V[10] * V[10] + V[11] * V[11]);
  CHECK_OK(ctr_geometry_create_matrices(nu, nv, du, dv, nviews, M, &vol, &h));
  REQUIRE(h);
  double worst = 0;
  for (int64_t i = 0; i < nviews; i++) {
    double W[12];
    ctr_geometry_get_vectors(h, i, W);
    for (int k = 0; k < 12; k += 3) {
      const double *a = V + 12 * i + k, *b = W + k;
      const double d = sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                            (a[2] - b[2]) * (a[2] - b[2]));
      worst = fmax(worst, d / sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]));
    }
  }
  printf("vectors -> matrices -> vectors: worst relative difference %.3g\n", worst);
  CHECK_MSG(worst < 1e-12, "round trip: %g", worst);
  /* the same orbit as matrices projects the same */
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.5 * n * 0.95, 1.0, &ph));
  float *a = project(g, ph), *b = project(h, ph);
  double e = 0, s = 0;
  for (int64_t k = 0; k < nu * nv * nviews; k++) {
    e = fmax(e, fabs((double)a[k] - b[k]));
    s = fmax(s, fabs((double)a[k]));
  }
  printf("tilted orbit, vectors vs matrices: projections differ by %.3g (max %.3g)\n", e, s);
  CHECK_MSG(s > 1 && e <= 1e-5 * s, "projections differ by %g of %g", e, s);
  /* the projections land where the vectors say: the ray from the source
   * through pixel (iu, iv) of view 3 projects back to (iu, iv) */
  double P[12];
  ctr_geometry_get_matrix(g, 3, P);
  const double *w = V + 36, iu = 7, iv = 29;
  double x[3];
  for (int k = 0; k < 3; k++)
    x[k] = w[k] + 0.4 * (w[3 + k] + (iu - 0.5 * (nu - 1)) * w[6 + k] +
                         (iv - 0.5 * (nv - 1)) * w[9 + k] - w[k]);
  const double pa = P[0] * x[0] + P[1] * x[1] + P[2] * x[2] + P[3];
  const double pb = P[4] * x[0] + P[5] * x[1] + P[6] * x[2] + P[7];
  const double pc = P[8] * x[0] + P[9] * x[1] + P[10] * x[2] + P[11];
  CHECK_NEAR(pa / pc, iu, 1e-9);
  CHECK_NEAR(pb / pc, iv, 1e-9);
  free(a), free(b), free(V), free(M);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
  ctr_geometry_free(h);
}

static void expect_field(ctr_status st, ctr_status want, const char *field, const char *needle) {
  CHECK_MSG(st == want, "expected %s, got %s: %s", ctr_status_name(want), ctr_status_name(st),
            ctr_error_detail());
  const char *f = ctr_error_get_field();
  CHECK_MSG(f && !strcmp(f, field), "field '%s', expected '%s' (%s)", f ? f : "(none)", field,
            ctr_error_detail());
  CHECK_MSG(strstr(ctr_error_detail(), needle), "'%s' lacks '%s'", ctr_error_detail(), needle);
}

static void test_errors(void) {
  const int64_t n = 16;
  const ctr_volume_geometry vol = {n, n, n, 1.0, 1.0, 1.0, 0, 0, 0};
  ctr_circular_params p = orbit(n, 6, 0, 0);
  ctr_geometry *g = NULL, *h = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  REQUIRE(g);
  double *V = vectors_of(g), W[72];
  expect_field(ctr_geometry_create_vectors(0, 8, 6, V, &vol, &h), CTR_E_GEOMETRY, "nu", "nu = 0");
  expect_field(ctr_geometry_create_vectors(8, -1, 6, V, &vol, &h), CTR_E_GEOMETRY, "nv", "nv = -1");
  expect_field(ctr_geometry_create_vectors(8, 8, 0, V, &vol, &h), CTR_E_GEOMETRY, "nviews",
               "nviews = 0");
  expect_field(ctr_geometry_create_vectors(8, 8, 6, NULL, &vol, &h), CTR_E_INVALID_ARGUMENT,
               "vectors", "vectors is NULL");
  memcpy(W, V, sizeof W);
  W[12 * 2 + 4] = NAN;
  expect_field(ctr_geometry_create_vectors(8, 8, 6, W, &vol, &h), CTR_E_GEOMETRY, "vectors",
               "view 2: dY = nan");
  memcpy(W, V, sizeof W);
  W[12 * 3 + 6] = W[12 * 3 + 7] = W[12 * 3 + 8] = 0;
  expect_field(ctr_geometry_create_vectors(8, 8, 6, W, &vol, &h), CTR_E_GEOMETRY, "vectors",
               "view 3: u = (0, 0, 0) is zero");
  memcpy(W, V, sizeof W);
  for (int k = 0; k < 3; k++) W[12 * 4 + 9 + k] = 2 * W[12 * 4 + 6 + k];
  expect_field(ctr_geometry_create_vectors(8, 8, 6, W, &vol, &h), CTR_E_GEOMETRY, "vectors",
               "view 4: u = ");
  memcpy(W, V, sizeof W); /* the source on the detector plane */
  for (int k = 0; k < 3; k++) W[12 * 5 + k] = W[12 * 5 + 3 + k] + 5 * W[12 * 5 + 6 + k];
  expect_field(ctr_geometry_create_vectors(8, 8, 6, W, &vol, &h), CTR_E_GEOMETRY, "vectors",
               "view 5: the source");
  memcpy(W, V, sizeof W);
  W[12] = W[13] = W[14] = 1.0;
  expect_field(ctr_geometry_create_vectors(8, 8, 6, W, &vol, &h), CTR_E_GEOMETRY, "vectors",
               "view 1: the source (1, 1, 1) mm lies inside the volume");
  memcpy(W, V, sizeof W); /* outside the box, but its source plane cuts the volume */
  const double cut[12] = {9, 1, 0, 9, -60, 0, 1, 0, 0, 0, 0, 1};
  memcpy(W, cut, sizeof cut);
  CHECK(ctr_geometry_create_vectors(8, 8, 6, W, &vol, &h) == CTR_E_GEOMETRY);
  CHECK(ctr_error_get_field() && !strcmp(ctr_error_get_field(), "vectors"));
  CHECK_MSG(strstr(ctr_error_detail(), "view 0: the volume corner") != NULL, "%s",
            ctr_error_detail());
  CHECK(h == NULL);
  free(V);
  ctr_geometry_free(g);
}

static void test_json(void) {
  const int64_t n = 16, nviews = 10, nu = 30, nv = 24;
  const ctr_volume_geometry vol = {n, n, n, 1.0, 1.0, 1.0, 0.5, 0, -1};
  double V[120];
  tilted(nviews, nu, nv, V);
  ctr_geometry *g = NULL, *h = NULL;
  CHECK_OK(ctr_geometry_create_vectors(nu, nv, nviews, V, &vol, &g));
  REQUIRE(g);
  char *text = NULL;
  CHECK_OK(ctr_geometry_to_json_string(g, &text));
  REQUIRE(text);
  CHECK(strstr(text, "\"vectors\"") != NULL);
  CHECK_OK(ctr_geometry_from_json_string(text, "v.json", &h));
  REQUIRE(h);
  CHECK(same_matrices(g, h));
  for (int64_t i = 0; i < nviews; i++) {
    double W[12];
    ctr_geometry_get_vectors(h, i, W);
    CHECK(!memcmp(W, V + 12 * i, sizeof W));
  }
  free(text);
  ctr_geometry_free(h);
  /* strict members, a short row */
  CHECK_FAILS(ctr_geometry_from_json_string(
                  "{\"type\": \"vectors\", \"detector\": {\"nu\": 4, \"nv\": 4, \"du\": 1},"
                  "\"vectors\": [[1,2,3]], \"volume\": {\"size\": 4, \"voxel_mm\": 1}}",
                  "v.json", &h),
              CTR_E_FORMAT, "detector.du: unknown field");
  CHECK_FAILS(ctr_geometry_from_json_string(
                  "{\"type\": \"vectors\", \"detector\": {\"nu\": 4, \"nv\": 4},"
                  "\"vectors\": [[1,2,3]], \"volume\": {\"size\": 4, \"voxel_mm\": 1}}",
                  "v.json", &h),
              CTR_E_FORMAT, "v.json: vectors[0]: expected 12 finite numbers");
  ctr_geometry_free(g);
}

static void test_parallel(void) {
  const int64_t nu = 20, nv = 5, nviews = 8;
  double V[96], ang[8], shift[8], z[5];
  for (int64_t i = 0; i < nviews; i++) {
    const double t = (double)i * 22.5 * PI / 180.0, c = cos(t), s = sin(t);
    double *w = V + 12 * i;
    /* ASTRA's parallel3d: ray (sin, -cos, 0), u = (cos, sin, 0) pitch 0.7 */
    w[0] = s, w[1] = -c, w[2] = 0;
    w[3] = 0.35 * i * c, w[4] = 0.35 * i * s, w[5] = 2.0; /* axis drift: i/2 bins */
    w[6] = 0.7 * c, w[7] = 0.7 * s, w[8] = 0;
    w[9] = 0, w[10] = 0, w[11] = -0.5;
  }
  ctr_parallel_params p;
  CHECK_OK(ctr_parallel_params_from_vectors(nu, nv, nviews, V, ang, shift, &p, z));
  CHECK(p.nbins == nu && p.nangles == nviews && p.angles_deg == ang && p.axis_shift == shift);
  CHECK_NEAR(p.pixel_size, 0.7, 1e-15);
  CHECK_NEAR(p.axis, 9.5, 0);
  for (int64_t i = 0; i < nviews; i++) {
    CHECK_NEAR(remainder(ang[i] - 22.5 * i, 360.0), 0, 1e-12);
    CHECK_NEAR(shift[i], -0.5 * i, 1e-12);
  }
  CHECK_NEAR(z[0], 3.0, 1e-15);
  CHECK_NEAR(z[4], 1.0, 1e-15);
  ctr_parallel_geometry *pg = NULL;
  CHECK_OK(ctr_parallel_create(&p, &pg));
  ctr_parallel_free(pg);
  double W[96];
  memcpy(W, V, sizeof W);
  W[12 * 3 + 2] = 0.1;
  CHECK_FAILS(ctr_parallel_params_from_vectors(nu, nv, nviews, W, ang, shift, &p, z),
              CTR_E_UNSUPPORTED, "view 3: the ray is not perpendicular to the rotation axis z");
  CHECK(!strcmp(ctr_error_get_field(), "vectors"));
  memcpy(W, V, sizeof W);
  W[12 * 6 + 9] = 0.2;
  CHECK_FAILS(ctr_parallel_params_from_vectors(nu, nv, nviews, W, ang, shift, &p, z),
              CTR_E_UNSUPPORTED, "view 6: v (along a detector column) is not along z");
  memcpy(W, V, sizeof W);
  W[12 * 2 + 5] = 2.5;
  CHECK_FAILS(ctr_parallel_params_from_vectors(nu, nv, nviews, W, ang, shift, &p, z),
              CTR_E_UNSUPPORTED, "view 2: the detector rows lie at other heights");
  memcpy(W, V, sizeof W);
  W[12 * 1 + 6] *= 1.1, W[12 * 1 + 7] *= 1.1;
  CHECK_FAILS(ctr_parallel_params_from_vectors(nu, nv, nviews, W, ang, shift, &p, z),
              CTR_E_UNSUPPORTED, "view 1: |u| differs");
  memcpy(W, V, sizeof W);
  W[12 * 4 + 1] += 0.3;
  CHECK_FAILS(ctr_parallel_params_from_vectors(nu, nv, nviews, W, ang, shift, &p, z),
              CTR_E_UNSUPPORTED, "view 4: u is not perpendicular to the ray");
  memcpy(W, V, sizeof W);
  W[12 * 7 + 11] = INFINITY;
  CHECK_FAILS(ctr_parallel_params_from_vectors(nu, nv, nviews, W, ang, shift, &p, z),
              CTR_E_GEOMETRY, "view 7: vZ = inf");
}

int main(void) {
  test_circular_bytes();
  test_astra_cone();
  test_round_trip_and_tilted();
  test_errors();
  test_json();
  test_parallel();
  return th_finish("test_geometry_vectors");
}
