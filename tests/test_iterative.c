/* The iterative projector: the adjoint identity <A x, y> = <x, A^T y> for
 * every geometry, the float projection against the double-precision
 * reference, a voxelised Shepp-Logan head against exact line integrals, and
 * slab-wise projection against whole-volume projection within the
 * summation-order bound (docs/iterative.md, "Numbers").
 *
 * Built twice: as test_iterative on the CPU backend, and with CTR_TEST_CUDA
 * as test_gpu_iterative, where the projectors run on the GPU and their
 * forward projection is also compared with the CPU's (exit 77, skipped,
 * without a GPU). */
#include "harness.h"

#include "iterative/iterative.h"

/* the device-array checks call the CUDA runtime: only in a build with CUDA
 * (a build without it skips the GPU variant when it finds no CUDA context) */
#if defined(CTR_TEST_CUDA) && CTR_HAVE_CUDA
#define TEST_DEVICE_ARRAYS 1
#include <cuda_runtime.h>
#endif

#define PI 3.14159265358979323846

static ctr_context *g_ctx;     /* the backend under test */
static ctr_context *g_cpu_ctx; /* the CPU, for comparisons */

/* ---- Geometries ---------------------------------------------------------------- */

static ctr_geometry *cone(int64_t nx, int64_t ny, int64_t nz, double vz, int64_t nviews,
                          double sid, double sdd, int64_t nu, int64_t nv, double pitch) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = sid;
  p.sdd = sdd;
  p.nu = nu;
  p.nv = nv;
  p.du = p.dv = pitch;
  p.offset_u = 0.3 * pitch; /* off-centre, so that no symmetry hides an error */
  p.nviews = nviews;
  p.angle_start_deg = 7;
  ctr_volume_geometry vol = {nx, ny, nz, 1.0, 1.0, vz, 0.2, -0.3, 0.1};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  return g;
}

static ctr_parallel_geometry *parallel(int64_t nbins, int64_t nangles, int64_t n) {
  double shift[64];
  for (int a = 0; a < nangles && a < 64; a++) shift[a] = 0.25 * sin(a);
  ctr_parallel_params pp = CTR_PARALLEL_PARAMS_INIT;
  pp.nbins = nbins;
  pp.nangles = nangles;
  pp.nx = n;
  pp.ny = n - 3;
  pp.voxel = 1.1;
  pp.pixel_size = 0.5;
  pp.axis = 0.5 * (double)(nbins - 1) + 0.7;
  pp.axis_shift = nangles <= 64 ? shift : NULL;
  ctr_parallel_geometry *g = NULL;
  CHECK_OK(ctr_parallel_create(&pp, &g));
  return g;
}

typedef struct problem {
  const char *name;
  ctr_projector *p;
  int64_t vd[3], pd[3], nvol, nproj;
} problem;

static void sizes(problem *q) {
  ctr_projector_get_volume_dims(q->p, q->vd);
  ctr_projector_get_projection_dims(q->p, q->pd);
  q->nvol = q->vd[0] * q->vd[1] * q->vd[2];
  q->nproj = q->pd[0] * q->pd[1] * q->pd[2];
}

static problem make_cone(ctr_context *ctx, const char *name, ctr_geometry *g, int64_t max_slab) {
  problem q = {name, NULL, {0}, {0}, 0, 0};
  ctr_projector_options o = CTR_PROJECTOR_OPTIONS_INIT;
  o.max_slab_slices = max_slab;
  if (g) CHECK_OK(ctr_projector_create_cone(ctx, g, &o, &q.p));
  if (q.p) sizes(&q);
  return q;
}

static problem make_parallel(ctr_context *ctx, const char *name, ctr_parallel_geometry *g,
                             int64_t nslices, int64_t max_slab) {
  problem q = {name, NULL, {0}, {0}, 0, 0};
  ctr_projector_options o = CTR_PROJECTOR_OPTIONS_INIT;
  o.max_slab_slices = max_slab;
  if (g) CHECK_OK(ctr_projector_create_parallel(ctx, g, nslices, &o, &q.p));
  if (q.p) sizes(&q);
  return q;
}

