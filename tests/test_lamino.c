/* Laminography: parallel beam with the rotation axis tilted by tilt_deg
 * (docs/geometry.md, "Laminography"). Exact phantom projections against a
 * numerically integrated line in double (the test's own frame, written from
 * the docs' formulas); the iterative projector pair's adjoint identity and
 * its projection of a voxelised phantom against the exact one; the float
 * backprojector against the double reference; a vanishing tilt against the
 * untilted code; and the test: on the stack-of-disks phantom the
 * layers separate, by FBP and by CGLS.
 *
 * Built twice: as test_lamino on the CPU backend, and with CTR_TEST_CUDA as
 * test_gpu_lamino, where the projector runs on the GPU and is compared with
 * the CPU's (exit 77, skipped, without a GPU), and FBP of a tilted axis on
 * the GPU must give the CPU's bits. */
#include "harness.h"
#include "scratch_dir.h"

#define PI 3.14159265358979323846

static ctr_context *g_ctx;     /* the backend under test */
static ctr_context *g_cpu_ctx; /* the CPU, for comparisons */

/* A uniform full turn, nrows detector rows. */
static ctr_parallel_geometry *lamino(int64_t nbins, int64_t nangles, int64_t nrows, int64_t nx,
                                     int64_t ny, double tilt, double axis_off, double ps) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = nbins;
  p.nangles = nangles;
  p.angle_start_deg = 3.0;
  p.angle_range_deg = 360.0;
  p.axis = 0.5 * (double)(nbins - 1) + axis_off;
  p.nx = nx;
  p.ny = ny;
  p.pixel_size = ps;
  p.tilt_deg = tilt;
  p.nrows = nrows;
  ctr_parallel_geometry *g = NULL;
  CHECK_OK(ctr_parallel_create(&p, &g));
  return g;
}


/* ---- Exact projections ----------------------------------------------------------- */

/* The line integral of the phantom's density along the ray of (angle, bin,
 * row), midpoint rule with step h mm over |l| <= L: the test's own frame
 * (docs/geometry.md: eu = (cos, sin, 0), ev = (sin tilt sin, -sin tilt cos,
 * cos tilt), d = (-cos tilt sin, cos tilt cos, sin tilt)). */
static double numeric_line(const ctr_phantom *ph, double theta_deg, double tilt_deg, double su,
                           double sv, double L, double h) {
  const double t = theta_deg * PI / 180.0, f = tilt_deg * PI / 180.0;
  const double eu[3] = {cos(t), sin(t), 0.0};
  const double ev[3] = {sin(f) * sin(t), -sin(f) * cos(t), cos(f)};
  const double d[3] = {-cos(f) * sin(t), cos(f) * cos(t), sin(f)};
  double sum = 0.0;
  for (double l = -L + 0.5 * h; l < L; l += h) {
    const double pt[3] = {su * eu[0] + sv * ev[0] + l * d[0], su * eu[1] + sv * ev[1] + l * d[1],
                          su * eu[2] + sv * ev[2] + l * d[2]};
    sum += ctr_phantom_density(ph, pt);
  }
  return sum * h;
}

/* ctr_phantom_sinogram of a tilted geometry (a rotated ellipsoid and the
 * disk stack, off-centre axis, 0.8 mm bins) against the numeric integral:
 * the midpoint rule's error is at most h |density| per surface crossed (4
 * surfaces per ellipsoid at most on these rays, densities <= 1): 4 * 3 * h. */
static void test_exact(void) {
  ctr_ellipsoid e[4];
  memset(e, 0, sizeof e);
  e[0] = (ctr_ellipsoid){0.7, 1.5, -2.0, 0.8, 6.0, 3.5, 2.0, 20.0, 35.0, -10.0};
  ctr_phantom *disks = NULL;
  CHECK_OK(ctr_phantom_disk_stack(9.0, 2.0, 2.5, 1.0, &disks));
  REQUIRE(disks);
  for (int i = 0; i < 3; i++) e[1 + i] = ctr_phantom_get_ellipsoids(disks)[i];
  ctr_phantom_free(disks);
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_from_ellipsoids(e, 4, &ph));
  const double tilts[3] = {30.0, -55.0, 72.0};
  for (int k = 0; k < 3; k++) {
    const int64_t nb = 40, na = 7, nr = 30;
    const double ps = 0.8;
    ctr_parallel_geometry *g = lamino(nb, na, nr, 0, 0, tilts[k], 1.3, ps);
    REQUIRE(g && ph);
    float *s = malloc(sizeof(float) * (size_t)(nb * na * nr));
    CHECK_OK(ctr_phantom_sinogram(ph, g, nr, NULL, 1, s));
    const ctr_parallel_params *pp = ctr_parallel_get_params(g);
    double worst = 0.0, peak = 0.0;
    for (int64_t r = 0; r < nr; r += 3)
      for (int64_t a = 0; a < na; a++)
        for (int64_t b = 0; b < nb; b += 2) {
          const double su = ((double)b - pp->axis) * ps, sv = ((double)r - 0.5 * (nr - 1)) * ps;
          const double ref = numeric_line(ph, pp->angles_deg[a], tilts[k], su, sv, 80.0, 1e-3);
          worst = fmax(worst, fabs(ref - s[(r * na + a) * nb + b]));
          peak = fmax(peak, ref);
        }
    printf("exact projections, tilt %g: largest |exact - numeric| %.2e (peak %.3f)\n", tilts[k],
           worst, peak);
    CHECK_MSG(peak > 2.0 && worst < 12e-3, "tilt %g: %.3e", tilts[k], worst);
    free(s);
    ctr_parallel_free(g);
  }
  ctr_phantom_free(ph);
}

