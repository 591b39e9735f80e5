/* DIRECT projectors (CPU here; test_gpu_pet.c runs the same checks on the
 * GPU): adjointness for variant and asymmetric kernels, forward == back for
 * symmetric invariant ones, the gather form of the forward projector against
 * the literal scatter definition in double precision, spatial vs FFT, and the
 * point-source shapes of seed 002 Figs. 6 and 7. */
#include "harness.h"
#include "pet/pet.h"
#include "pet_test_util.h"

static ctr_context *g_ctx;

/* A system and a projector of the backend under test for lattice p. */
typedef struct fixture {
  ctr_pet_params p;
  ctr_pet_system *s;
  ctr_pet_projector *pr;
  int64_t n;
} fixture;

static int fixture_open(fixture *f, ctr_pet_params p, const ctr_pet_kernel_params *k) {
  memset(f, 0, sizeof *f);
  f->p = p, f->n = p.nx * p.ny * p.nz;
  CHECK_OK(ctr_pet_system_create(&p, k, &f->s));
  if (f->s) CHECK_OK(ctr_pet_projector_create(g_ctx, f->s, &f->pr));
  return f->pr != NULL;
}

static void fixture_close(fixture *f) {
  ctr_pet_projector_free(f->pr);
  ctr_pet_system_free(f->s);
}

/* The forward projector's definition: every voxel spreads its value with its
 * own kernel (double precision, straight from the tables). */
static void scatter_reference(ctr_pet_system *s, int64_t view, const float *in, double *out) {
  const ctr__pet_lut *L = ctr__pet_lut_get(s, view);
  const ctr_pet_params *p = &s->p;
  int64_t n = p->nx * p->ny * p->nz;
  for (int64_t i = 0; i < n; i++) out[i] = 0;
  for (int64_t z = 0; z < p->nz; z++)
    for (int64_t y = 0; y < p->ny; y++)
      for (int64_t x = 0; x < p->nx; x++) {
        double v = in[(z * p->ny + y) * p->nx + x];
        if (v == 0) continue;
        int id = L->lormap[y * p->nx + x];
        for (int c = 0; c < L->ncols; c++) {
          const ctr__pet_column *col = &L->cols[c];
          for (int k = 0; k < col->len; k++) {
            int64_t X = x + col->dx, Y = y + col->dy, Z = z + col->dz0 + k;
            if (X < 0 || Y < 0 || Z < 0 || X >= p->nx || Y >= p->ny || Z >= p->nz) continue;
            out[(Z * p->ny + Y) * p->nx + X] += v * L->w[(size_t)(col->e0 + k) * L->nk + id];
          }
        }
      }
}

static void test_adjoint(const char *what, const ctr_pet_kernel_params *k, const int64_t *views,
                         int nviews) {
  fixture f;
  if (!fixture_open(&f, pet_test_params(24, 20, 10, 4.0), k)) {
    fixture_close(&f);
    return;
  }
  ctr_pet_projector *pr = f.pr;
  int64_t n = f.n;
  float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
  float *ax = malloc(n * sizeof(float)), *aty = malloc(n * sizeof(float));
  pet_test_random(x, n, 11), pet_test_random(y, n, 12);
  for (int i = 0; i < nviews; i++) {
    CHECK_OK(ctr_pet_project(pr, CTR_PET_FORWARD, views[i], x, ax));
    CHECK_OK(ctr_pet_project(pr, CTR_PET_BACK, views[i], y, aty));
    double l = pet_test_dot(ax, y, n), r = pet_test_dot(x, aty, n);
    CHECK_MSG(fabs(l - r) <= 2e-6 * fabs(l), "%s view %lld: <Ax,y> = %.9g, <x,A'y> = %.9g", what,
              (long long)views[i], l, r);
  }
  free(x), free(y), free(ax), free(aty);
  fixture_close(&f);
}