/* The geometries of the tests (made once: the matrices are perturbed at
 * random): a circular orbit (x- and y-dominant rays), a wide cone (rays of
 * all three families), arbitrary matrices, parallel beam, and a fine
 * detector: four pixels a voxel, so that the GPU's separable adjoint takes a
 * plane's columns in several passes (72 a 16-voxel tile), with views whose
 * fan crosses 45 degrees (both families in one view: two runs of columns)
 * and a volume of 37 x 29 x 19 (no multiple of the GPU's 16 x 16 x 8 tile). */
#define NPROBLEMS 5
static ctr_geometry *g_cones[4];
static ctr_parallel_geometry *g_par;

static void make_geometries(void) {
  g_cones[0] = cone(22, 19, 13, 1.25, 17, 70, 105, 36, 30, 1.6);
  g_cones[1] = cone(14, 15, 12, 1.0, 9, 24, 36, 44, 48, 2.0);
  g_cones[2] = cone(16, 16, 12, 1.0, 11, 60, 90, 30, 28, 1.7);
  th_perturb_geometry(&g_cones[2], 0.02);
  g_cones[3] = cone(37, 29, 19, 0.8, 13, 40, 64, 160, 60, 0.4);
  g_par = parallel(33, 23, 24);
}

static void free_geometries(void) {
  for (int i = 0; i < 4; i++) ctr_geometry_free(g_cones[i]);
  ctr_parallel_free(g_par);
}

static void make_all(ctr_context *ctx, int64_t max_slab, problem out[NPROBLEMS]) {
  out[0] = make_cone(ctx, "circular", g_cones[0], max_slab);
  out[1] = make_cone(ctx, "wide cone", g_cones[1], max_slab);
  out[2] = make_cone(ctx, "matrices", g_cones[2], max_slab);
  out[3] = make_parallel(ctx, "parallel", g_par, 6, max_slab);
  out[4] = make_cone(ctx, "fine det", g_cones[3], max_slab);
}

static void free_all(problem q[NPROBLEMS]) {
  for (int i = 0; i < NPROBLEMS; i++) ctr_projector_free(q[i].p);
}

/* ---- Adjoint -------------------------------------------------------------------------- */

/* <A x, y> = <x, A^T y> to 1e-6 relative, dot products in double, on random
 * x and y; also with the forward projection forced slab-wise. */
static void test_adjoint(void) {
  for (int forced = 0; forced < 2; forced++) {
    problem P[NPROBLEMS];
    make_all(g_ctx, forced ? 4 : 0, P);
    for (int i = 0; i < NPROBLEMS; i++) {
      problem *q = &P[i];
      if (!q->p) continue;
      float *x = th_randoms(q->nvol, 0, 1), *y = th_randoms(q->nproj, 0, 1);
      float *Ax = malloc(sizeof(float) * (size_t)q->nproj), *Aty = malloc(sizeof(float) * (size_t)q->nvol);
      CHECK_OK(ctr_projector_forward(q->p, x, Ax));
      CHECK_OK(ctr_projector_adjoint(q->p, y, Aty));
      const double l = th_dot(Ax, y, q->nproj), r = th_dot(x, Aty, q->nvol);
      const double rel = fabs(l - r) / fabs(l);
      printf("adjoint %-9s%s: <Ax,y> %.9e <x,A^T y> %.9e relative %.2e\n", q->name,
             forced ? " (slabs of 4)" : "", l, r, rel);
      CHECK_MSG(l > 0 && rel <= 1e-6, "%s: relative %.3e", q->name, rel);
      free(x);
      free(y);
      free(Ax);
      free(Aty);
    }
    free_all(P);
  }
}

/* ---- Reference --------------------------------------------------------------------------- */

/* The float projection against the double-precision reference: the same
 * rays and weights, positions in double. On random data the difference is
 * the positions' float rounding (about 1e-6 voxel here) times the
 * differences between neighbours, plus the float sums: relative RMS below
 * 1e-5. The GPU's projection is also compared with the CPU's: both compute
 * the same positions, so they differ by the sums' rounding (1e-5 relative). */
