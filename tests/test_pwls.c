/* PWLS (penalised weighted least squares, src/iterative/pwls.c): on
 * Poisson data of a Shepp-Logan head the count weights beat unweighted
 * CGLS and a quadratic penalty does better still; with W = 1 and no penalty
 * PWLS reaches CGLS's minimiser; the penalty operation against its
 * double-precision definition, symmetric, and with the same bits for any
 * split into z slabs; Huber's steps never raise the objective; resuming
 * gives the uninterrupted run's bits; bad weights and options are refused
 * naming the field.
 *
 * Built twice: as test_pwls on the CPU backend and with CTR_TEST_CUDA as
 * test_gpu_pwls, where the runs are on the GPU and the penalty operation,
 * the count weights and a few PWLS iterations are also compared with the
 * CPU's (exit 77, skipped, without a GPU). */
#include "harness.h"
#include "iterate_problem.h"
#include "scratch_dir.h"

#include "iterative/backend.h"

static ctr_context *g_ctx;     /* the backend under test */
static ctr_context *g_cpu_ctx; /* the CPU, for comparisons */

/* ---- Random numbers and Poisson counts ------------------------------------------ */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

/* splitmix64: a uniform in (0, 1). */
static double uniform(void) {
  uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

/* A Poisson count of mean lambda: the arrivals of a unit-rate process in
 * [0, lambda] (exact, O(lambda)). */
static double poisson(double lambda) {
  double t = -log(uniform());
  int64_t k = 0;
  while (t <= lambda) t += -log(uniform()), k++;
  return (double)k;
}

/* ---- The problem ------------------------------------------------------------------ */

static int64_t g_det = 48; /* detector pixels a side */

/* The problem of ellipsoids e on g_det x g_det pixels (115 mm across). */
static void make_phantom(problem *q, ctr_context *ctx, int64_t n, int64_t nviews,
                         const ctr_ellipsoid *e, int64_t ne) {
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_from_ellipsoids(e, ne, &ph));
  problem_make(q, ctx, ph, n, nviews, g_det, 2.4 * 48.0 / (double)g_det, NULL);
  ctr_phantom_free(ph);
}

static void unmake(problem *q) { problem_free(q); }

/* A Shepp-Logan head 56 mm across, densities up to scale / mm, on g_det x
 * g_det pixels. */
static void make(problem *q, ctr_context *ctx, int64_t n, int64_t nviews, double scale) {
  ctr_phantom *sl = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(28.0, scale, &sl));
  problem_make(q, ctx, sl, n, nviews, g_det, 2.4 * 48.0 / (double)g_det, NULL);
  ctr_phantom_free(sl);
}

/* Transmission data of i0 counts per unattenuated ray: counts ~ Poisson(i0
 * exp(-b)) into `counts`, the projections -ln(counts / i0) into proj (a
 * ray that counted nothing: -ln(0.5 / i0)). */
static void poisson_data(problem *q, double i0, float *counts) {
  g_rng = 0x5eed;
  for (int64_t r = 0; r < q->nproj; r++) {
    const double c = poisson(i0 * exp(-(double)q->proj[r]));
    counts[r] = (float)c;
    q->proj[r] = (float)-log((c > 0 ? c : 0.5) / i0);
  }
}

static ctr_iterate_options pwls_opts(int64_t iterations) {
  ctr_iterate_options o = CTR_ITERATE_OPTIONS_INIT;
  o.algorithm = CTR_ITERATE_PWLS;
  o.iterations = iterations;
  return o;
}

/* RMSE over the voxels where the truth is not 0 (the head). */
static double rmse_inside(const float *x, const float *t, int64_t n) {
  double e = 0;
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++)
    if (t[i] != 0) e += ((double)x[i] - t[i]) * ((double)x[i] - t[i]), m++;
  return sqrt(e / (double)(m > 0 ? m : 1));
}

/* The per-iteration relative error against the truth (whole volume). */
#define MAXIT 128
typedef struct trace {
  int n;
  double err[MAXIT], res[MAXIT];
} trace;

static int record(void *user, const ctr_iterate_info *i) {
  trace *t = user;
  if (t->n < MAXIT) t->err[t->n] = i->error, t->res[t->n] = i->residual, t->n++;
  return 0;
}

/* The run of o for K iterations (*last: its RMSE inside the body); with
 * find_best, again up to its iteration of least error (whole volume), whose
 * RMSE inside the body is returned (*best: that iteration). */