/* ---- The projector pair ------------------------------------------------------------ */

typedef struct lam_case {
  const char *name;
  int64_t nb, na, nr, nx, ny, nz;
  double tilt, axis_off, ps;
} lam_case;

/* Non-square grids, nz != nrows, off-centre axes; 60 and -75 degrees make
 * the rays step along z (their family f = 2 in the Joseph pair). */
static const lam_case k_cases[] = {
    {"tilt30", 28, 13, 22, 20, 17, 9, 30.0, 0.6, 1.0},
    {"tilt-20", 24, 11, 18, 19, 21, 6, -20.0, -1.1, 0.7},
    {"tilt60", 26, 9, 30, 16, 18, 7, 60.0, 0.4, 1.3},
    {"tilt-75", 30, 10, 34, 15, 14, 5, -75.0, 0.0, 1.0},
};
#define NCASES (int)(sizeof k_cases / sizeof k_cases[0])

static ctr_projector *projector_of(ctr_context *ctx, const lam_case *c, ctr_parallel_geometry **g,
                                   int64_t slab) {
  *g = lamino(c->nb, c->na, c->nr, c->nx, c->ny, c->tilt, c->axis_off, c->ps);
  if (!*g) return NULL;
  ctr_projector_options po = CTR_PROJECTOR_OPTIONS_INIT;
  po.max_slab_slices = slab;
  ctr_projector *p = NULL;
  CHECK_OK(ctr_projector_create_parallel(ctx, *g, c->nz, &po, &p));
  return p;
}

/* <A x, y> = <x, A^T y> to 1e-6 relative (the existing pairs' bound,
 * docs/iterative.md), and the dims: bins x angles x rows, slices nx x ny x nz.
 * Slab-wise (2 slices a slab) the adjoint has the same bits and the forward
 * projection differs by summation order only. */
static void test_adjoint(void) {
  for (int i = 0; i < NCASES; i++) {
    const lam_case *c = &k_cases[i];
    ctr_parallel_geometry *g;
    ctr_projector *p = projector_of(g_ctx, c, &g, 0);
    REQUIRE(p);
    int64_t vd[3], pd[3];
    ctr_projector_get_volume_dims(p, vd);
    ctr_projector_get_projection_dims(p, pd);
    CHECK(vd[0] == c->nx && vd[1] == c->ny && vd[2] == c->nz);
    CHECK(pd[0] == c->nb && pd[1] == c->na && pd[2] == c->nr);
    const int64_t nvol = c->nx * c->ny * c->nz, nproj = c->nb * c->na * c->nr;
    float *x = th_randoms(nvol, 0, 1), *y = th_randoms(nproj, 0, 1);
    float *Ax = malloc(sizeof(float) * (size_t)nproj), *Aty = malloc(sizeof(float) * (size_t)nvol);
    CHECK_OK(ctr_projector_forward(p, x, Ax));
    CHECK_OK(ctr_projector_adjoint(p, y, Aty));
    double l = 0, r = 0;
    for (int64_t k = 0; k < nproj; k++) l += (double)Ax[k] * y[k];
    for (int64_t k = 0; k < nvol; k++) r += (double)x[k] * Aty[k];
    printf("adjoint %-8s: <Ax,y> %.9g <x,A^T y> %.9g relative %.2e\n", c->name, l, r,
           fabs(l - r) / fabs(l));
    CHECK_MSG(l > 0 && fabs(l - r) <= 1e-6 * fabs(l), "%s: %.3e", c->name, fabs(l - r) / fabs(l));
    /* slab-wise */
    ctr_parallel_geometry *g2;
    ctr_projector *p2 = projector_of(g_ctx, c, &g2, 2);
    if (p2) {
      float *Ax2 = malloc(sizeof(float) * (size_t)nproj), *Aty2 = malloc(sizeof(float) * (size_t)nvol);
      CHECK_OK(ctr_projector_forward(p2, x, Ax2));
      CHECK_OK(ctr_projector_adjoint(p2, y, Aty2));
      double d = 0, n2 = 0;
      for (int64_t k = 0; k < nproj; k++) {
        d = fmax(d, fabs((double)Ax2[k] - Ax[k]));
        n2 = fmax(n2, fabs((double)Ax[k]));
      }
      CHECK_MSG(d <= 1e-5 * n2, "%s: slab-wise forward differs by %.3e of %.3e", c->name, d, n2);
      CHECK(!memcmp(Aty, Aty2, sizeof(float) * (size_t)nvol));
      free(Ax2);
      free(Aty2);
      ctr_projector_free(p2);
    }
    ctr_parallel_free(g2);
#ifdef CTR_TEST_CUDA
    ctr_parallel_geometry *gc;
    ctr_projector *pc = projector_of(g_cpu_ctx, c, &gc, 0);
    if (pc) { /* GPU = CPU: the same positions, the sums' rounding */
      float *Axc = malloc(sizeof(float) * (size_t)nproj), *Atyc = malloc(sizeof(float) * (size_t)nvol);
      CHECK_OK(ctr_projector_forward(pc, x, Axc));
      CHECK_OK(ctr_projector_adjoint(pc, y, Atyc));
      double d = 0, n2 = 0, da = 0, na2 = 0;
      for (int64_t k = 0; k < nproj; k++)
        d += ((double)Ax[k] - Axc[k]) * ((double)Ax[k] - Axc[k]), n2 += (double)Axc[k] * Axc[k];
      for (int64_t k = 0; k < nvol; k++)
        da += ((double)Aty[k] - Atyc[k]) * ((double)Aty[k] - Atyc[k]),
            na2 += (double)Atyc[k] * Atyc[k];
      printf("GPU vs CPU %-8s: forward %.2e adjoint %.2e\n", c->name, sqrt(d / n2), sqrt(da / na2));
      CHECK_MSG(n2 > 0 && sqrt(d / n2) < 1e-5, "%s: forward %.3e", c->name, sqrt(d / n2));
      CHECK_MSG(na2 > 0 && sqrt(da / na2) < 1e-5, "%s: adjoint %.3e", c->name, sqrt(da / na2));
      free(Axc);
      free(Atyc);
      ctr_projector_free(pc);
    }
    ctr_parallel_free(gc);
#endif
    free(x), free(y), free(Ax), free(Aty);
    ctr_projector_free(p);
    ctr_parallel_free(g);
  }
}