static void test_reference(void) {
  problem P[NPROBLEMS];
  make_all(g_ctx, 0, P);
#ifdef CTR_TEST_CUDA
  problem C[NPROBLEMS];
  make_all(g_cpu_ctx, 0, C);
#endif
  for (int i = 0; i < NPROBLEMS; i++) {
    problem *q = &P[i];
    if (!q->p) continue;
    float *x = th_randoms(q->nvol, 0, 1);
    float *Ax = malloc(sizeof(float) * (size_t)q->nproj);
    double *ref = malloc(sizeof(double) * (size_t)q->nproj);
    float *slots = malloc(sizeof(float) * (size_t)q->nproj);
    CHECK_OK(ctr_projector_forward(q->p, x, Ax));
    CHECK_OK(ctr__it_reference_forward(q->p, x, ref, NULL, NULL));
    ctr__proj_to_slots(q->p, Ax, slots);
    double e = 0, s = 0;
    for (int64_t r = 0; r < q->nproj; r++) {
      e += (slots[r] - ref[r]) * (slots[r] - ref[r]);
      s += ref[r] * ref[r];
    }
    printf("reference %-9s: relative RMS %.2e\n", q->name, sqrt(e / s));
    CHECK_MSG(s > 0 && sqrt(e / s) < 1e-5, "%s: relative RMS %.3e", q->name, sqrt(e / s));
#ifdef CTR_TEST_CUDA
    if (C[i].p) {
      float *cpu = malloc(sizeof(float) * (size_t)q->nproj);
      CHECK_OK(ctr_projector_forward(C[i].p, x, cpu));
      double d = 0, n2 = 0;
      for (int64_t r = 0; r < q->nproj; r++) {
        d += ((double)Ax[r] - cpu[r]) * ((double)Ax[r] - cpu[r]);
        n2 += (double)cpu[r] * cpu[r];
      }
      printf("GPU vs CPU %-9s: relative RMS %.2e\n", q->name, sqrt(d / n2));
      CHECK_MSG(n2 > 0 && sqrt(d / n2) < 1e-5, "%s: GPU vs CPU %.3e", q->name, sqrt(d / n2));
      float *y = th_randoms(q->nproj, 0, 1), *g = malloc(sizeof(float) * (size_t)q->nvol),
            *c = malloc(sizeof(float) * (size_t)q->nvol);
      CHECK_OK(ctr_projector_adjoint(q->p, y, g));
      CHECK_OK(ctr_projector_adjoint(C[i].p, y, c));
      d = n2 = 0;
      for (int64_t v = 0; v < q->nvol; v++) {
        d += ((double)g[v] - c[v]) * ((double)g[v] - c[v]);
        n2 += (double)c[v] * c[v];
      }
      printf("GPU vs CPU adjoint %-9s: relative RMS %.2e\n", q->name, sqrt(d / n2));
      CHECK_MSG(n2 > 0 && sqrt(d / n2) < 1e-5, "%s: GPU vs CPU adjoint %.3e", q->name,
                sqrt(d / n2));
      free(y);
      free(g);
      free(c);
      free(cpu);
    }
#endif
    free(x);
    free(Ax);
    free(ref);
    free(slots);
  }
  free_all(P);
#ifdef CTR_TEST_CUDA
  free_all(C);
#endif
}

/* ---- Shepp-Logan -------------------------------------------------------------------------- */

