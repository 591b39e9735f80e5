/* List-mode simulation: statistics against their exact expectations, with
 * tolerances of 5 standard deviations derived from the counts (a correct
 * simulator fails one check in ~1.7 million; the seeds are fixed, so a run
 * is reproducible anyway). */
#include "harness.h"

#define FWHM_PER_SIGMA 2.3548200450309493
#define PI 3.14159265358979323846

static ctr_pet_params lattice(int64_t nx, int64_t nz, int na, int nc, double acc) {
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  p.nx = p.ny = nx;
  p.nz = nz;
  p.voxel = 4.0;
  p.n_azimuth = na;
  p.n_copolar = nc;
  p.acceptance_deg = acc;
  return p;
}

static ctr_pet_system *make_system(const ctr_pet_params *p, double tof_ps, double radial_fwhm,
                                   double axial_fwhm) {
  ctr_pet_kernel_params k = CTR_PET_KERNEL_PARAMS_INIT;
  k.tof_fwhm_ps = tof_ps;
  k.radial_fwhm_center_mm = k.radial_fwhm_edge_mm = radial_fwhm;
  k.axial_fwhm_mm = axial_fwhm;
  ctr_pet_system *s = NULL;
  CHECK_OK(ctr_pet_system_create(p, &k, &s));
  return s;
}

/* Centre (mm) of voxel index i on an axis of n voxels. */
static double centre(int64_t i, int64_t n) { return ((double)i - 0.5 * (double)(n - 1)) * 4.0; }

static ctr_pet_phantom one_point(double x, double y, double z) {
  ctr_pet_phantom ph;
  memset(&ph, 0, sizeof ph);
  ph.npoints = 1;
  ph.points[0].x = x;
  ph.points[0].y = y;
  ph.points[0].z = z;
  ph.points[0].activity = 1.0;
  return ph;
}

static double total_counts(const ctr_pet_histo *h, int64_t view) {
  const int64_t nvox = h->params.nx * h->params.ny * h->params.nz;
  double s = 0;
  const int64_t v0 = view < 0 ? 0 : view, v1 = view < 0 ? h->nviews : view + 1;
  for (int64_t i = v0 * nvox; i < v1 * nvox; i++) s += h->counts[i];
  return s;
}

static ctr_pet_histo *simulate(const ctr_pet_system *s, const ctr_pet_phantom *ph, double events,
                               int blur, int att, uint64_t seed) {
  ctr_pet_sim_options o = CTR_PET_SIM_OPTIONS_INIT;
  o.events = events;
  o.detector_blur = blur;
  o.attenuation = att;
  o.seed = seed;
  o.with_factors = 0;
  ctr_pet_histo *h = NULL;
  CHECK_OK(ctr_pet_simulate(NULL, s, ph, &o, &h));
  return h;
}

/* A point source (no blur, negligible TOF) lands in its voxel in every view;
 * the total is Poisson(events). */
static void test_point_in_voxel(void) {
  const ctr_pet_params p = lattice(32, 8, 8, 1, 10.0);
  ctr_pet_system *s = make_system(&p, 0.01, 5.8, 5.8);
  if (!s) return;
  const int64_t i = 20, j = 10, k = 5, nvox = 32 * 32 * 8;
  const ctr_pet_phantom ph = one_point(centre(i, 32), centre(j, 32), centre(k, 8));
  const double events = 2e5;
  ctr_pet_histo *h = simulate(s, &ph, events, 0, 0, 7);
  if (h) {
    const double n = total_counts(h, -1);
    CHECK_NEAR(n, events, 5 * sqrt(events));
    CHECK(h->events == n);
    CHECK_NEAR(h->tof_fwhm_ps, 0.01, 1e-12);
    double in = 0;
    for (int64_t v = 0; v < h->nviews; v++) in += h->counts[v * nvox + (k * 32 + j) * 32 + i];
    CHECK(in == n);
    /* The 8 azimuthal views are equally likely: multinomial, p = 1/8. */
    for (int64_t v = 0; v < 8; v++)
      CHECK_NEAR(total_counts(h, v), n / 8, 5 * sqrt(n / 8 * 7 / 8));
  }
  ctr_pet_histo_free(h);
  ctr_pet_system_free(s);
}