/* The voxelised disk stack (each voxel the mean of 4^3 samples) projected
 * by the Joseph projector against the exact projections: each view's sum
 * over its pixels is the phantom's mass (the detector covers it) to 1 %,
 * and the relative RMS is the voxelisation's, first order in the voxel
 * (docs/iterative.md, "Voxelisation"): below 0.12 at 1 mm voxels for disks
 * 3 voxels thick, whose faces make most of the error. A wrong sign or
 * scale of the rows' mapping gives an RMS of order 1. */
static void test_voxelised(void) {
  const double tilt = 35.0, ps = 1.0;
  const int64_t nb = 48, na = 24, nr = 40, nx = 40, ny = 40, nz = 16;
  ctr_parallel_geometry *g = lamino(nb, na, nr, nx, ny, tilt, 0.0, ps);
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_disk_stack(12.0, 3.0, 2.0, 1.0, &ph));
  REQUIRE(g && ph);
  const ctr_volume_geometry vol = {nx, ny, nz, ps, ps, ps, 0, 0, 0};
  const int64_t dims[3] = {nx, ny, nz};
  float *x = malloc(sizeof(float) * (size_t)(nx * ny * nz));
  ctr_array xa = ctr_array_make(x, CTR_DTYPE_FLOAT32, 3, dims);
  CHECK_OK(ctr_phantom_voxelize(g_cpu_ctx, ph, &vol, 4, 0, &xa));
  const int64_t nproj = nb * na * nr;
  float *exact = malloc(sizeof(float) * (size_t)nproj), *Ax = malloc(sizeof(float) * (size_t)nproj);
  CHECK_OK(ctr_phantom_sinogram(ph, g, nr, NULL, 1, exact));
  ctr_projector *p = NULL;
  CHECK_OK(ctr_projector_create_parallel(g_ctx, g, nz, NULL, &p));
  REQUIRE(p);
  CHECK_OK(ctr_projector_forward(p, x, Ax));
  double e = 0, s = 0, worst_view = 0;
  for (int64_t a = 0; a < na; a++) {
    double se = 0, sa = 0;
    for (int64_t r = 0; r < nr; r++)
      for (int64_t b = 0; b < nb; b++) {
        const int64_t k = (r * na + a) * nb + b;
        e += ((double)Ax[k] - exact[k]) * ((double)Ax[k] - exact[k]);
        s += (double)exact[k] * exact[k];
        se += exact[k];
        sa += Ax[k];
      }
    worst_view = fmax(worst_view, fabs(sa - se) / se);
  }
  printf("voxelised disks: relative RMS %.4f, worst view sum %.2e\n", sqrt(e / s), worst_view);
  CHECK_MSG(sqrt(e / s) < 0.12, "relative RMS %.4f", sqrt(e / s));
  CHECK_MSG(worst_view < 0.01, "view sum off by %.3e", worst_view);
  ctr_projector_free(p);
  free(x), free(exact), free(Ax);
  ctr_phantom_free(ph);
  ctr_parallel_free(g);
}

/* ---- Filtered backprojection ---------------------------------------------------- */

/* The float backprojector against the double reference on random views
 * (linear and nearest): positions are the same doubles, so only the float
 * sums differ: 2e-6 of the largest value, as the untilted pair's bound. */