static double best_rmse(problem *q, ctr_iterate_options o, int64_t K, float *x, int *best,
                        double *last, int find_best) {
  trace t = {0};
  o.iterations = K;
  o.truth = q->truth;
  o.on_iteration = record;
  o.user = &t;
  CHECK_OK(ctr_iterate(q->p, &o, q->proj, x, NULL));
  *last = rmse_inside(x, q->truth, q->nvol);
  *best = (int)K;
  if (!find_best) return *last;
  int k = 0;
  for (int i = 1; i < t.n; i++)
    if (t.err[i] < t.err[k]) k = i;
  o.iterations = k + 1;
  o.on_iteration = NULL;
  CHECK_OK(ctr_iterate(q->p, &o, q->proj, x, NULL));
  *best = k + 1;
  return rmse_inside(x, q->truth, q->nvol);
}

/* ---- Accuracy on Poisson data ------------------------------------------------------------ */

/* A flat body (an ellipsoid of semi-axes 29 x 9 x 22 mm, 0.06 / mm) with
 * three spherical inserts (+20 %, -20 %, +40 %), 36 exact projections of
 * 24^3 voxels, 50 counts per unattenuated ray: a ray along the body's long
 * axis counts about 2, one across it 17, so rays through one voxel differ
 * in variance up to ten-fold and weighting matters. Errors: RMSE inside
 * the body (truth > 0) of each run after 40 iterations (a fixed count: the
 * unpenalised runs semi-converge, the noise growing with the iterations)
 * and of the unpenalised runs at their best iteration (least error against
 * the truth over the volume, the run repeated up to it). PWLS with the
 * count weights (i0) beats unweighted CGLS at both; with the raw counts as
 * weights (0 where none came) likewise; with a quadratic penalty (beta 3e3,
 * the best of 3e2, 3e3, 1e4, 3e4 on this problem, docs/iterative.md) its
 * error after 40 iterations is less than half the unpenalised one's;
 * Huber (delta 0.003 / mm) too. The measured values are in
 * docs/iterative.md, "PWLS". */
static void test_noise(void) {
  problem q;
  const ctr_ellipsoid body[4] = {{0.06, 0, 0, 0, 29, 9, 22, 0, 0, 0},
                                 {0.012, 9, 0, 0, 5, 5, 5, 0, 0, 0},
                                 {-0.012, -11, 1, 3, 4, 4, 4, 0, 0, 0},
                                 {0.024, 0, 0, -9, 3, 3, 3, 0, 0, 0}};
  make_phantom(&q, g_ctx, 24, 36, body, 4);
  REQUIRE(q.p);
  float *counts = malloc(sizeof(float) * (size_t)q.nproj), *x = malloc(sizeof(float) * (size_t)q.nvol);
  poisson_data(&q, 50.0, counts);
  enum { NRUNS = 5 };
  const char *const name[NRUNS] = {"CGLS", "PWLS i0", "PWLS raw counts", "PWLS quadratic",
                                   "PWLS Huber"};
  double at40[NRUNS], best[NRUNS];
  int kb[NRUNS];
  for (int i = 0; i < NRUNS; i++) {
    ctr_iterate_options o = pwls_opts(40);
    if (i == 0) o.algorithm = CTR_ITERATE_CGLS;
    if (i == 1 || i >= 3) o.i0 = 50.0;
    if (i == 2) o.weights = counts;
    if (i >= 3) o.penalty = i == 3 ? CTR_PENALTY_QUADRATIC : CTR_PENALTY_HUBER, o.beta = 3e3;
    if (i == 4) o.huber_delta = 0.003;
    best[i] = best_rmse(&q, o, 40, x, &kb[i], &at40[i], i < 3);
    printf("Poisson data, i0 50: %-15s RMSE inside the body %.5f after 40 iterations", name[i],
           at40[i]);
    if (i < 3) printf(", %.5f at its best iteration (%d)", best[i], kb[i]);
    printf("\n");
  }
  CHECK_MSG(at40[1] < 0.9 * at40[0] && best[1] < 0.9 * best[0], "PWLS i0 %.5f, %.5f vs CGLS "
            "%.5f, %.5f", at40[1], best[1], at40[0], best[0]);
  CHECK_MSG(at40[2] < 0.9 * at40[0] && best[2] < 0.9 * best[0], "PWLS raw counts %.5f, %.5f vs "
            "CGLS %.5f, %.5f", at40[2], best[2], at40[0], best[0]);
  CHECK_MSG(at40[3] < 0.5 * at40[1], "PWLS quadratic %.5f vs unpenalised %.5f", at40[3], at40[1]);
  CHECK_MSG(at40[4] < 0.5 * at40[1], "PWLS Huber %.5f vs unpenalised %.5f", at40[4], at40[1]);
  free(counts);
  free(x);
  unmake(&q);
}

