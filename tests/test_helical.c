/* Helical orbits (docs/geometry.md, "Helical orbits"): the geometry and its
 * checks, exact phantom projections on a helix, the FDK window's
 * sum-to-one property, helical FDK against the truth of a long phantom at
 * two pitches (against a circular FDK of the same phantom and detector, and
 * against CGLS on the same data), its pitch limit and automatic window, and
 * slabs; the same over a cylindrical (curved) detector. Built twice:
 * test_helical on the CPU, test_gpu_helical (CTR_TEST_CUDA) runs the FDK on
 * the GPU and compares it with the CPU's. */
#include "harness.h"

#include "filter/helix_weight_math.h"
#include "geometry/geometry_internal.h"

#define PI 3.14159265358979323846

static ctr_context *g_cpu, *g_ctx;

/* The bench: sid 200, sdd 400 (magnification 2), 72 x 24 pixels of 0.8 mm,
 * so the detector is 9.6 mm tall at the rotation axis; 180 views a turn. */
#define SID 200.0
#define SDD 400.0
#define NU 72
#define NV 24
#define DPIX 0.8
#define PER_TURN 180
#define HEIGHT_ISO (NV * DPIX * SID / SDD)

static ctr_helical_params bench_helix(double pitch_frac, double turns, double z0) {
  ctr_helical_params p = CTR_HELICAL_PARAMS_INIT;
  p.sid = SID;
  p.sdd = SDD;
  p.nu = NU;
  p.nv = NV;
  p.du = p.dv = DPIX;
  p.pitch_mm = pitch_frac * HEIGHT_ISO;
  p.angle_range_deg = 360.0 * turns;
  p.nviews = (int64_t)(PER_TURN * turns + 0.5);
  p.z0_mm = z0;
  return p;
}

/* A volume of nz slices of 0.5 mm, 48 x 48 voxels, centred on height zc. */
static ctr_volume_geometry bench_volume(int64_t nz, double zc) {
  ctr_volume_geometry v = {48, 48, nz, 0.5, 0.5, 0.5, 0, 0, zc};
  return v;
}

/* Shepp-Logan (11 mm) stretched 4x along z: every ellipsoid's rotation is
 * about z, so it stays an ellipsoid; long enough that no slice reconstructed
 * here, nor any ray through them, reaches its ends. */
static ctr_phantom *long_phantom(void) {
  ctr_phantom *sl = NULL, *out = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(11.0, 1.0, &sl));
  if (!sl) return NULL;
  const int64_t n = ctr_phantom_get_ellipsoid_count(sl);
  ctr_ellipsoid e[16];
  memcpy(e, ctr_phantom_get_ellipsoids(sl), (size_t)n * sizeof *e);
  for (int64_t k = 0; k < n; k++) {
    CHECK(e[k].theta_deg == 0.0);
    e[k].az *= 4.0;
    e[k].cz *= 4.0;
  }
  CHECK_OK(ctr_phantom_from_ellipsoids(e, n, &out));
  ctr_phantom_free(sl);
  return out;
}

static float *project(const ctr_phantom *ph, const ctr_geometry *g) {
  const int64_t n = ctr_geometry_get_view_count(g);
  float *p = malloc(sizeof(float) * NU * NV * (size_t)n);
  int64_t d[3] = {NU, NV, n};
  ctr_array a = ctr_array_make(p, CTR_DTYPE_FLOAT32, 3, d);
  CHECK_OK(ctr_phantom_project(g_cpu, ph, g, 1, &a));
  return p;
}

static float *voxelize(const ctr_phantom *ph, const ctr_volume_geometry *v) {
  float *t = malloc(sizeof(float) * (size_t)(v->nx * v->ny * v->nz));
  int64_t d[3] = {v->nx, v->ny, v->nz};
  ctr_array a = ctr_array_make(t, CTR_DTYPE_FLOAT32, 3, d);
  CHECK_OK(ctr_phantom_voxelize(g_cpu, ph, v, 3, 0, &a));
  return t;
}