static void test_scatter_equivalence(void) {
  ctr_pet_kernel_params k = pet_test_kernel_variant();
  k.asymmetric = 1;
  fixture f;
  if (!fixture_open(&f, pet_test_params(20, 18, 8, 4.0), &k)) {
    fixture_close(&f);
    return;
  }
  ctr_pet_params p = f.p;
  ctr_pet_system *s = f.s;
  ctr_pet_projector *pr = f.pr;
  int64_t n = f.n;
  float *x = malloc(n * sizeof(float)), *ax = malloc(n * sizeof(float));
  double *ref = malloc(n * sizeof(double));
  pet_test_random(x, n, 5);
  const int64_t views[] = {0, 7, 2 * p.n_azimuth + 3};
  for (int i = 0; i < 3; i++) {
    CHECK_OK(ctr_pet_project(pr, CTR_PET_FORWARD, views[i], x, ax));
    scatter_reference(s, views[i], x, ref);
    double err = pet_test_rel_rms(ax, ref, n);
    CHECK_MSG(err < 1e-6, "forward gather vs scatter, view %lld: relative RMS %.3g",
              (long long)views[i], err);
  }
  free(x), free(ax), free(ref);
  fixture_close(&f);
}

static void test_invariant_symmetric(void) {
  ctr_pet_kernel_params k = pet_test_kernel_invariant();
  fixture f;
  if (!fixture_open(&f, pet_test_params(24, 24, 12, 4.0), &k)) {
    fixture_close(&f);
    return;
  }
  ctr_pet_system *s = f.s;
  ctr_pet_projector *pr = f.pr;
  CHECK(ctr_pet_system_is_kernel_invariant(s));
  int64_t n = f.n;
  float *x = malloc(n * sizeof(float)), *fw = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
  pet_test_random(x, n, 3);
  for (int64_t v = 0; v < ctr_pet_system_get_view_count(s); v += 5) {
    CHECK_OK(ctr_pet_project(pr, CTR_PET_FORWARD, v, x, fw));
    CHECK_OK(ctr_pet_project(pr, CTR_PET_BACK, v, x, b));
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
      d = fmax(d, fabs(fw[i] - b[i]));
      m = fmax(m, fabs(fw[i]));
    }
    CHECK_MSG(d <= 1e-6 * m, "invariant view %lld: forward and back differ by %.3g (max %.3g)",
              (long long)v, d, m);
  }
  free(x), free(fw), free(b);
  fixture_close(&f);
}

/* Point sources: spatial vs FFT (zero padded, so no cyclic wrap). Inside the
 * kernel support both apply the same kernel; outside it the FFT keeps the
 * tail the spatial kernel cuts, below exp(-cut^2 / 2) of the peak. */
static void test_fft(void) {
  ctr_pet_kernel_params k = pet_test_kernel_invariant();
  k.tof_fwhm_ps = 600;
  fixture f;
  if (!fixture_open(&f, pet_test_params(48, 48, 16, 4.0), &k)) {
    fixture_close(&f);
    return;
  }
  ctr_pet_params p = f.p;
  ctr_pet_system *s = f.s;
  ctr_pet_projector *pr = f.pr;
  int64_t n = f.n;
  float *x = calloc(n, sizeof(float)), *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
  /* three points along y in the central slice (seed Fig. 5) */
  for (int i = 0; i < 3; i++) x[(8 * p.ny + 12 + 12 * i) * p.nx + 24] = 1.0f;
  const int64_t views[] = {0, 9, 2 * p.n_azimuth + 5};
  for (int i = 0; i < 3; i++) {
    CHECK_OK(ctr_pet_project(pr, CTR_PET_FORWARD, views[i], x, a));
    CHECK_OK(ctr_pet_project_fft(g_ctx, s, views[i], 24, x, b));
    double m = 0, din = 0, dall = 0;
    for (int64_t j = 0; j < n; j++) m = fmax(m, b[j]);
    for (int64_t j = 0; j < n; j++) {
      double d = fabs(a[j] - b[j]);
      dall = fmax(dall, d);
      if (a[j] > 1e-3 * m) din = fmax(din, d);
    }
    CHECK_MSG(din <= 1e-4 * m, "view %lld: spatial vs FFT inside the support: %.3g of the max",
              (long long)views[i], din / m);
    CHECK_MSG(dall <= 0.012 * m, "view %lld: spatial vs FFT anywhere: %.3g of the max",
              (long long)views[i], dall / m);
  }
  /* variant kernels have no FFT form */
  ctr_pet_kernel_params kv = pet_test_kernel_variant();
  ctr_pet_system *sv = NULL;
  CHECK_OK(ctr_pet_system_create(&p, &kv, &sv));
  CHECK_FAILS(ctr_pet_project_fft(g_ctx, sv, 0, 0, x, b), CTR_E_UNSUPPORTED, "invariant");
  ctr_pet_system_free(sv);
  free(x), free(a), free(b);
  fixture_close(&f);
}