/* E[R(X)^2] for X ~ N(0, sd^2) rounded to the nearest multiple of the
 * 4 mm voxel, R(X) = 4 round(X / 4): the mean squared displacement of a
 * nearest-voxel deposit from a source at a voxel centre, along one axis. */
static double rounded_ms(double sd) {
  if (sd <= 0) return 0;
  const double h = 4.0, c = 1.0 / (sd * sqrt(2.0));
  double s = 0;
  for (int k = 1; k <= (int)(12 * sd / h) + 2; k++)
    s += (k * h) * (k * h) * 0.5 * (erfc((k - 0.5) * h * c) - erfc((k + 0.5) * h * c));
  return 2 * s;
}

/* The exact expected mean squared displacement of deposits from a point
 * source at a voxel centre when the event's offset is Gaussian with
 * per-axis standard deviations sds(phi, sin t): the mean over the LOR
 * directions (phi uniform in [0, pi), sin t uniform within the acceptance)
 * of the three axes' rounded second moments. Midpoint rule, 360 x 64. */
typedef void (*axis_sd_fn)(const double *par, double phi, double u, double sd[3]);

static double expected_msd(axis_sd_fn fn, const double *par, double acc) {
  const int nphi = 360, nu = 64;
  double sum = 0;
  for (int i = 0; i < nphi; i++)
    for (int j = 0; j < nu; j++) {
      const double phi = (i + 0.5) * PI / nphi, u = sin(acc) * (2 * (j + 0.5) / nu - 1);
      double sd[3];
      fn(par, phi, u, sd);
      sum += rounded_ms(sd[0]) + rounded_ms(sd[1]) + rounded_ms(sd[2]);
    }
  return sum / (nphi * nu);
}

/* TOF: offset e d with e ~ N(0, par[0]^2). */
static void tof_sd(const double *par, double phi, double u, double sd[3]) {
  const double ct = sqrt(1 - u * u);
  sd[0] = par[0] * ct * fabs(cos(phi));
  sd[1] = par[0] * ct * fabs(sin(phi));
  sd[2] = par[0] * fabs(u);
}

/* Detector blur: e_r r + e_a a, r = (-sin p, cos p, 0),
 * a = (-sin t cos p, -sin t sin p, cos t); par = (sigma_r, sigma_a). */
static void blur_sd(const double *par, double phi, double u, double sd[3]) {
  const double ct = sqrt(1 - u * u), cp = cos(phi), sp = sin(phi), r2 = par[0] * par[0],
               a2 = par[1] * par[1];
  sd[0] = sqrt(r2 * sp * sp + a2 * u * u * cp * cp);
  sd[1] = sqrt(r2 * cp * cp + a2 * u * u * sp * sp);
  sd[2] = sqrt(a2 * ct * ct);
}

/* Accumulates, over all views, the count-weighted displacement of deposits
 * from src: n, mean vector m, mean squared displacement and its standard
 * error; along[v]: mean displacement along view v's central direction
 * (tilt 0: one co-polar interval). */
typedef struct spread {
  double n, m[3], msd, se_msd, along[64], n_view[64];
} spread;

static spread measure(const ctr_pet_histo *h, const double src[3]) {
  spread r;
  memset(&r, 0, sizeof r);
  const int64_t nx = h->params.nx, nz = h->params.nz, na = h->params.n_azimuth;
  double r2 = 0, r4 = 0;
  for (int64_t v = 0; v < h->nviews && v < 64; v++) {
    const double phi = (v % na + 0.5) * PI / na, d[2] = {cos(phi), sin(phi)};
    for (int64_t k = 0; k < nz; k++)
      for (int64_t j = 0; j < nx; j++)
        for (int64_t i = 0; i < nx; i++) {
          const double c = h->counts[((v * nz + k) * nx + j) * nx + i];
          if (c == 0) continue;
          const double x[3] = {centre(i, nx) - src[0], centre(j, nx) - src[1],
                               centre(k, nz) - src[2]};
          const double q = x[0] * x[0] + x[1] * x[1] + x[2] * x[2];
          r.n += c;
          for (int a = 0; a < 3; a++) r.m[a] += c * x[a];
          r2 += c * q;
          r4 += c * q * q;
          r.along[v] += c * (x[0] * d[0] + x[1] * d[1]);
          r.n_view[v] += c;
        }
  }
  for (int a = 0; a < 3; a++) r.m[a] /= r.n;
  for (int v = 0; v < 64; v++)
    if (r.n_view[v] > 0) r.along[v] /= r.n_view[v];
  r.msd = r2 / r.n;
  r.se_msd = sqrt((r4 / r.n - r.msd * r.msd) / r.n);
  return r;
}

