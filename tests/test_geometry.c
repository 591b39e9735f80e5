/* Geometry: canonical matrices against the circular formulas of Lu et al.
 * 2016 (Eqs. 3-5), matrix decomposition, JSON round trips and errors, validation,
 * scan analysis and Parker weights. */
#include "harness.h"

#include <unistd.h>

#include "filter/filter.h"
#include "geometry/geometry_internal.h"

#define PI 3.14159265358979323846

static char tmpdir[256];

static void count_warnings(void *user, ctr_log_level level, const char *message) {
  (void)message;
  if (level == CTR_LOG_WARNING) ++*(int *)user;
}

static ctr_volume_geometry cube(int64_t n, double vox) {
  ctr_volume_geometry v = {n, n, n, vox, vox, vox, 0, 0, 0};
  return v;
}

static void project(const double P[12], const double x[3], double *u, double *v, double *c) {
  *c = P[8] * x[0] + P[9] * x[1] + P[10] * x[2] + P[11];
  *u = (P[0] * x[0] + P[1] * x[1] + P[2] * x[2] + P[3]) / *c;
  *v = (P[4] * x[0] + P[5] * x[1] + P[6] * x[2] + P[7]) / *c;
}

/* The matrix form must reproduce Eqs. (3)-(5) with the detector offsets and
 * pixel pitches, for both rotation directions. */
static void test_circular_vs_formulas(void) {
  for (int dir = -1; dir <= 1; dir += 2) {
    ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
    p.sid = 750;
    p.sdd = 1200;
    p.nu = 300;
    p.nv = 200;
    p.du = 0.8;
    p.dv = 1.1;
    p.offset_u = 12.5;
    p.offset_v = -7.25;
    p.nviews = 37;
    p.angle_start_deg = 13;
    p.angle_range_deg = 360;
    p.direction = dir;
    ctr_volume_geometry vol = cube(64, 2.0);
    ctr_geometry *g = NULL;
    CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
    if (!g) return;
    CHECK(ctr_geometry_is_circular(g));
    for (int64_t i = 0; i < p.nviews; i++) {
      const double t = (p.angle_start_deg + dir * i * 360.0 / p.nviews) * PI / 180.0;
      double P[12], src[3];
      ctr_geometry_get_matrix(g, i, P);
      ctr_geometry_get_source(g, i, src);
      CHECK_NEAR(src[0], p.sid * cos(t), 1e-9);
      CHECK_NEAR(src[1], p.sid * sin(t), 1e-9);
      CHECK_NEAR(src[2], 0.0, 1e-9);
      for (int k = 0; k < 5; k++) {
        const double x[3] = {th_uniform(-60, 60), th_uniform(-60, 60), th_uniform(-60, 60)};
        const double den = p.sid - x[0] * cos(t) - x[1] * sin(t);
        const double u_mm = p.sdd * (-x[0] * sin(t) + x[1] * cos(t)) / den;
        const double v_mm = p.sdd * x[2] / den;
        const double u_ref = (p.nu - 1) / 2.0 + (u_mm - p.offset_u) / p.du;
        const double v_ref = (p.nv - 1) / 2.0 + (v_mm - p.offset_v) / p.dv;
        const double W = (p.sid / den) * (p.sid / den);
        double u, v, c;
        project(P, x, &u, &v, &c);
        CHECK_NEAR(u, u_ref, 1e-9);
        CHECK_NEAR(v, v_ref, 1e-9);
        CHECK_NEAR(1.0 / (c * c), W, 1e-12);
      }
      const ctr__view *vw = &g->views[i];
      CHECK_NEAR(vw->fu, p.sdd / p.du, 1e-9);
      CHECK_NEAR(vw->fv, p.sdd / p.dv, 1e-9);
      CHECK_NEAR(vw->dist, p.sid, 1e-9);
      CHECK_NEAR(vw->u0, (p.nu - 1) / 2.0 - p.offset_u / p.du, 1e-9);
    }
    ctr_geometry_free(g);
  }
}

/* Arbitrary matrices given at any scale and sign normalise to the same
 * canonical form. */
