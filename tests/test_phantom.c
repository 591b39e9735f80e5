/* Phantom module: exact line integrals against closed forms and quadrature,
 * cone-beam projection against independently traced rays, voxelisation
 * against volumes and point sampling, and the JSON phantom format. */
#include "harness.h"

#include <stdint.h>
#include <time.h>
#include <unistd.h>

#define PI 3.14159265358979323846

static void cross(const double a[3], const double b[3], double out[3]) {
  out[0] = a[1] * b[2] - a[2] * b[1];
  out[1] = a[2] * b[0] - a[0] * b[2];
  out[2] = a[0] * b[1] - a[1] * b[0];
}
static double dot(const double a[3], const double b[3]) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
static double norm(const double a[3]) { return sqrt(dot(a, a)); }

static void random_dir(double d[3]) {
  double n;
  do {
    for (int i = 0; i < 3; i++) d[i] = th_uniform(-1.0, 1.0);
    n = norm(d);
  } while (n < 0.1 || n > 1.0);
  for (int i = 0; i < 3; i++) d[i] /= n;
}

/* Chord of the sphere (c, r) along o + t d (d unit) for t > tmin, computed
 * the textbook way in world coordinates, independently of the library. */
static double sphere_chord(const double c[3], double r, const double o[3], const double d[3],
                           double tmin) {
  double w[3] = {c[0] - o[0], c[1] - o[1], c[2] - o[2]}, x[3];
  cross(w, d, x);
  double h2 = dot(x, x);
  if (h2 >= r * r) return 0.0;
  double half = sqrt(r * r - h2), tm = dot(w, d);
  double t1 = tm - half, t2 = tm + half;
  if (t1 < tmin) t1 = tmin;
  return t2 > t1 ? t2 - t1 : 0.0;
}

/* Composite Simpson integral of the phantom density along o + t d over
 * [t0, t1] with n (even) intervals. */
static double simpson_density(const ctr_phantom *p, const double o[3], const double d[3],
                              double t0, double t1, int n) {
  double h = (t1 - t0) / n, sum = 0.0;
  for (int i = 0; i <= n; i++) {
    double t = t0 + i * h;
    double x[3] = {o[0] + t * d[0], o[1] + t * d[1], o[2] + t * d[2]};
    double w = (i == 0 || i == n) ? 1.0 : (i % 2 ? 4.0 : 2.0);
    sum += w * ctr_phantom_density(p, x);
  }
  return sum * h / 3.0;
}

static void test_construction(void) {
  ctr_phantom *p = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(100.0, 2.0, &p));
  CHECK(ctr_phantom_get_ellipsoid_count(p) == 10);
  const ctr_ellipsoid *e = ctr_phantom_get_ellipsoids(p);
  CHECK(e != NULL);
  if (e) {
    CHECK_NEAR(e[0].density, 2.0, 1e-15);
    CHECK_NEAR(e[1].density, -1.6, 1e-15);
    CHECK_NEAR(e[1].cy, -1.84, 1e-12);
    CHECK_NEAR(e[2].cx, 22.0, 1e-12);
    CHECK_NEAR(e[2].ax, 11.0, 1e-12);
    CHECK_NEAR(e[2].phi_deg, -18.0, 0.0);
    CHECK_NEAR(e[3].psi_deg, 10.0, 0.0);
    CHECK_NEAR(e[9].ay, 4.6, 1e-12);
  }
  ctr_phantom_free(p);
  p = NULL;

  ctr_ellipsoid good = {1.0, 0, 0, 0, 1, 2, 3, 0, 0, 0};
  ctr_ellipsoid bad[2] = {good, good};
  bad[1].ay = 0.0;
  CHECK_FAILS(ctr_phantom_from_ellipsoids(bad, 2, &p), CTR_E_INVALID_ARGUMENT, "ellipsoid 1: ay");
  CHECK(p == NULL);
  bad[1] = good;
  bad[1].cz = NAN;
  CHECK_FAILS(ctr_phantom_from_ellipsoids(bad, 2, &p), CTR_E_INVALID_ARGUMENT, "ellipsoid 1: cz");
  bad[1] = good;
  bad[0].theta_deg = INFINITY;
  CHECK_FAILS(ctr_phantom_from_ellipsoids(bad, 2, &p), CTR_E_INVALID_ARGUMENT, "theta_deg");
  CHECK_FAILS(ctr_phantom_from_ellipsoids(&good, 0, &p), CTR_E_INVALID_ARGUMENT, "n is 0");
  CHECK_FAILS(ctr_phantom_from_ellipsoids(&good, 1, NULL), CTR_E_INVALID_ARGUMENT, "out");
  CHECK_FAILS(ctr_phantom_shepp_logan(-5.0, 1.0, &p), CTR_E_INVALID_ARGUMENT, "radius");
  CHECK_FAILS(ctr_phantom_shepp_logan(5.0, NAN, &p), CTR_E_INVALID_ARGUMENT, "scale");
  CHECK(ctr_phantom_get_ellipsoid_count(NULL) == 0);
  ctr_phantom_free(NULL);

  /* The input array is copied, not referenced. */
  ctr_ellipsoid copy = good;
  CHECK_OK(ctr_phantom_from_ellipsoids(&copy, 1, &p));
  copy.ax = 99.0;
  CHECK(p && ctr_phantom_get_ellipsoids(p)[0].ax == 1.0);
  ctr_phantom_free(p);
}

/* The Euler convention, checked on points whose inside/outside status follows
 * from the geometric meaning of the angles rather than from the matrix. */