/* ---- W = 1, no penalty: CGLS's minimiser ------------------------------------------------ */

/* With W = 1 and beta = 0 PWLS minimises CGLS's ||A x - b||^2: on consistent
 * data (b = A t of a random volume t, by the projector itself) of a 12^3
 * volume seen by 30 views of 32^2 (18 times more rays than voxels, every
 * voxel seen: A has full column rank, the minimiser t is unique), both runs
 * of 100 iterations reach t, and each other, to float rounding. The
 * tolerance: 1e-4 of ||t||, which the measured differences (printed) stay
 * far below; an unconverged run (20 iterations) misses it. */
static void test_cgls_minimiser(void) {
  problem q;
  g_det = 32;
  make(&q, g_ctx, 12, 30, 0.02);
  g_det = 48;
  REQUIRE(q.p);
  float *t = malloc(sizeof(float) * (size_t)q.nvol), *xc = malloc(sizeof(float) * (size_t)q.nvol),
        *xp = malloc(sizeof(float) * (size_t)q.nvol);
  g_rng = 7;
  for (int64_t i = 0; i < q.nvol; i++) t[i] = (float)(0.01 + 0.02 * uniform());
  CHECK_OK(ctr_projector_forward(q.p, t, q.proj));
  ctr_iterate_options o = pwls_opts(100);
  o.algorithm = CTR_ITERATE_CGLS;
  CHECK_OK(ctr_iterate(q.p, &o, q.proj, xc, NULL));
  o.algorithm = CTR_ITERATE_PWLS;
  ctr_iterate_report r = CTR_ITERATE_REPORT_INIT;
  CHECK_OK(ctr_iterate(q.p, &o, q.proj, xp, &r));
  double dc = 0, dp = 0, dd = 0, tn = 0;
  for (int64_t i = 0; i < q.nvol; i++) {
    dc += ((double)xc[i] - t[i]) * ((double)xc[i] - t[i]);
    dp += ((double)xp[i] - t[i]) * ((double)xp[i] - t[i]);
    dd += ((double)xc[i] - xp[i]) * ((double)xc[i] - xp[i]);
    tn += (double)t[i] * t[i];
  }
  printf("W = 1, beta = 0: ||x_cgls - t|| %.2e, ||x_pwls - t|| %.2e, ||x_cgls - x_pwls|| %.2e "
         "of ||t|| (stop %d after %lld)\n", sqrt(dc / tn), sqrt(dp / tn), sqrt(dd / tn),
         (int)r.stop, (long long)r.iterations);
  CHECK_MSG(sqrt(dd / tn) < 1e-4, "PWLS and CGLS differ by %.3e of ||t||", sqrt(dd / tn));
  CHECK_MSG(sqrt(dp / tn) < 1e-4, "PWLS misses the minimiser by %.3e of ||t||", sqrt(dp / tn));
  o.iterations = 20; /* the tolerance can fail: 20 iterations are not enough */
  CHECK_OK(ctr_iterate(q.p, &o, q.proj, xp, NULL));
  dp = 0;
  for (int64_t i = 0; i < q.nvol; i++) dp += ((double)xp[i] - t[i]) * ((double)xp[i] - t[i]);
  printf("  after 20 iterations: ||x_pwls - t|| %.2e of ||t||\n", sqrt(dp / tn));
  CHECK(sqrt(dp / tn) > 1e-4);
  free(t);
  free(xc);
  free(xp);
  unmake(&q);
}

/* ---- The penalty operation --------------------------------------------------------------- */

/* Huber's psi'(t) in double, from its definition. */
static double huber_dpsi(double t, double delta) {
  return fabs(t) <= delta ? t : (t > 0 ? delta : -delta);
}

/* The operation's definition in double: out_c = sum over the 6-neighbours m
 * of w(x_c - x_m) (v_c - v_m) (w = 1 without x, Huber's psi'(t) / t with
 * it), or the sum of w without v; with v = x and x given, the gradient of
 * R from psi' directly (grad 1). */