static void test_matrices_normalise(void) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 500;
  p.sdd = 900;
  p.nu = 64;
  p.nv = 48;
  p.nviews = 10;
  ctr_volume_geometry vol = cube(32, 2.0);
  ctr_geometry *g = NULL, *h = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  if (!g) return;
  double M[10 * 12];
  for (int i = 0; i < 10; i++) {
    double s = th_uniform(0.1, 10.0) * (i % 2 ? -1 : 1);
    ctr_geometry_get_matrix(g, i, M + 12 * i);
    for (int k = 0; k < 12; k++) M[12 * i + k] *= s;
  }
  CHECK_OK(ctr_geometry_create_matrices(64, 48, 1, 1, 10, M, &vol, &h));
  if (h) {
    for (int i = 0; i < 10; i++) {
      double a[12], b[12];
      ctr_geometry_get_matrix(g, i, a);
      ctr_geometry_get_matrix(h, i, b);
      for (int k = 0; k < 12; k++) CHECK_NEAR(a[k], b[k], 1e-12 * (1 + fabs(a[k])));
      CHECK_NEAR(g->views[i].fu, h->views[i].fu, 1e-9);
      CHECK_NEAR(g->views[i].dist, h->views[i].dist, 1e-9);
    }
    CHECK(ctr_geometry_is_circular(h));
  }
  /* A tilted orbit is not circular in the z-independent sense. */
  double T[12];
  ctr_geometry_get_matrix(g, 0, T);
  T[2] += 1e-3;
  ctr_geometry *t = NULL;
  CHECK_OK(ctr_geometry_create_matrices(64, 48, 1, 1, 1, T, &vol, &t));
  if (t) CHECK(!ctr_geometry_is_circular(t));
  ctr_geometry_free(t);
  ctr_geometry_free(h);
  ctr_geometry_free(g);
}

static int same_matrices(const ctr_geometry *a, const ctr_geometry *b) {
  if (ctr_geometry_get_view_count(a) != ctr_geometry_get_view_count(b)) return 0;
  for (int64_t i = 0; i < ctr_geometry_get_view_count(a); i++) {
    double x[12], y[12];
    ctr_geometry_get_matrix(a, i, x);
    ctr_geometry_get_matrix(b, i, y);
    for (int k = 0; k < 12; k++)
      if (fabs(x[k] - y[k]) > 1e-12 * (1 + fabs(x[k]))) return 0;
  }
  return 1;
}

static void test_json_round_trip(void) {
  char path[300];
  snprintf(path, sizeof path, "%s/g.json", tmpdir);
  const double list[5] = {0, 10, 25, 90, 181.5};
  for (int variant = 0; variant < 3; variant++) {
    ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
    p.sid = 600;
    p.sdd = 1000;
    p.nu = 40;
    p.nv = 30;
    p.du = 1.5;
    p.dv = 1.25;
    p.offset_u = 3;
    p.nviews = 5;
    p.direction = CTR_ROTATION_CW;
    p.angle_range_deg = 200;
    if (variant == 1) p.angles_deg = list;
    ctr_volume_geometry vol = {20, 22, 24, 1.5, 1.5, 2.0, 1, -2, 3};
    ctr_geometry *g = NULL, *h = NULL;
    CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
    if (!g) continue;
    if (variant == 2) { /* the same views as raw matrices */
      double M[5 * 12];
      for (int i = 0; i < 5; i++) ctr_geometry_get_matrix(g, i, M + 12 * i);
      ctr_geometry *m = NULL;
      CHECK_OK(ctr_geometry_create_matrices(40, 30, 1.5, 1.25, 5, M, &vol, &m));
      ctr_geometry_free(g);
      g = m;
      if (!g) continue;
    }
    CHECK_OK(ctr_geometry_save_json(g, path, 1)); /* one file for every variant */
    CHECK_OK(ctr_geometry_load_json(path, &h));
    if (h) {
      CHECK(same_matrices(g, h));
      ctr_volume_geometry a = ctr_geometry_get_volume(g), b = ctr_geometry_get_volume(h);
      CHECK(a.nx == b.nx && a.ny == b.ny && a.nz == b.nz && a.voxel_z == b.voxel_z &&
            a.offset_y == b.offset_y);
      CHECK(ctr_geometry_is_circular(h) == ctr_geometry_is_circular(g));
    }
    ctr_geometry_free(h);
    ctr_geometry_free(g);
  }
  unlink(path);
}

static const char *base_json =
    "{\"type\": \"circular\", \"sid\": 1000, \"sdd\": 1500,\n"
    " \"detector\": {\"nu\": 64, \"nv\": 64, \"du\": 1, \"dv\": 1},\n"
    " \"angles\": {\"count\": 90, \"start_deg\": 0, \"range_deg\": 360},\n"
    " \"volume\": {\"size\": [32, 32, 32], \"voxel_mm\": 1}}";

/* Replaces the first occurrence of `from` in base_json by `to`. */
static ctr_status load_variant(const char *from, const char *to) {
  char buf[2048];
  const char *at = strstr(base_json, from);
  if (!at) return CTR_E_INTERNAL;
  snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - base_json), base_json, to, at + strlen(from));
  ctr_geometry *g = NULL;
  ctr_status st = ctr_geometry_from_json_string(buf, "geo.json", &g);
  ctr_geometry_free(g);
  return st;
}