static void test_euler_convention(void) {
  struct {
    double phi, theta, psi;
    double in[3][3], out[3][3];
  } cases[] = {
      /* phi = 90: the body turns +90 deg about z, its x axis (10 mm) now
       * along world y, its y axis (20 mm) along world -x. */
      {90, 0, 0, {{19, 0, 0}, {0, 9, 0}, {0, 0, 29}}, {{21, 0, 0}, {0, 11, 0}, {0, 0, 31}}},
      /* psi alone is also a turn about z. */
      {0, 0, 90, {{19, 0, 0}, {0, 9, 0}, {0, 0, 29}}, {{21, 0, 0}, {0, 11, 0}, {0, 0, 31}}},
      /* theta = 90: turn about x; the body's y axis goes to world z, z to -y. */
      {0, 90, 0, {{9, 0, 0}, {0, 29, 0}, {0, 0, 19}}, {{11, 0, 0}, {0, 31, 0}, {0, 0, 21}}},
      /* phi = 90 then theta = 90 about the new x axis (world y): body x -> y,
       * body y -> z, body z -> x. */
      {90, 90, 0, {{29, 0, 0}, {0, 9, 0}, {0, 0, 19}}, {{31, 0, 0}, {0, 11, 0}, {0, 0, 21}}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ctr_ellipsoid e = {1.0, 0, 0, 0, 10, 20, 30, cases[c].phi, cases[c].theta, cases[c].psi};
    ctr_phantom *p = NULL;
    CHECK_OK(ctr_phantom_from_ellipsoids(&e, 1, &p));
    if (!p) continue;
    for (int k = 0; k < 3; k++) {
      CHECK_MSG(ctr_phantom_density(p, cases[c].in[k]) == 1.0, "case %zu inside point %d", c, k);
      CHECK_MSG(ctr_phantom_density(p, cases[c].out[k]) == 0.0, "case %zu outside point %d", c, k);
    }
    ctr_phantom_free(p);
  }
}

static void test_sphere_line_integrals(void) {
  const double c[3] = {3.0, -2.0, 5.0}, r = 7.0, rho = 1.5;
  ctr_ellipsoid e = {rho, c[0], c[1], c[2], r, r, r, 33.0, -71.0, 12.0};
  ctr_phantom *p = NULL;
  CHECK_OK(ctr_phantom_from_ellipsoids(&e, 1, &p));
  if (!p) return;
  /* Rounding moves the ray's distance to the centre by ~eps |o - c| ~ 1e-14
   * mm; the chord 2 sqrt(r^2 - h^2) amplifies that by r / sqrt(r^2 - h^2),
   * at most ~1e5 for the near-tangent rays below (h = r (1 - 1e-9)), so 1e-8
   * mm bounds the rounding of both computations. */
  const double tol = 1e-8;
  int hits = 0, misses = 0, worst_fail = 0;
  for (int i = 0; i < 3000; i++) {
    double o[3], d[3], target[3];
    random_dir(d);
    /* Aim at points around the sphere so that both hits and misses occur. */
    for (int k = 0; k < 3; k++) target[k] = c[k] + th_uniform(-1.4 * r, 1.4 * r);
    double back = th_uniform(-60.0, 60.0);
    for (int k = 0; k < 3; k++) o[k] = target[k] - back * d[k];
    double expect = rho * sphere_chord(c, r, o, d, -INFINITY);
    double got = ctr_phantom_line_integral(p, o, d);
    if (expect > 0) hits++; else misses++;
    if (fabs(got - expect) > tol && worst_fail++ < 5) CHECK_NEAR(got, expect, tol);
  }
  CHECK_MSG(worst_fail == 0, "%d random sphere rays out of tolerance", worst_fail);
  CHECK(hits > 500 && misses > 500);

  /* Rays at prescribed distances from the centre, including tangent-ish
   * ones just inside and just outside, from far away. */
  const double hs[] = {0.0, 0.5, 0.999999, 1.0 - 1e-9, 1.0 + 1e-9, 1.000001, 2.0};
  for (size_t k = 0; k < sizeof hs / sizeof hs[0]; k++) {
    for (int rep = 0; rep < 20; rep++) {
      double d[3], n[3], tmp[3], o[3];
      random_dir(d);
      random_dir(tmp);
      cross(d, tmp, n);
      double nn = norm(n);
      for (int j = 0; j < 3; j++) n[j] /= nn;
      double back = th_uniform(-500.0, 500.0);
      for (int j = 0; j < 3; j++) o[j] = c[j] + hs[k] * r * n[j] - back * d[j];
      double expect = hs[k] < 1.0 ? rho * 2.0 * r * sqrt(1.0 - hs[k] * hs[k]) : 0.0;
      CHECK_NEAR(ctr_phantom_line_integral(p, o, d), expect, tol);
    }
  }
  /* A non-unit direction describes the same line. */
  const double o[3] = {-40.0, -2.0, 5.0}, d10[3] = {10.0, 0.0, 0.0};
  CHECK_NEAR(ctr_phantom_line_integral(p, o, d10), rho * 2.0 * r, 1e-12);
  const double zero[3] = {0, 0, 0};
  CHECK(isnan(ctr_phantom_line_integral(p, o, zero)));
  ctr_phantom_free(p);
}

/* Random rays through a phantom against Simpson quadrature of its density.
 * Simpson is exact on the constant pieces; each jump J of the integrand costs
 * at most (2/3) h |J| (the composite weights 1,4,2,...,4,1 shift the jump by
 * at most 2h/3), and each ellipsoid surface is crossed at most twice, so
 * |error| <= (4/3) h sum|density|. */
static void check_against_quadrature(const ctr_phantom *p, double centre[3], double reach,
                                     double spread, int nrays, const char *what) {
  const ctr_ellipsoid *e = ctr_phantom_get_ellipsoids(p);
  double sum_rho = 0.0;
  for (int64_t k = 0; k < ctr_phantom_get_ellipsoid_count(p); k++) sum_rho += fabs(e[k].density);
  const int n = 60000;
  const double h = 2.0 * reach / n;
  const double tol = (4.0 / 3.0) * h * sum_rho * 1.001 + 1e-9;
  int bad = 0, hits = 0;
  for (int i = 0; i < nrays; i++) {
    double d[3], o[3];
    random_dir(d);
    for (int k = 0; k < 3; k++) o[k] = centre[k] + th_uniform(-spread, spread);
    double t0 = dot(centre, d) - dot(o, d); /* closest approach to the centre */
    double exact = ctr_phantom_line_integral(p, o, d);
    double quad = simpson_density(p, o, d, t0 - reach, t0 + reach, n);
    if (fabs(exact) > 0) hits++;
    if (fabs(exact - quad) > tol && bad++ < 5)
      CHECK_MSG(0, "%s ray %d: exact %.12g quadrature %.12g tol %.3g", what, i, exact, quad, tol);
  }
  CHECK_MSG(bad == 0, "%s: %d of %d rays outside the quadrature bound", what, bad, nrays);
  CHECK_MSG(hits > nrays / 4, "%s: only %d of %d rays hit", what, hits, nrays);
}

static void test_quadrature(void) {
  ctr_ellipsoid e = {0.7, 5.0, -3.0, 2.0, 30.0, 15.0, 8.0, 25.0, 40.0, -70.0};
  ctr_phantom *p = NULL;
  CHECK_OK(ctr_phantom_from_ellipsoids(&e, 1, &p));
  if (p) {
    double c[3] = {5.0, -3.0, 2.0};
    /* reach 35 > the largest semi-axis covers every chord. */
    check_against_quadrature(p, c, 35.0, 25.0, 150, "rotated ellipsoid");
  }
  ctr_phantom_free(p);
  p = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(90.0, 1.0, &p));
  if (p) {
    double c[3] = {0.0, 0.0, 0.0};
    /* The head fits in a ball of radius 0.92 * 90 < 90 mm. */
    check_against_quadrature(p, c, 90.0, 60.0, 120, "Shepp-Logan");
  }
  ctr_phantom_free(p);
}