static void test_backprojector(void) {
  for (int i = 0; i < NCASES; i++) {
    const lam_case *c = &k_cases[i];
    ctr_parallel_geometry *g = lamino(c->nb, c->na, c->nr, c->nx, c->ny, c->tilt, c->axis_off, c->ps);
    REQUIRE(g);
    const int64_t nvol = c->nx * c->ny * c->nz, nproj = c->nb * c->na * c->nr;
    float *q = th_randoms(nproj, -1, 1), *f = malloc(sizeof(float) * (size_t)nvol);
    double *ref = malloc(sizeof(double) * (size_t)nvol);
    for (int interp = 0; interp < 2; interp++) {
      ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
      o.interp = interp ? CTR_FBP_NEAREST : CTR_FBP_LINEAR;
      CHECK_OK(ctr_fbp_backproject(g_cpu_ctx, g, &o, c->nz, q, f));
      CHECK_OK(ctr_fbp_backproject_reference(g, o.interp, c->nz, q, ref));
      double d = 0, m = 0;
      for (int64_t k = 0; k < nvol; k++) {
        d = fmax(d, fabs(f[k] - ref[k]));
        m = fmax(m, fabs(ref[k]));
      }
      CHECK_MSG(m > 0 && d <= 2e-6 * m, "%s interp %d: %.3e of %.3e", c->name, interp, d, m);
#ifdef CTR_TEST_CUDA
      /* the GPU: the CPU's bits, in one pass and in passes of 2 slices x
       * 3 views (a budget of 2 slices and the views' rows), and a budget
       * below one slice and one view refused naming it */
      float *fg = malloc(sizeof(float) * (size_t)nvol);
      CHECK_OK(ctr_fbp_backproject(g_ctx, g, &o, c->nz, q, fg));
      CHECK_MSG(!memcmp(f, fg, sizeof(float) * (size_t)nvol), "%s interp %d: GPU != CPU", c->name,
                interp);
      ctr_fbp_options ob = o;
      const uint64_t plane = 4u * (uint64_t)(c->nx * c->ny), view = 4u * (uint64_t)(c->nb * c->nr) + 72;
      ob.gpu_budget = 4 * plane + 3 * view;
      memset(fg, 0xff, sizeof(float) * (size_t)nvol);
      CHECK_OK(ctr_fbp_backproject(g_ctx, g, &ob, c->nz, q, fg));
      CHECK_MSG(!memcmp(f, fg, sizeof(float) * (size_t)nvol), "%s interp %d: GPU in passes != CPU",
                c->name, interp);
      ob.gpu_budget = plane / 2;
      CHECK_FAILS(ctr_fbp_backproject(g_ctx, g, &ob, c->nz, q, fg), CTR_E_DEVICE_OUT_OF_MEMORY,
                  "gpu_budget");
      free(fg);
#endif
    }
    free(q), free(f), free(ref);
    ctr_parallel_free(g);
  }
}

/* A vanishing tilt (1e-7 degrees, the tilted code) against tilt 0 (the
 * untilted code) on one full turn, rows = slices: the exact projections of
 * Shepp-Logan agree to 1e-5 of their peak (the rows' planes move by 1e-7
 * mm x the radius), the projector's forward projection to 1e-5 relative RMS
 * (the same samples, positions rounded from other doubles), FBP to 1e-4 of
 * the peak (the bilinear row weights of r = k + O(1e-9)). */