static void test_json_errors(void) {
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_from_json_string(base_json, "geo.json", &g));
  ctr_geometry_free(g);
  CHECK_FAILS(load_variant("\"sid\": 1000", "\"sid\": \"far\""), CTR_E_FORMAT, "geo.json: sid");
  CHECK_FAILS(load_variant("\"sid\": 1000, ", ""), CTR_E_FORMAT, "sid: missing");
  CHECK_FAILS(load_variant("\"sid\": 1000", "\"sid\": -3"), CTR_E_GEOMETRY, "geo.json: sid = -3");
  CHECK_FAILS(load_variant("\"nu\": 64", "\"nu\": 6.5"), CTR_E_FORMAT, "detector.nu");
  CHECK_FAILS(load_variant("\"du\": 1", "\"du\": 0"), CTR_E_GEOMETRY, "du = 0");
  CHECK_FAILS(load_variant("\"count\": 90", "\"count\": 0"), CTR_E_FORMAT, "angles.count");
  CHECK_FAILS(load_variant("[32, 32, 32]", "[32, 32]"), CTR_E_FORMAT, "volume.size");
  CHECK_FAILS(load_variant("\"voxel_mm\": 1", "\"voxel_mm\": -1"), CTR_E_FORMAT,
              "volume.voxel_mm = [-1, -1, -1]: expected voxel sizes > 0");
  CHECK_FAILS(load_variant("[32, 32, 32]", "[32, 0, 32]"), CTR_E_FORMAT,
              "volume.size = [32, 0, 32]: expected 3 integers");
  CHECK_FAILS(load_variant("\"circular\"", "\"spiral\""), CTR_E_FORMAT, "type");
  /* "helical" is a type (test_helical): without its pitch, the pitch is missing */
  CHECK_FAILS(load_variant("\"circular\"", "\"helical\""), CTR_E_FORMAT, "pitch_mm: missing");
  CHECK_FAILS(load_variant("\"sdd\": 1500,", "\"sdd\": 1500,,"), CTR_E_FORMAT, "line 1");
  CHECK_FAILS(load_variant("\"range_deg\": 360", "\"range_deg\": 1e999"), CTR_E_FORMAT,
              "angles.range_deg");
  /* A source inside the volume. */
  CHECK_FAILS(load_variant("\"sid\": 1000", "\"sid\": 10"), CTR_E_GEOMETRY, "inside the volume");
  /* Strict members: a typo is an error naming the key and the nearest known
   * one, at every level, never a silent default. */
  CHECK_FAILS(load_variant("\"du\": 1,", "\"du\": 1, \"ofset_u\": 5,"), CTR_E_FORMAT,
              "geo.json: detector.ofset_u: unknown field; did you mean 'offset_u'?");
  CHECK_FAILS(load_variant("\"start_deg\": 0", "\"start_deg\": 0, \"directon\": \"cw\""),
              CTR_E_FORMAT, "angles.directon: unknown field; did you mean 'direction'?");
  CHECK_FAILS(load_variant("\"sdd\": 1500", "\"sdd\": 1500, \"sdd_mm\": 3"), CTR_E_FORMAT,
              "geo.json: sdd_mm: unknown field; did you mean 'sdd'?");
  CHECK_FAILS(load_variant("\"voxel_mm\": 1", "\"voxel_mm\": 1, \"ofset_mm\": 2"), CTR_E_FORMAT,
              "volume.ofset_mm: unknown field; did you mean 'offset_mm'?");
  CHECK_FAILS(load_variant("\"sid\": 1000", "\"matrices\": [], \"sid\": 1000"), CTR_E_FORMAT,
              "matrices: unknown field");
  CHECK_FAILS(load_variant("\"sid\": 1000", "\"sid\": 1000, \"sid\": 900"), CTR_E_FORMAT,
              "sid: duplicate field");
  CHECK_FAILS(load_variant("\"sid\": 1000", "\"angles_deg\": [0, 90], \"sid\": 1000"),
              CTR_E_FORMAT, "both \"angles\" and \"angles_deg\"");
  CHECK_FAILS(ctr_geometry_from_json_string(
                  "{\"type\": \"matrices\", \"detector\": {\"nu\": 4, \"nv\": 4, \"offset_u\": 1}, "
                  "\"matrices\": [[1,0,0,0, 0,1,0,0, 0,0,0,1]], \"volume\": {\"size\": 4, \"voxel_mm\": 1}}",
                  "m.json", &g),
              CTR_E_FORMAT, "m.json: detector.offset_u: unknown field; did you mean 'nu'?");
  CHECK_OK(load_variant("\"sid\": 1000", "\"comment\": \"bench A\", \"sid\": 1000"));
  CHECK_FAILS(ctr_geometry_load_json("/nonexistent/geo.json", &g), CTR_E_IO, "/nonexistent/geo.json");
  CHECK(g == NULL);
}