/* TOF only: deposits at the source plus d x N(0, sigma_tof). The mean is
 * the source; the mean squared displacement matches its exact expectation
 * (which includes the nearest-voxel rounding), and a TOF width 3 % off would
 * not. Lattice +-4.8 sigma in-plane around the source; tilt <= 5 degrees
 * keeps every event inside axially. */
static void test_tof_spread(void) {
  const double acc = 5.0;
  const ctr_pet_params p = lattice(64, 16, 8, 1, acc);
  const double tof = 400.0, sigma = tof * CTR_PET_C_MM_PER_PS / 2 / FWHM_PER_SIGMA;
  ctr_pet_system *s = make_system(&p, tof, 5.8, 5.8);
  if (!s) return;
  const double src[3] = {centre(33, 64), centre(30, 64), centre(8, 16)};
  const ctr_pet_phantom ph = one_point(src[0], src[1], src[2]);
  ctr_pet_histo *h = simulate(s, &ph, 2e5, 0, 0, 11);
  if (h) {
    const spread r = measure(h, src);
    CHECK_NEAR(r.n, 2e5, 5 * sqrt(2e5));
    /* Each component's variance is at most sigma^2 + voxel^2 / 12. */
    const double var = sigma * sigma + 16.0 / 12;
    for (int a = 0; a < 3; a++) CHECK_NEAR(r.m[a], 0.0, 5 * sqrt(var / r.n));
    for (int v = 0; v < 8; v++) CHECK_NEAR(r.along[v], 0.0, 5 * sqrt(var / r.n_view[v]));
    const double a = acc * PI / 180, par[1] = {sigma}, wide[1] = {1.03 * sigma},
                 narrow[1] = {0.97 * sigma};
    const double want = expected_msd(tof_sd, par, a);
    CHECK_NEAR(r.msd, want, 5 * r.se_msd);
    CHECK(fabs(expected_msd(tof_sd, wide, a) - r.msd) > 5 * r.se_msd);
    CHECK(fabs(expected_msd(tof_sd, narrow, a) - r.msd) > 5 * r.se_msd);
    /* The expectation is sigma^2 plus at most Sheppard's 3 voxel^2 / 12
     * (axes along which the offset is narrow round most of it away). */
    CHECK_MSG(want > sigma * sigma && want <= sigma * sigma + 3 * 16.0 / 12,
              "expected msd %g, sigma^2 %g", want, sigma * sigma);
  }
  ctr_pet_histo_free(h);
  ctr_pet_system_free(s);
}

/* Detector blur only (negligible TOF): radial and axial Gaussians across
 * the LOR; the same exact expectation of the mean squared displacement. */
static void test_detector_blur(void) {
  const double acc = 10.0;
  const ctr_pet_params p = lattice(32, 16, 8, 1, acc);
  const double fr = 12.0, fa = 8.0, par[2] = {fr / FWHM_PER_SIGMA, fa / FWHM_PER_SIGMA};
  ctr_pet_system *s = make_system(&p, 0.01, fr, fa);
  if (!s) return;
  const double src[3] = {centre(16, 32), centre(15, 32), centre(8, 16)};
  const ctr_pet_phantom ph = one_point(src[0], src[1], src[2]);
  ctr_pet_histo *h = simulate(s, &ph, 1e5, 1, 0, 5);
  if (h) {
    const spread r = measure(h, src);
    CHECK_NEAR(r.n, 1e5, 5 * sqrt(1e5));
    const double want = expected_msd(blur_sd, par, acc * PI / 180);
    CHECK_NEAR(r.msd, want, 5 * r.se_msd);
    /* Radial FWHM 10 % off is detected. */
    const double off[2] = {1.1 * par[0], par[1]};
    CHECK(fabs(expected_msd(blur_sd, off, acc * PI / 180) - r.msd) > 5 * r.se_msd);
  }
  ctr_pet_histo_free(h);
  ctr_pet_system_free(s);
}