static void test_tilt_zero(void) {
  const int64_t nb = 40, na = 36, nz = 6, nx = 32;
  ctr_parallel_geometry *g0 = lamino(nb, na, 0, nx, nx, 0.0, 0.7, 1.0);
  ctr_parallel_geometry *g1 = lamino(nb, na, nz, nx, nx, 1e-7, 0.7, 1.0);
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(14.0, 1.0, &ph));
  REQUIRE(g0 && g1 && ph);
  double z[6];
  for (int k = 0; k < nz; k++) z[k] = (k - 0.5 * (nz - 1)) * 1.0;
  const int64_t nproj = nb * na * nz, nvol = nx * nx * nz;
  float *s0 = malloc(sizeof(float) * (size_t)nproj), *s1 = malloc(sizeof(float) * (size_t)nproj);
  CHECK_OK(ctr_phantom_sinogram(ph, g0, nz, z, 1, s0));
  CHECK_OK(ctr_phantom_sinogram(ph, g1, nz, z, 1, s1));
  double d = 0, m = 0;
  for (int64_t k = 0; k < nproj; k++) d = fmax(d, fabs(s0[k] - s1[k])), m = fmax(m, fabs(s0[k]));
  CHECK_MSG(m > 0 && d <= 1e-5 * m, "sinograms: %.3e of %.3e", d, m);
  ctr_projector *p0 = NULL, *p1 = NULL;
  CHECK_OK(ctr_projector_create_parallel(g_ctx, g0, nz, NULL, &p0));
  CHECK_OK(ctr_projector_create_parallel(g_ctx, g1, nz, NULL, &p1));
  REQUIRE(p0 && p1);
  float *x = th_randoms(nvol, 0, 1), *a0 = malloc(sizeof(float) * (size_t)nproj),
        *a1 = malloc(sizeof(float) * (size_t)nproj);
  CHECK_OK(ctr_projector_forward(p0, x, a0));
  CHECK_OK(ctr_projector_forward(p1, x, a1));
  double e = 0, n2 = 0;
  for (int64_t k = 0; k < nproj; k++)
    e += ((double)a0[k] - a1[k]) * ((double)a0[k] - a1[k]), n2 += (double)a0[k] * a0[k];
  printf("tilt 1e-7 vs 0: forward relative RMS %.2e\n", sqrt(e / n2));
  CHECK_MSG(n2 > 0 && sqrt(e / n2) < 1e-5, "forward %.3e", sqrt(e / n2));
  const int64_t sd[3] = {nb, na, nz}, vd[3] = {nx, nx, nz};
  float *v0 = malloc(sizeof(float) * (size_t)nvol), *v1 = malloc(sizeof(float) * (size_t)nvol);
  const ctr_array sa = ctr_array_make(s0, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array va0 = ctr_array_make(v0, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array va1 = ctr_array_make(v1, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_fbp(g_cpu_ctx, g0, NULL, &sa, &va0));
  CHECK_OK(ctr_fbp(g_cpu_ctx, g1, NULL, &sa, &va1));
  d = m = 0;
  for (int64_t k = 0; k < nvol; k++) d = fmax(d, fabs(v0[k] - v1[k])), m = fmax(m, fabs(v0[k]));
  printf("tilt 1e-7 vs 0: FBP largest difference %.2e of %.3f\n", d, m);
  CHECK_MSG(m > 0 && d <= 1e-4 * m, "FBP: %.3e of %.3e", d, m);
  /* tilt 0 with nrows = the slices: the untilted geometry, the same bits */
  ctr_parallel_geometry *g2 = lamino(nb, na, nz, nx, nx, 0.0, 0.7, 1.0);
  REQUIRE(g2);
  CHECK_OK(ctr_fbp(g_cpu_ctx, g2, NULL, &sa, &va1));
  CHECK(!memcmp(v0, v1, sizeof(float) * (size_t)nvol));
  ctr_parallel_free(g2);
  free(s0), free(s1), free(x), free(a0), free(a1), free(v0), free(v1);
  ctr_projector_free(p0);
  ctr_projector_free(p1);
  ctr_phantom_free(ph);
  ctr_parallel_free(g0);
  ctr_parallel_free(g1);
}

/* ---- The test: the layers separate --------------------------------------- */

/* Statistics of a reconstruction of the disk stack (radius R, thickness T,
 * gap G, ps = 1 mm voxels): each disk's mean over its core (r < R / 2, the
 * slice of its centre) and the largest mean between two disks (the slice
 * midway between their centres, same core). */
static void layer_stats(const float *v, int64_t nx, int64_t nz, double R, double T, double G,
                        double mean[3], double *between) {
  double sum[5] = {0}, cnt[5] = {0};
  const double step = T + G;
  for (int64_t k = 0; k < nz; k++) {
    const double z = (double)k - 0.5 * (double)(nz - 1);
    for (int m = 0; m < 5; m++) {
      const double zc = (m - 2) * 0.5 * step; /* disk 0, gap, disk 1, gap, disk 2 */
      if (fabs(z - zc) > 0.5) continue;
      for (int64_t j = 0; j < nx; j++)
        for (int64_t i = 0; i < nx; i++) {
          const double x = (double)i - 0.5 * (double)(nx - 1), y = (double)j - 0.5 * (double)(nx - 1);
          if (x * x + y * y >= 0.25 * R * R) continue;
          sum[m] += v[(k * nx + j) * nx + i];
          cnt[m] += 1;
        }
    }
  }
  for (int m = 0; m < 3; m++) mean[m] = cnt[2 * m] > 0 ? sum[2 * m] / cnt[2 * m] : NAN;
  *between = fmax(sum[1] / cnt[1], sum[3] / cnt[3]);
}

/* The stack (radius 6 mm, disks 4 voxels thick at the centre, gaps of 4)
 * at a 20-degree tilt (a usual laminography angle), 180 views over a full
 * turn, 1 mm voxels; disk values 1, 0.5 and 0.75.
 *
 * What FBP can give: no view sees the slices edge-on, so the frequencies
 * within the tilt phi of the axis are never measured (the missing cone),
 * and FBP returns the phantom with them removed. For one ellipsoid of
 * density rho and semi-axes (R, R, c) that multiplier (homogeneous of
 * degree 0) leaves its interior uniform (Eshelby 1957's property of
 * ellipsoids), at rho kappa, kappa = 1 / sqrt(1 + (R tan(phi) / c)^2): the
 * cone seen in the frame where the ellipsoid is a ball has half-angle
 * atan((R / c) tan(phi)), and a ball keeps the cosine of it (the solid
 * angle outside the cone; a ball's centre gives exactly cos(phi): docs).
 * Here kappa = 0.675. So FBP's core mean of each disk must be rho kappa
 * within 0.02 (a 7 % error in the weights, e.g. no cos(phi), fails it).
 * CGLS on the bounded grid recovers part of the cone (the grid's z extent
 * is information FBP does not use): its core means must lie between the
 * missing-cone limit and the truth (rho kappa - 0.02 .. rho + 0.02).
 * "Separate": the value midway between two disks is below half the
 * smaller of the two disks' reconstructed core means (Rayleigh's criterion
 * for two peaks asks for a dip below 0.81 of them). */
static void test_layers(void) {
  const double R = 6.0, T = 4.0, G = 4.0, tilt = 20.0;
  const int64_t nb = 64, na = 180, nr = 56, nx = 40, nz = 24;
  const double kappa = 1.0 / sqrt(1.0 + pow(R * tan(tilt * PI / 180.0) / (0.5 * T), 2.0));
  ctr_parallel_geometry *g = lamino(nb, na, nr, nx, nx, tilt, 0.0, 1.0);
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_disk_stack(R, T, G, 1.0, &ph));
  REQUIRE(g && ph);
  const int64_t nproj = nb * na * nr, nvol = nx * nx * nz;
  float *sino = malloc(sizeof(float) * (size_t)nproj), *v = malloc(sizeof(float) * (size_t)nvol);
  CHECK_OK(ctr_phantom_sinogram(ph, g, nr, NULL, 2, sino));
  const int64_t sd[3] = {nb, na, nr}, vd[3] = {nx, nx, nz};
  const ctr_array sa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array va = ctr_array_make(v, CTR_DTYPE_FLOAT32, 3, vd);
  static const double truth[3] = {1.0, 0.5, 0.75};
  double mean[3], between;
  CHECK_OK(ctr_fbp(g_cpu_ctx, g, NULL, &sa, &va));
  layer_stats(v, nx, nz, R, T, G, mean, &between);
  printf("FBP  layers: means %.4f %.4f %.4f (missing-cone limit %.4f %.4f %.4f), between %.4f\n",
         mean[0], mean[1], mean[2], kappa, 0.5 * kappa, 0.75 * kappa, between);
  for (int m = 0; m < 3; m++)
    CHECK_MSG(fabs(mean[m] - kappa * truth[m]) < 0.02, "FBP disk %d: %.4f", m, mean[m]);
  CHECK_MSG(between < 0.5 * fmin(mean[1], fmin(mean[0], mean[2])), "FBP between the disks: %.4f",
            between);
  ctr_projector *p = NULL;
  CHECK_OK(ctr_projector_create_parallel(g_ctx, g, nz, NULL, &p));
  REQUIRE(p);
  ctr_iterate_options o = CTR_ITERATE_OPTIONS_INIT;
  o.algorithm = CTR_ITERATE_CGLS;
  o.iterations = 15;
  memset(v, 0, sizeof(float) * (size_t)nvol);
  CHECK_OK(ctr_iterate(p, &o, sino, v, NULL));
  layer_stats(v, nx, nz, R, T, G, mean, &between);
  printf("CGLS layers: means %.4f %.4f %.4f (truth 1 0.5 0.75), between %.4f\n", mean[0],
         mean[1], mean[2], between);
  for (int m = 0; m < 3; m++)
    CHECK_MSG(mean[m] > kappa * truth[m] - 0.02 && mean[m] < truth[m] + 0.02, "CGLS disk %d: %.4f",
              m, mean[m]);
  CHECK_MSG(between < 0.5 * fmin(mean[1], fmin(mean[0], mean[2])), "CGLS between the disks: %.4f",
            between);
  ctr_projector_free(p);
  free(sino), free(v);
  ctr_phantom_free(ph);
  ctr_parallel_free(g);
}