static ctr_status fdk(ctr_context *ctx, const ctr_geometry *g, const float *proj, float *vol,
                      const ctr_fdk_options *o) {
  const ctr_volume_geometry v = ctr_geometry_get_volume(g);
  const int64_t n = ctr_geometry_get_view_count(g);
  int64_t pd[3] = {NU, NV, n}, vd[3] = {v.nx, v.ny, o && o->nz ? o->nz : v.nz};
  ctr_array pa = ctr_array_make((void *)proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  return ctr_fdk(ctx, g, o, &pa, &va);
}

/* RMS of a - b over the field of view (the inscribed cylinder, radius 11.5
 * mm) of slices [k0, k1) of an nx x ny volume. */
static double rmse(const float *a, const float *b, const ctr_volume_geometry *v, int64_t k0,
                   int64_t k1) {
  double s = 0;
  int64_t n = 0;
  for (int64_t k = k0; k < k1; k++)
    for (int64_t j = 0; j < v->ny; j++)
      for (int64_t i = 0; i < v->nx; i++) {
        const double x = (i - 0.5 * (v->nx - 1)) * v->voxel_x, y = (j - 0.5 * (v->ny - 1)) * v->voxel_y;
        if (x * x + y * y > 11.5 * 11.5) continue;
        const int64_t q = (k * v->ny + j) * v->nx + i;
        s += ((double)a[q] - b[q]) * ((double)a[q] - b[q]);
        n++;
      }
  return n ? sqrt(s / (double)n) : INFINITY;
}

/* ---- The window ----------------------------------------------------------- */

static void test_window(void) {
  const double widths[] = {0.0, 1e-3, 10.0 * PI / 180.0, 0.5, 90.0 * PI / 180.0};
  double worst = 0, worst_f = 0;
  int monotone = 1;
  for (int k = 0; k < 5; k++) {
    const double s = widths[k];
    double prev = 1.0;
    for (int i = 0; i <= 20000; i++) {
      const double d = -0.5 * PI + 3.0 * PI * i / 20000.0; /* past both transitions */
      double sum = ctr__helix_window(d, s) + ctr__helix_window(d - 2.0 * PI, s);
      if (s == 0.0 && fabs(fabs(d) - PI) < 1e-12) sum = 1.0; /* the hard cut's one point */
      worst = fmax(worst, fabs(sum - 1.0));
      if (d >= 0) {
        const double w = ctr__helix_window(d, s);
        monotone &= w <= prev + 1e-15;
        prev = w;
      }
      if (s >= 0.1) worst_f = fmax(worst_f, fabs(ctr__helix_window_f((float)d, (float)s) -
                                              ctr__helix_window(d, s)));
    }
    CHECK_NEAR(ctr__helix_window(0.0, s), 1.0, 0);
    CHECK_NEAR(ctr__helix_window(PI + s + 1e-9, s), 0.0, 0);
    CHECK_NEAR(ctr__helix_window(-(PI + s + 1e-9), s), 0.0, 0);
  }
  printf("window: |w(d) + w(d - 2 pi) - 1| <= %.2e over 5 widths; float form within %.2e\n",
         worst, worst_f);
  CHECK(worst < 1e-12);
  CHECK(monotone);
  CHECK(worst_f < 1e-5); /* float rounding of d near pi, over the widths of 0.1 rad up */
}

/* ---- The geometry ------------------------------------------------------------ */

static void test_geometry(void) {
  ctr_helical_params p = bench_helix(0.5, 2.0, -3.0);
  p.direction = CTR_ROTATION_CW;
  p.angle_start_deg = 30.0;
  ctr_volume_geometry v = bench_volume(8, 0.0);
  ctr_geometry *g = NULL, *back = NULL;
  CHECK_OK(ctr_geometry_create_helical(&p, &v, &g));
  REQUIRE(g);
  ctr_helical_params q;
  CHECK(ctr_geometry_get_helical(g, &q) == 1);
  CHECK(q.pitch_mm == p.pitch_mm && q.nviews == p.nviews &&
        q.window_deg == CTR_HELIX_WINDOW_AUTO && q.detector == CTR_DETECTOR_FLAT);
  /* the automatic window at pitch 0.5 H: the default's 10 degrees */
  int automatic = 0;
  CHECK_NEAR(ctr_geometry_get_helix_window(g, &automatic), 10.0, 0);
  CHECK(automatic == 1);
  /* every view's source on the helix: radius sid, azimuth start - i step, height z0 + climb */
  double worst = 0;
  for (int64_t i = 0; i < p.nviews; i++) {
    double s[3];
    ctr_geometry_get_source(g, i, s);
    const double turned = i * p.angle_range_deg / (double)p.nviews;
    const double t = (p.angle_start_deg - turned) * PI / 180.0;
    const double e[3] = {SID * cos(t), SID * sin(t), p.z0_mm + p.pitch_mm * turned / 360.0};
    for (int a = 0; a < 3; a++) worst = fmax(worst, fabs(s[a] - e[a]));
  }
  CHECK_MSG(worst < 1e-9, "sources off the helix by %.3g mm", worst);
  CHECK(ctr_geometry_get_helical(NULL, NULL) == 0);
  /* JSON keeps the helix, to the matrices */
  char *text = NULL;
  CHECK_OK(ctr_geometry_to_json_string(g, &text));
  CHECK(text && strstr(text, "\"helical\"") && strstr(text, "pitch_mm"));
  CHECK(text && !strstr(text, "window_deg") && !strstr(text, "shape")); /* automatic, flat */
  CHECK_OK(ctr_geometry_from_json_string(text, "helix.json", &back));
  free(text);
  if (back) {
    double m1[12], m2[12], dm = 0;
    for (int64_t i = 0; i < p.nviews; i += 37) {
      ctr_geometry_get_matrix(g, i, m1);
      ctr_geometry_get_matrix(back, i, m2);
      for (int k = 0; k < 12; k++) dm = fmax(dm, fabs(m1[k] - m2[k]));
    }
    CHECK_MSG(dm == 0.0, "matrices differ by %.3g after JSON", dm);
    CHECK(ctr_geometry_get_helical(back, &q) && q.direction == CTR_ROTATION_CW &&
          q.window_deg == CTR_HELIX_WINDOW_AUTO);
  }
  ctr_geometry_free(back);
  back = NULL;
  /* a clone keeps the helix */
  CHECK_OK(ctr_geometry_clone(g, &back));
  CHECK(back && ctr_geometry_get_helical(back, NULL));
  ctr_geometry_free(back);
  ctr_geometry_free(g);
  /* validation names the field */
  ctr_helical_params bad = p;
  bad.pitch_mm = 0;
  CHECK_FAILS(ctr_geometry_create_helical(&bad, &v, &g), CTR_E_GEOMETRY, "circular");
  CHECK(strcmp(ctr_error_get_field(), "ctr_helical_params.pitch_mm") == 0);
  bad.pitch_mm = NAN;
  CHECK_FAILS(ctr_geometry_create_helical(&bad, &v, &g), CTR_E_GEOMETRY, "pitch_mm = nan");
  bad = p;
  bad.window_deg = 91;
  CHECK_FAILS(ctr_geometry_create_helical(&bad, &v, &g), CTR_E_GEOMETRY, "window_deg");
  bad.window_deg = -2; /* negative: only CTR_HELIX_WINDOW_AUTO */
  CHECK_FAILS(ctr_geometry_create_helical(&bad, &v, &g), CTR_E_GEOMETRY, "window_deg = -2");
  bad = p;
  bad.detector = (ctr_detector_shape)7;
  CHECK_FAILS(ctr_geometry_create_helical(&bad, &v, &g), CTR_E_GEOMETRY, "detector = 7");
  CHECK(strcmp(ctr_error_get_field(), "ctr_helical_params.detector") == 0);
  bad = p;
  bad.detector = CTR_DETECTOR_CYLINDRICAL; /* an arc past 90 degrees */
  bad.du = 1.1 * PI * SDD / NU;
  CHECK_FAILS(ctr_geometry_create_helical(&bad, &v, &g), CTR_E_GEOMETRY, "below 90");
  CHECK(strcmp(ctr_error_get_field(), "ctr_helical_params.detector") == 0);
  bad = p;
  bad.nviews = 1;
  CHECK_FAILS(ctr_geometry_create_helical(&bad, &v, &g), CTR_E_GEOMETRY, "nviews = 1");
  bad = p;
  bad.sdd = 100;
  CHECK_FAILS(ctr_geometry_create_helical(&bad, &v, &g), CTR_E_GEOMETRY, "sdd");
  CHECK_FAILS(ctr_geometry_from_json_string(
                  "{\"type\": \"helical\", \"sid\": 200, \"sdd\": 400, \"detector\": {\"nu\": 8, "
                  "\"nv\": 8, \"du\": 1, \"dv\": 1}, \"angles\": {\"count\": 90, \"range_deg\": "
                  "720}, \"volume\": {\"size\": 8, \"voxel_mm\": 1}}",
                  "h.json", &g),
              CTR_E_FORMAT, "pitch_mm");
  CHECK_FAILS(ctr_geometry_from_json_string(
                  "{\"type\": \"helical\", \"sid\": 200, \"sdd\": 400, \"detector\": {\"nu\": 8, "
                  "\"nv\": 8, \"du\": 1, \"dv\": 1}, \"angles\": {\"count\": 90, \"range_deg\": "
                  "720}, \"pitch_mm\": 4, \"window_deg\": -1, \"volume\": {\"size\": 8, "
                  "\"voxel_mm\": 1}}",
                  "h.json", &g),
              CTR_E_FORMAT, "window_deg");
  /* a version 1 struct: a flat detector, its window as given */
  ctr_helical_params v1;
  CHECK_OK(ctr_helical_params_init(&v1, 1));
  CHECK(v1.version == 1);
  v1.sid = SID, v1.sdd = SDD, v1.nu = NU, v1.nv = NV, v1.du = v1.dv = DPIX;
  v1.nviews = 360, v1.angle_range_deg = 720, v1.pitch_mm = 4, v1.window_deg = 5;
  CHECK_OK(ctr_geometry_create_helical(&v1, &v, &g));
  if (g) {
    CHECK(ctr_geometry_get_detector_shape(g) == CTR_DETECTOR_FLAT);
    CHECK_NEAR(ctr_geometry_get_helix_window(g, &automatic), 5.0, 0);
    CHECK(automatic == 0);
  }
  ctr_geometry_free(g);
  CHECK(isnan(ctr_geometry_get_helix_window(NULL, NULL)));
}

/* ---- A helix over a cylindrical detector ------------------------------------ */

/* The curved helix's maps against a brute-force intersection of the ray
 * from the view's source through a point with the cylinder of radius sdd
 * about the source's vertical line: its fan angle from the principal ray
 * and its height above the source. JSON keeps the shape; the pitch limit is
 * the flat detector's (a voxel on the axis lies at r = sid in every view). */
static void test_curved_geometry(void) {
  ctr_helical_params p = bench_helix(0.7, 2.0, -4.0);
  p.detector = CTR_DETECTOR_CYLINDRICAL;
  p.direction = CTR_ROTATION_CW;
  p.angle_start_deg = 20.0;
  p.offset_u = 1.3;
  p.offset_v = -0.7;
  ctr_volume_geometry v = bench_volume(8, 0.0);
  ctr_geometry *g = NULL, *back = NULL, *flat = NULL;
  CHECK_OK(ctr_geometry_create_helical(&p, &v, &g));
  REQUIRE(g);
  CHECK(ctr_geometry_get_detector_shape(g) == CTR_DETECTOR_CYLINDRICAL);
  const double u0 = 0.5 * (NU - 1) - p.offset_u / DPIX, v0 = 0.5 * (NV - 1) - p.offset_v / DPIX;
  double worst = 0;
  for (int64_t i = 0; i < p.nviews; i += 7) {
    const double turned = i * p.angle_range_deg / (double)p.nviews;
    const double t = (p.angle_start_deg - turned) * PI / 180.0;
    const double zs = p.z0_mm + p.pitch_mm * turned / 360.0;
    for (int k = 0; k < 6; k++) {
      const double x[3] = {-9.0 + 3.7 * k, 8.0 - 2.9 * k, zs - 3.0 + 1.3 * k};
      /* the ray's horizontal direction against the principal ray (-cos t, -sin t) */
      const double hx = x[0] - SID * cos(t), hy = x[1] - SID * sin(t), r = hypot(hx, hy);
      const double along = -(hx * cos(t) + hy * sin(t)) / r, across = (-hx * sin(t) + hy * cos(t)) / r;
      const double gamma = atan2(across, along);
      const double bu = u0 + gamma * SDD / DPIX, bv = v0 + (x[2] - zs) * (SDD / r) / DPIX;
      double u, w, c;
      ctr__geometry_project(g, i, x, &u, &w, &c);
      worst = fmax(worst, fmax(fabs(u - bu), fabs(w - bv)));
      CHECK(c > 0);
    }
  }
  printf("curved helix: maps against brute force within %.2e pixels\n", worst);
  CHECK(worst < 1e-9);
  /* JSON: the shape, back to the same matrices and maps */
  char *text = NULL;
  CHECK_OK(ctr_geometry_to_json_string(g, &text));
  CHECK(text && strstr(text, "\"cylindrical\"") && strstr(text, "\"helical\""));
  CHECK_OK(ctr_geometry_from_json_string(text, "curved.json", &back));
  free(text);
  if (back) {
    CHECK(ctr_geometry_get_detector_shape(back) == CTR_DETECTOR_CYLINDRICAL);
    ctr__cyl_view a, b;
    CHECK(ctr__geometry_cyl_view(g, 33, &a) && ctr__geometry_cyl_view(back, 33, &b));
    CHECK(memcmp(&a, &b, sizeof a) == 0);
  }
  ctr_geometry_free(back);
  /* the pitch limit: the flat detector's */
  p.detector = CTR_DETECTOR_FLAT;
  CHECK_OK(ctr_geometry_create_helical(&p, &v, &flat));
  if (flat)
    CHECK_NEAR(ctr__helix_pitch_limit(g, 0.1), ctr__helix_pitch_limit(flat, 0.1), 1e-12);
  ctr_geometry_free(flat);
  ctr_geometry_free(g);
}

/* ---- Exact projections --------------------------------------------------- */

/* ctr_phantom_project on the helix against line integrals along rays built
 * from the helix's own formulas, independently of the matrices: on a flat
 * detector the pixel (u, v) lies at the view's detector centre plus (u - u0)
 * du along the rows' axis and (v - v0) dv along z (docs/geometry.md); on a
 * curved one at the fan angle (u - u0) du / sdd on the arc of radius sdd
 * about the source, (v - v0) dv above the source's height. */
static void test_projection(ctr_detector_shape shape) {
  const int curved = shape == CTR_DETECTOR_CYLINDRICAL;
  ctr_phantom *ph = long_phantom();
  ctr_helical_params p = bench_helix(1.0, 1.5, -5.0);
  p.detector = shape;
  ctr_volume_geometry v = bench_volume(8, 0.0);
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_helical(&p, &v, &g));
  REQUIRE(g && ph);
  float *proj = project(ph, g);
  double worst = 0, peak = 0;
  for (int64_t i = 0; i < p.nviews; i += 13) {
    const double turned = i * p.angle_range_deg / (double)p.nviews, t = turned * PI / 180.0;
    const double zs = p.z0_mm + p.pitch_mm * turned / 360.0;
    const double src[3] = {SID * cos(t), SID * sin(t), zs};
    for (int iv = 0; iv < NV; iv += 5)
      for (int iu = 0; iu < NU; iu += 7) {
        const double a = (iu - 0.5 * (NU - 1)) * DPIX, b = (iv - 0.5 * (NV - 1)) * DPIX;
        double pix[3];
        if (curved) {
          const double gam = a / SDD;
          pix[0] = src[0] + SDD * (-cos(gam) * cos(t) - sin(gam) * sin(t));
          pix[1] = src[1] + SDD * (-cos(gam) * sin(t) + sin(gam) * cos(t));
        } else {
          pix[0] = (SID - SDD) * cos(t) - a * sin(t);
          pix[1] = (SID - SDD) * sin(t) + a * cos(t);
        }
        pix[2] = zs + b;
        double dir[3], len = 0;
        for (int k = 0; k < 3; k++) {
          dir[k] = pix[k] - src[k];
          len += dir[k] * dir[k];
        }
        for (int k = 0; k < 3; k++) dir[k] /= sqrt(len);
        const double e = ctr_phantom_line_integral(ph, src, dir);
        worst = fmax(worst, fabs(e - proj[(i * NV + iv) * NU + iu]));
        peak = fmax(peak, e);
      }
  }
  printf("%sprojection: helix of pitch %.2f mm, |exact - projected| <= %.2e (peak %.2f)\n",
         curved ? "curved " : "", p.pitch_mm, worst, peak);
  CHECK(peak > 3.0);          /* the rays cross the phantom */
  CHECK(worst < 1e-4 * peak); /* float rounding */
  free(proj);
  ctr_geometry_free(g);
  ctr_phantom_free(ph);
}