/* Asymmetric kernels (pet_kernel.c: radial profile G(sigma) + w/2
 * G(2 sigma) shifted by `shift` sigma towards the axis, areas 1 : w): the
 * mean radial offset is w / (1 + w) x shift x sigma towards the axis. For a
 * source on the x axis at rho = -x sin(phi), the mean x displacement is that
 * times -E|sin phi| = -2 / pi. Half-millimetre voxels keep the rounding bias
 * negligible (sigma / voxel >= 1.7). */
static void test_asymmetric_blur(void) {
  ctr_pet_params p = lattice(64, 8, 8, 1, 10.0);
  p.voxel = 0.5;
  ctr_pet_kernel_params k = CTR_PET_KERNEL_PARAMS_INIT;
  k.tof_fwhm_ps = 0.01;
  k.radial_fwhm_center_mm = k.radial_fwhm_edge_mm = 2.0;
  k.axial_fwhm_mm = 1.0;
  k.asymmetric = 1;
  k.asym_weight = 0.5;
  k.asym_shift_sigma = 1.0;
  ctr_pet_system *s = NULL;
  CHECK_OK(ctr_pet_system_create(&p, &k, &s));
  if (!s) return;
  const double src[3] = {(48 - 31.5) * 0.5, (32 - 31.5) * 0.5, 0.25};
  const ctr_pet_phantom ph = one_point(src[0], src[1], src[2]);
  ctr_pet_histo *h = simulate(s, &ph, 1e5, 1, 0, 17);
  if (h) {
    double n = 0, mx = 0, mx2 = 0;
    for (int64_t v = 0; v < h->nviews; v++)
      for (int64_t kz = 0; kz < 8; kz++)
        for (int64_t j = 0; j < 64; j++)
          for (int64_t i = 0; i < 64; i++) {
            const double c = h->counts[((v * 8 + kz) * 64 + j) * 64 + i];
            const double x = ((double)i - 31.5) * 0.5 - src[0];
            n += c;
            mx += c * x;
            mx2 += c * x * x;
          }
    mx /= n;
    const double se = sqrt((mx2 / n - mx * mx) / n), sr = 2.0 / FWHM_PER_SIGMA;
    const double want = -(0.5 / 1.5) * 1.0 * sr * 2 / PI;
    CHECK_NEAR(n, 1e5, 5 * sqrt(1e5));
    CHECK_NEAR(mx, want, 5 * se);
    CHECK(fabs(want) > 20 * se); /* a symmetric blur would fail */
  }
  ctr_pet_histo_free(h);
  ctr_pet_system_free(s);
}

/* Co-polar intervals are equal in angle; events are uniform in sin(tilt),
 * so view (a, c) holds the share (sin t_hi - sin t_lo) / (2 sin acc) / na. */
static void test_solid_angle(void) {
  const int na = 4, nc = 3;
  const double acc = 30.0 * PI / 180;
  const ctr_pet_params p = lattice(32, 8, na, nc, 30.0);
  ctr_pet_system *s = make_system(&p, 0.01, 5.8, 5.8);
  if (!s) return;
  const ctr_pet_phantom ph = one_point(centre(16, 32), centre(16, 32), centre(4, 8));
  ctr_pet_histo *h = simulate(s, &ph, 2e6, 0, 0, 3);
  if (h) {
    const double n = total_counts(h, -1);
    for (int c = 0; c < nc; c++) {
      const double lo = -acc + c * 2 * acc / nc, hi = lo + 2 * acc / nc;
      const double share = (sin(hi) - sin(lo)) / (2 * sin(acc));
      double sum = 0;
      for (int a = 0; a < na; a++) {
        const double pv = share / na, nvw = total_counts(h, (int64_t)c * na + a);
        CHECK_NEAR(nvw, n * pv, 5 * sqrt(n * pv * (1 - pv)));
        sum += nvw;
      }
      CHECK_NEAR(sum, n * share, 5 * sqrt(n * share * (1 - share)));
      /* Equal shares per angle would be 1/3: far outside the tolerance. */
      CHECK(fabs(n / nc - n * share) > 10 * sqrt(n * share * (1 - share)));
    }
  }
  ctr_pet_histo_free(h);
  ctr_pet_system_free(s);
}