/* ---- ASTRA's parallel3d_vec rows ------------------------------------------------ */

/* The rows of a tilted scan written from the docs' frame (ray d, detector
 * centre axis_shift bins off along -eu, u = eu ps, v = ev ps) come back as
 * the scan: its tilt, angles, shifts, pitch and rows, and the same exact
 * sinograms; rows whose v is not perpendicular to u, or whose detector
 * centre is off the axis point's row, are refused naming what. */
static void test_vectors(void) {
  const int64_t nb = 30, na = 12, nr = 26;
  const double tilt = 25.0, ps = 0.9;
  ctr_parallel_geometry *g = lamino(nb, na, nr, 0, 0, tilt, 0.0, ps);
  REQUIRE(g);
  const ctr_parallel_params *pp = ctr_parallel_get_params(g);
  double V[12 * 12], shift[12], ang[12], got_shift[12], row_z[26];
  const double f = tilt * PI / 180.0;
  for (int a = 0; a < na; a++) {
    const double t = pp->angles_deg[a] * PI / 180.0;
    shift[a] = 0.1 * a - 0.4;
    const double eu[3] = {cos(t), sin(t), 0}, ev[3] = {sin(f) * sin(t), -sin(f) * cos(t), cos(f)};
    const double d[3] = {-cos(f) * sin(t), cos(f) * cos(t), sin(f)};
    for (int k = 0; k < 3; k++) {
      V[12 * a + k] = d[k];
      V[12 * a + 3 + k] = -shift[a] * ps * eu[k] + 50.0 * d[k]; /* the detector 50 mm on */
      V[12 * a + 6 + k] = ps * eu[k];
      V[12 * a + 9 + k] = ps * ev[k];
    }
  }
  ctr_parallel_params q;
  CHECK_OK(ctr_parallel_params_from_vectors(nb, nr, na, V, ang, got_shift, &q, row_z));
  CHECK_NEAR(q.tilt_deg, tilt, 1e-12);
  CHECK(q.nrows == nr && q.nbins == nb && q.nangles == na);
  CHECK_NEAR(q.pixel_size, ps, 1e-15);
  for (int a = 0; a < na; a++) {
    CHECK_NEAR(fmod(ang[a] - pp->angles_deg[a] + 720.0, 360.0), 0.0, 1e-9);
    CHECK_NEAR(got_shift[a], shift[a], 1e-12);
  }
  CHECK_NEAR(row_z[0], -0.5 * (nr - 1) * ps, 1e-12);
  ctr_parallel_geometry *h = NULL;
  CHECK_OK(ctr_parallel_create(&q, &h));
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_disk_stack(6.0, 2.0, 2.0, 1.0, &ph));
  REQUIRE(h && ph);
  /* the same scan with the shifts given: the same sinograms */
  ctr_parallel_params r = *pp;
  r.angles_deg = ang;
  r.axis_shift = got_shift;
  ctr_parallel_geometry *g2 = NULL;
  CHECK_OK(ctr_parallel_create(&r, &g2));
  REQUIRE(g2);
  float *s1 = malloc(sizeof(float) * (size_t)(nb * na * nr)), *s2 = malloc(sizeof(float) * (size_t)(nb * na * nr));
  CHECK_OK(ctr_phantom_sinogram(ph, h, nr, NULL, 1, s1));
  CHECK_OK(ctr_phantom_sinogram(ph, g2, nr, NULL, 1, s2));
  double dmax = 0, m = 0;
  for (int64_t k = 0; k < nb * na * nr; k++) dmax = fmax(dmax, fabs(s1[k] - s2[k])), m = fmax(m, s1[k]);
  CHECK_MSG(m > 1 && dmax <= 1e-5 * m, "vectors' sinograms differ by %.3e of %.3e", dmax, m);
  V[12 * 3 + 9] += 0.05; /* v no longer perpendicular to u in view 3 */
  CHECK_FAILS(ctr_parallel_params_from_vectors(nb, nr, na, V, ang, got_shift, &q, NULL),
              CTR_E_UNSUPPORTED, "view 3: v is not perpendicular to u");
  V[12 * 3 + 9] -= 0.05;
  for (int k = 0; k < 3; k++) V[12 * 5 + 3 + k] += 0.7 * V[12 * 5 + 9 + k]; /* a row offset */
  CHECK_FAILS(ctr_parallel_params_from_vectors(nb, nr, na, V, ang, got_shift, &q, NULL),
              CTR_E_UNSUPPORTED, "view 5: the detector centre is off the row");
  free(s1), free(s2);
  ctr_phantom_free(ph);
  ctr_parallel_free(g2);
  ctr_parallel_free(h);
  ctr_parallel_free(g);
}