static void test_validation(void) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 500;
  p.sdd = 900;
  p.nu = 64;
  p.nv = 48;
  p.nviews = 10;
  ctr_volume_geometry vol = cube(32, 2.0);
  ctr_geometry *g = NULL;
  /* The detector between the source and the isocentre, or on the axis. */
  p.sdd = 400;
  CHECK_FAILS(ctr_geometry_create_circular(&p, &vol, &g), CTR_E_GEOMETRY,
              "sdd = 400 <= sid = 500: expected the source-to-detector distance to exceed");
  p.sdd = 500;
  CHECK_FAILS(ctr_geometry_create_circular(&p, &vol, &g), CTR_E_GEOMETRY, "sdd = 500 <= sid = 500");
  CHECK_FAILS(load_variant("\"sdd\": 1500", "\"sdd\": 800"), CTR_E_GEOMETRY,
              "geo.json: sdd = 800 <= sid = 1000");
  p.sdd = 900;
  p.sid = NAN;
  CHECK_FAILS(ctr_geometry_create_circular(&p, &vol, &g), CTR_E_GEOMETRY, "sid = nan");
  p.sid = 500;
  p.offset_u = INFINITY;
  CHECK_FAILS(ctr_geometry_create_circular(&p, &vol, &g), CTR_E_GEOMETRY, "offset_u = inf");
  p.offset_u = 0;
  vol.voxel_y = 0;
  CHECK_FAILS(ctr_geometry_create_circular(&p, &vol, &g), CTR_E_GEOMETRY, "voxel_y");
  vol = cube(32, 2.0);
  p.version = 99;
  CHECK_FAILS(ctr_geometry_create_circular(&p, &vol, &g), CTR_E_INVALID_ARGUMENT, "version");
  p.version = CTR_CIRCULAR_PARAMS_VERSION;
  double M[12] = {0};
  CHECK_FAILS(ctr_geometry_create_matrices(64, 48, 1, 1, 1, M, &vol, &g), CTR_E_GEOMETRY, "[2][3]");
  M[11] = 1;
  CHECK_FAILS(ctr_geometry_create_matrices(64, 48, 1, 1, 1, M, &vol, &g), CTR_E_GEOMETRY, "matrices[0]");
  CHECK(g == NULL);
  /* Coverage: a detector that sees the whole volume, then one that does not. */
  p.nu = p.nv = 256;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  if (g) CHECK_NEAR(ctr_geometry_coverage(g), 1.0, 0.0);
  ctr_geometry_free(g);
  p.nu = 16;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  if (g) CHECK(ctr_geometry_coverage(g) < 0.5);
  ctr_geometry_free(g);
}

static void test_scan_and_parker(void) {
  ctr_volume_geometry vol = cube(16, 1.0);
  for (int dir = -1; dir <= 1; dir += 2) {
    ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
    p.sid = 400;
    p.sdd = 800;
    p.nu = 32;
    p.nv = 8;
    p.nviews = 120;
    p.direction = dir;
    p.angle_start_deg = 170; /* crosses the +-180 wrap */
    ctr_geometry *g = NULL;
    CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
    if (!g) continue;
    ctr__scan s;
    CHECK_OK(ctr__scan_analyse(g, &s));
    CHECK(s.full);
    CHECK(s.direction == dir);
    double sum = 0;
    for (int i = 0; i < 120; i++) {
      sum += s.dbeta[i];
      CHECK(s.u_sign[i] == dir);
    }
    CHECK_NEAR(sum, 2 * PI, 1e-9);
    ctr__scan_free(&s);
    ctr_geometry_free(g);
    p.angle_range_deg = 220;
    CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
    if (!g) continue;
    CHECK_OK(ctr__scan_analyse(g, &s));
    CHECK(!s.full);
    CHECK_NEAR(s.range, 220 * PI / 180, 1e-9);
    ctr__scan_free(&s);
    ctr_geometry_free(g);
  }
  /* Conjugate rays (beta, gamma) and (beta + pi - 2 gamma, -gamma) sum to 1. */
  const double range = PI + 2 * 0.3;
  for (int k = 0; k < 2000; k++) {
    double gamma = th_uniform(-0.29, 0.29);
    double beta = th_uniform(0, PI + 2 * gamma);
    if (beta + PI - 2 * gamma > range) continue;
    double w = ctr__parker_weight(beta, gamma, range) +
               ctr__parker_weight(beta + PI - 2 * gamma, -gamma, range);
    CHECK_NEAR(w, 1.0, 1e-12);
  }
  CHECK_NEAR(ctr__parker_weight(PI / 2, 0.0, range), 1.0, 0.0);
  CHECK_NEAR(ctr__parker_weight(-0.1, 0.0, range), 0.0, 0.0);
}

