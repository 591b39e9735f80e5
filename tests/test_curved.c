/* Cylindrical (curved) detectors, issue 45 item 4 (docs/geometry.md,
 * "Curved (cylindrical) detectors"): the maps against a brute-force ray
 * intersection in double, the parameters and JSON, the exact projections
 * against a numerical line integral, the equiangular ramp kernel against
 * Kak & Slaney's closed form, the fast backprojector against the double
 * reference, FDK of Shepp-Logan against the flat detector of the same fan
 * and rows, and the refusals of the paths without a curved form.
 *
 * Built twice: as test_curved on the CPU, and with CTR_TEST_CUDA as
 * test_gpu_curved, where FDK runs on the GPU and is compared with the CPU
 * (exit 77, skipped, without a GPU). */
#include "harness.h"

#include "bp_check.h"
#include "conebeam/cpu/backproject.h"
#include "filter/filter.h"
#include "geometry/geometry_internal.h"

#define PI 3.14159265358979323846

/* The backend under test (the CPU context, or a CUDA one) and the CPU's. */
static ctr_context *g_ctx, *g_cpu;

static double sq(double x) { return x * x; }

/* The detector position of point x in view angle t (radians) found without
 * the maps: the ray from the source through x, stretched to horizontal
 * length sdd, ends on the cylinder; its angle from the principal ray in the
 * horizontal plane is the arc coordinate, its height the row. */
static void brute_force(const ctr_circular_params *p, double t, const double x[3], double *u,
                        double *v, double *w) {
  const double src[3] = {p->sid * cos(t), p->sid * sin(t), 0.0};
  const double d[3] = {x[0] - src[0], x[1] - src[1], x[2] - src[2]};
  const double h = hypot(d[0], d[1]), lam = p->sdd / h;
  const double hit[3] = {src[0] + lam * d[0], src[1] + lam * d[1], src[2] + lam * d[2]};
  const double e_in[2] = {-cos(t), -sin(t)}, e_u[2] = {-sin(t), cos(t)}; /* principal ray, u */
  const double a = atan2((hit[0] - src[0]) * e_u[0] + (hit[1] - src[1]) * e_u[1],
                         (hit[0] - src[0]) * e_in[0] + (hit[1] - src[1]) * e_in[1]);
  *u = 0.5 * (double)(p->nu - 1) - p->offset_u / p->du + a * p->sdd / p->du;
  *v = 0.5 * (double)(p->nv - 1) - p->offset_v / p->dv + hit[2] / p->dv;
  *w = sq(p->sid / h);
}

/* The maps (core/cylmath.h, through ctr__geometry_project and
 * ctr__cyl_project) against brute_force at random points of random
 * geometries, to 1e-9 pixels; the ray through a pixel (ctr__cyl_ray) comes
 * back to that pixel; and the flat detector's path is still the matrix. */