/* Attenuation of a point at the centre of a long water cylinder: each LOR
 * crosses 2R / cos(t), so the survival probability is the mean of
 * exp(-mu 2R / cos t) over sin t uniform in [-sin acc, sin acc]; detected
 * counts are Poisson(events x that mean) (thinned Poisson). */
static void test_attenuation(void) {
  const double acc_deg = 10.0, acc = acc_deg * PI / 180, R = 100.0, mu = 0.0096;
  const ctr_pet_params p = lattice(32, 8, 8, 1, acc_deg);
  ctr_pet_system *s = make_system(&p, 0.01, 5.8, 5.8);
  if (!s) return;
  ctr_pet_phantom ph = one_point(0, 0, 0);
  ph.cylinder_diameter = 2 * R;
  ph.cylinder_length = 1000.0; /* the tilted LORs leave through the side */
  ph.background = 0.0;
  ph.mu_per_mm = mu;
  double mean = 0; /* Simpson over u = sin t */
  const int m = 2000;
  const double u0 = -sin(acc), du = 2 * sin(acc) / m;
  for (int i = 0; i <= m; i++) {
    const double u = u0 + i * du, w = (i == 0 || i == m) ? 1 : (i % 2 ? 4 : 2);
    mean += w * exp(-mu * 2 * R / sqrt(1 - u * u));
  }
  mean *= du / 3 / (2 * sin(acc));
  const double events = 2e5;
  ctr_pet_sim_options o = CTR_PET_SIM_OPTIONS_INIT;
  o.events = events;
  o.attenuation = 1;
  o.detector_blur = 0;
  o.with_factors = 1;
  o.seed = 99;
  ctr_pet_histo *h = NULL;
  CHECK_OK(ctr_pet_simulate(NULL, s, &ph, &o, &h));
  if (h) {
    const double n = total_counts(h, -1);
    CHECK_NEAR(n, events * mean, 5 * sqrt(events * mean));
    /* Factors: exp(-mu chord) through each voxel centre along the view's
     * central direction (tilt 0 with one co-polar interval). */
    CHECK(h->factors != NULL);
    if (h->factors) {
      const int64_t nvox = 32 * 32 * 8;
      for (int64_t v = 0; v < 8; v += 3)
        for (int64_t vox = 0; vox < nvox; vox += 97) {
          const double phi = (v + 0.5) * PI / 8, x = centre(vox % 32, 32),
                       y = centre((vox / 32) % 32, 32);
          const double rho = -x * sin(phi) + y * cos(phi);
          const double want = exp(-mu * 2 * sqrt(R * R - rho * rho));
          CHECK_NEAR(h->factors[v * nvox + vox], want, 1e-5 * want);
        }
    }
  }
  ctr_pet_histo_free(h);
  /* Without attenuation in the options, no loss and no factors. */
  o.attenuation = 0;
  CHECK_OK(ctr_pet_simulate(NULL, s, &ph, &o, &h));
  if (h) {
    CHECK_NEAR(total_counts(h, -1), events, 5 * sqrt(events));
    CHECK(h->factors == NULL);
  }
  ctr_pet_histo_free(h);
  ctr_pet_system_free(s);
}

/* 1 if the voxel (a 4 mm cube at c) lies entirely inside the sphere. */
static int cube_in_sphere(const double c[3], const ctr_pet_sphere *s) {
  for (int corner = 0; corner < 8; corner++) {
    const double x = c[0] + (corner & 1 ? 2 : -2) - s->x, y = c[1] + (corner & 2 ? 2 : -2) - s->y,
                 z = c[2] + (corner & 4 ? 2 : -2) - s->z, r = s->diameter / 2;
    if (x * x + y * y + z * z > r * r) return 0;
  }
  return 1;
}