/* ---- Geometry files ------------------------------------------------------------- */

/* A tilted scan with an angle list, shifts and every field set, written as
 * JSON and read back: the same parameters to the bit and the same
 * sinograms; a uniform scan written as "angles"; a misspelt member, a
 * tilt of 90 and a cone-beam file refused naming what; an existing file
 * kept unless overwrite. */
static void test_json(void) {
  const int64_t nb = 20, na = 9, nr = 7;
  double ang[9], shift[9];
  for (int a = 0; a < na; a++) ang[a] = 40.0 * a + 0.1 / 3.0, shift[a] = 0.01 * a - 1.0 / 7.0;
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = nb, p.nangles = na, p.angles_deg = ang, p.axis_shift = shift;
  p.axis = 9.3, p.nx = 18, p.ny = 16, p.voxel = 1.0 / 3.0, p.pixel_size = 0.65e-3;
  p.tilt_deg = 30.0 / 7.0, p.nrows = nr;
  ctr_parallel_geometry *g = NULL, *h = NULL;
  CHECK_OK(ctr_parallel_create(&p, &g));
  REQUIRE(g);
  char *text = NULL;
  CHECK_OK(ctr_parallel_to_json_string(g, &text));
  REQUIRE(text);
  CHECK(strstr(text, "\"angles_deg\"") && strstr(text, "\"axis_shift\""));
  CHECK_OK(ctr_parallel_from_json_string(text, "t.json", &h));
  REQUIRE(h);
  const ctr_parallel_params *a = ctr_parallel_get_params(g), *b = ctr_parallel_get_params(h);
  CHECK(a->nbins == b->nbins && a->nangles == b->nangles && a->nx == b->nx && a->ny == b->ny &&
        a->nrows == b->nrows);
  CHECK(a->axis == b->axis && a->voxel == b->voxel && a->pixel_size == b->pixel_size &&
        a->tilt_deg == b->tilt_deg);
  for (int k = 0; k < na; k++) {
    CHECK(a->angles_deg[k] == b->angles_deg[k] && a->axis_shift[k] == b->axis_shift[k]);
    CHECK(ctr_parallel_get_weight(g, k) == ctr_parallel_get_weight(h, k));
  }
  free(text);
  ctr_parallel_free(h);
  /* a file: written, kept, replaced only when asked */
  if (!scratch_open("lamino_json")) {
    CHECK_MSG(0, "no scratch directory");
    return;
  }
  const char *path = P("par.json");
  CHECK_OK(ctr_parallel_save_json(g, path, 0));
  CHECK_FAILS(ctr_parallel_save_json(g, path, 0), CTR_E_INVALID_ARGUMENT, "exists and is kept");
  CHECK_OK(ctr_parallel_save_json(g, path, 1));
  CHECK_OK(ctr_parallel_load_json(path, &h));
  REQUIRE(h);
  CHECK(ctr_parallel_get_params(h)->tilt_deg == a->tilt_deg);
  ctr_parallel_free(h);
  ctr_parallel_free(g);
  scratch_close();
  /* uniform angles come back as the "angles" object */
  ctr_parallel_params u = CTR_PARALLEL_PARAMS_INIT;
  u.nbins = 8, u.nangles = 6, u.angle_start_deg = 0.1, u.angle_range_deg = 360.0;
  CHECK_OK(ctr_parallel_create(&u, &g));
  REQUIRE(g);
  CHECK_OK(ctr_parallel_to_json_string(g, &text));
  CHECK(strstr(text, "\"angles\"") && !strstr(text, "angles_deg") && !strstr(text, "axis_shift"));
  CHECK_OK(ctr_parallel_from_json_string(text, NULL, &h));
  for (int k = 0; h && k < 6; k++)
    CHECK(ctr_parallel_get_params(h)->angles_deg[k] == ctr_parallel_get_params(g)->angles_deg[k]);
  free(text);
  ctr_parallel_free(h);
  ctr_parallel_free(g);
  CHECK_FAILS(ctr_parallel_from_json_string("{\"type\": \"parallel\", \"nbins\": 8, \"angles\": "
                                            "{\"count\": 4}, \"tilt\": 10}", "x.json", &h),
              CTR_E_FORMAT, "tilt_deg");
  CHECK_FAILS(ctr_parallel_from_json_string("{\"type\": \"parallel\", \"nbins\": 8, \"angles\": "
                                            "{\"count\": 4}, \"tilt_deg\": 90, \"nrows\": 3}",
                                            "x.json", &h),
              CTR_E_GEOMETRY, "x.json");
  CHECK_FAILS(ctr_parallel_from_json_string("{\"type\": \"parallel\", \"nbins\": 8, \"angles_deg\": "
                                            "[0, 1], \"axis_shift\": [0]}", "x.json", &h),
              CTR_E_FORMAT, "axis_shift");
  CHECK_FAILS(ctr_parallel_from_json_string("{\"type\": \"circular\"}", "c.json", &h), CTR_E_FORMAT,
              "ctr_geometry_load_json");
  CHECK(h == NULL);
}