/* Mean and spread of an image along the view's radial direction r around a
 * point, on the +r and -r sides (seed Figs. 6, 7). */
static void radial_profile(const ctr_pet_system *s, const ctr__pet_frame *f, const float *img,
                           const double c[3], double *mean, double *plus, double *minus) {
  const ctr_pet_params *p = &s->p;
  double w = 0, m = 0, wp = 0, mp = 0, wm = 0, mm = 0;
  for (int64_t z = 0; z < p->nz; z++)
    for (int64_t y = 0; y < p->ny; y++)
      for (int64_t x = 0; x < p->nx; x++) {
        double v = img[(z * p->ny + y) * p->nx + x];
        double o[3] = {(x - 0.5 * (p->nx - 1)) * p->voxel - c[0],
                       (y - 0.5 * (p->ny - 1)) * p->voxel - c[1], 0};
        double q = o[0] * f->r[0] + o[1] * f->r[1];
        w += v, m += v * q;
        if (q > 0) wp += v, mp += v * q * q;
        if (q < 0) wm += v, mm += v * q * q;
      }
  *mean = m / w, *plus = sqrt(mp / wp), *minus = sqrt(mm / wm);
}

static void test_point_shapes(void) {
  ctr_pet_params p = pet_test_params(64, 64, 8, 4.0);
  int64_t n = p.nx * p.ny * p.nz;
  float *x = calloc(n, sizeof(float)), *a = malloc(n * sizeof(float));
  /* a point on the +y side; view 0 (phi = 90/40 deg... azimuth near 0): r ~ +y */
  int64_t px = 32, py = 52, pz = 4;
  x[(pz * p.ny + py) * p.nx + px] = 1.0f;
  double c[3] = {(px - 0.5 * (p.nx - 1)) * p.voxel, (py - 0.5 * (p.ny - 1)) * p.voxel, 0};
  for (int asym = 0; asym <= 1; asym++) {
    ctr_pet_kernel_params k = pet_test_kernel_variant();
    k.asymmetric = asym;
    fixture fx;
    if (!fixture_open(&fx, p, &k)) {
      fixture_close(&fx);
      continue;
    }
    ctr_pet_system *s = fx.s;
    ctr_pet_projector *pr = fx.pr;
    ctr__pet_frame f;
    ctr__pet_frame_of(s, 0, &f);
    double mean, plus, minus;
    CHECK_OK(ctr_pet_project(pr, CTR_PET_FORWARD, 0, x, a));
    radial_profile(s, &f, a, c, &mean, &plus, &minus);
    if (!asym) {
      CHECK_MSG(fabs(plus - minus) < 0.02 * plus && fabs(mean) < 0.05,
                "variant forward of a point is symmetric: +r %.3f mm, -r %.3f mm, mean %.3f",
                plus, minus, mean);
    } else {
      CHECK_MSG(mean < -0.5, "asymmetric forward leans towards the axis: mean %.3f mm", mean);
    }
    CHECK_OK(ctr_pet_project(pr, CTR_PET_BACK, 0, x, a));
    radial_profile(s, &f, a, c, &mean, &plus, &minus);
    if (!asym) {
      CHECK_MSG(plus > 1.05 * minus,
                "variant back projection widens towards the edge: +r %.3f mm vs -r %.3f mm", plus,
                minus);
    } else {
      CHECK_MSG(mean > 0.5, "asymmetric back projection leans towards the edge: mean %.3f mm",
                mean);
    }
    fixture_close(&fx);
  }
  free(x), free(a);
}