/* Circular geometry of the header's definition, rebuilt here to trace each
 * pixel's ray independently of the projection matrices. */
typedef struct circ {
  ctr_circular_params prm;
  ctr_geometry *g;
} circ;

static int make_circ(circ *cg, int64_t nu, int64_t nv, int64_t nviews, double start) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 400.0;
  p.sdd = 700.0;
  p.nu = nu;
  p.nv = nv;
  p.du = 1.3;
  p.dv = 1.1;
  p.offset_u = 3.2;
  p.offset_v = -2.1;
  p.nviews = nviews;
  p.angle_start_deg = start;
  p.angle_range_deg = 360.0;
  ctr_volume_geometry vol = {64, 64, 64, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0};
  cg->prm = p;
  cg->g = NULL;
  ctr_status st = ctr_geometry_create_circular(&p, &vol, &cg->g);
  CHECK_MSG(st == CTR_OK, "create_circular: %s %s", ctr_status_name(st), ctr_error_detail());
  return st == CTR_OK;
}

/* Source and unit direction of the ray through detector position (u, v) of
 * view i, from the header's description of the circular orbit. */
static void circ_ray(const circ *cg, int64_t i, double u, double v, double s[3], double d[3]) {
  const ctr_circular_params *p = &cg->prm;
  double t = (p->angle_start_deg + (double)p->direction * i * p->angle_range_deg / p->nviews) *
             PI / 180.0;
  double ct = cos(t), st = sin(t);
  double u0 = 0.5 * (p->nu - 1) - p->offset_u / p->du;
  double v0 = 0.5 * (p->nv - 1) - p->offset_v / p->dv;
  s[0] = p->sid * ct;
  s[1] = p->sid * st;
  s[2] = 0.0;
  double det[3] = {s[0] - p->sdd * ct + (u - u0) * p->du * -st,
                   s[1] - p->sdd * st + (u - u0) * p->du * ct, (v - v0) * p->dv};
  for (int k = 0; k < 3; k++) d[k] = det[k] - s[k];
  double n = norm(d);
  for (int k = 0; k < 3; k++) d[k] /= n;
}