/* ---- FDK ------------------------------------------------------------------ */

/* The circular FDK of the long phantom on the same detector, one turn, 180
 * views; RMSE over its central slices |z| <= HEIGHT_ISO / 4. */
static double circular_rmse(const ctr_phantom *ph, ctr_detector_shape shape) {
  ctr_circular_params c = CTR_CIRCULAR_PARAMS_INIT;
  c.detector = shape;
  c.sid = SID;
  c.sdd = SDD;
  c.nu = NU;
  c.nv = NV;
  c.du = c.dv = DPIX;
  c.nviews = PER_TURN;
  const int64_t nz = (int64_t)(HEIGHT_ISO / 2.0 / 0.5);
  ctr_volume_geometry v = bench_volume(nz, 0.0);
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&c, &v, &g));
  if (!g) return INFINITY;
  float *proj = project(ph, g), *truth = voxelize(ph, &v);
  float *vol = malloc(sizeof(float) * (size_t)(v.nx * v.ny * v.nz));
  CHECK_OK(fdk(g_cpu, g, proj, vol, NULL));
  const double e = rmse(vol, truth, &v, 0, v.nz);
  free(proj);
  free(truth);
  free(vol);
  ctr_geometry_free(g);
  return e;
}

/* A helix long enough that the nz slices about z = 0 have their whole
 * window (CTR_HELIX_WINDOW_AUTO: counted as 10 degrees), plus half a turn. */