static void test_maps(void) {
  double worst = 0, worst_w = 0, worst_ray = 0;
  for (int trial = 0; trial < 8; trial++) {
    ctr_circular_params p = th_circular_params(th_uniform(80, 400), 0, 60 + trial, 33, th_uniform(0.5, 2),
                                   th_uniform(0.5, 2), 17, CTR_DETECTOR_CYLINDRICAL);
    p.sdd = p.sid * th_uniform(1.1, 2.5);
    p.offset_u = th_uniform(-5, 5);
    p.offset_v = th_uniform(-5, 5);
    p.angle_start_deg = th_uniform(-180, 180);
    p.direction = trial % 2 ? CTR_ROTATION_CW : CTR_ROTATION_CCW;
    const ctr_volume_geometry vol = {20, 20, 20, 1, 1, 1, 0, 0, 0};
    ctr_geometry *g = NULL;
    CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
    if (!g) continue;
    CHECK(ctr_geometry_get_detector_shape(g) == CTR_DETECTOR_CYLINDRICAL);
    CHECK(ctr_geometry_is_circular(g));
    for (int64_t i = 0; i < p.nviews; i++) {
      const double t =
          (p.angle_start_deg + (double)p.direction * (double)i * 360.0 / 17) * PI / 180;
      ctr__cyl_view c;
      CHECK(ctr__geometry_cyl_view(g, i, &c));
      for (int k = 0; k < 20; k++) {
        const double x[3] = {th_uniform(-0.4, 0.4) * p.sid, th_uniform(-0.4, 0.4) * p.sid,
                             th_uniform(-0.3, 0.3) * p.sid};
        double u, v, w, bu, bv, bw, depth;
        brute_force(&p, t, x, &bu, &bv, &bw);
        ctr__geometry_project(g, i, x, &u, &v, &depth);
        worst = fmax(worst, fmax(fabs(u - bu), fabs(v - bv)));
        ctr__cyl_project(&c, x[0], x[1], x[2], &u, &v, &w);
        worst = fmax(worst, fmax(fabs(u - bu), fabs(v - bv)));
        worst_w = fmax(worst_w, fabs(w - bw) / bw);
        CHECK(depth > 0);
        /* the ray through (u, v) from the source reaches x's pixel again */
        double dir[3];
        const double pu = th_uniform(0, (double)p.nu - 1), pv = th_uniform(0, (double)p.nv - 1);
        ctr__cyl_ray(&c, pu, pv, dir);
        const double lam = th_uniform(0.3, 0.9);
        const double y[3] = {p.sid * cos(t) + lam * p.sdd * dir[0],
                             p.sid * sin(t) + lam * p.sdd * dir[1], lam * p.sdd * dir[2]};
        brute_force(&p, t, y, &bu, &bv, &bw);
        worst_ray = fmax(worst_ray, fmax(fabs(pu - bu), fabs(pv - bv)));
      }
    }
    ctr_geometry_free(g);
  }
  printf("maps against brute force: %.2e pixels, weight %.2e relative, rays %.2e pixels\n",
         worst, worst_w, worst_ray);
  CHECK_MSG(worst < 1e-9, "maps differ from the ray intersection by %g pixels", worst);
  CHECK_MSG(worst_w < 1e-12, "distance weight differs by %g relative", worst_w);
  CHECK_MSG(worst_ray < 1e-9, "rays miss their pixels by %g", worst_ray);

  /* a flat detector: ctr__geometry_project is the matrix */
  ctr_circular_params f = th_circular_params(100, 180, 40, 30, 1, 1, 9, CTR_DETECTOR_FLAT);
  const ctr_volume_geometry vol = {10, 10, 10, 1, 1, 1, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&f, &vol, &g));
  if (g) {
    CHECK(!ctr__geometry_cyl_view(g, 0, NULL));
    CHECK(ctr_geometry_get_detector_shape(g) == CTR_DETECTOR_FLAT);
    double P[12], u, v, c;
    const double x[3] = {3, -4, 5};
    ctr_geometry_get_matrix(g, 4, P);
    ctr__geometry_project(g, 4, x, &u, &v, &c);
    const double cc = P[8] * x[0] + P[9] * x[1] + P[10] * x[2] + P[11];
    CHECK_NEAR(u, (P[0] * x[0] + P[1] * x[1] + P[2] * x[2] + P[3]) / cc, 1e-12);
    CHECK_NEAR(v, (P[4] * x[0] + P[5] * x[1] + P[6] * x[2] + P[7]) / cc, 1e-12);
  }
  ctr_geometry_free(g);
}

/* The parameters: version 1 structs are flat, the field is validated
 * (naming ctr_circular_params.detector), an arc reaching 90 degrees is
 * refused, JSON keeps the shape ("detector": {"shape": "cylindrical"}), a
 * flat file does not mention it, and a bad shape names detector.shape. */