/* The projection of a voxelised Shepp-Logan head (each voxel the mean of its
 * cell) against its exact line integrals. The phantom is f = sum_e rho_e
 * chi_e over its ellipsoids; voxelisation and the bilinear samples are
 * averages with weights summing to one, so f_h differs from f only within
 * a_h = 3 h of an ellipsoid's surface (the cell: sqrt(3)/2 h; the in-plane
 * samples: sqrt(2) h; the sum over planes: h / 2), by at most |rho_e| for
 * each surface there. A ray's error is thus at most sum_e |rho_e| times its
 * length inside the band of surface e, and the mean over rays at most
 *   sum_e |rho_e| (band volume) / (detector area at the object)
 *   <= sum_e |rho_e| 2 a_h S_e mag^2 / (nu du nv dv),
 * S_e the surface area (Thomsen's formula, within 1.1 %), mag the largest
 * magnification at the object; the band of a convex surface holds at most
 * 2 a_h S_e (1 + a_h / r_min), taken into account. This worst case ignores
 * that the errors of a crossing cancel in part (f_h - f changes sign across
 * a surface), so it lies far above the measured error (about 200 times at
 * 32^3); the sharp checks are two consequences of the same analysis: the
 * error is first order in h (the relative RMS error falls by at least 1.6
 * from 32^3 to 64^3), and the averages conserve mass, so each view's sum
 * over its rays matches the exact one to 1 %. */
static double ellipsoid_area(double a, double b, double c) {
  const double p = 1.6075;
  return 4.0 * PI * pow((pow(a * b, p) + pow(a * c, p) + pow(b * c, p)) / 3.0, 1.0 / p) * 1.011;
}

static double sl_error(int64_t n, double *mean_abs, double *bound, double *mass) {
  const double fov = 64.0, radius = 28.0; /* mm */
  ctr_circular_params cp = CTR_CIRCULAR_PARAMS_INIT;
  cp.sid = 200;
  cp.sdd = 300;
  cp.nu = cp.nv = 64;
  cp.du = cp.dv = 1.6;
  cp.nviews = 12;
  ctr_volume_geometry vol = {n, n, n, fov / n, fov / n, fov / n, 0, 0, 0};
  ctr_geometry *g = NULL;
  ctr_phantom *ph = NULL;
  ctr_projector *p = NULL;
  CHECK_OK(ctr_geometry_create_circular(&cp, &vol, &g));
  CHECK_OK(ctr_phantom_shepp_logan(radius, 1.0, &ph));
  if (!g || !ph) return 1.0;
  CHECK_OK(ctr_projector_create_cone(g_ctx, g, NULL, &p));
  const int64_t nproj = cp.nu * cp.nv * cp.nviews, nvol = n * n * n;
  float *x = malloc(sizeof(float) * (size_t)nvol), *Ax = malloc(sizeof(float) * (size_t)nproj),
        *ex = malloc(sizeof(float) * (size_t)nproj);
  int64_t vd[3] = {n, n, n}, pd[3] = {cp.nu, cp.nv, cp.nviews};
  ctr_array xa = ctr_array_make(x, CTR_DTYPE_FLOAT32, 3, vd), ea = ctr_array_make(ex, CTR_DTYPE_FLOAT32, 3, pd);
  CHECK_OK(ctr_phantom_voxelize(g_cpu_ctx, ph, &vol, 3, 0, &xa));
  CHECK_OK(ctr_phantom_project(g_cpu_ctx, ph, g, 1, &ea));
  double e = 0, s = 0, a = 0;
  *mass = 0;
  if (p) {
    CHECK_OK(ctr_projector_forward(p, x, Ax));
    for (int64_t r = 0; r < nproj; r++) {
      const double d = (double)Ax[r] - ex[r];
      e += d * d;
      a += fabs(d);
      s += (double)ex[r] * ex[r];
    }
    const int64_t npix = cp.nu * cp.nv;
    for (int64_t v = 0; v < cp.nviews; v++) {
      double sa = 0, se = 0;
      for (int64_t r = v * npix; r < (v + 1) * npix; r++) sa += Ax[r], se += ex[r];
      *mass = fmax(*mass, fabs(sa / se - 1.0));
    }
  }
  *mean_abs = a / (double)nproj;
  const double h = fov / (double)n, ah = 3.0 * h;
  const double mag = cp.sdd / (cp.sid - radius);
  double sum = 0;
  const ctr_ellipsoid *el = ctr_phantom_get_ellipsoids(ph);
  for (int64_t k = 0; k < ctr_phantom_get_ellipsoid_count(ph); k++) {
    const double rmin = fmin(el[k].ax, fmin(el[k].ay, el[k].az));
    sum += fabs(el[k].density) * 2.0 * ah * ellipsoid_area(el[k].ax, el[k].ay, el[k].az) *
           (1.0 + ah / rmin);
  }
  *bound = sum * mag * mag / ((double)cp.nu * cp.du * (double)cp.nv * cp.dv);
  free(x);
  free(Ax);
  free(ex);
  ctr_projector_free(p);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
  return s > 0 ? sqrt(e / s) : 1.0;
}