static void penalty_ref(const float *x, const float *v, const int64_t n[3], double delta,
                        int grad, double *out) {
  const int64_t st[3] = {1, n[0], n[0] * n[1]};
  for (int64_t k = 0; k < n[2]; k++)
    for (int64_t j = 0; j < n[1]; j++)
      for (int64_t i = 0; i < n[0]; i++) {
        const int64_t c = (k * n[1] + j) * n[0] + i, at[3] = {i, j, k};
        double acc = 0;
        for (int a = 0; a < 3; a++)
          for (int s = -1; s <= 1; s += 2) {
            if (at[a] + s < 0 || at[a] + s >= n[a]) continue;
            const int64_t m = c + s * st[a];
            const double t = x ? (double)x[c] - x[m] : 0.0;
            if (grad) {
              acc += huber_dpsi(t, delta);
              continue;
            }
            const double w = x && fabs(t) > delta ? delta / fabs(t) : 1.0;
            acc += v ? w * ((double)v[c] - v[m]) : w;
          }
        out[c] = acc;
      }
}

static float *randoms(int64_t n, double lo, double hi) {
  float *a = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) a[i] = (float)(lo + (hi - lo) * uniform());
  return a;
}

/* The relative RMS of a float result against its double reference. */
static double rel_rms(const float *a, const double *ref, int64_t n) {
  double e = 0, s = 0;
  for (int64_t i = 0; i < n; i++) e += (a[i] - ref[i]) * (a[i] - ref[i]), s += ref[i] * ref[i];
  return s > 0 ? sqrt(e / s) : sqrt(e);
}

/* On grids down to one voxel and one slice: the CPU's operation (quadratic
 * H v, Huber's H_w(x) v, the diagonals, the gradient op(x, x) against psi'
 * itself) within 1e-6 of the double definition; <H v, y> = <v, H y> (and
 * with Huber's curvatures at a fixed x) to 1e-6; every split into z slabs
 * (1, 2, 3 slices, the whole) gives the bits of the whole. */
static void test_penalty_op(void) {
  const int64_t grids[][3] = {{9, 7, 11}, {1, 1, 1}, {1, 5, 3}, {6, 1, 1}, {4, 4, 1}, {3, 2, 2}};
  const double delta = 0.15;
  for (size_t gi = 0; gi < sizeof grids / sizeof *grids; gi++) {
    const int64_t *n = grids[gi], nv = n[0] * n[1] * n[2];
    float *x = randoms(nv, 0, 1), *v = randoms(nv, -1, 1), *y = randoms(nv, -1, 1);
    float *out = malloc(sizeof(float) * (size_t)nv), *hy = malloc(sizeof(float) * (size_t)nv);
    double *ref = malloc(sizeof(double) * (size_t)nv);
    struct {
      const float *x, *v;
      double delta;
      int grad;
      const char *what;
    } cases[] = {{NULL, v, INFINITY, 0, "quadratic H v"}, {x, v, delta, 0, "Huber H_w(x) v"},
                 {NULL, NULL, INFINITY, 0, "quadratic diagonal"},
                 {x, NULL, delta, 0, "Huber diagonal"}, {x, x, delta, 1, "Huber gradient"},
                 {x, x, INFINITY, 1, "quadratic gradient"}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
      ctr__hvec_penalty(2, out, cases[c].x, cases[c].v, n, (float)cases[c].delta, 0, n[2]);
      penalty_ref(cases[c].x, cases[c].v, n, cases[c].delta, cases[c].grad, ref);
      const double e = rel_rms(out, ref, nv);
      CHECK_MSG(e < 1e-6, "%lld x %lld x %lld, %s: relative RMS %.3e", (long long)n[0],
                (long long)n[1], (long long)n[2], cases[c].what, e);
      /* slabs of 1, 2 and 3 slices: the whole's bits */
      for (int64_t zs = 1; zs <= 3; zs++) {
        float *part = malloc(sizeof(float) * (size_t)nv);
        memset(part, 0xff, sizeof(float) * (size_t)nv);
        for (int64_t z0 = 0; z0 < n[2]; z0 += zs)
          ctr__hvec_penalty(1, part, cases[c].x, cases[c].v, n, (float)cases[c].delta, z0,
                            z0 + zs < n[2] ? z0 + zs : n[2]);
        CHECK_MSG(!memcmp(part, out, sizeof(float) * (size_t)nv), "%s: slabs of %lld differ",
                  cases[c].what, (long long)zs);
        free(part);
      }
    }
    /* symmetry, quadratic and Huber's curvatures at x */
    for (int h = 0; h < 2; h++) {
      const float *wx = h ? x : NULL;
      ctr__hvec_penalty(2, out, wx, v, n, (float)delta, 0, n[2]);
      ctr__hvec_penalty(2, hy, wx, y, n, (float)delta, 0, n[2]);
      double a = 0, b = 0, s = 0;
      for (int64_t i = 0; i < nv; i++)
        a += (double)out[i] * y[i], b += (double)v[i] * hy[i], s += fabs((double)out[i] * y[i]);
      CHECK_MSG(fabs(a - b) <= 1e-6 * (s > 0 ? s : 1), "%s: <Hv, y> %.9g, <v, Hy> %.9g",
                h ? "Huber" : "quadratic", a, b);
    }
    free(x);
    free(v);
    free(y);
    free(out);
    free(hy);
    free(ref);
  }
  /* The operation can fail: a slab that drops its halo (as if the plane
   * below were missing) differs from the whole at the slab's first slice. */
  const int64_t n[3] = {5, 4, 6}, nv = 120;
  float *x = randoms(nv, 0, 1), *a = malloc(sizeof(float) * nv), *b = malloc(sizeof(float) * nv);
  ctr__hvec_penalty(1, a, NULL, x, n, INFINITY, 0, 6);
  const int64_t nh[3] = {5, 4, 3}; /* slices 3..5 alone */
  ctr__hvec_penalty(1, b + 60, NULL, x + 60, nh, INFINITY, 0, 3);
  CHECK(memcmp(a + 60, b + 60, sizeof(float) * 20) != 0);
  free(x);
  free(a);
  free(b);
  printf("penalty operation: the double definition, symmetric, slab-wise bits: checked\n");
}