static void test_params_json(void) {
  ctr_circular_params v1;
  CHECK_OK(ctr_circular_params_init(&v1, 1));
  v1.sid = 100, v1.sdd = 150, v1.nu = 32, v1.nv = 8, v1.nviews = 4;
  const ctr_volume_geometry vol = {8, 8, 8, 1, 1, 1, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&v1, &vol, &g));
  CHECK(g && ctr_geometry_get_detector_shape(g) == CTR_DETECTOR_FLAT);
  ctr_geometry_free(g);
  g = NULL;

  ctr_circular_params p = th_circular_params(100, 150, 32, 8, 1, 1, 4, (ctr_detector_shape)7);
  CHECK_FAILS(ctr_geometry_create_circular(&p, &vol, &g), CTR_E_GEOMETRY, "detector = 7");
  CHECK(strcmp(ctr_error_get_field(), "ctr_circular_params.detector") == 0);
  /* 32 columns of 5 mm at 150 mm reach 31.5 degrees each side, fine; of 16 mm, 101 */
  p = th_circular_params(100, 150, 32, 8, 16, 1, 4, CTR_DETECTOR_CYLINDRICAL);
  CHECK_FAILS(ctr_geometry_create_circular(&p, &vol, &g), CTR_E_GEOMETRY, "expected below 90");
  p.du = 5;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  char *json = NULL;
  if (g) CHECK_OK(ctr_geometry_to_json_string(g, &json));
  CHECK(json && strstr(json, "\"shape\":\t\"cylindrical\"") != NULL);
  ctr_geometry *back = NULL;
  if (json) CHECK_OK(ctr_geometry_from_json_string(json, "curved.json", &back));
  if (back) {
    CHECK(ctr_geometry_get_detector_shape(back) == CTR_DETECTOR_CYLINDRICAL);
    double a[12], b[12];
    ctr_geometry_get_matrix(g, 3, a);
    ctr_geometry_get_matrix(back, 3, b);
    CHECK(memcmp(a, b, sizeof a) == 0);
  }
  free(json);
  json = NULL;
  ctr_geometry_free(back);
  ctr_geometry_free(g);
  g = NULL;

  p.detector = CTR_DETECTOR_FLAT;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  if (g) CHECK_OK(ctr_geometry_to_json_string(g, &json));
  CHECK(json && strstr(json, "shape") == NULL);
  free(json);
  ctr_geometry_free(g);
  g = NULL;

  const char *bad =
      "{\"type\": \"circular\", \"sid\": 100, \"sdd\": 150, \"detector\": {\"nu\": 32, \"nv\": "
      "8, \"du\": 1, \"dv\": 1, \"shape\": \"curved\"}, \"angles\": {\"count\": 4}, \"volume\": "
      "{\"size\": [8, 8, 8], \"voxel_mm\": 1}}";
  CHECK_FAILS(ctr_geometry_from_json_string(bad, "bad.json", &g), CTR_E_FORMAT,
              "detector.shape");
  ctr_geometry_free(g);
}

/* Exact projections of an off-centre sphere and a rotated ellipsoid on a
 * curved detector against a numerical line integral (ctr_phantom_density
 * summed every 0.004 mm) along rays built by brute force, not by the maps:
 * the pixel at arc angle (iu - u0) du / sdd and height (iv - v0) dv on the
 * cylinder. Agreement to 1e-3 of the largest value checks the rays. */
static void test_projection(void) {
  ctr_circular_params p = th_circular_params(120, 200, 48, 40, 1.6, 1.4, 6, CTR_DETECTOR_CYLINDRICAL);
  p.offset_u = 2.3;
  p.offset_v = -1.1;
  p.angle_start_deg = 17;
  const ctr_volume_geometry vol = {40, 40, 40, 1, 1, 1, 0, 0, 0};
  const ctr_ellipsoid e[2] = {{1.0, 6, -4, 3, 14, 14, 14, 0, 0, 0},
                              {0.5, -5, 6, -2, 8, 12, 5, 30, 20, 10}};
  ctr_phantom *ph = NULL;
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_phantom_from_ellipsoids(e, 2, &ph));
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  REQUIRE(ph && g);
  float *proj = malloc(sizeof(float) * 48 * 40 * 6);
  const int64_t pd[3] = {48, 40, 6};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  CHECK_OK(ctr_phantom_project(g_cpu, ph, g, 1, &pa));
  const double u0 = 23.5 - p.offset_u / p.du, v0 = 19.5 - p.offset_v / p.dv, h = 0.004;
  double worst = 0, top = 0;
  int hits = 0;
  for (int64_t i = 0; i < 6; i++) {
    const double t = (17 + 60.0 * (double)i) * PI / 180;
    const double src[3] = {p.sid * cos(t), p.sid * sin(t), 0};
    for (int64_t iv = 1; iv < 40; iv += 5)
      for (int64_t iu = 2; iu < 48; iu += 3) {
        const double a = ((double)iu - u0) * p.du / p.sdd;
        const double pix[3] = {src[0] + p.sdd * (-cos(t) * cos(a) - sin(t) * sin(a)),
                               src[1] + p.sdd * (-sin(t) * cos(a) + cos(t) * sin(a)),
                               ((double)iv - v0) * p.dv};
        double d[3] = {pix[0] - src[0], pix[1] - src[1], pix[2] - src[2]};
        const double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        for (int k = 0; k < 3; k++) d[k] /= len;
        double sum = 0;
        /* the phantom lies within 30 mm of the axis: sid +- 30 along the ray */
        for (double s = p.sid - 30 + 0.5 * h; s < p.sid + 30; s += h) {
          const double x[3] = {src[0] + s * d[0], src[1] + s * d[1], src[2] + s * d[2]};
          sum += ctr_phantom_density(ph, x) * h;
        }
        const double got = proj[(i * 40 + iv) * 48 + iu];
        worst = fmax(worst, fabs(got - sum));
        top = fmax(top, sum);
        hits += sum > 1;
      }
  }
  printf("exact curved projections against a numerical integral: %.2e (largest %.1f, %d rays "
         "through the phantom)\n", worst, top, hits);
  CHECK_MSG(hits > 50 && top > 20, "%d rays hit the phantom, largest %g", hits, top);
  CHECK_MSG(worst < 1e-3 * top, "projections differ from the integral by %g", worst);
  free(proj);
  ctr_geometry_free(g);
  ctr_phantom_free(ph);
}