static void test_shepp_logan(void) {
  double m1, m2, b1, b2, s1, s2;
  const double e1 = sl_error(32, &m1, &b1, &s1), e2 = sl_error(64, &m2, &b2, &s2);
  printf("Shepp-Logan: mean |error| %.4f (bound %.4f) at 32^3, %.4f (bound %.4f) at 64^3; "
         "relative RMS %.4f, %.4f (ratio %.2f); views' sums within %.2e, %.2e\n", m1, b1, m2, b2,
         e1, e2, e1 / e2, s1, s2);
  CHECK_MSG(s1 <= 0.01 && s2 <= 0.01, "a view's sum differs by %.3e / %.3e", s1, s2);
  CHECK_MSG(m1 <= b1, "32^3: mean |error| %.4f above the voxelisation bound %.4f", m1, b1);
  CHECK_MSG(m2 <= b2, "64^3: mean |error| %.4f above the voxelisation bound %.4f", m2, b2);
  CHECK_MSG(e1 / e2 >= 1.6, "error ratio %.3f: not first order in the voxel size", e1 / e2);
}

/* ---- Slabs --------------------------------------------------------------------------------- */

/* Slab-wise projection against the whole volume's. The adjoint computes each
 * voxel alone: slab-wise it is bit for bit the same. The forward projection
 * adds each slab's part of a ray (a sample straddling two slabs is split
 * between them): per ray the difference is at most
 *   2 u len (m + s + 7) M,  u = 2^-24,
 * m the planes the ray steps over, s the slabs, M the sum over its samples
 * of the magnitudes of their four neighbours (docs/iterative.md, "Numbers");
 * the reference projector computes m and M. */
static void test_slabs(void) {
  problem W[NPROBLEMS], S[NPROBLEMS];
  make_all(g_ctx, 0, W);
  make_all(g_ctx, 3, S);
  for (int i = 0; i < NPROBLEMS; i++) {
    if (!W[i].p || !S[i].p) continue;
    problem *q = &W[i];
    const int64_t nslabs = (q->vd[2] + 2) / 3;
    float *x = th_randoms(q->nvol, -1, 1), *y = th_randoms(q->nproj, -1, 1);
    float *aw = malloc(sizeof(float) * (size_t)q->nproj), *as = malloc(sizeof(float) * (size_t)q->nproj);
    float *bw = malloc(sizeof(float) * (size_t)q->nvol), *bs = malloc(sizeof(float) * (size_t)q->nvol);
    double *ref = malloc(sizeof(double) * (size_t)q->nproj), *mag = malloc(sizeof(double) * (size_t)q->nproj);
    int64_t *planes = malloc(sizeof(int64_t) * (size_t)q->nproj);
    float *sw = malloc(sizeof(float) * (size_t)q->nproj), *ss = malloc(sizeof(float) * (size_t)q->nproj);
    CHECK_OK(ctr_projector_forward(q->p, x, aw));
    CHECK_OK(ctr_projector_forward(S[i].p, x, as));
    CHECK_OK(ctr_projector_adjoint(q->p, y, bw));
    CHECK_OK(ctr_projector_adjoint(S[i].p, y, bs));
    CHECK_MSG(!memcmp(bw, bs, sizeof(float) * (size_t)q->nvol), "%s: slab-wise adjoint differs",
              q->name);
    CHECK_OK(ctr__it_reference_forward(q->p, x, ref, mag, planes));
    ctr__proj_to_slots(q->p, aw, sw);
    ctr__proj_to_slots(q->p, as, ss);
    int64_t over = 0, differ = 0;
    double worst = 0;
    for (int64_t r = 0; r < q->nproj; r++) {
      const double bound = 2.0 * ldexp(1.0, -24) * (double)(planes[r] + nslabs + 7) * mag[r];
      const double d = fabs((double)sw[r] - ss[r]);
      if (d > bound) over++;
      if (d > 0) differ++;
      if (bound > 0 && d / bound > worst) worst = d / bound;
    }
    printf("slabs %-9s: %lld of %lld rays differ, largest difference %.3f of its bound\n", q->name,
           (long long)differ, (long long)q->nproj, worst);
    CHECK_MSG(over == 0, "%s: %lld rays beyond the summation-order bound", q->name, (long long)over);
    free(x);
    free(y);
    free(aw);
    free(as);
    free(bw);
    free(bs);
    free(ref);
    free(mag);
    free(planes);
    free(sw);
    free(ss);
  }
  free_all(W);
  free_all(S);
}