/* 1 if the cube lies entirely outside the sphere and inside the cylinder. */
static int cube_in_background(const double c[3], const ctr_pet_phantom *ph) {
  const ctr_pet_sphere *s = &ph->spheres[0];
  double d2 = 0;
  const double sc[3] = {s->x, s->y, s->z};
  for (int a = 0; a < 3; a++) {
    const double e = fabs(c[a] - sc[a]) - 2;
    if (e > 0) d2 += e * e;
  }
  if (d2 <= s->diameter * s->diameter / 4) return 0;
  const double R = ph->cylinder_diameter / 2;
  for (int corner = 0; corner < 4; corner++) {
    const double x = c[0] + (corner & 1 ? 2 : -2), y = c[1] + (corner & 2 ? 2 : -2);
    if (x * x + y * y > R * R) return 0;
  }
  return fabs(c[2]) + 2 <= ph->cylinder_length / 2;
}

/* The analytic sampler: with no blur every event lands in the voxel it was
 * emitted in, so the counts of voxels wholly inside the sphere, and of
 * voxels wholly in the background, are binomial with p = activity x volume
 * / total activity (sphere activity replaces the background). */
static void test_analytic_phantom(void) {
  const ctr_pet_params p = lattice(32, 8, 4, 1, 10.0);
  ctr_pet_system *s = make_system(&p, 0.01, 5.8, 5.8);
  if (!s) return;
  ctr_pet_phantom ph;
  memset(&ph, 0, sizeof ph);
  ph.cylinder_diameter = 100;
  ph.cylinder_length = 24;
  ph.background = 1;
  ph.nspheres = 1;
  ph.spheres[0] = (ctr_pet_sphere){20, 0, 0, 24, 4};
  const double Vs = 4.0 / 3 * PI * 12 * 12 * 12, Vc = PI * 50 * 50 * 24;
  const double W = Vc - Vs + 4 * Vs;
  ctr_pet_histo *h = simulate(s, &ph, 4e5, 0, 0, 21);
  if (h) {
    const double n = total_counts(h, -1);
    CHECK_NEAR(n, 4e5, 5 * sqrt(4e5));
    double in_s = 0, in_b = 0;
    int64_t vs = 0, vb = 0;
    for (int64_t k = 0; k < 8; k++)
      for (int64_t j = 0; j < 32; j++)
        for (int64_t i = 0; i < 32; i++) {
          const double c[3] = {centre(i, 32), centre(j, 32), centre(k, 8)};
          double sum = 0;
          for (int64_t v = 0; v < 4; v++) sum += h->counts[((v * 8 + k) * 32 + j) * 32 + i];
          if (cube_in_sphere(c, &ph.spheres[0])) {
            in_s += sum;
            vs++;
          } else if (cube_in_background(c, &ph)) {
            in_b += sum;
            vb++;
          }
        }
    const double ps = 4 * 64.0 * (double)vs / W, pb = 64.0 * (double)vb / W;
    CHECK(vs > 50 && vb > 500);
    CHECK_NEAR(in_s, n * ps, 5 * sqrt(n * ps * (1 - ps)));
    CHECK_NEAR(in_b, n * pb, 5 * sqrt(n * pb * (1 - pb)));
    /* And the voxelised phantom agrees on those voxels. */
    float *img = malloc(sizeof(float) * 32 * 32 * 8);
    CHECK_OK(ctr_pet_phantom_voxelize(&ph, &p, 2, img));
    const int64_t ci = (int64_t)(20 / 4 + 15.5 + 0.5);
    CHECK_NEAR(img[(4 * 32 + 16) * 32 + ci], 4.0, 1e-6);
    CHECK_NEAR(img[(4 * 32 + 16) * 32 + 16 - 8], 1.0, 1e-6);
    CHECK_NEAR(img[(4 * 32 + 0) * 32 + 0], 0.0, 1e-6);
    free(img);
  }
  ctr_pet_histo_free(h);
  ctr_pet_system_free(s);
}