/* ---- Huber ------------------------------------------------------------------------------- */

/* Phi(x) = (A x - b)^T W (A x - b) / 2 + beta sum over pairs of psi, in
 * double (W = i0 exp(-b)). */
static double objective(problem *q, const float *x, double i0, double beta, double delta) {
  float *ax = malloc(sizeof(float) * (size_t)q->nproj);
  CHECK_OK(ctr_projector_forward(q->p, x, ax));
  double f = 0;
  for (int64_t r = 0; r < q->nproj; r++) {
    const double d = (double)ax[r] - q->proj[r];
    f += 0.5 * i0 * exp(-(double)q->proj[r]) * d * d;
  }
  const int64_t n = q->n, st[3] = {1, n, n * n};
  double R = 0;
  for (int64_t c = 0; c < q->nvol; c++) {
    const int64_t at[3] = {c % n, (c / n) % n, c / (n * n)};
    for (int a = 0; a < 3; a++) {
      if (at[a] + 1 >= n) continue;
      const double t = fabs((double)x[c] - x[c + st[a]]);
      R += t <= delta ? 0.5 * t * t : delta * t - 0.5 * delta * delta;
    }
  }
  free(ax);
  return f + beta * R;
}

/* Huber's majorize-minimize steps never raise Phi: iterations 1 .. 12 of a
 * run (each a run of that many iterations, the same bits as the longer
 * run's) give a non-increasing objective (to 1e-7 relative: the sums'
 * rounding), falling overall; and a delta far beyond every difference is
 * the quadratic penalty (within 1e-4: the Huber iteration takes <s, p> as
 * its step's numerator, the quadratic gamma, equal in exact arithmetic). */
static void test_huber(void) {
  problem q;
  make(&q, g_ctx, 16, 24, 0.06);
  REQUIRE(q.p);
  float *counts = malloc(sizeof(float) * (size_t)q.nproj), *x = malloc(sizeof(float) * (size_t)q.nvol);
  poisson_data(&q, 400.0, counts);
  ctr_iterate_options o = pwls_opts(1);
  o.i0 = 400.0;
  o.penalty = CTR_PENALTY_HUBER;
  o.beta = 2e3;
  o.huber_delta = 0.002;
  double prev = INFINITY, first = 0, last = 0;
  int monotone = 1;
  for (int k = 1; k <= 12; k++) {
    o.iterations = k;
    CHECK_OK(ctr_iterate(q.p, &o, q.proj, x, NULL));
    const double f = objective(&q, x, 400.0, o.beta, o.huber_delta);
    if (k == 1) first = f;
    last = f;
    monotone &= f <= prev * (1 + 1e-7);
    prev = f;
  }
  printf("Huber: objective %.6g after 1, %.6g after 12 iterations\n", first, last);
  CHECK_MSG(monotone, "Huber's objective rose");
  CHECK(last < first);
  float *xq = malloc(sizeof(float) * (size_t)q.nvol);
  o.iterations = 10;
  o.huber_delta = 1e30;
  CHECK_OK(ctr_iterate(q.p, &o, q.proj, x, NULL));
  o.penalty = CTR_PENALTY_QUADRATIC;
  o.huber_delta = 0;
  CHECK_OK(ctr_iterate(q.p, &o, q.proj, xq, NULL));
  double d = 0, s = 0;
  for (int64_t i = 0; i < q.nvol; i++) d += ((double)x[i] - xq[i]) * ((double)x[i] - xq[i]),
                                       s += (double)xq[i] * xq[i];
  printf("Huber with delta 1e30 vs quadratic: %.2e relative\n", sqrt(d / s));
  CHECK(sqrt(d / s) < 1e-4);
  free(counts);
  free(x);
  free(xq);
  unmake(&q);
}