static void test_projection_sphere(void) {
  const int64_t nu = 64, nv = 48, nviews = 12;
  circ cg;
  if (!make_circ(&cg, nu, nv, nviews, 17.0)) return;
  const double c[3] = {12.0, -7.0, 9.0}, r = 20.0, rho = 1.25;
  ctr_ellipsoid e = {rho, c[0], c[1], c[2], r, r, r, 0, 0, 0};
  ctr_phantom *p = NULL;
  CHECK_OK(ctr_phantom_from_ellipsoids(&e, 1, &p));
  float *img = malloc((size_t)(nu * nv * nviews) * sizeof *img);
  int64_t dims[3] = {nu, nv, nviews};
  ctr_array out = ctr_array_make(img, CTR_DTYPE_FLOAT32, 3, dims);
  /* float32 output: relative 2^-23 of chords up to 50; plus 1e-4 mm for a
   * pixel ray that grazes the sphere, where the chord's sensitivity to the
   * ~1e-13 mm rounding of the ray is largest (sqrt(2 r * 4e-11) ~ 4e-5). */
  for (int ss = 1; ss <= 3; ss += 2) {
    CHECK_OK(ctr_phantom_project(NULL, p, cg.g, ss, &out));
    int bad = 0, hits = 0;
    for (int64_t i = 0; i < nviews; i++)
      for (int64_t iv = 0; iv < nv; iv++)
        for (int64_t iu = 0; iu < nu; iu++) {
          double sum = 0.0;
          for (int a = 0; a < ss; a++)
            for (int b = 0; b < ss; b++) {
              double s[3], d[3];
              circ_ray(&cg, i, iu + (b + 0.5) / ss - 0.5, iv + (a + 0.5) / ss - 0.5, s, d);
              sum += rho * sphere_chord(c, r, s, d, 0.0);
            }
          double expect = sum / (ss * ss), got = img[(i * nv + iv) * nu + iu];
          if (expect > 0) hits++;
          if (fabs(got - expect) > 1e-4 + 2.4e-7 * expect && bad++ < 5)
            CHECK_MSG(0, "supersample %d view %lld pixel (%lld, %lld): got %.9g expected %.9g", ss,
                      (long long)i, (long long)iu, (long long)iv, got, expect);
        }
    CHECK_MSG(bad == 0, "supersample %d: %d pixels differ from the traced chords", ss, bad);
    CHECK_MSG(hits > nviews * nu * nv / 10, "supersample %d: only %d pixels see the sphere", ss,
              hits);
  }
  ctr_phantom_free(p);

  /* Matter behind the source casts nothing; a sphere around the source
   * counts from the source onwards only. */
  const double cb[3] = {600.0, 30.0, 0.0}, rb = 50.0; /* wholly behind view 0's source */
  const double cs[3] = {420.0, 5.0, -3.0}, rs = 60.0; /* contains view 0's source (400, 0, 0) */
  ctr_ellipsoid two[2] = {{1.0, cb[0], cb[1], cb[2], rb, rb, rb, 0, 0, 0},
                          {1.0, cs[0], cs[1], cs[2], rs, rs, rs, 0, 0, 0}};
  circ one;
  if (make_circ(&one, nu, nv, 1, 0.0)) {
    int64_t d1[3] = {nu, nv, 1};
    ctr_array o1 = ctr_array_make(img, CTR_DTYPE_FLOAT32, 3, d1);
    p = NULL;
    CHECK_OK(ctr_phantom_from_ellipsoids(two, 2, &p));
    CHECK_OK(ctr_phantom_project(NULL, p, one.g, 1, &o1));
    int bad = 0;
    for (int64_t iv = 0; iv < nv; iv++)
      for (int64_t iu = 0; iu < nu; iu++) {
        double s[3], d[3];
        circ_ray(&one, 0, (double)iu, (double)iv, s, d);
        double expect = sphere_chord(cb, rb, s, d, 0.0) + sphere_chord(cs, rs, s, d, 0.0);
        if (fabs(img[iv * nu + iu] - expect) > 1e-4 && bad++ < 5)
          CHECK_NEAR(img[iv * nu + iu], expect, 1e-4);
      }
    CHECK(bad == 0);
    /* The whole line would include the sphere behind the source. */
    double s[3], d[3];
    circ_ray(&one, 0, 0.5 * (nu - 1), 0.5 * (nv - 1), s, d);
    CHECK(ctr_phantom_line_integral(p, s, d) > img[(nv / 2) * nu + nu / 2] + 50.0);
    ctr_phantom_free(p);
    ctr_geometry_free(one.g);
  }
  free(img);
  ctr_geometry_free(cg.g);
}

/* Shepp-Logan projection (ten ellipsoids, several tiny ones, so the
 * per-view culling rectangles matter) against ctr_phantom_line_integral along
 * the independently traced pixel rays; the source lies outside the head, so
 * the half line and the whole line agree. */
static void test_projection_shepp_logan(void) {
  const int64_t nu = 96, nv = 80, nviews = 7;
  circ cg;
  if (!make_circ(&cg, nu, nv, nviews, 5.0)) return;
  ctr_phantom *p = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(40.0, 1.0, &p));
  float *img = malloc((size_t)(nu * nv * nviews) * sizeof *img);
  int64_t dims[3] = {nu, nv, nviews};
  ctr_array out = ctr_array_make(img, CTR_DTYPE_FLOAT32, 3, dims);
  CHECK_OK(ctr_phantom_project(NULL, p, cg.g, 1, &out));
  int bad = 0;
  for (int64_t i = 0; i < nviews; i++)
    for (int64_t iv = 0; iv < nv; iv++)
      for (int64_t iu = 0; iu < nu; iu++) {
        double s[3], d[3];
        circ_ray(&cg, i, (double)iu, (double)iv, s, d);
        double expect = ctr_phantom_line_integral(p, s, d), got = img[(i * nv + iv) * nu + iu];
        /* As for the sphere: float32 rounding plus grazing-ray sensitivity. */
        if (fabs(got - expect) > 1e-4 + 2.4e-7 * fabs(expect) && bad++ < 5)
          CHECK_MSG(0, "view %lld pixel (%lld, %lld): got %.9g expected %.9g", (long long)i,
                    (long long)iu, (long long)iv, got, expect);
      }
  CHECK_MSG(bad == 0, "%d Shepp-Logan pixels differ from line integrals", bad);
  free(img);
  ctr_phantom_free(p);
  ctr_geometry_free(cg.g);
}

typedef struct progress_log {
  int calls, monotonic, cancel_at;
  double last;
} progress_log;

static int on_progress(void *user, const char *stage, double f) {
  progress_log *l = user;
  if (f < l->last || f < 0.0 || f > 1.0 || !stage || !*stage) l->monotonic = 0;
  l->last = f;
  l->calls++;
  return l->cancel_at > 0 && l->calls >= l->cancel_at;
}