static ctr_geometry *bench_fdk_geometry_on(double frac, int64_t nz, double window_deg,
                                           ctr_detector_shape shape) {
  const double wr = window_deg < 0 ? 10.0 : window_deg;
  const double pitch = frac * HEIGHT_ISO, reach = pitch * (180.0 + wr) / 360.0;
  const double span = nz * 0.5 + 2.0 * reach + 0.5 * pitch;
  ctr_helical_params p = bench_helix(frac, span / pitch, -0.5 * span);
  p.window_deg = window_deg;
  p.detector = shape;
  ctr_volume_geometry v = bench_volume(nz, 0.0);
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_helical(&p, &v, &g));
  return g;
}

static ctr_geometry *bench_fdk_geometry(double frac, int64_t nz, double window_deg) {
  return bench_fdk_geometry_on(frac, nz, window_deg, CTR_DETECTOR_FLAT);
}

static void gpu_compare(const ctr_geometry *g, const float *proj, const float *cpu_vol,
                        const char *what);

/* Helical FDK at pitch `frac` of the detector's height at the axis: RMSE
 * against the truth within 1.5x of the circular FDK's; slices alone give
 * the whole run's bits; the GPU's (test_gpu_helical) the CPU's. */
static void helical_case(const ctr_phantom *ph, double frac, double circ, double window_deg,
                         ctr_detector_shape shape) {
  const int64_t nz = 12;
  const char *what = shape == CTR_DETECTOR_CYLINDRICAL ? "curved helical FDK" : "helical FDK";
  ctr_geometry *g = bench_fdk_geometry_on(frac, nz, window_deg, shape);
  REQUIRE(g);
  const ctr_volume_geometry v = ctr_geometry_get_volume(g);
  const int64_t nviews = ctr_geometry_get_view_count(g);
  int ok = 0;
  char why[512];
  CHECK_OK(ctr_geometry_fdk_check(g, &ok, why, sizeof why));
  CHECK_MSG(ok, "%s", why);
  float *proj = project(ph, g), *truth = voxelize(ph, &v);
  float *vol = malloc(sizeof(float) * (size_t)(v.nx * v.ny * v.nz));
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.strict = 1; /* the geometry passes FDK's check */
  CHECK_OK(fdk(g_cpu, g, proj, vol, &o));
  const double e = rmse(vol, truth, &v, 0, v.nz);
  printf("%s, pitch %.2f x %.2f mm = %.2f mm, %lld views, window %g deg%s: RMSE %.4f, "
         "circular %.4f (ratio %.2f)\n", what, frac, HEIGHT_ISO, frac * HEIGHT_ISO,
         (long long)nviews, ctr_geometry_get_helix_window(g, NULL),
         window_deg < 0 ? " (automatic)" : "", e, circ, e / circ);
  CHECK_MSG(e <= 1.5 * circ, "helical RMSE %.4f above 1.5 x circular %.4f", e, circ);
  {
    /* slices [z0, z0 + nz) alone: the same bits as the whole run's */
    ctr_fdk_options os = CTR_FDK_OPTIONS_INIT;
    os.z0 = 5;
    os.nz = 4;
    float *part = malloc(sizeof(float) * (size_t)(v.nx * v.ny * 4));
    CHECK_OK(fdk(g_cpu, g, proj, part, &os));
    CHECK(memcmp(part, vol + 5 * v.nx * v.ny, sizeof(float) * (size_t)(v.nx * v.ny * 4)) == 0);
    free(part);
  }
  {
    /* streamed in subvolumes of 5 slices with a host store: the bits of one subvolume (on
     * the context under test; the GPU's in test_gpu_helical to 1e-5) */
    const int64_t n = v.nx * v.ny * v.nz;
    float *one = malloc(sizeof(float) * (size_t)n), *split = malloc(sizeof(float) * (size_t)n);
    int64_t pd[3] = {NU, NV, nviews}, vd[3] = {v.nx, v.ny, v.nz};
    ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
    ctr_array va = ctr_array_make(one, CTR_DTYPE_FLOAT32, 3, vd);
    ctr_array vs = ctr_array_make(split, CTR_DTYPE_FLOAT32, 3, vd);
    ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
    CHECK_OK(ctr_fdk_stream_memory(g_ctx, g, &so, &pa, &va, NULL));
    so.max_slab_slices = 5;
    so.store = CTR_FDK_STORE_HOST;
    ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
    CHECK_OK(ctr_fdk_stream_memory(g_ctx, g, &so, &pa, &vs, &rep));
    CHECK_MSG(rep.plan.nslabs > 1, "%lld subvolume(s)", (long long)rep.plan.nslabs);
    /* the report says which window the run used */
    CHECK(rep.helix_window_deg == ctr_geometry_get_helix_window(g, NULL));
    CHECK(rep.helix_window_auto == (window_deg == CTR_HELIX_WINDOW_AUTO));
#ifdef CTR_TEST_CUDA
    /* the general kernel anchors each block's positions in its own slab: float rounding */
    double e = 0, q = 0;
    for (int64_t i = 0; i < n; i++) {
      e += ((double)one[i] - split[i]) * ((double)one[i] - split[i]);
      q += (double)one[i] * one[i];
    }
    CHECK_MSG(q > 0 && sqrt(e / q) < 1e-5, "subvolumes differ by %.3g relative RMS", sqrt(e / q));
#else
    CHECK(memcmp(one, split, sizeof(float) * (size_t)n) == 0);
#endif
    free(one);
    free(split);
  }
  gpu_compare(g, proj, vol, what);
  free(proj);
  free(truth);
  free(vol);
  ctr_geometry_free(g);
}