/* ---- Resume ------------------------------------------------------------------------------- */

/* A run cut after 4 of 7 iterations and resumed gives the uninterrupted
 * run's bits, with weights from i0 (quadratic), the caller's weights
 * (Huber) and W = 1; a checkpoint of another beta, penalty, delta, i0 or
 * other weights is refused naming it. */
static void test_resume(void) {
  problem q;
  make(&q, g_ctx, 16, 16, 0.06);
  REQUIRE(q.p);
  REQUIRE(scratch_open("ctr_pwls"));
  const char *ck = P("pwls.checkpoint");
  float *counts = malloc(sizeof(float) * (size_t)q.nproj);
  poisson_data(&q, 400.0, counts);
  float *a = malloc(sizeof(float) * (size_t)q.nvol), *b = malloc(sizeof(float) * (size_t)q.nvol);
  for (int c = 0; c < 3; c++) {
    ctr_iterate_options o = pwls_opts(7);
    if (c == 0) o.i0 = 400.0, o.penalty = CTR_PENALTY_QUADRATIC, o.beta = 2e3;
    if (c == 1) o.weights = counts, o.penalty = CTR_PENALTY_HUBER, o.beta = 2e3, o.huber_delta = 0.002;
    CHECK_OK(ctr_iterate(q.p, &o, q.proj, a, NULL));
    remove(ck);
    o.iterations = 4;
    o.checkpoint = ck;
    CHECK_OK(ctr_iterate(q.p, &o, q.proj, b, NULL));
    o.iterations = 7;
    o.resume = 1;
    ctr_iterate_report r = CTR_ITERATE_REPORT_INIT;
    CHECK_OK(ctr_iterate(q.p, &o, q.proj, b, &r));
    CHECK(r.resumed == 4 && r.iterations == 7);
    CHECK_MSG(!memcmp(a, b, sizeof(float) * (size_t)q.nvol), "case %d: the resumed run differs", c);
    if (c == 0) {
      o.beta = 3e3;
      CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, b, NULL), CTR_E_FORMAT, "beta");
      o.beta = 2e3, o.i0 = 300;
      CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, b, NULL), CTR_E_FORMAT, "i0");
      o.i0 = 400, o.penalty = CTR_PENALTY_NONE, o.beta = 0;
      CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, b, NULL), CTR_E_FORMAT, "penalty");
    }
    if (c == 1) {
      o.huber_delta = 0.003;
      CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, b, NULL), CTR_E_FORMAT, "huber_delta");
      o.huber_delta = 0.002;
      counts[17] += 1;
      CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, b, NULL), CTR_E_FORMAT, "weights");
      counts[17] -= 1;
    }
    remove(ck);
  }
  scratch_close();
  free(counts);
  free(a);
  free(b);
  unmake(&q);
}

/* ---- Arguments ---------------------------------------------------------------------------- */