/* ---- Arguments ------------------------------------------------------------------------------- */

static void test_arguments(void) {
  ctr_geometry *g = cone(8, 8, 8, 1.0, 16, 6.0, 9.0, 16, 16, 1.0);
  ctr_projector *p = NULL;
  CHECK_FAILS(ctr_projector_create_cone(g_ctx, g, NULL, &p), CTR_E_GEOMETRY, "within one voxel");
  ctr_geometry_free(g);
  ctr_projector_options o = CTR_PROJECTOR_OPTIONS_INIT;
  o.version = 7;
  g = cone(8, 8, 8, 1.0, 4, 40.0, 60.0, 16, 16, 1.0);
  CHECK_FAILS(ctr_projector_create_cone(g_ctx, g, &o, &p), CTR_E_INVALID_ARGUMENT,
              "ctr_projector_options.version");
  ctr_parallel_geometry *pg = parallel(16, 8, 12);
  o = (ctr_projector_options)CTR_PROJECTOR_OPTIONS_INIT;
  o.pair = CTR_PAIR_FAST;
  CHECK_FAILS(ctr_projector_create_parallel(g_ctx, pg, 2, &o, &p), CTR_E_UNSUPPORTED, "cone beam only");
  CHECK_OK(ctr_projector_create_cone(g_ctx, g, &o, &p));
  CHECK(p && !ctr_projector_is_matched(p));
  ctr_projector_free(p);
  p = NULL;
  CHECK_OK(ctr_projector_create_cone(g_ctx, g, NULL, &p));
  CHECK(p && ctr_projector_is_matched(p));
  CHECK_FAILS(ctr_projector_forward(p, NULL, NULL), CTR_E_INVALID_ARGUMENT, "NULL");
  ctr_projector_pair pair;
  CHECK_FAILS(ctr_projector_pair_parse("exact", &pair), CTR_E_INVALID_ARGUMENT, "matched or fast");
  ctr_projector_free(p);
  ctr_parallel_free(pg);
  ctr_geometry_free(g);
}


/* ---- Arrays in GPU memory (ctr_projector_*_device) --------------------------------------- */

/* On the GPU the device entry points give the host calls' bits (the same
 * kernels and plan, the arrays used in place), for cone and parallel beam
 * (its layout is transposed into slots on the GPU); host pointers are
 * refused naming the argument. On the CPU they are unsupported. */