static void test_projection_args_and_progress(void) {
  const int64_t nu = 16, nv = 12, nviews = 120;
  circ cg;
  if (!make_circ(&cg, nu, nv, nviews, 0.0)) return;
  ctr_phantom *p = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(25.0, 1.0, &p));
  float *img = calloc((size_t)(nu * nv * nviews), sizeof *img);
  int64_t dims[3] = {nu, nv, nviews};
  ctr_array out = ctr_array_make(img, CTR_DTYPE_FLOAT32, 3, dims);

  ctr_array bad = out;
  bad.dtype = CTR_DTYPE_UINT16;
  CHECK_FAILS(ctr_phantom_project(NULL, p, cg.g, 1, &bad), CTR_E_INVALID_ARGUMENT, "float32");
  bad = out;
  bad.dims[0] = nu + 1;
  CHECK_FAILS(ctr_phantom_project(NULL, p, cg.g, 1, &bad), CTR_E_SIZE_MISMATCH, "16 x 12 x 120");
  bad = out;
  bad.ndim = 2;
  CHECK_FAILS(ctr_phantom_project(NULL, p, cg.g, 1, &bad), CTR_E_SIZE_MISMATCH, "16 x 12 x 120");
  CHECK_FAILS(ctr_phantom_project(NULL, p, cg.g, 0, &out), CTR_E_INVALID_ARGUMENT, "supersample");
  CHECK_FAILS(ctr_phantom_project(NULL, NULL, cg.g, 1, &out), CTR_E_INVALID_ARGUMENT, "phantom");

  progress_log log = {0, 1, 0, -1.0};
  ctr_context_options o = CTR_CONTEXT_OPTIONS_INIT;
  o.device = CTR_DEVICE_CPU;
  o.progress = on_progress;
  o.user = &log;
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(&o, &ctx));
  CHECK_OK(ctr_phantom_project(ctx, p, cg.g, 1, &out));
  /* With several threads the intermediate reports come from the calling
   * thread only when it gets rows to finish, which a loaded machine may not
   * give it in a call this short; the final report always comes. */
  CHECK(log.calls >= 1 && log.monotonic && log.last == 1.0);
  /* One thread: ~50 intermediate reports, and the same result. */
  float *img1 = malloc((size_t)(nu * nv * nviews) * sizeof *img1);
  ctr_array out1 = ctr_array_make(img1, CTR_DTYPE_FLOAT32, 3, dims);
  progress_log log1 = {0, 1, 0, -1.0};
  ctr_context_options o1 = o;
  o1.num_threads = 1;
  o1.user = &log1;
  ctr_context *ctx1 = NULL;
  CHECK_OK(ctr_context_create(&o1, &ctx1));
  CHECK_OK(ctr_phantom_project(ctx1, p, cg.g, 1, &out1));
  CHECK(log1.calls >= 40 && log1.monotonic && log1.last == 1.0);
  CHECK(memcmp(img, img1, (size_t)(nu * nv * nviews) * sizeof *img) == 0);
  /* The central pixels see the head. */
  CHECK(img[(nv / 2) * nu + nu / 2] > 0.0f);

  /* Cancel at the first report (whether a thread of a loaded machine lets
   * the calling thread report before the end is up to the scheduler). */
  log = (progress_log){0, 1, 1, -1.0};
  CHECK_FAILS(ctr_phantom_project(ctx, p, cg.g, 1, &out), CTR_E_CANCELLED, "projecting phantom");
  CHECK(log.calls == 1);
  ctr_context_free(ctx);
  ctr_context_free(ctx1);
  free(img);
  free(img1);
  ctr_phantom_free(p);
  ctr_geometry_free(cg.g);
}

static void test_voxelize_volume(void) {
  const double rho = 2.0, a = 20.3, b = 12.1, c = 7.7;
  ctr_ellipsoid e = {rho, 3.3, -2.7, 1.9, a, b, c, 30.0, 50.0, 20.0};
  ctr_phantom *p = NULL;
  CHECK_OK(ctr_phantom_from_ellipsoids(&e, 1, &p));
  ctr_volume_geometry vol = {64, 60, 48, 1.0, 0.9, 1.1, 0.5, -0.3, 0.2};
  size_t nvox = (size_t)(vol.nx * vol.ny * vol.nz);
  float *v = malloc(nvox * sizeof *v);
  int64_t dims[3] = {vol.nx, vol.ny, vol.nz};
  ctr_array out = ctr_array_make(v, CTR_DTYPE_FLOAT32, 3, dims);
  const int s = 4;
  CHECK_OK(ctr_phantom_voxelize(NULL, p, &vol, s, 0, &out));
  double sum = 0.0;
  for (size_t i = 0; i < nvox; i++) sum += v[i];
  double got = sum * vol.voxel_x * vol.voxel_y * vol.voxel_z;
  double expect = rho * 4.0 / 3.0 * PI * a * b * c;
  /* Point sampling on a lattice of spacing h errs only in the cells the
   * surface cuts; the worst case is that whole shell, ~S sqrt(3) h (a third of
   * the volume here). For an off-centre ellipsoid at a generic angle to the
   * lattice the signed errors of the cut cells cancel down to the
   * lattice-point discrepancy, which grows like (R/h)^(3/2) cells rather
   * than the (R/h)^2 cells of the shell; we allow that many cells with R the
   * largest semi-axis and h the finest sample spacing (0.17% of the volume).
   * A wrong axis, rotation or normalisation changes the sum by >> 1%. */
  const double hmin = vol.voxel_y / s;
  const double cell = vol.voxel_x * vol.voxel_y * vol.voxel_z / (s * s * s);
  double tol = rho * pow(a / hmin, 1.5) * cell;
  CHECK_NEAR(got, expect, tol);
  printf("voxelised volume %.3f vs exact %.3f (tolerance %.3f)\n", got, expect, tol);
  /* Everything lies within [0, rho]; the centre voxel is fully inside. */
  float lo = v[0], hi = v[0];
  for (size_t i = 0; i < nvox; i++) {
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
  }
  CHECK(lo == 0.0f && hi == (float)rho);
  free(v);
  ctr_phantom_free(p);
}