/* The equiangular kernel (ram-lak, unit pixel, fan_step a): at lag m the
 * spatial kernel is h(m) (m a / sin(m a))^2, i.e. 1/4 at 0, 0 at even m and
 * -a^2 / (pi sin(m a))^2 at odd m (Kak & Slaney 1988, Sec. 3.4.2, equiangular rays, without its
 * 1/2 and 1/a^2, which FDK's scale carries). Read back by an inverse FFT of
 * ctr__ramp_kernel_fan's spectrum. fan_step 0 is the flat kernel. */
static void test_fan_kernel(void) {
  const int64_t n = 50, L = ctr__ramp_padded_length(n);
  const double a = 0.02;
  double *k = NULL, *k0 = NULL;
  CHECK_OK(ctr__ramp_kernel_fan(L, n, CTR_WINDOW_RAM_LAK, 1.0, a, &k));
  CHECK_OK(ctr__ramp_kernel(L, CTR_WINDOW_RAM_LAK, 1.0, &k0));
  REQUIRE(k && k0);
  double worst = 0, diff = 0;
  for (int64_t m = 0; m < n; m++) {
    double h = 0; /* the inverse transform of the real even spectrum at lag m */
    for (int64_t f = 0; f <= L / 2; f++)
      h += (f == 0 || f == L / 2 ? 1.0 : 2.0) * k[f] * cos(2 * PI * (double)(f * m) / (double)L);
    h /= (double)L;
    const double want = m == 0 ? 0.25 : m % 2 ? -sq(a) / sq(PI * sin((double)m * a)) : 0.0;
    worst = fmax(worst, fabs(h - want));
  }
  for (int64_t f = 0; f <= L / 2; f++) diff = fmax(diff, fabs(k[f] - k0[f]));
  CHECK_MSG(worst < 1e-12, "fan kernel differs from Kak & Slaney's by %g", worst);
  CHECK_MSG(diff > 1e-4, "the fan kernel equals the flat one (%g)", diff);
  free(k);
  free(k0);
}

/* The fast CPU backprojector (float, ctr_fdk_backproject) against the double
 * reference with the same curved maps (ctr__bp_reference), slabs included. */
static void test_bp_reference(void) {
  for (int trial = 0; trial < 4; trial++) {
    const ctr_volume_geometry vol = {19 + trial, 16, 12, th_uniform(0.8, 1.2),
                                     th_uniform(0.8, 1.2), th_uniform(0.8, 1.3),
                                     th_uniform(-2, 2), th_uniform(-2, 2), th_uniform(-2, 2)};
    ctr_circular_params p = th_circular_params(th_uniform(60, 120), 0, 41 + 2 * trial, 29,
                                   th_uniform(0.9, 1.6), th_uniform(0.9, 1.6), 21,
                                   CTR_DETECTOR_CYLINDRICAL);
    p.sdd = p.sid * th_uniform(1.2, 2.0);
    p.offset_u = th_uniform(-5, 5);
    p.offset_v = th_uniform(-5, 5);
    p.angle_range_deg = th_uniform(200, 360);
    ctr_geometry *g = NULL;
    CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
    if (!g) continue;
    const int64_t z0 = trial % 3;
    const double rel = th_bp_vs_reference(g_cpu, g, z0, 12 - z0 - 1, 6);
    CHECK_MSG(rel < 1e-5, "trial %d: relative RMS %g", trial, rel);
    ctr_geometry_free(g);
  }
}