/* Parker weights with the overscan delta = (range - pi) / 2, for scans of
 * 180 + fan, 200 + fan, 270 and 360 deg: every ray of the fan (gamma over
 * +-fan / 2 on a grid, beta over the scan) is measured at beta + 2 pi k
 * (gamma) and beta + pi - 2 gamma + 2 pi k (-gamma); the weights of the
 * measurements inside the scan sum to one. */
static void test_parker_ranges(void) {
  const double half_fan = 0.2; /* radians: a 22.9 deg fan */
  const double ranges[] = {PI + 2 * half_fan, PI + 2 * half_fan + 20 * PI / 180, 1.5 * PI,
                           2 * PI};
  for (int r = 0; r < 4; r++) {
    const double range = ranges[r];
    double worst = 0;
    int rays = 0;
    for (int j = 0; j < 41; j++) {
      const double gamma = half_fan * (-1.0 + 2.0 * (j + 0.5) / 41.0);
      for (int k = 0; k < 720; k++) {
        const double beta = range * (k + 0.5) / 720.0;
        double sum = 0;
        for (int m = -2; m <= 2; m++) {
          const double b1 = beta + 2 * PI * m, b2 = beta + PI - 2 * gamma + 2 * PI * m;
          if (b1 >= 0 && b1 <= range) sum += ctr__parker_weight(b1, gamma, range);
          if (b2 >= 0 && b2 <= range) sum += ctr__parker_weight(b2, -gamma, range);
        }
        worst = fmax(worst, fabs(sum - 1.0));
        rays++;
      }
    }
    CHECK_MSG(worst < 1e-12, "range %.1f deg: conjugate sums off by %g over %d rays",
              range * 180 / PI, worst, rays);
  }
}

/* Wang 2002's offset-detector weight: conjugate fan angles (x, -x) sum to
 * one over the whole transition, 0 and 1 outside it, continuous with a
 * continuous derivative (C1) where it meets them. */
static void test_offset_weight_math(void) {
  const double xo[] = {0.01, 0.05, 0.3};
  for (int k = 0; k < 3; k++) {
    const double x_o = xo[k];
    double worst = 0;
    for (int i = 0; i <= 1000; i++) {
      const double x = x_o * (-1.2 + 2.4 * i / 1000.0);
      worst = fmax(worst, fabs(ctr__offset_weight(x, x_o) + ctr__offset_weight(-x, x_o) - 1.0));
    }
    CHECK_MSG(worst < 1e-15, "x_o %g: conjugate sums off by %g", x_o, worst);
    CHECK(ctr__offset_weight(-x_o * 1.001, x_o) == 0.0 && ctr__offset_weight(x_o * 1.001, x_o) == 1.0);
    CHECK_NEAR(ctr__offset_weight(0.0, x_o), 0.5, 1e-15);
    /* C1: one-sided difference quotients at the ends of the transition
     * vanish like h (the second derivative is bounded), and inside the
     * slope never exceeds pi / (4 x_o). */
    const double h = 1e-4 * x_o;
    const double d_lo = (ctr__offset_weight(-x_o + h, x_o) - ctr__offset_weight(-x_o, x_o)) / h;
    const double d_hi = (ctr__offset_weight(x_o, x_o) - ctr__offset_weight(x_o - h, x_o)) / h;
    const double bound = PI * PI / (8 * x_o * x_o) * h; /* |w''| <= pi^2 / (8 x_o^2) */
    CHECK_MSG(fabs(d_lo) <= bound * 1.01 && fabs(d_hi) <= bound * 1.01,
              "x_o %g: slopes %g, %g at the ends (bound %g)", x_o, d_lo, d_hi, bound);
    double steepest = 0;
    for (int i = 0; i < 1000; i++) {
      const double a = x_o * (-1.0 + 2.0 * i / 1000.0), b = x_o * (-1.0 + 2.0 * (i + 1) / 1000.0);
      steepest = fmax(steepest, fabs(ctr__offset_weight(b, x_o) - ctr__offset_weight(a, x_o)) / (b - a));
    }
    CHECK_MSG(steepest <= PI / (4 * x_o) * 1.0001, "x_o %g: slope %g", x_o, steepest);
  }
}

/* Coverage of circular orbits is decided from the views next to each
 * point's extreme projections (geometry.c): the same orbits given as plain
 * matrices are checked view by view, and both must agree exactly, for
 * partial coverage, detector offsets, short and odd scans, both directions,
 * unsorted angle lists and off-centre volumes. */