static void test_fdk(void) {
  ctr_phantom *ph = long_phantom();
  REQUIRE(ph);
  const double circ = circular_rmse(ph, CTR_DETECTOR_FLAT);
  helical_case(ph, 0.5, circ, 10.0, CTR_DETECTOR_FLAT);
  helical_case(ph, 0.9, circ, 10.0, CTR_DETECTOR_FLAT);
  /* pitch 1.0 H with the window left to the automatic choice (0 degrees) */
  helical_case(ph, 1.0, circ, CTR_HELIX_WINDOW_AUTO, CTR_DETECTOR_FLAT);
  /* a cylindrical detector against the circular curved FDK */
  const double circ_curved = circular_rmse(ph, CTR_DETECTOR_CYLINDRICAL);
  helical_case(ph, 0.5, circ_curved, CTR_HELIX_WINDOW_AUTO, CTR_DETECTOR_CYLINDRICAL);
  helical_case(ph, 0.9, circ_curved, CTR_HELIX_WINDOW_AUTO, CTR_DETECTOR_CYLINDRICAL);
  helical_case(ph, 1.0, circ_curved, CTR_HELIX_WINDOW_AUTO, CTR_DETECTOR_CYLINDRICAL);
  ctr_phantom_free(ph);
}

/* CGLS against helical FDK on a Defrise-type disk stack (three 2 mm disks
 * 2 mm apart, the cone-beam artefact phantom), a coarse bench (36 x 12
 * pixels of 1.6 mm, 60 views a turn, 24 x 24 x 16 voxels of 1 mm) whose
 * volume holds the whole phantom. The data are the projector's own
 * projections of the voxelised phantom (the discretisation's error left
 * out: with the disks' exact projections the voxel model's own error, 19 %
 * of the data on 0.75 mm voxels, stops CGLS before it reaches FDK's error:
 * docs/geometry.md): CGLS, 10 iterations, ends below FDK's RMSE. */