static void test_arguments(void) {
  problem q;
  make(&q, g_ctx, 12, 8, 0.02);
  REQUIRE(q.p);
  float *x = malloc(sizeof(float) * (size_t)q.nvol), *w = malloc(sizeof(float) * (size_t)q.nproj);
  for (int64_t i = 0; i < q.nproj; i++) w[i] = 2.0f;
  w[3] = 0.0f; /* a dead pixel: allowed */
  ctr_iterate_options o = pwls_opts(2);
  o.weights = w;
  CHECK_OK(ctr_iterate(q.p, &o, q.proj, x, NULL));
  const float bad[] = {NAN, -1.0f, INFINITY};
  const char *const says[] = {"NaN", "negative", "infinite"};
  for (int i = 0; i < 3; i++) {
    w[5] = bad[i];
    CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, x, NULL), CTR_E_INVALID_ARGUMENT, says[i]);
    CHECK(!strcmp(ctr_error_get_field(), "ctr_iterate_options.weights"));
  }
  memset(w, 0, sizeof(float) * (size_t)q.nproj);
  CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, x, NULL), CTR_E_INVALID_ARGUMENT, "every weight is 0");
  o.i0 = 100;
  CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, x, NULL), CTR_E_INVALID_ARGUMENT, "one of them");
  CHECK(!strcmp(ctr_error_get_field(), "ctr_iterate_options.i0"));
  o = pwls_opts(2);
  o.i0 = -5;
  CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, x, NULL), CTR_E_INVALID_ARGUMENT, "i0 is -5");
  o = pwls_opts(2);
  o.beta = 1;
  CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, x, NULL), CTR_E_INVALID_ARGUMENT, "CTR_PENALTY_NONE");
  CHECK(!strcmp(ctr_error_get_field(), "ctr_iterate_options.beta"));
  o.penalty = CTR_PENALTY_HUBER;
  CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, x, NULL), CTR_E_INVALID_ARGUMENT, "delta > 0");
  CHECK(!strcmp(ctr_error_get_field(), "ctr_iterate_options.huber_delta"));
  o.penalty = CTR_PENALTY_QUADRATIC;
  o.huber_delta = 0.1;
  CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, x, NULL), CTR_E_INVALID_ARGUMENT, "applies to");
  o = pwls_opts(2);
  o.penalty = (ctr_iterate_penalty)7;
  CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, x, NULL), CTR_E_INVALID_ARGUMENT, "penalty is 7");
  o = pwls_opts(2);
  o.nonneg = 1;
  CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, x, NULL), CTR_E_INVALID_ARGUMENT, "PWLS is unconstrained");
  /* the PWLS members with another algorithm */
  o = pwls_opts(2);
  o.algorithm = CTR_ITERATE_SIRT;
  o.i0 = 100;
  CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, x, NULL), CTR_E_INVALID_ARGUMENT,
              "applies to CTR_ITERATE_PWLS");
  CHECK(!strcmp(ctr_error_get_field(), "ctr_iterate_options.i0"));
  /* count weights beyond the inputs' bound: b far below 0 */
  o = pwls_opts(2);
  o.i0 = 1e6;
  q.proj[9] = -50.0f; /* 1e6 e^50 = 5e27 */
  CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, x, NULL), CTR_E_INVALID_ARGUMENT, "exceed 1e24");
  o.i0 = 1e21;
  CHECK_FAILS(ctr_iterate(q.p, &o, q.proj, x, NULL), CTR_E_INVALID_ARGUMENT, "1e-30 .. 1e+20");
  /* names */
  ctr_iterate_penalty pe;
  CHECK_OK(ctr_iterate_penalty_parse("huber", &pe));
  CHECK(pe == CTR_PENALTY_HUBER && !strcmp(ctr_iterate_penalty_name(pe), "huber"));
  CHECK_FAILS(ctr_iterate_penalty_parse("tv", &pe), CTR_E_INVALID_ARGUMENT, "quadratic");
  ctr_iterate_algorithm al;
  CHECK_OK(ctr_iterate_algorithm_parse("pwls", &al));
  CHECK(al == CTR_ITERATE_PWLS);
  /* version 1 of the options (no PWLS members) still runs CGLS */
  o = pwls_opts(2);
  o.algorithm = CTR_ITERATE_CGLS;
  o.version = 1;
  CHECK_OK(ctr_iterate(q.p, &o, q.proj, x, NULL));
  free(x);
  free(w);
  unmake(&q);
}

/* ---- The GPU against the CPU --------------------------------------------------------------- */

#ifdef CTR_TEST_CUDA
/* The penalty operation and the count weights on device vectors: the CPU's
 * bits (the same maths, never contracted; the count weights' double
 * exponentials may differ in an ulp of double, which the rounding to float
 * hides but for about one value in 2^29: allowed one float ulp); and 5
 * PWLS iterations (quadratic and Huber, count weights; and quadratic on a
 * GPU budget that streams slabs and views, whose volume vectors and
 * penalty are on the host) within 1e-4 of the CPU's (the projections' sums
 * differ in their rounding, 1e-5). */