/* ---- Arguments ----------------------------------------------------------------- */

static void test_arguments(void) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = 16;
  p.nangles = 8;
  p.tilt_deg = 90.0;
  p.nrows = 4;
  ctr_parallel_geometry *g = NULL;
  CHECK_FAILS(ctr_parallel_create(&p, &g), CTR_E_GEOMETRY, "tilt_deg 90");
  p.tilt_deg = NAN;
  CHECK_FAILS(ctr_parallel_create(&p, &g), CTR_E_GEOMETRY, "tilt_deg");
  p.tilt_deg = 20.0;
  p.nrows = 0;
  CHECK_FAILS(ctr_parallel_create(&p, &g), CTR_E_GEOMETRY, "nrows 0");
  p.nrows = 4;
  p.angle_range_deg = 360.0;
  CHECK_OK(ctr_parallel_create(&p, &g));
  REQUIRE(g);
  /* the weights: pi cos(tilt) / n on a uniform full turn */
  CHECK_NEAR(ctr_parallel_get_weight(g, 3), PI * cos(20.0 * PI / 180.0) / 8.0, 1e-15);
  float sino[16 * 8 * 4] = {0}, vol[16 * 16 * 3];
  const int64_t sd[3] = {16, 8, 3}, vd[3] = {16, 16, 3};
  const ctr_array sa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_FAILS(ctr_fbp(g_cpu_ctx, g, NULL, &sa, &va), CTR_E_SIZE_MISMATCH, "nbins x nangles x nrows");
  const int64_t uproj[3] = {16, 4, 8};
  const ctr_array pa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, uproj);
  float flat[16 * 4];
  for (int i = 0; i < 16 * 4; i++) flat[i] = 1.0f;
  CHECK_FAILS(ctr_fbp_projections(g_cpu_ctx, g, NULL, &pa, flat, NULL, 0, &va), CTR_E_UNSUPPORTED,
              "tilt_deg");
#ifdef CTR_TEST_CUDA
  const int64_t sd4[3] = {16, 8, 4};
  const ctr_array sa4 = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd4);
  for (int i = 0; i < 16 * 8 * 4; i++) sino[i] = (float)((i * 37) % 101) / 101.0f;
  float volc[16 * 16 * 3];
  ctr_array vc = ctr_array_make(volc, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_fbp(g_cpu_ctx, g, NULL, &sa4, &vc)); /* FBP of a tilt on the GPU: the CPU's bits */
  CHECK_OK(ctr_fbp(g_ctx, g, NULL, &sa4, &va));
  CHECK(!memcmp(vol, volc, sizeof vol));
#endif
  ctr_parallel_free(g);
}

int main(void) {
  const int rc = th_contexts("test_gpu_lamino", &g_cpu_ctx, &g_ctx);
  if (rc) return rc;
  test_arguments();
  test_exact();
  test_adjoint();
  test_voxelised();
  test_backprojector();
  test_tilt_zero();
  test_vectors();
  test_json();
  test_layers();
#ifdef CTR_TEST_CUDA
  ctr_context_free(g_ctx);
#endif
  ctr_context_free(g_cpu_ctx);
#ifdef CTR_TEST_CUDA
  return th_finish("test_gpu_lamino");
#else
  return th_finish("test_lamino");
#endif
}