static void test_cgls(void) {
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_disk_stack(9.0, 2.0, 2.0, 1.0, &ph));
  ctr_helical_params p = CTR_HELICAL_PARAMS_INIT;
  p.sid = SID;
  p.sdd = SDD;
  p.nu = 36;
  p.nv = 12;
  p.du = p.dv = 1.6;
  p.pitch_mm = 0.5 * 12 * 1.6 * SID / SDD;
  const double span = 16.0 + 2.0 * p.pitch_mm * 190.0 / 360.0 + 0.5 * p.pitch_mm;
  p.angle_range_deg = 360.0 * span / p.pitch_mm;
  p.nviews = (int64_t)(60.0 * span / p.pitch_mm + 0.5);
  p.z0_mm = -0.5 * span;
  ctr_volume_geometry v = {24, 24, 16, 1, 1, 1, 0, 0, 0};
  ctr_geometry *g = NULL;
  ctr_projector *pr = NULL;
  CHECK_OK(ctr_geometry_create_helical(&p, &v, &g));
  REQUIRE(g && ph);
  CHECK_OK(ctr_projector_create_cone(g_ctx, g, NULL, &pr));
  const int64_t nvox = 24 * 24 * 16, np = 36 * 12 * p.nviews;
  float *truth = voxelize(ph, &v), *proj = malloc(sizeof(float) * (size_t)np);
  float *f = malloc(sizeof(float) * (size_t)nvox), *x = calloc((size_t)nvox, sizeof(float));
  if (pr) CHECK_OK(ctr_projector_forward(pr, truth, proj));
  int64_t pd[3] = {36, 12, p.nviews}, vd[3] = {24, 24, 16};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd), fa = ctr_array_make(f, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_fdk(g_ctx, g, NULL, &pa, &fa));
  ctr_iterate_options io = CTR_ITERATE_OPTIONS_INIT;
  io.algorithm = CTR_ITERATE_CGLS;
  io.iterations = 10;
  if (pr) CHECK_OK(ctr_iterate(pr, &io, proj, x, NULL));
  double ef = 0, ec = 0;
  for (int64_t i = 0; i < nvox; i++) {
    ef += ((double)f[i] - truth[i]) * ((double)f[i] - truth[i]);
    ec += ((double)x[i] - truth[i]) * ((double)x[i] - truth[i]);
  }
  ef = sqrt(ef / (double)nvox);
  ec = sqrt(ec / (double)nvox);
  printf("disk stack, pitch %.2f mm, %lld views: helical FDK RMSE %.4f, CGLS (10 iterations) "
         "%.4f\n", p.pitch_mm, (long long)p.nviews, ef, ec);
  CHECK(ef > 0.01); /* the disks' faces blur: something for CGLS to beat */
  CHECK_MSG(ec < ef, "CGLS RMSE %.4f not below helical FDK's %.4f", ec, ef);
  free(truth);
  free(proj);
  free(f);
  free(x);
  ctr_projector_free(pr);
  ctr_geometry_free(g);
  ctr_phantom_free(ph);
}

/* The pitch limit: at 1.0 of the detector's height the default window (10
 * degrees) would need a voxel on the axis beyond the rows; FDK refuses,
 * naming pitch_mm; with window_deg 0 exactly 2 pi fits, and FDK runs. */