/* Every voxel equals the mean of its s^3 point densities, computed with
 * ctr_phantom_density at the documented sample positions. The grid and the
 * phantom scale are chosen so that no sample sits on a surface, where the two
 * evaluations could round differently. */
static void test_voxelize_point_samples(void) {
  ctr_phantom *p = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(12.3, 1.0, &p));
  ctr_volume_geometry vol = {30, 34, 26, 0.83, 0.79, 0.97, 0.31, -0.17, 0.41};
  size_t nvox = (size_t)(vol.nx * vol.ny * vol.nz);
  float *v = malloc(nvox * sizeof *v);
  int64_t dims[3] = {vol.nx, vol.ny, vol.nz};
  ctr_array out = ctr_array_make(v, CTR_DTYPE_FLOAT32, 3, dims);
  const int s = 3;
  CHECK_OK(ctr_phantom_voxelize(NULL, p, &vol, s, 0, &out));
  int bad = 0, nonzero = 0;
  for (int64_t k = 0; k < vol.nz; k++)
    for (int64_t j = 0; j < vol.ny; j++)
      for (int64_t i = 0; i < vol.nx; i++) {
        double sum = 0.0;
        for (int c = 0; c < s; c++)
          for (int b = 0; b < s; b++)
            for (int a = 0; a < s; a++) {
              double x[3] = {
                  vol.offset_x + (i - (vol.nx - 1) / 2.0 + (a + 0.5) / s - 0.5) * vol.voxel_x,
                  vol.offset_y + (j - (vol.ny - 1) / 2.0 + (b + 0.5) / s - 0.5) * vol.voxel_y,
                  vol.offset_z + (k - (vol.nz - 1) / 2.0 + (c + 0.5) / s - 0.5) * vol.voxel_z};
              sum += ctr_phantom_density(p, x);
            }
        double expect = sum / (s * s * s), got = v[(k * vol.ny + j) * vol.nx + i];
        if (got != 0.0) nonzero++;
        /* Only float32 rounding of a mean of values within [-1, 2]. */
        if (fabs(got - expect) > 1e-6 && bad++ < 5)
          CHECK_MSG(0, "voxel (%lld, %lld, %lld): %.9g vs point samples %.9g", (long long)i,
                    (long long)j, (long long)k, got, expect);
      }
  CHECK_MSG(bad == 0, "%d voxels differ from their point samples", bad);
  CHECK(nonzero > (int)(nvox / 4));
  free(v);
  ctr_phantom_free(p);
}

static void test_voxelize_slabs_and_centre(void) {
  ctr_phantom *p = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(50.0, 1.0, &p));
  /* Odd sizes put a voxel centre exactly at the origin. */
  ctr_volume_geometry vol = {65, 65, 65, 1.6, 1.6, 1.6, 0.0, 0.0, 0.0};
  size_t slice = (size_t)(vol.nx * vol.ny), nvox = slice * (size_t)vol.nz;
  float *full = malloc(nvox * sizeof *full), *slab = malloc(nvox * sizeof *slab);
  int64_t dims[3] = {vol.nx, vol.ny, vol.nz};
  ctr_array out = ctr_array_make(full, CTR_DTYPE_FLOAT32, 3, dims);
  CHECK_OK(ctr_phantom_voxelize(NULL, p, &vol, 2, 0, &out));
  /* Centre: inside the skull (1) and the brain (-0.8) only. */
  CHECK_NEAR(full[32 * slice + 32 * vol.nx + 32], 0.2, 1e-6);
  CHECK(full[0] == 0.0f);
  /* Slabs of uneven sizes reproduce the full volume bit for bit. */
  for (int64_t z0 = 0; z0 < vol.nz;) {
    int64_t n = z0 == 0 ? 1 : 11;
    if (z0 + n > vol.nz) n = vol.nz - z0;
    int64_t sd[3] = {vol.nx, vol.ny, n};
    ctr_array so = ctr_array_make(slab + (size_t)z0 * slice, CTR_DTYPE_FLOAT32, 3, sd);
    CHECK_OK(ctr_phantom_voxelize(NULL, p, &vol, 2, z0, &so));
    z0 += n;
  }
  CHECK(memcmp(full, slab, nvox * sizeof *full) == 0);

  /* Argument checks name the expectation. */
  int64_t sd[3] = {vol.nx, vol.ny, 10};
  ctr_array so = ctr_array_make(slab, CTR_DTYPE_FLOAT32, 3, sd);
  CHECK_FAILS(ctr_phantom_voxelize(NULL, p, &vol, 2, 60, &so), CTR_E_SIZE_MISMATCH, "z0 + nz_out <= nz = 65");
  CHECK_FAILS(ctr_phantom_voxelize(NULL, p, &vol, 2, -1, &so), CTR_E_SIZE_MISMATCH, "0 <= z0");
  so.dims[0] = 64;
  CHECK_FAILS(ctr_phantom_voxelize(NULL, p, &vol, 2, 0, &so), CTR_E_SIZE_MISMATCH, "65 x 65");
  so.dims[0] = 65;
  so.dtype = CTR_DTYPE_UINT16;
  CHECK_FAILS(ctr_phantom_voxelize(NULL, p, &vol, 2, 0, &so), CTR_E_INVALID_ARGUMENT, "float32");
  so.dtype = CTR_DTYPE_FLOAT32;
  CHECK_FAILS(ctr_phantom_voxelize(NULL, p, &vol, 0, 0, &so), CTR_E_INVALID_ARGUMENT, "supersample");
  ctr_volume_geometry badvol = vol;
  badvol.voxel_y = -1.0;
  CHECK_FAILS(ctr_phantom_voxelize(NULL, p, &badvol, 1, 0, &so), CTR_E_INVALID_ARGUMENT, "voxel_y");

  /* Cancelling through the progress callback stops the call. */
  progress_log log = {0, 1, 1, -1.0};
  ctr_context_options o = CTR_CONTEXT_OPTIONS_INIT;
  o.device = CTR_DEVICE_CPU;
  o.progress = on_progress;
  o.user = &log;
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(&o, &ctx));
  CHECK_FAILS(ctr_phantom_voxelize(ctx, p, &vol, 1, 0, &out), CTR_E_CANCELLED, "voxelizing");
  log = (progress_log){0, 1, 0, -1.0};
  CHECK_OK(ctr_phantom_voxelize(ctx, p, &vol, 1, 0, &out));
  CHECK(log.calls >= 1 && log.monotonic && log.last == 1.0);
  /* Deterministic intermediate reports with one thread (see the projection). */
  o.num_threads = 1;
  ctr_context *ctx1 = NULL;
  CHECK_OK(ctr_context_create(&o, &ctx1));
  log = (progress_log){0, 1, 0, -1.0};
  ctr_array out1 = ctr_array_make(slab, CTR_DTYPE_FLOAT32, 3, dims);
  CHECK_OK(ctr_phantom_voxelize(ctx1, p, &vol, 1, 0, &out1));
  CHECK(log.calls >= 40 && log.monotonic && log.last == 1.0);
  /* ... and the same voxels as the default thread count. */
  CHECK(memcmp(full, slab, nvox * sizeof *full) == 0);
  ctr_context_free(ctx1);
  ctr_context_free(ctx);
  free(full);
  free(slab);
  ctr_phantom_free(p);
}