/* A slab backprojected from a window of the detector's rows
 * (ctr__geometry_row_band, ctr__geometry_rows: what a distributed CPU rank
 * reads) is bit for bit the slab from whole views: the curved row band
 * holds every row the slab's voxels sample (v = v0 + fv z / r between the
 * least corner depth and the largest corner distance). */
static void test_row_window(void) {
  ctr_circular_params p = th_circular_params(150, 240, 40, 60, 2.0, 2.0, 12, CTR_DETECTOR_CYLINDRICAL);
  p.offset_v = 3.3;
  const ctr_volume_geometry vol = {24, 24, 40, 2.0, 2.0, 2.0, 1.5, -2.0, 0.0};
  ctr_geometry *g = NULL, *gw = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  REQUIRE(g);
  const int64_t z0 = 30, nz = 8, nu = 40, nv = 60, n = 12;
  int64_t r0 = 0, nr = 0;
  ctr__geometry_row_band(g, z0, nz, &r0, &nr);
  CHECK_MSG(r0 > 0 && nr < nv / 2, "the slab's band is rows %lld + %lld of %lld", (long long)r0,
            (long long)nr, (long long)nv);
  CHECK_OK(ctr__geometry_rows(g, r0, nr, &gw));
  float *filt = malloc(sizeof(float) * nu * nv * n), *win = malloc(sizeof(float) * nu * nr * n);
  for (int64_t i = 0; i < nu * nv * n; i++) filt[i] = (float)th_uniform(-1, 1);
  for (int64_t k = 0; k < n; k++)
    memcpy(win + k * nu * nr, filt + (k * nv + r0) * nu, sizeof(float) * nu * nr);
  const int64_t sa = ctr__padded_size(nu, nv), sw = ctr__padded_size(nu, nr);
  float *pa = malloc(sizeof(float) * sa * n), *pw = malloc(sizeof(float) * sw * n);
  float *va = calloc(24 * 24 * nz, sizeof(float)), *vw = calloc(24 * 24 * nz, sizeof(float));
  ctr__fill_padded(g, filt, CTR_DTYPE_FLOAT32, n, pa);
  if (gw) ctr__fill_padded(gw, win, CTR_DTYPE_FLOAT32, n, pw);
  const ctr__padded_views whole = {pa + ctr__padded_origin(nu), sa, ctr__padded_pitch(nu)};
  const ctr__padded_views part = {pw + ctr__padded_origin(nu), sw, ctr__padded_pitch(nu)};
  ctr__bp_cpu(g_cpu, g, 0, n, NULL, NULL, &whole, va, z0, nz);
  if (gw) ctr__bp_cpu(g_cpu, gw, 0, n, NULL, NULL, &part, vw, z0, nz);
  double norm = 0;
  for (int64_t i = 0; i < 24 * 24 * nz; i++) norm += sq(va[i]);
  CHECK(norm > 0);
  CHECK_MSG(memcmp(va, vw, sizeof(float) * 24 * 24 * nz) == 0,
            "the slab from rows %lld + %lld differs from the whole views'", (long long)r0,
            (long long)nr);
  free(filt);
  free(win);
  free(pa);
  free(pw);
  free(va);
  free(vw);
  ctr_geometry_free(gw);
  ctr_geometry_free(g);
}

typedef struct recon {
  ctr_geometry *g;
  float *proj, *vol;
  int64_t nu, nv, nviews;
} recon;

/* A Shepp-Logan scan of n^3 voxels from `nviews` views on a detector of
 * n + n/4 columns and rows whose fan angle is `fan` (radians), flat or
 * cylindrical: the same fan, rows and row pitch for both shapes. */
static int scan(recon *r, ctr_phantom *ph, int64_t n, int64_t nviews, double fan,
                ctr_detector_shape shape) {
  memset(r, 0, sizeof *r);
  const double sid = 2.0 * n, sdd = 3.0 * n;
  r->nu = r->nv = n + n / 4;
  const double half = 0.5 * fan;
  const double du = shape == CTR_DETECTOR_CYLINDRICAL ? fan * sdd / (double)r->nu
                                                       : 2 * sdd * tan(half) / (double)r->nu;
  ctr_circular_params p = th_circular_params(sid, sdd, r->nu, r->nv, du, 2.0 * n / (double)r->nv, nviews,
                                 shape);
  p.angle_start_deg = 30;
  const ctr_volume_geometry vol = {n, n, n, 1, 1, 1, 0, 0, 0};
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &r->g));
  if (!r->g) return 0;
  r->nviews = nviews;
  r->proj = malloc(sizeof(float) * r->nu * r->nv * nviews);
  r->vol = malloc(sizeof(float) * n * n * n);
  const int64_t pd[3] = {r->nu, r->nv, nviews};
  ctr_array pa = ctr_array_make(r->proj, CTR_DTYPE_FLOAT32, 3, pd);
  const ctr_status st = ctr_phantom_project(g_cpu, ph, r->g, 1, &pa);
  CHECK_OK(st);
  return st == CTR_OK;
}