static void test_coverage_circular_exact(void) {
  uint64_t seed = 12345;
  int partial = 0, configs = 0;
  for (int c = 0; c < 40; c++) {
    double rnd[12];
    for (int k = 0; k < 12; k++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      rnd[k] = (double)(seed >> 11) / 9007199254740992.0;
    }
    ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
    p.sid = 300 + 400 * rnd[0];
    p.sdd = p.sid * (1.2 + rnd[1]);
    p.nu = 8 + (int64_t)(120 * rnd[2]);
    p.nv = 4 + (int64_t)(80 * rnd[3]);
    p.du = p.dv = 1.5;
    p.offset_u = (rnd[4] - 0.5) * 40;
    p.offset_v = (rnd[5] - 0.5) * 20;
    p.nviews = 9 + (int64_t)(700 * rnd[6]);
    p.angle_start_deg = 360 * rnd[7];
    p.angle_range_deg = c % 3 == 0 ? 360 : c % 3 == 1 ? 180 + 60 * rnd[8] : 10 + 700 * rnd[8];
    p.direction = c % 2 ? CTR_ROTATION_CW : CTR_ROTATION_CCW;
    double *list = NULL;
    if (c % 5 == 4) { /* an unsorted list with repeats */
      list = malloc((size_t)p.nviews * sizeof *list);
      for (int64_t i = 0; i < p.nviews; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        list[i] = (double)(seed >> 40) / 16777216.0 * 720.0 - 360.0;
      }
      list[p.nviews - 1] = list[0];
      p.angles_deg = list;
    }
    ctr_volume_geometry vol = cube(20 + (int64_t)(40 * rnd[9]), 1.0 + 2.0 * rnd[10]);
    vol.offset_x = (rnd[11] - 0.5) * 30;
    vol.offset_z = (rnd[10] - 0.5) * 10;
    ctr_geometry *g = NULL, *gm = NULL;
    if (ctr_geometry_create_circular(&p, &vol, &g) != CTR_OK) {
      free(list);
      continue;
    }
    double *M = malloc((size_t)p.nviews * 12 * sizeof *M);
    for (int64_t i = 0; i < p.nviews; i++) ctr_geometry_get_matrix(g, i, M + 12 * i);
    CHECK_OK(ctr_geometry_create_matrices(p.nu, p.nv, p.du, p.dv, p.nviews, M, &vol, &gm));
    if (gm) {
      const double fast = ctr_geometry_coverage(g), every = ctr_geometry_coverage(gm);
      CHECK_MSG(fast == every, "config %d (%lld views, range %g, nu %lld, nv %lld): %.6f vs %.6f",
                c, (long long)p.nviews, p.angle_range_deg, (long long)p.nu, (long long)p.nv,
                fast, every);
      partial += every > 0.0 && every < 1.0;
      configs++;
    }
    ctr_geometry_free(gm);
    ctr_geometry_free(g);
    free(M);
    free(list);
  }
  /* the comparison means something only if many configurations cover part
   * of the volume */
  CHECK_MSG(configs >= 30 && partial >= 10, "%d configurations, %d partly covered", configs,
            partial);
}


/* ---- What FDK can reconstruct ---------------------------------------------- */

/* The small orbit of the FDK checks: sid 400, sdd 800, 64 x 16 pixels of
 * 2 mm; a 48 mm wide volume inside the fan. */
static ctr_circular_params fdk_orbit(void) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 400;
  p.sdd = 800;
  p.nu = 64;
  p.nv = 16;
  p.du = p.dv = 2.0;
  p.nviews = 180;
  return p;
}

static int fdk_check(const ctr_geometry *g, char *why, size_t cap) {
  int ok = -1;
  CHECK_OK(ctr_geometry_fdk_check(g, &ok, why, cap));
  return ok;
}

static void check_fdk_circular(const ctr_circular_params *p, int want, const char *needle) {
  ctr_volume_geometry vol = {24, 24, 8, 2.0, 2.0, 2.0, 0, 0, 0};
  ctr_geometry *g = NULL;
  char why[1024] = "";
  CHECK_OK(ctr_geometry_create_circular(p, &vol, &g));
  if (!g) return;
  const int ok = fdk_check(g, why, sizeof why);
  CHECK_MSG(ok == want, "range %g deg, offset_u %g: ok %d, expected %d (%s)",
            p->angle_range_deg, p->offset_u, ok, want, why);
  if (needle) CHECK_MSG(strstr(why, needle) != NULL, "'%s' lacks '%s'", why, needle);
  if (needle) CHECK_MSG(strstr(why, "iterative") != NULL, "'%s' names no alternative", why);
  ctr_geometry_free(g);
}

/* A full circle and a short scan of exactly 180 deg plus the fan pass; a
 * short scan two views short of that does not. An offset (half-fan)
 * detector passes on a full turn (FDK weights it and extends its rows:
 * docs/geometry.md), not on a 270 deg scan or with a wide side that misses
 * the field of view's edge. */