static void test_tables(void) {
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  ctr_pet_kernel_params k = CTR_PET_KERNEL_PARAMS_INIT;
  k.tof_fwhm_ps = 900, k.radial_fwhm_center_mm = 10, k.radial_fwhm_edge_mm = 100;
  k.axial_fwhm_mm = 10;
  ctr_pet_system *s = NULL;
  CHECK_OK(ctr_pet_system_create(&p, &k, &s));
  if (!s) return;
  CHECK_NEAR(ctr_pet_system_radial_fwhm(s, 0), 10, 1e-12);
  CHECK_NEAR(ctr_pet_system_radial_fwhm(s, -144), 55, 1e-9);
  CHECK_NEAR(ctr_pet_system_radial_fwhm(s, 288), 100, 1e-9);
  CHECK_NEAR(ctr_pet_system_radial_fwhm(s, 400), 100, 1e-9);
  ctr_pet_view_info vi = CTR_PET_VIEW_INFO_INIT;
  CHECK_OK(ctr_pet_system_get_view_info(s, 0, &vi));
  /* support: ellipsoid with semi-axes 3 sigma: volume 4/3 pi abc / voxel^3 */
  double sig_t = 900 * CTR_PET_C_MM_PER_PS / 2 / 2.35482, sig_r = 100 / 2.35482, sig_a = 10 / 2.35482;
  double vol = 4.0 / 3.0 * M_PI * 27 * sig_t * sig_r * sig_a / 64.0;
  CHECK_MSG(fabs(vi.support - vol) < 0.05 * vol, "support %lld voxels, ellipsoid %.0f",
            (long long)vi.support, vol);
  CHECK(vi.kernels >= 2 * 204);
  const ctr__pet_lut *L = ctr__pet_lut_get(s, 0);
  /* every kernel sums to one; entry e and nent-1-e are mirror offsets */
  int ok_sum = 1, ok_mirror = 1;
  for (int id = 0; id < L->nk; id += 17) {
    double sum = 0;
    for (int e = 0; e < L->nent; e++) sum += L->w[(size_t)e * L->nk + id];
    if (fabs(sum - 1) > 1e-4) ok_sum = 0;
  }
  for (int c = 0; c < L->ncols; c++) {
    const ctr__pet_column *a = &L->cols[c], *b = &L->cols[L->ncols - 1 - c];
    if (a->dx != -b->dx || a->dy != -b->dy || a->dz0 != -(b->dz0 + b->len - 1) ||
        a->e0 != L->nent - (b->e0 + b->len))
      ok_mirror = 0;
  }
  CHECK(ok_sum);
  CHECK(ok_mirror);
  /* bad parameters name the field */
  ctr_pet_kernel_params bad = k;
  bad.tof_fwhm_ps = -1;
  ctr_pet_system *t = NULL;
  CHECK_FAILS(ctr_pet_system_create(&p, &bad, &t), CTR_E_INVALID_ARGUMENT, "TOF");
  ctr_pet_params bp = p;
  bp.nz = 0;
  CHECK_FAILS(ctr_pet_system_create(&bp, &k, &t), CTR_E_INVALID_ARGUMENT, "lattice");
  double table[] = {0, 5, 100, 4};
  bad = k, bad.radial_table = table, bad.radial_table_n = 2;
  CHECK_OK(ctr_pet_system_create(&p, &bad, &t));
  if (t) CHECK_NEAR(ctr_pet_system_radial_fwhm(t, 50), 4.5, 1e-12);
  ctr_pet_system_free(t);
  double table2[] = {10, 5, 5, 4};
  bad.radial_table = table2, t = NULL;
  CHECK_FAILS(ctr_pet_system_create(&p, &bad, &t), CTR_E_INVALID_ARGUMENT, "ascending");
  ctr_pet_system_free(s);
}

int main(void) {
  if (pet_test_context(&g_ctx, PET_TEST_BACKEND) != CTR_OK) return 77;
  test_tables();
  const int64_t views[] = {0, 13, 40 + 21, 80 + 37};
  ctr_pet_kernel_params k = pet_test_kernel_variant();
  test_adjoint("variant", &k, views, 4);
  k.asymmetric = 1;
  test_adjoint("asymmetric variant", &k, views, 4);
  test_scatter_equivalence();
  test_invariant_symmetric();
  test_fft();
  test_point_shapes();
  ctr_context_free(g_ctx);
  return th_finish(PET_TEST_BACKEND == 2 ? "test_gpu_pet_project" : "test_pet_project");
}