static ctr_status fdk(ctr_context *ctx, recon *r, const ctr_geometry *g, const ctr_fdk_options *o,
                      float *vol, int64_t nz) {
  const ctr_volume_geometry v = ctr_geometry_get_volume(g);
  const int64_t pd[3] = {r->nu, r->nv, r->nviews}, vd[3] = {v.nx, v.ny, nz};
  ctr_array pa = ctr_array_make(r->proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  return ctr_fdk(ctx, g, o, &pa, &va);
}

static void free_recon(recon *r) {
  free(r->proj);
  free(r->vol);
  ctr_geometry_free(r->g);
}

static ctr_volume_error compare(const float *v, const float *t, int64_t n) {
  ctr_volume_error e = CTR_VOLUME_ERROR_INIT;
  CHECK_OK(ctr_volume_compare(v, t, n, n, n, n / 5, &e));
  return e;
}

#ifdef CTR_TEST_CUDA
/* The GPU volume a against the CPU's b: relative RMS below `bound`. */
static void check_close(const float *a, const float *b, int64_t n, double bound, const char *what) {
  double d2 = 0, b2 = 0;
  for (int64_t i = 0; i < n; i++) {
    d2 += sq((double)a[i] - b[i]);
    b2 += sq(b[i]);
  }
  const double rel = sqrt(d2 / (b2 > 0 ? b2 : 1));
  printf("  %s: GPU against CPU relative RMS %.2e (bound %.0e)\n", what, rel, bound);
  CHECK_MSG(b2 > 0 && rel < bound, "%s: GPU differs from CPU by %g relative RMS", what, rel);
}

/* The GPU's curved FDK against the CPU's on the same projections: the
 * texture kernels (mirrored pairs over the whole volume, single slices in a
 * slab) to the texture unit's 8-bit weights, the exact ones to float
 * rounding (atan2f on either side). */
static void gpu_vs_cpu(recon *r, int64_t n) {
  const int64_t nvox = n * n * n;
  float *c = malloc(sizeof(float) * nvox), *gv = malloc(sizeof(float) * nvox);
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.window = CTR_WINDOW_HANN;
  CHECK_OK(fdk(g_cpu, r, r->g, &o, c, n));
  CHECK_OK(fdk(g_ctx, r, r->g, &o, gv, n));
  check_close(gv, c, nvox, 5e-3, "texture, whole volume (pairs)");
  o.interp = CTR_INTERP_EXACT;
  CHECK_OK(fdk(g_ctx, r, r->g, &o, gv, n));
  check_close(gv, c, nvox, 2e-4, "exact, whole volume (pairs)");
  o.interp = CTR_INTERP_PRECISE; /* runs the exact kernel on a curved detector */
  CHECK_OK(fdk(g_ctx, r, r->g, &o, gv, n));
  check_close(gv, c, nvox, 2e-4, "precise (as exact)");
  o.z0 = n / 3;
  o.nz = n / 4;
  o.interp = CTR_INTERP_DEFAULT;
  CHECK_OK(fdk(g_ctx, r, r->g, &o, gv, o.nz));
  check_close(gv, c + o.z0 * n * n, n * n * o.nz, 5e-3, "texture, a slab");
  o.interp = CTR_INTERP_EXACT;
  CHECK_OK(fdk(g_ctx, r, r->g, &o, gv, o.nz));
  check_close(gv, c + o.z0 * n * n, n * n * o.nz, 2e-4, "exact, a slab");
  free(c);
  free(gv);
}
#endif

/* An offset (half-fan) cylindrical detector on a full turn: 48 columns with
 * the principal point 7.5 columns from the centre of the narrow side's last
 * column reach as far beyond the axis (40 columns) as the centred 80-column
 * arc c of the same pitch (test_fdk's). Wang's weights with the fan angle
 * itself and the rows extended beyond the narrow edge (docs/geometry.md,
 * "Offset detectors") give the centred arc's RMSE over the head within 1.2x
 * (the half-fan target, on the curved detector; measured 1.001x). */
static void test_offset(ctr_phantom *ph, const float *truth, recon *c, int64_t n,
                        const ctr_fdk_options *o, const ctr_volume_error *ec) {
  const ctr_volume_geometry vg = ctr_geometry_get_volume(c->g);
  recon h;
  memset(&h, 0, sizeof h);
  double du, dv;
  ctr_geometry_get_detector(c->g, NULL, NULL, &du, &dv);
  /* the same arc cut to 48 columns on one side: offset_u = 16 columns */
  ctr_circular_params p = th_circular_params(2.0 * n, 3.0 * n, 48, c->nv, du, dv, 240,
                                 CTR_DETECTOR_CYLINDRICAL);
  p.angle_start_deg = 30;
  p.offset_u = 16 * du;
  CHECK_OK(ctr_geometry_create_circular(&p, &vg, &h.g));
  REQUIRE(h.g);
  CHECK(ctr_geometry_offset_detector(h.g));
  h.nu = 48, h.nv = c->nv, h.nviews = 240;
  h.proj = malloc(sizeof(float) * 48 * h.nv * 240);
  h.vol = malloc(sizeof(float) * n * n * n);
  const int64_t pd[3] = {48, h.nv, 240};
  ctr_array pa = ctr_array_make(h.proj, CTR_DTYPE_FLOAT32, 3, pd);
  CHECK_OK(ctr_phantom_project(g_cpu, ph, h.g, 1, &pa));
  CHECK_OK(fdk(g_ctx, &h, h.g, o, h.vol, n));
  const ctr_volume_error eh = compare(h.vol, truth, n);
  printf("half-fan curved detector: RMSE %.5f over the head (centred %.5f, ratio %.3f), %.5f "
         "away from edges (centred %.5f)\n", eh.rmse_object, ec->rmse_object,
         eh.rmse_object / ec->rmse_object, eh.rmse_flat, ec->rmse_flat);
  CHECK_MSG(eh.rmse_object < 1.2 * ec->rmse_object, "half-fan %g, centred %g", eh.rmse_object,
            ec->rmse_object);
  free_recon(&h);
}

/* FDK of Shepp-Logan (64^3, 240 views, Hann; sid 128, sdd 192 mm) on a
 * cylindrical detector against a flat detector of the same fan angle (40
 * degrees), columns, rows and row pitch: the RMSE over the head and away
 * from edges within 1.1x of the flat's (measured 0.985x and 0.70x: the arc's
 * columns are finer near the centre for the same fan), and well below that
 * of the same curved data reconstructed as if the detector were flat
 * (measured 1.65x the curved error away from edges; bound 1.4x, so the
 * check can fail). On the GPU, the same data against the CPU. */
static void test_fdk(void) {
  const int64_t n = 64;
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.5 * n * 0.95, 1.0, &ph));
  REQUIRE(ph);
  const ctr_volume_geometry vg = {n, n, n, 1, 1, 1, 0, 0, 0};
  float *truth = malloc(sizeof(float) * n * n * n);
  const int64_t vd[3] = {n, n, n};
  ctr_array ta = ctr_array_make(truth, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_phantom_voxelize(g_cpu, ph, &vg, 2, 0, &ta));
  const double fan = 40 * PI / 180;
  recon c, f;
  const int okc = scan(&c, ph, n, 240, fan, CTR_DETECTOR_CYLINDRICAL);
  const int okf = scan(&f, ph, n, 240, fan, CTR_DETECTOR_FLAT);
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.window = CTR_WINDOW_HANN;
  if (okc && okf) {
    CHECK_OK(fdk(g_ctx, &c, c.g, &o, c.vol, n));
    CHECK_OK(fdk(g_ctx, &f, f.g, &o, f.vol, n));
    const ctr_volume_error ec = compare(c.vol, truth, n), ef = compare(f.vol, truth, n);
    printf("shepp-logan 64^3, fan 40 deg: curved RMSE %.5f over the head, %.5f away from edges; "
           "flat %.5f, %.5f (ratios %.3f, %.3f)\n", ec.rmse_object, ec.rmse_flat,
           ef.rmse_object, ef.rmse_flat, ec.rmse_object / ef.rmse_object,
           ec.rmse_flat / ef.rmse_flat);
    CHECK_MSG(ec.rmse_object < 1.1 * ef.rmse_object, "curved RMSE over the head %g, flat %g",
              ec.rmse_object, ef.rmse_object);
    CHECK_MSG(ec.rmse_flat < 1.1 * ef.rmse_flat, "curved RMSE away from edges %g, flat %g",
              ec.rmse_flat, ef.rmse_flat);
    CHECK_MSG(ef.rmse_flat < 0.01, "flat RMSE away from edges %g", ef.rmse_flat);
    /* the curved data through a flat geometry of the same pitch: wrong */
    ctr_circular_params p = th_circular_params(2.0 * n, 3.0 * n, c.nu, c.nv, fan * 3.0 * n / (double)c.nu,
                                   2.0 * n / (double)c.nv, 240, CTR_DETECTOR_FLAT);
    p.angle_start_deg = 30;
    ctr_geometry *wrong = NULL;
    CHECK_OK(ctr_geometry_create_circular(&p, &vg, &wrong));
    if (wrong) {
      float *w = malloc(sizeof(float) * n * n * n);
      CHECK_OK(fdk(g_ctx, &c, wrong, &o, w, n));
      const ctr_volume_error ew = compare(w, truth, n);
      printf("  the curved data reconstructed as flat: RMSE %.5f over the head, %.5f away from "
             "edges\n", ew.rmse_object, ew.rmse_flat);
      CHECK_MSG(ew.rmse_flat > 1.4 * ec.rmse_flat, "flat maps on curved data: %g (curved %g)",
                ew.rmse_flat, ec.rmse_flat);
      free(w);
      ctr_geometry_free(wrong);
    }
#ifdef CTR_TEST_CUDA
    gpu_vs_cpu(&c, n);
#endif
    test_offset(ph, truth, &c, n, &o, &ec);
  }
  free_recon(&c);
  free_recon(&f);
  free(truth);
  ctr_phantom_free(ph);
}