static void test_fdk_check_circular(void) {
  ctr_circular_params p = fdk_orbit();
  check_fdk_circular(&p, 1, NULL);
  const double fan = 2.0 * atan(0.5 * (double)p.nu * p.du / p.sdd) * 180.0 / PI;
  p.angle_range_deg = 180.0 + fan;
  check_fdk_circular(&p, 1, NULL);
  p.angle_range_deg = 180.0 + fan - 2.0 * (180.0 + fan) / (double)p.nviews;
  check_fdk_circular(&p, 0, "less than a short scan");
  /* half-fan: the detector's left edge 4 pixels left of the axis */
  p = fdk_orbit();
  p.offset_u = (0.5 * (double)p.nu - 4.0) * p.du;
  check_fdk_circular(&p, 1, NULL);
  p.angle_range_deg = 270;
  check_fdk_circular(&p, 0, "half-fan");
  /* 24 columns, 4 left of the axis: the wide side reaches 20 columns, 2.9 deg of the 3.3 the
   * field of view needs */
  p = fdk_orbit();
  p.nu = 24;
  p.offset_u = (0.5 * (double)p.nu - 4.0) * p.du;
  check_fdk_circular(&p, 0, "half-fan");
}

/* ctr_geometry_offset_detector's rule (docs/geometry.md, "Offset detectors"):
 * a full turn, the wide side reaching the field of view's edge, the narrow
 * side past the axis but short of the edge. */