/* A voxel activity image: the counts of each active voxel are multinomial
 * with the activity shares. */
static void test_voxel_activity(void) {
  const ctr_pet_params p = lattice(32, 8, 8, 1, 10.0);
  ctr_pet_system *s = make_system(&p, 0.01, 5.8, 5.8);
  if (!s) return;
  const int64_t nvox = 32 * 32 * 8, a = (3 * 32 + 7) * 32 + 9, b = (5 * 32 + 20) * 32 + 25;
  float *act = calloc((size_t)nvox, sizeof(float));
  act[a] = 1.0f;
  act[b] = 3.0f;
  ctr_pet_sim_options o = CTR_PET_SIM_OPTIONS_INIT;
  o.events = 1e5;
  o.detector_blur = 0;
  o.attenuation = 0;
  o.activity = act;
  ctr_pet_histo *h = NULL;
  CHECK_OK(ctr_pet_simulate(NULL, s, NULL, &o, &h));
  if (h) {
    const double n = total_counts(h, -1);
    /* Events stay in their voxel but for a TOF shift of ~1e-3 mm across a
     * face (a fraction ~1e-4): count the 3 x 3 x 3 neighbourhoods. */
    double na = 0, nb = 0;
    for (int64_t v = 0; v < 8; v++)
      for (int dz = -1; dz <= 1; dz++)
        for (int dy = -1; dy <= 1; dy++)
          for (int dx = -1; dx <= 1; dx++) {
            const int64_t o = (dz * 32 + dy) * 32 + dx;
            na += h->counts[v * nvox + a + o];
            nb += h->counts[v * nvox + b + o];
          }
    CHECK(na + nb == n);
    CHECK_NEAR(nb, 0.75 * n, 5 * sqrt(n * 0.75 * 0.25));
  }
  ctr_pet_histo_free(h);
  act[7] = -1.0f;
  CHECK_FAILS(ctr_pet_simulate(NULL, s, NULL, &o, &h), CTR_E_INVALID_ARGUMENT, "activity[7]");
  free(act);
  ctr_pet_system_free(s);
}

static int cancel_at_half(void *user, const char *stage, double fraction) {
  (void)stage;
  *(int *)user += 1;
  return fraction >= 0.5;
}

/* Same seed, same data, whatever the thread count; another seed differs;
 * cancellation and argument errors. */
static void test_reproducible(void) {
  const ctr_pet_params p = lattice(32, 8, 8, 1, 10.0);
  ctr_pet_system *s = make_system(&p, 300, 8.0, 6.0);
  if (!s) return;
  ctr_pet_phantom ph;
  ctr_pet_phantom_spheres(&ph, 4.0);
  ctr_pet_sim_options o = CTR_PET_SIM_OPTIONS_INIT;
  o.events = 3e5;
  o.attenuation = 1;
  o.seed = 1234;
  ctr_pet_histo *h[4] = {NULL, NULL, NULL, NULL};
  const int threads[3] = {1, 2, 3};
  for (int t = 0; t < 3; t++) {
    ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
    co.device = CTR_DEVICE_CPU;
    co.num_threads = threads[t];
    ctr_context *ctx = NULL;
    CHECK_OK(ctr_context_create(&co, &ctx));
    CHECK_OK(ctr_pet_simulate(ctx, s, &ph, &o, &h[t]));
    ctr_context_free(ctx);
  }
  o.seed = 1235;
  CHECK_OK(ctr_pet_simulate(NULL, s, &ph, &o, &h[3]));
  if (h[0] && h[1] && h[2] && h[3]) {
    const size_t bytes = sizeof(float) * (size_t)(8 * 32 * 32 * 8);
    CHECK(h[0]->events > 0);
    CHECK(!memcmp(h[0]->counts, h[1]->counts, bytes) && h[0]->events == h[1]->events);
    CHECK(!memcmp(h[0]->counts, h[2]->counts, bytes));
    CHECK(!memcmp(h[0]->factors, h[2]->factors, bytes));
    CHECK(memcmp(h[0]->counts, h[3]->counts, bytes) != 0);
  }
  for (int t = 0; t < 4; t++) ctr_pet_histo_free(h[t]);

  /* Cancellation from the progress callback. */
  int calls = 0;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  co.progress = cancel_at_half;
  co.user = &calls;
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(&co, &ctx));
  ctr_pet_histo *c = NULL;
  o.events = 2e6;
  CHECK_FAILS(ctr_pet_simulate(ctx, s, &ph, &o, &c), CTR_E_CANCELLED, "simulate");
  CHECK(c == NULL && calls > 0);
  ctr_context_free(ctx);

  /* Argument errors. */
  CHECK_FAILS(ctr_pet_simulate(NULL, s, NULL, &o, &c), CTR_E_INVALID_ARGUMENT, "phantom");
  o.events = -1;
  CHECK_FAILS(ctr_pet_simulate(NULL, s, &ph, &o, &c), CTR_E_INVALID_ARGUMENT, "events");
  o.events = 10;
  ph.spheres[2].activity = NAN;
  CHECK_FAILS(ctr_pet_simulate(NULL, s, &ph, &o, &c), CTR_E_INVALID_ARGUMENT, "spheres[2]");
  ctr_pet_phantom empty;
  memset(&empty, 0, sizeof empty);
  CHECK_FAILS(ctr_pet_simulate(NULL, s, &empty, &o, &c), CTR_E_INVALID_ARGUMENT, "no activity");
  ctr_pet_system_free(s);
}