static char g_dir[64];

static const char *write_file(const char *name, const char *text) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    CHECK_MSG(0, "cannot write %s", path);
    return path;
  }
  fputs(text, f);
  fclose(f);
  return path;
}

static void test_json(void) {
  const ctr_ellipsoid ref[3] = {
      {1.25, 1.5, -2.25, 3.0, 10.0, 20.5, 30.125, 15.0, -30.0, 45.5},
      {-0.3, 0.1, 0.2, 0.3, 0.7, 0.8, 0.9, 0, 0, 0},
      {0.1, -7.0, 0.0, 1e-3, 2.0, 2.0, 2.0, 0.0, 90.0, 0.0},
  };
  char text[4096];
  int len = snprintf(text, sizeof text, "{\n  \"comment\": \"test\",\n  \"ellipsoids\": [\n");
  for (int i = 0; i < 3; i++) {
    const ctr_ellipsoid *e = &ref[i];
    len += snprintf(text + len, sizeof text - (size_t)len,
                    "    {\"density\": %.17g, \"center_mm\": [%.17g, %.17g, %.17g], "
                    "\"semi_axes_mm\": [%.17g, %.17g, %.17g]",
                    e->density, e->cx, e->cy, e->cz, e->ax, e->ay, e->az);
    /* The second one relies on the default angles. */
    if (i != 1)
      len += snprintf(text + len, sizeof text - (size_t)len,
                      ", \"euler_deg\": [%.17g, %.17g, %.17g], \"name\": \"e%d\"", e->phi_deg,
                      e->theta_deg, e->psi_deg, i);
    len += snprintf(text + len, sizeof text - (size_t)len, "}%s\n", i < 2 ? "," : "");
  }
  snprintf(text + len, sizeof text - (size_t)len, "  ]\n}\n");
  ctr_phantom *p = NULL;
  CHECK_OK(ctr_phantom_load_json(write_file("good.json", text), &p));
  CHECK(ctr_phantom_get_ellipsoid_count(p) == 3);
  if (p && ctr_phantom_get_ellipsoid_count(p) == 3)
    CHECK(memcmp(ctr_phantom_get_ellipsoids(p), ref, sizeof ref) == 0);
  ctr_phantom_free(p);
  p = NULL;

  ctr_phantom *q = NULL;
  CHECK_OK(ctr_phantom_load_json(
      write_file("sl.json", "{\"shepp_logan\": {\"radius_mm\": 80, \"scale\": 0.02}}"), &p));
  CHECK_OK(ctr_phantom_shepp_logan(80.0, 0.02, &q));
  CHECK(p && q && ctr_phantom_get_ellipsoid_count(p) == 10 &&
        memcmp(ctr_phantom_get_ellipsoids(p), ctr_phantom_get_ellipsoids(q), 10 * sizeof(ctr_ellipsoid)) == 0);
  ctr_phantom_free(p);
  ctr_phantom_free(q);
  p = NULL;
  CHECK_OK(ctr_phantom_load_json(write_file("sl1.json", "{\"shepp_logan\": {\"radius_mm\": 5}}"), &p));
  CHECK(p && ctr_phantom_get_ellipsoids(p)[0].density == 1.0);
  ctr_phantom_free(p);
  p = NULL;

  const char *E = "{\"density\": 1, \"center_mm\": [0, 0, 0], \"semi_axes_mm\": [1, 2, 3]}";
  struct {
    const char *name, *text;
    ctr_status status;
    const char *needle;
  } bad[] = {
      {"syntax.json", "{\"ellipsoids\": [ {\"density\": 1,, } ]}", CTR_E_FORMAT, "invalid JSON near line 1"},
      {"root.json", "[1, 2]", CTR_E_FORMAT, "expected a JSON object"},
      {"neither.json", "{\"comment\": \"x\"}", CTR_E_FORMAT, "neither"},
      {"empty.json", "{\"ellipsoids\": []}", CTR_E_FORMAT, "ellipsoids: expected a non-empty array"},
      {"axes2.json", NULL, CTR_E_FORMAT, "ellipsoids[2].semi_axes_mm: expected 3 positive numbers"},
      {"axesneg.json", NULL, CTR_E_INVALID_ARGUMENT, "ellipsoids[1].semi_axes_mm: expected 3 positive numbers"},
      {"axesinf.json", NULL, CTR_E_INVALID_ARGUMENT, "ellipsoids[0].semi_axes_mm"},
      {"density.json", NULL, CTR_E_FORMAT, "ellipsoids[1].density: expected a finite number"},
      {"nocenter.json", NULL, CTR_E_FORMAT, "ellipsoids[0].center_mm: missing"},
      {"euler.json", NULL, CTR_E_FORMAT, "ellipsoids[0].euler_deg"},
      {"unknown.json", NULL, CTR_E_FORMAT, "ellipsoids[1].centre_mm: unknown field; did you mean 'center_mm'?"},
      {"notobj.json", "{\"ellipsoids\": [3]}", CTR_E_FORMAT, "ellipsoids[0]: expected an object"},
      {"slrad.json", "{\"shepp_logan\": {\"radius_mm\": -3}}", CTR_E_INVALID_ARGUMENT, "shepp_logan.radius_mm"},
      {"slkey.json", "{\"shepp_logan\": {\"radius\": 3}}", CTR_E_FORMAT, "shepp_logan.radius: unknown field"},
      {"dup.json", "{\"shepp_logan\": {\"radius_mm\": 3, \"radius_mm\": 4}}", CTR_E_FORMAT, "duplicate"},
  };
  char buf[1024];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *t = bad[i].text;
    if (!t) {
      if (!strcmp(bad[i].name, "axes2.json"))
        snprintf(buf, sizeof buf, "{\"ellipsoids\": [%s, %s, {\"density\": 1, \"center_mm\": [0,0,0], \"semi_axes_mm\": [1, 2]}]}", E, E);
      else if (!strcmp(bad[i].name, "axesneg.json"))
        snprintf(buf, sizeof buf, "{\"ellipsoids\": [%s, {\"density\": 1, \"center_mm\": [0,0,0], \"semi_axes_mm\": [1, -2, 3]}]}", E);
      else if (!strcmp(bad[i].name, "axesinf.json"))
        snprintf(buf, sizeof buf, "{\"ellipsoids\": [{\"density\": 1, \"center_mm\": [0,0,0], \"semi_axes_mm\": [1, 1e999, 3]}]}");
      else if (!strcmp(bad[i].name, "density.json"))
        snprintf(buf, sizeof buf, "{\"ellipsoids\": [%s, {\"density\": \"1\", \"center_mm\": [0,0,0], \"semi_axes_mm\": [1, 2, 3]}]}", E);
      else if (!strcmp(bad[i].name, "nocenter.json"))
        snprintf(buf, sizeof buf, "{\"ellipsoids\": [{\"density\": 1, \"semi_axes_mm\": [1, 2, 3]}]}");
      else if (!strcmp(bad[i].name, "euler.json"))
        snprintf(buf, sizeof buf, "{\"ellipsoids\": [{\"density\": 1, \"center_mm\": [0,0,0], \"semi_axes_mm\": [1, 2, 3], \"euler_deg\": [0, \"x\", 0]}]}");
      else
        snprintf(buf, sizeof buf, "{\"ellipsoids\": [%s, {\"density\": 1, \"centre_mm\": [0,0,0], \"semi_axes_mm\": [1, 2, 3]}]}", E);
      t = buf;
    }
    const char *path = write_file(bad[i].name, t);
    CHECK_FAILS(ctr_phantom_load_json(path, &p), bad[i].status, bad[i].needle);
    /* The detail names the file too. */
    CHECK_MSG(strstr(ctr_error_detail(), bad[i].name) != NULL, "%s: detail '%s' lacks the file name",
              bad[i].name, ctr_error_detail());
    CHECK(p == NULL);
    unlink(path);
  }
  char missing[128];
  snprintf(missing, sizeof missing, "%s/does_not_exist.json", g_dir);
  CHECK_FAILS(ctr_phantom_load_json(missing, &p), CTR_E_IO, "does_not_exist.json");
  char path[256];
  snprintf(path, sizeof path, "%s/good.json", g_dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/sl.json", g_dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/sl1.json", g_dir);
  unlink(path);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/ctr_test_phantom_XXXXXX");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {{"construction", test_construction},
               {"euler_convention", test_euler_convention},
               {"sphere_line_integrals", test_sphere_line_integrals},
               {"quadrature", test_quadrature},
               {"projection_sphere", test_projection_sphere},
               {"projection_shepp_logan", test_projection_shepp_logan},
               {"projection_args_and_progress", test_projection_args_and_progress},
               {"voxelize_volume", test_voxelize_volume},
               {"voxelize_point_samples", test_voxelize_point_samples},
               {"voxelize_slabs_and_centre", test_voxelize_slabs_and_centre},
               {"json", test_json}};
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tests[i].fn();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%-30s %.3f s\n", tests[i].name,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
  }
  rmdir(g_dir);
  return th_finish("test_phantom");
}