static void test_offset_detector_rule(void) {
  ctr_volume_geometry vol = {24, 24, 8, 2.0, 2.0, 2.0, 0, 0, 0};
  struct {
    double range, shift_px; /* detector shift, columns (+: wide side at +u) */
    int64_t nu;
    int want;
    const char *what;
  } cases[] = {
      {360, 28, 64, 1, "half-fan, wide side at +u"},
      {360, -28, 64, 1, "half-fan, wide side at -u"},
      {360, 0, 64, 0, "centred"},
      {360, 4, 64, 0, "shifted, both sides cover the field of view"},
      {270, 28, 64, 0, "half-fan on a short scan"},
      {360, 32, 64, 0, "the narrow side does not reach past the axis"},
      {360, 8, 24, 0, "wide side short of the edge"},
      {360, 0, 16, 0, "centred, narrower than the volume"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    ctr_circular_params p = fdk_orbit();
    p.angle_range_deg = cases[k].range;
    p.nu = cases[k].nu;
    p.offset_u = cases[k].shift_px * p.du;
    ctr_geometry *g = NULL;
    CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
    if (!g) continue;
    CHECK_MSG(ctr_geometry_offset_detector(g) == cases[k].want, "%s: expected %d",
              cases[k].what, cases[k].want);
    ctr_geometry_free(g);
  }
  CHECK(ctr_geometry_offset_detector(NULL) == 0);
}

/* A helix given as per-view matrices: the circular orbit's matrices, each
 * shifted along z by the pitch. */
static void test_fdk_check_helix(void) {
  ctr_circular_params p = fdk_orbit();
  p.angle_range_deg = 720;
  p.nviews = 360;
  ctr_volume_geometry vol = {24, 24, 8, 2.0, 2.0, 2.0, 0, 0, 0};
  ctr_geometry *g = NULL, *h = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  if (!g) return;
  double *M = malloc((size_t)p.nviews * 12 * sizeof *M);
  for (int64_t i = 0; i < p.nviews; i++) {
    double *P = M + 12 * i;
    ctr_geometry_get_matrix(g, i, P);
    const double dz = -8.0 + 16.0 * (double)i / (double)p.nviews; /* 8 mm per turn */
    for (int r = 0; r < 3; r++) P[4 * r + 3] -= P[4 * r + 2] * dz; /* x -> x - (0, 0, dz) */
  }
  CHECK_OK(ctr_geometry_create_matrices(p.nu, p.nv, p.du, p.dv, p.nviews, M, &vol, &h));
  char why[1024] = "";
  CHECK(fdk_check(g, why, sizeof why) == 1);
  if (h) {
    CHECK(fdk_check(h, why, sizeof why) == 0);
    CHECK_MSG(strstr(why, "not on one circle") && strstr(why, "helix") &&
                  strstr(why, "iterative"), "helix: '%s'", why);
  }
  /* FDK itself: a warning through the log; strict refuses */
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  co.log = count_warnings;
  int warnings = 0;
  co.user = &warnings;
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(&co, &ctx));
  float *proj = calloc((size_t)(p.nu * p.nv * p.nviews), sizeof *proj);
  float *vox = calloc((size_t)(vol.nx * vol.ny * vol.nz), sizeof *vox);
  const int64_t pd[3] = {p.nu, p.nv, p.nviews}, vd[3] = {vol.nx, vol.ny, vol.nz};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(vox, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fdk_options fo = CTR_FDK_OPTIONS_INIT;
  if (ctx && h) {
    CHECK_OK(ctr_fdk(ctx, g, &fo, &pa, &va));
    CHECK_MSG(warnings == 0, "circular orbit: %d warnings", warnings);
    CHECK_OK(ctr_fdk(ctx, h, &fo, &pa, &va));
    CHECK_MSG(warnings == 1, "helix: %d warnings, expected 1", warnings);
    fo.geometry_checked = 1;
    CHECK_OK(ctr_fdk(ctx, h, &fo, &pa, &va));
    CHECK_MSG(warnings == 1, "helix, checked by the caller: %d warnings, expected 1", warnings);
    fo.geometry_checked = 0;
    fo.strict = 1;
    CHECK_FAILS(ctr_fdk(ctx, h, &fo, &pa, &va), CTR_E_GEOMETRY, "iterative solver");
  }
  ctr_context_free(ctx);
  free(proj);
  free(vox);
  free(M);
  ctr_geometry_free(h);
  ctr_geometry_free(g);
}

/* A circular orbit whose angles were written in radians (a JSON
 * "angles_deg" list or "range_deg" of pi) is recognised from the geometry;
 * degrees, a short scan in degrees, and matrices are not. */
static void test_json_radians(void) {
  static const char *const cases[][2] = {
      {"{\"type\": \"circular\", \"sid\": 500, \"sdd\": 1000, \"detector\": {\"nu\": 16, \"nv\": 8, "
       "\"du\": 1, \"dv\": 1}, \"volume\": {\"size\": [8, 8, 8], \"voxel_mm\": 1}, \"angles_deg\": [0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]}", "1"},
      {"{\"type\": \"circular\", \"sid\": 500, \"sdd\": 1000, \"detector\": {\"nu\": 16, \"nv\": 8, "
       "\"du\": 1, \"dv\": 1}, \"volume\": {\"size\": [8, 8, 8], \"voxel_mm\": 1}, \"angles\": {\"count\": 90, \"range_deg\": 6.2832}}", "1"},
      {"{\"type\": \"circular\", \"sid\": 500, \"sdd\": 1000, \"detector\": {\"nu\": 16, \"nv\": 8, "
       "\"du\": 1, \"dv\": 1}, \"volume\": {\"size\": [8, 8, 8], \"voxel_mm\": 1}, \"angles\": {\"count\": 90, \"range_deg\": 360}}", "0"},
      {"{\"type\": \"circular\", \"sid\": 500, \"sdd\": 1000, \"detector\": {\"nu\": 16, \"nv\": 8, "
       "\"du\": 1, \"dv\": 1}, \"volume\": {\"size\": [8, 8, 8], \"voxel_mm\": 1}, \"angles\": {\"count\": 90, \"range_deg\": 200, \"start_deg\": 170}}", "0"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ctr_geometry *g = NULL;
    CHECK_OK(ctr_geometry_from_json_string(cases[i][0], "radians.json", &g));
    if (!g) continue;
    double span = -1;
    const int r = ctr_geometry_angles_look_like_radians(g, &span);
    CHECK_MSG(r == (cases[i][1][0] == '1'), "case %zu: looks like radians %d (span %g)", i, r, span);
    if (r) CHECK_MSG(span > 2.9 && span < 6.3, "case %zu: span %g degrees", i, span);
    ctr_geometry_free(g);
  }
  /* matrices: no orbit to measure */
  const double P[24] = {1000, 0, 8, 0, 0, 1000, 4, 0, 0, 0, 1, 500,
                        1000, 0, 8, 0, 0, 1000, 4, 0, 0, 0, 1, 500};
  ctr_volume_geometry vol = {8, 8, 8, 1, 1, 1, 0, 0, 0};
  ctr_geometry *m = NULL;
  CHECK_OK(ctr_geometry_create_matrices(16, 8, 1, 1, 2, P, &vol, &m));
  if (m) CHECK(ctr_geometry_angles_look_like_radians(m, NULL) == 0);
  ctr_geometry_free(m);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/ctr_geom_XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  test_circular_vs_formulas();
  test_matrices_normalise();
  test_json_round_trip();
  test_json_errors();
  test_validation();
  test_scan_and_parker();
  test_coverage_circular_exact();
  test_fdk_check_circular();
  test_offset_detector_rule();
  test_parker_ranges();
  test_offset_weight_math();
  test_fdk_check_helix();
  test_json_radians();
  rmdir(tmpdir);
  return th_finish("test_geometry");
}