/* Ha et al. 2013's phantoms and the voxelisation of a point source. */
static void test_phantoms(void) {
  ctr_pet_phantom ph;
  ctr_pet_phantom_spheres(&ph, 4.0);
  CHECK(ph.nspheres == 6 && ph.npoints == 0 && ph.cylinder_diameter == 350);
  for (int i = 0; i < 6; i++) {
    CHECK_NEAR(hypot(ph.spheres[i].x, ph.spheres[i].y), 75.0, 1e-9);
    CHECK(ph.spheres[i].diameter == 10 && ph.spheres[i].activity == 4.0 && ph.spheres[i].z == 2.0);
  }
  CHECK_NEAR(atan2(ph.spheres[1].y, ph.spheres[1].x) - atan2(ph.spheres[0].y, ph.spheres[0].x),
             PI / 3, 1e-9);
  ctr_pet_phantom_points(&ph);
  CHECK(ph.npoints == 3 && ph.nspheres == 0 && ph.cylinder_diameter == 0);
  CHECK(ph.points[0].y == 0 && ph.points[1].y == 60 && ph.points[2].y == 120);

  /* A point goes to its voxel, as activity / voxel volume. */
  const ctr_pet_params p = lattice(32, 8, 8, 1, 10.0);
  float *img = malloc(sizeof(float) * 32 * 32 * 8);
  ctr_pet_phantom one = one_point(centre(3, 32), centre(30, 32), centre(2, 8) + 1.9);
  one.points[0].activity = 6.4;
  CHECK_OK(ctr_pet_phantom_voxelize(&one, &p, 3, img));
  double sum = 0;
  for (int64_t i = 0; i < 32 * 32 * 8; i++) sum += img[i];
  CHECK_NEAR(img[(2 * 32 + 30) * 32 + 3], 0.1, 1e-7);
  CHECK_NEAR(sum, 0.1, 1e-7);
  /* The sphere phantom: voxel means are partial volumes; the total is the
   * integral (bg x cylinder inside the lattice + spheres' excess). */
  ctr_pet_phantom_spheres(&ph, 4.0);
  CHECK_OK(ctr_pet_phantom_voxelize(&ph, &p, 4, img));
  CHECK_NEAR(img[(4 * 32 + 16) * 32 + 16], 1.0, 1e-6);
  CHECK_FAILS(ctr_pet_phantom_voxelize(&ph, &p, 0, img), CTR_E_INVALID_ARGUMENT, "supersample");
  free(img);
}

int main(void) {
  test_phantoms();
  test_point_in_voxel();
  test_tof_spread();
  test_detector_blur();
  test_asymmetric_blur();
  test_solid_angle();
  test_attenuation();
  test_analytic_phantom();
  test_voxel_activity();
  test_reproducible();
  return th_finish("test_pet_sim");
}