static void test_gpu_cpu(void) {
  problem q, c;
  make(&q, g_ctx, 16, 16, 0.06);
  make(&c, g_cpu_ctx, 16, 16, 0.06);
  REQUIRE(q.p && c.p);
  const ctr__it_backend *be = q.p->be;
  const int64_t nv = q.nvol;
  g_rng = 11;
  float *x = randoms(nv, 0, 1), *v = randoms(nv, -1, 1), *h = malloc(sizeof(float) * nv),
        *g = malloc(sizeof(float) * nv);
  ctr__vec dx, dv, dout;
  CHECK_OK(be->alloc(q.p, nv, &dx));
  CHECK_OK(be->alloc(q.p, nv, &dv));
  CHECK_OK(be->alloc(q.p, nv, &dout));
  CHECK_OK(be->copy(q.p, dx.data, 1, x, 0, nv));
  CHECK_OK(be->copy(q.p, dv.data, 1, v, 0, nv));
  const struct {
    int x, v;
    float delta;
  } cases[] = {{0, 1, INFINITY}, {1, 1, 0.15f}, {1, 0, 0.15f}, {0, 0, INFINITY}};
  for (int i = 0; i < 4; i++) {
    ctr__hvec_penalty(2, h, cases[i].x ? x : NULL, cases[i].v ? v : NULL, q.p->n, cases[i].delta,
                      0, q.n);
    CHECK_OK(be->penalty(q.p, dout.data, cases[i].x ? dx.data : NULL, cases[i].v ? dv.data : NULL,
                         cases[i].delta, 0, q.n));
    CHECK_OK(be->copy(q.p, g, 0, dout.data, 1, nv));
    CHECK_MSG(!memcmp(g, h, sizeof(float) * (size_t)nv), "GPU penalty case %d differs", i);
    /* slab-wise on the GPU */
    for (int64_t z0 = 0; z0 < q.n; z0 += 5)
      CHECK_OK(be->penalty(q.p, dout.data, cases[i].x ? dx.data : NULL,
                           cases[i].v ? dv.data : NULL, cases[i].delta, z0,
                           z0 + 5 < q.n ? z0 + 5 : q.n));
    CHECK_OK(be->copy(q.p, g, 0, dout.data, 1, nv));
    CHECK_MSG(!memcmp(g, h, sizeof(float) * (size_t)nv), "GPU penalty case %d in slabs differs", i);
  }
  ctr__hvec_count_weights(2, h, nv, v, 400.0);
  CHECK_OK(be->count_weights(q.p, dout.data, nv, dv.data, 400.0));
  CHECK_OK(be->copy(q.p, g, 0, dout.data, 1, nv));
  int64_t off = 0;
  for (int64_t i = 0; i < nv; i++) off += g[i] != h[i] && nextafterf(g[i], h[i]) != h[i];
  CHECK_MSG(off == 0, "GPU count weights: %lld values beyond an ulp", (long long)off);
  be->free(q.p, &dx);
  be->free(q.p, &dv);
  be->free(q.p, &dout);
  float *counts = malloc(sizeof(float) * (size_t)q.nproj);
  poisson_data(&q, 400.0, counts);
  poisson_data(&c, 400.0, counts);
  for (int run = 0; run < 3; run++) {
    const int hub = run == 1;
    ctr_iterate_options o = pwls_opts(5);
    o.i0 = 400;
    o.penalty = hub ? CTR_PENALTY_HUBER : CTR_PENALTY_QUADRATIC;
    o.beta = 2e3;
    o.huber_delta = hub ? 0.002 : 0;
    ctr_iterate_report r = CTR_ITERATE_REPORT_INIT;
    if (run == 2) { /* a tiny GPU: streamed slabs and blocks of views, the penalty on the host */
      o.gpu_budget = 1 << 19;
      o.max_slab_slices = 5;
    }
    CHECK_OK(ctr_iterate(q.p, &o, q.proj, g, &r));
    if (run == 2) CHECK(r.plan.placement == CTR_PLACE_STREAMED && r.plan.nslabs > 1);
    o.gpu_budget = 0;
    CHECK_OK(ctr_iterate(c.p, &o, c.proj, h, NULL));
    double d = 0, s = 0;
    for (int64_t i = 0; i < nv; i++) d += ((double)g[i] - h[i]) * ((double)g[i] - h[i]),
                                      s += (double)h[i] * h[i];
    printf("GPU vs CPU, 5 PWLS iterations (%s%s): %.2e relative\n", hub ? "Huber" : "quadratic",
           run == 2 ? ", streamed" : "", sqrt(d / s));
    CHECK_MSG(s > 0 && sqrt(d / s) < 1e-4, "GPU PWLS differs from the CPU's by %.3e", sqrt(d / s));
  }
  free(counts);
  free(x);
  free(v);
  free(h);
  free(g);
  unmake(&q);
  unmake(&c);
}
#endif

int main(void) {
  const int rc = th_contexts("test_gpu_pwls", &g_cpu_ctx, &g_ctx);
  if (rc) return rc;
  test_penalty_op();
  test_arguments();
  test_cgls_minimiser();
  test_noise();
  test_huber();
  test_resume();
#ifdef CTR_TEST_CUDA
  test_gpu_cpu();
  ctr_context_free(g_ctx);
#endif
  ctr_context_free(g_cpu_ctx);
#ifdef CTR_TEST_CUDA
  return th_finish("test_gpu_pwls");
#else
  return th_finish("test_pwls");
#endif
}