/* Paths without a curved form refuse it, naming the field: the iterative
 * fast pair (the matched pair has the curved rays: test_curved_iter), and
 * the filtered halves' offset extension is not needed here. The coverage
 * and fan follow the arc. */
static void test_refusals_and_coverage(void) {
  ctr_circular_params p = th_circular_params(200, 300, 64, 64, 2.0, 2.0, 90, CTR_DETECTOR_CYLINDRICAL);
  const ctr_volume_geometry vol = {60, 60, 40, 1.5, 1.5, 1.5, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  REQUIRE(g);
  ctr_projector *pr = NULL;
  ctr_projector_options po = CTR_PROJECTOR_OPTIONS_INIT;
  po.pair = CTR_PAIR_FAST;
  CHECK_FAILS(ctr_projector_create_cone(g_cpu, g, &po, &pr), CTR_E_UNSUPPORTED,
              "weights are those of a flat detector");
  CHECK(strcmp(ctr_error_get_field(), "ctr_projector_options.pair") == 0);
  CHECK(pr == NULL);
  /* the arc's half fan: 32 columns x 2 mm / 300 mm = 0.2133 rad = 12.2 deg,
   * reaching 300 sin(0.2133) x 200 / 300 = 42.3 mm at the axis: the 45 mm
   * half-width volume is not wholly covered, a 30 mm one is */
  const double cov = ctr_geometry_coverage(g);
  CHECK_MSG(cov < 1.0 && cov > 0.5, "coverage %g", cov);
  const ctr_volume_geometry small = {40, 40, 40, 1.5, 1.5, 1.5, 0, 0, 0};
  CHECK_OK(ctr_geometry_set_volume(g, &small));
  CHECK_NEAR(ctr_geometry_coverage(g), 1.0, 0.0);
  int ok = 0;
  char why[512];
  CHECK_OK(ctr_geometry_fdk_check(g, &ok, why, sizeof why));
  CHECK_MSG(ok, "fdk_check refuses a covered curved scan: %s", why);
  ctr_geometry_free(g);
}

int main(void) {
  const int rc = th_contexts("test_curved", &g_cpu, &g_ctx);
  if (rc) return rc;
  test_maps();
  test_params_json();
  test_projection();
  test_fan_kernel();
  test_bp_reference();
  test_row_window();
  test_refusals_and_coverage();
  test_fdk();
  if (g_ctx != g_cpu) ctr_context_free(g_ctx);
  ctr_context_free(g_cpu);
#ifdef CTR_TEST_CUDA
  return th_finish("test_gpu_curved");
#else
  return th_finish("test_curved");
#endif
}