static void test_device_arrays(void) {
  ctr_geometry *g = cone(12, 10, 8, 1.0, 9, 40.0, 60.0, 20, 16, 1.0);
  ctr_parallel_geometry *pg = parallel(16, 7, 12);
  ctr_projector *ps[2] = {NULL, NULL};
  CHECK_OK(ctr_projector_create_cone(g_ctx, g, NULL, &ps[0]));
  CHECK_OK(ctr_projector_create_parallel(g_ctx, pg, 3, NULL, &ps[1]));
  for (int k = 0; k < 2; k++) {
    ctr_projector *p = ps[k];
    if (!p) continue;
    int64_t vd[3], pd[3];
    ctr_projector_get_volume_dims(p, vd);
    ctr_projector_get_projection_dims(p, pd);
    const int64_t nvol = vd[0] * vd[1] * vd[2], nproj = pd[0] * pd[1] * pd[2];
    float *x = th_randoms(nvol, 0.0, 1.0), *y = th_randoms(nproj, 0.0, 1.0);
    float *fx = calloc((size_t)nproj, sizeof(float)), *ay = calloc((size_t)nvol, sizeof(float));
    float *fx_d = calloc((size_t)nproj, sizeof(float)), *ay_d = calloc((size_t)nvol, sizeof(float));
    REQUIRE(x && y && fx && ay && fx_d && ay_d);
#ifdef TEST_DEVICE_ARRAYS
    CHECK_OK(ctr_projector_forward(p, x, fx));
    CHECK_OK(ctr_projector_adjoint(p, y, ay));
    float *dx = NULL, *dy = NULL, *dfx = NULL, *day = NULL;
    CHECK(cudaMalloc((void **)&dx, sizeof(float) * (size_t)nvol) == cudaSuccess);
    CHECK(cudaMalloc((void **)&day, sizeof(float) * (size_t)nvol) == cudaSuccess);
    CHECK(cudaMalloc((void **)&dy, sizeof(float) * (size_t)nproj) == cudaSuccess);
    CHECK(cudaMalloc((void **)&dfx, sizeof(float) * (size_t)nproj) == cudaSuccess);
    cudaMemcpy(dx, x, sizeof(float) * (size_t)nvol, cudaMemcpyHostToDevice);
    cudaMemcpy(dy, y, sizeof(float) * (size_t)nproj, cudaMemcpyHostToDevice);
    CHECK_OK(ctr_projector_forward_device(p, dx, dfx));
    CHECK_OK(ctr_projector_adjoint_device(p, dy, day));
    cudaMemcpy(fx_d, dfx, sizeof(float) * (size_t)nproj, cudaMemcpyDeviceToHost);
    cudaMemcpy(ay_d, day, sizeof(float) * (size_t)nvol, cudaMemcpyDeviceToHost);
    CHECK_MSG(!memcmp(fx, fx_d, sizeof(float) * (size_t)nproj), "%s forward: device arrays differ",
              k ? "parallel" : "cone");
    CHECK_MSG(!memcmp(ay, ay_d, sizeof(float) * (size_t)nvol), "%s adjoint: device arrays differ",
              k ? "parallel" : "cone");
    CHECK_FAILS(ctr_projector_forward_device(p, x, dfx), CTR_E_INVALID_ARGUMENT, "vol is");
    CHECK_FAILS(ctr_projector_adjoint_device(p, dy, ay), CTR_E_INVALID_ARGUMENT, "vol is");
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dfx);
    cudaFree(day);
#else
    CHECK_FAILS(ctr_projector_forward_device(p, x, fx), CTR_E_UNSUPPORTED, "CUDA context");
    CHECK_FAILS(ctr_projector_adjoint_device(p, y, ay), CTR_E_UNSUPPORTED, "CUDA context");
#endif
    free(x), free(y), free(fx), free(ay), free(fx_d), free(ay_d);
    ctr_projector_free(p);
  }
  ctr_parallel_free(pg);
  ctr_geometry_free(g);
}

int main(void) {
  const int rc = th_contexts("test_gpu_iterative", &g_cpu_ctx, &g_ctx);
  if (rc) return rc;
  make_geometries();
  test_adjoint();
  test_reference();
  test_shepp_logan();
  test_slabs();
  test_arguments();
  test_device_arrays();
  free_geometries();
#ifdef CTR_TEST_CUDA
  ctr_context_free(g_ctx);
#endif
  ctr_context_free(g_cpu_ctx);
#ifdef CTR_TEST_CUDA
  return th_finish("test_gpu_iterative");
#else
  return th_finish("test_iterative");
#endif
}