static void test_pitch_limit(void) {
  ctr_geometry *g = bench_fdk_geometry(1.0, 4, 10.0);
  REQUIRE(g);
  const ctr_volume_geometry v = ctr_geometry_get_volume(g);
  const int64_t n = ctr_geometry_get_view_count(g);
  float *proj = calloc((size_t)(NU * NV * n), sizeof(float));
  float *vol = malloc(sizeof(float) * (size_t)(v.nx * v.ny * v.nz));
  CHECK_FAILS(fdk(g_ctx, g, proj, vol, NULL), CTR_E_GEOMETRY, "pitch_mm = 9.6");
  CHECK(strcmp(ctr_error_get_field(), "ctr_helical_params.pitch_mm") == 0);
  CHECK(strstr(ctr_error_detail(), "at most 9.095") != NULL); /* 9.6 x 180 / 190 */
  int ok = 1;
  char why[512];
  CHECK_OK(ctr_geometry_fdk_check(g, &ok, why, sizeof why));
  CHECK(!ok && strstr(why, "pitch_mm"));
  ctr_geometry_free(g);
  g = bench_fdk_geometry(1.0, 4, 0.0);
  REQUIRE(g);
  CHECK_OK(fdk(g_ctx, g, proj, vol, NULL));
  ctr_geometry_free(g);
  /* the automatic window: the widest the pitch allows, pi (limit(0) / pitch - 1) up to 10
   * degrees; above the detector's height none fits and FDK refuses, naming pitch_mm */
  const double fracs[] = {0.5, 180.0 / 190.0, 0.97, 1.0, 1.01};
  const double expect[] = {10.0, 10.0, 180.0 * (1.0 / 0.97 - 1.0), 0.0, -1.0};
  for (int k = 0; k < 5; k++) {
    g = bench_fdk_geometry(fracs[k], 4, CTR_HELIX_WINDOW_AUTO);
    REQUIRE(g);
    int automatic = 0;
    CHECK_NEAR(ctr_geometry_get_helix_window(g, &automatic), expect[k], 1e-9);
    CHECK(automatic == 1);
    ctr_geometry_free(g);
  }
  g = bench_fdk_geometry(1.01, 4, CTR_HELIX_WINDOW_AUTO);
  REQUIRE(g);
  CHECK_FAILS(fdk(g_ctx, g, proj, vol, NULL), CTR_E_GEOMETRY, "at most 9.6 mm");
  CHECK(strcmp(ctr_error_get_field(), "ctr_helical_params.pitch_mm") == 0);
  ctr_geometry_free(g);
  /* the same helix as bare matrices: FDK cannot know the helix (strict: refused) */
  g = bench_fdk_geometry(0.5, 4, 10.0);
  REQUIRE(g);
  const int64_t m = ctr_geometry_get_view_count(g);
  double *M = malloc(sizeof(double) * 12 * (size_t)m);
  for (int64_t i = 0; i < m; i++) ctr_geometry_get_matrix(g, i, M + 12 * i);
  ctr_geometry *gm = NULL;
  CHECK_OK(ctr_geometry_create_matrices(NU, NV, DPIX, DPIX, m, M, &v, &gm));
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.strict = 1;
  float *pm = calloc((size_t)(NU * NV * m), sizeof(float));
  if (gm) CHECK_FAILS(fdk(g_cpu, gm, pm, vol, &o), CTR_E_GEOMETRY, "helix");
  /* a volume beyond the helix's reach: the check says so (strict refuses) */
  ctr_volume_geometry far = v;
  far.offset_z = 40.0;
  CHECK_OK(ctr_geometry_set_volume(g, &far));
  CHECK_OK(ctr_geometry_fdk_check(g, &ok, why, sizeof why));
  CHECK(!ok && strstr(why, "whole window"));
  CHECK_FAILS(fdk(g_cpu, g, pm, vol, &o), CTR_E_GEOMETRY, "whole window");
  /* Parker weights forced on a helix */
  o.strict = 0;
  o.short_scan = CTR_SHORT_SCAN_PARKER;
  CHECK_OK(ctr_geometry_set_volume(g, &v));
  CHECK_FAILS(fdk(g_cpu, g, pm, vol, &o), CTR_E_UNSUPPORTED, "short_scan");
  free(pm);
  free(M);
  ctr_geometry_free(gm);
  ctr_geometry_free(g);
  free(proj);
  free(vol);
}

/* The views a slab needs (ctr__helix_slab_views, which the streamed executor's
 * later subvolumes backproject, leaving out the rest): every view left out
 * has window weight exactly 0 (the CPU's double form) at every slice of the
 * slab, and a run in several subvolumes (host store and scratch file) gives
 * the bits of one subvolume. A 20 mm tall volume on a helix of pitch 0.5 H. */
static void test_slab_views(void) {
  const int64_t nz = 40;
  ctr_phantom *ph = long_phantom();
  ctr_geometry *g = bench_fdk_geometry(0.5, nz, 10.0);
  REQUIRE(g && ph);
  ctr_volume_geometry v = ctr_geometry_get_volume(g);
  v.nx = v.ny = 32;
  CHECK_OK(ctr_geometry_set_volume(g, &v));
  const int64_t nviews = ctr_geometry_get_view_count(g), n = v.nx * v.ny * v.nz;
  ctr__helix_fdk hx;
  CHECK(ctr__geometry_helix(g, &hx));
  const double reach = (PI + hx.s) / fabs(hx.kz);
  int64_t worst_extra = 0, zero_left_out = 1, fewest = nviews, most = 0;
  for (int64_t z0 = 0; z0 < nz; z0 += 7) {
    const int64_t m = nz - z0 < 7 ? nz - z0 : 7;
    int64_t a, e;
    ctr__helix_slab_views(g, z0, m, &a, &e);
    for (int64_t i = 0; i < nviews; i++) {
      if (i >= a && i < e) continue;
      double src[3];
      ctr_geometry_get_source(g, i, src);
      for (int64_t k = z0; k < z0 + m; k++) {
        const double wz = ctr__voxel_coord(k, v.nz, v.voxel_z, v.offset_z);
        zero_left_out &= ctr__helix_window(ctr__helix_arg(src[2], wz, hx.kz), hx.s) == 0.0;
      }
    }
    /* the views whose source lies within the reach of the slab's heights, two to spare */
    const double span = (double)(m - 1) * v.voxel_z + 2.0 * reach;
    const int64_t need = (int64_t)ceil(span / fabs(g->hel.pitch_mm) * PER_TURN);
    worst_extra = (e - a) - need > worst_extra ? (e - a) - need : worst_extra;
    fewest = e - a < fewest ? e - a : fewest;
    most = e - a > most ? e - a : most;
  }
  printf("slab views: slabs of 7 slices use %lld .. %lld of %lld views (at most %lld beyond the "
         "window's reach)\n", (long long)fewest, (long long)most, (long long)nviews,
         (long long)worst_extra);
  CHECK(zero_left_out);
  CHECK(most < nviews / 2);
  CHECK(worst_extra <= 3);
  int64_t a, e;
  ctr__helix_slab_views(g, 0, nz, &a, &e);
  /* the whole volume: the helix less its ends beyond the window's reach */
  printf("slab views: the whole volume uses %lld of %lld views\n", (long long)(e - a),
         (long long)nviews);
  const double whole = (double)(nz - 1) * v.voxel_z + 2.0 * reach;
  const int64_t need = (int64_t)ceil(whole / fabs(g->hel.pitch_mm) * PER_TURN);
  CHECK(e - a < nviews && e - a >= need && e - a <= need + 3);
  /* several subvolumes: the bits of one */
  float *proj = project(ph, g);
  float *one = malloc(sizeof(float) * (size_t)n), *split = malloc(sizeof(float) * (size_t)n);
  int64_t pd[3] = {NU, NV, nviews}, vd[3] = {v.nx, v.ny, v.nz};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(one, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array vs = ctr_array_make(split, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
  CHECK_OK(ctr_fdk_stream_memory(g_ctx, g, &so, &pa, &va, NULL));
  const ctr_fdk_store stores[] = {CTR_FDK_STORE_HOST, CTR_FDK_STORE_SCRATCH};
  for (int k = 0; k < 2; k++) {
    memset(split, 0xff, sizeof(float) * (size_t)n);
    so.max_slab_slices = 7;
    so.store = stores[k];
    ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
    CHECK_OK(ctr_fdk_stream_memory(g_ctx, g, &so, &pa, &vs, &rep));
    CHECK_MSG(rep.plan.nslabs >= 5, "%lld subvolume(s)", (long long)rep.plan.nslabs);
#ifdef CTR_TEST_CUDA
    double d = 0, q = 0; /* the general kernel anchors positions per subvolume */
    for (int64_t i = 0; i < n; i++) {
      d += ((double)one[i] - split[i]) * ((double)one[i] - split[i]);
      q += (double)one[i] * one[i];
    }
    CHECK_MSG(q > 0 && sqrt(d / q) < 1e-5, "subvolumes differ by %.3g relative RMS", sqrt(d / q));
#else
    CHECK_MSG(memcmp(one, split, sizeof(float) * (size_t)n) == 0,
              "subvolumes (store %d) differ from one", (int)stores[k]);
#endif
  }
  free(one);
  free(split);
  free(proj);
  ctr_geometry_free(g);
  ctr_phantom_free(ph);
}

#ifdef CTR_TEST_CUDA
/* The GPU's FDK of the same data against the CPU's: relative RMS difference
 * (texture-free general kernel, float positions about a double anchor). */
static void gpu_compare(const ctr_geometry *g, const float *proj, const float *cpu_vol,
                        const char *what) {
  const ctr_volume_geometry v = ctr_geometry_get_volume(g);
  const int64_t n = v.nx * v.ny * v.nz;
  float *gv = malloc(sizeof(float) * (size_t)n);
  CHECK_OK(fdk(g_ctx, g, proj, gv, NULL));
  double d = 0, s = 0;
  for (int64_t i = 0; i < n; i++) {
    d += ((double)gv[i] - cpu_vol[i]) * ((double)gv[i] - cpu_vol[i]);
    s += (double)cpu_vol[i] * cpu_vol[i];
  }
  const double rel = sqrt(d / s);
  printf("%s: GPU against CPU, relative RMS difference %.2e\n", what, rel);
  CHECK_MSG(rel < 2e-3, "GPU differs from the CPU by %.3g relative RMS", rel);
  free(gv);
}
#else
static void gpu_compare(const ctr_geometry *g, const float *proj, const float *cpu_vol,
                        const char *what) {
  (void)g, (void)proj, (void)cpu_vol, (void)what;
}
#endif

int main(void) {
#ifdef CTR_TEST_CUDA
  const char *name = "test_gpu_helical";
#else
  const char *name = "test_helical";
#endif
  const int rc = th_contexts(name, &g_cpu, &g_ctx);
  if (rc) return rc;
  test_window();
  test_geometry();
  test_projection(CTR_DETECTOR_FLAT);
  test_curved_geometry();
  test_projection(CTR_DETECTOR_CYLINDRICAL);
  test_fdk();
  test_cgls();
  test_pitch_limit();
  test_slab_views();
  if (g_ctx != g_cpu) ctr_context_free(g_ctx);
  ctr_context_free(g_cpu);
  return th_finish(name);
}
