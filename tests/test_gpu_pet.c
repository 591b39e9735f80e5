/* The CUDA DIRECT backend against the CPU backend: projections of untilted
 * and tilted views with variant and asymmetric kernels on lattices that are
 * not whole thread blocks, a support too large for constant memory, the
 * cuFFT reference against FFTW, RAMLA / OSEM / MLEM reconstructions, and two
 * projectors of different systems on two threads at once, each taking turns
 * of its views' runs through the device's one constant bank.
 * (test_gpu_pet_project runs the adjoint and shape tests on the GPU.)
 * Exits 77 without a GPU. */
#include "harness.h"
#include "pet/pet.h"
#include "pet_test_util.h"

#include <pthread.h>

static ctr_context *g_cpu, *g_gpu, *g_shape; /* g_shape: a launch shape forced */

static double rel_rms_ff(const float *a, const float *b, int64_t n) {
  double d = 0, r = 0;
  for (int64_t i = 0; i < n; i++) d += (double)(a[i] - b[i]) * (a[i] - b[i]), r += (double)b[i] * b[i];
  return sqrt(d / (r > 0 ? r : 1));
}

static void compare_projectors(const char *what, ctr_pet_params p, ctr_pet_kernel_params k,
                               const int64_t *views, int nviews, double tol) {
  ctr_pet_system *s = NULL;
  ctr_pet_projector *pc = NULL, *pg = NULL;
  CHECK_OK(ctr_pet_system_create(&p, &k, &s));
  CHECK_OK(ctr_pet_projector_create(g_cpu, s, &pc));
  if (!pc) goto done;
  /* every launch shape (pet_cuda.cu) against the CPU, each forced through
   * a context's tuning table: slices per thread, run entries per pass,
   * block shape, split runs, runs in constant or global memory */
  static const char *shapes[][5] = {{"0", "4", "32x4", "0", "on"},  {"1", "4", "32x4", "1", "on"},
                                    {"16", "8", "16x8", "3", "on"}, {"24", "4", "48x2", "0", "on"},
                                    {"24", "8", "32x4", "8", "on"}, {"8", "4", "64x2", "2", "on"},
                                    {"16", "4", "32x4", "0", "off"}};
  static const char *const keys[5] = {"pet_z", "pet_lc", "pet_block", "pet_split", "pet_const"};
  for (int sh = 0; sh < 7; sh++) {
    ctr_tuning t;
    CHECK_OK(ctr_tuning_init(&t, CTR_TUNING_VERSION));
    for (int f = 0; f < 5; f++) CHECK_OK(ctr_tuning_set(&t, keys[f], shapes[sh][f]));
    ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
    co.device = CTR_DEVICE_CUDA;
    co.tuning = &t;
    ctr_pet_projector_free(pg);
    pg = NULL;
    ctr_context_free(g_shape);
    g_shape = NULL;
    CHECK_OK(ctr_context_create(&co, &g_shape));
    if (!g_shape) goto done;
    CHECK_OK(ctr_pet_projector_create(g_shape, s, &pg));
    if (!pg) goto done;
    int64_t n = p.nx * p.ny * p.nz;
    float *x = malloc(n * sizeof(float)), *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    pet_test_random(x, n, 21);
    for (int i = 0; i < (sh == 0 ? nviews : 1); i++)
      for (int d = 0; d < 2; d++) {
        ctr_pet_direction dir = d ? CTR_PET_BACK : CTR_PET_FORWARD;
        CHECK_OK(ctr_pet_project(pc, dir, views[i], x, a));
        CHECK_OK(ctr_pet_project(pg, dir, views[i], x, b));
        double e = rel_rms_ff(b, a, n);
        CHECK_MSG(e <= tol, "%s view %lld %s, shape Z=%s LC=%s %s split %s const %s: GPU vs CPU "
                  "relative RMS %.3g", what, (long long)views[i], d ? "back" : "forward",
                  shapes[sh][0], shapes[sh][1], shapes[sh][2], shapes[sh][3], shapes[sh][4], e);
      }
    free(x), free(a), free(b);
  }
  ctr_pet_view_info vi = CTR_PET_VIEW_INFO_INIT;
  CHECK_OK(ctr_pet_system_get_view_info(s, views[0], &vi));
  printf("%s: support %lld entries in %lld runs\n", what, (long long)vi.support,
         (long long)vi.columns);
done:
  ctr_pet_projector_free(pc);
  ctr_pet_projector_free(pg);
  ctr_context_free(g_shape);
  g_shape = NULL;
  ctr_pet_system_free(s);
}

static void test_fft(void) {
  ctr_pet_params p = pet_test_params(40, 36, 20, 4.0);
  ctr_pet_kernel_params k = pet_test_kernel_invariant();
  ctr_pet_system *s = NULL;
  CHECK_OK(ctr_pet_system_create(&p, &k, &s));
  if (!s) return;
  int64_t n = p.nx * p.ny * p.nz;
  float *x = malloc(n * sizeof(float)), *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
  pet_test_random(x, n, 4);
  for (int64_t pad = 0; pad <= 8; pad += 8) {
    CHECK_OK(ctr_pet_project_fft(g_cpu, s, 3, pad, x, a));
    CHECK_OK(ctr_pet_project_fft(g_gpu, s, 3, pad, x, b));
    double e = rel_rms_ff(b, a, n);
    CHECK_MSG(e < 1e-5, "cuFFT vs FFTW (pad %lld): relative RMS %.3g", (long long)pad, e);
  }
  free(x), free(a), free(b);
  ctr_pet_system_free(s);
}

static void test_recon(void) {
  ctr_pet_params p = pet_test_params(28, 26, 10, 4.0);
  p.n_azimuth = 8, p.n_copolar = 2;
  ctr_pet_kernel_params k = pet_test_kernel_variant();
  ctr_pet_system *s = NULL;
  ctr_pet_projector *pc = NULL, *pg = NULL;
  ctr_pet_histo *h = NULL;
  CHECK_OK(ctr_pet_system_create(&p, &k, &s));
  CHECK_OK(ctr_pet_projector_create(g_cpu, s, &pc));
  CHECK_OK(ctr_pet_projector_create(g_gpu, s, &pg));
  CHECK_OK(ctr_pet_histo_create(&p, 1, &h));
  if (!pc || !pg || !h) goto done;
  {
    int64_t n = p.nx * p.ny * p.nz;
    float *truth = malloc(n * sizeof(float)), *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    pet_test_random(truth, n, 8);
    CHECK_OK(pet_test_histo_fill(pc, h, truth, n, 9, 100.0f));
    for (int alg = 0; alg < 3; alg++) {
      ctr_pet_recon_options o = CTR_PET_RECON_OPTIONS_INIT;
      o.algorithm = (ctr_pet_algorithm)alg, o.iterations = 3;
      for (int64_t i = 0; i < n; i++) a[i] = b[i] = 0;
      CHECK_OK(ctr_pet_reconstruct(pc, h, &o, a, NULL));
      CHECK_OK(ctr_pet_reconstruct(pg, h, &o, b, NULL));
      double e = rel_rms_ff(b, a, n);
      CHECK_MSG(e < 2e-5, "%s: GPU vs CPU image relative RMS %.3g",
                ctr_pet_algorithm_name(o.algorithm), e);
    }
    free(truth), free(a), free(b);
  }
done:
  ctr_pet_histo_free(h);
  ctr_pet_projector_free(pc);
  ctr_pet_projector_free(pg);
  ctr_pet_system_free(s);
}

/* One thread's projector: its own CUDA context and system, `rounds` passes
 * forward over its views, each against the CPU's projection made before. */
#define PT_VIEWS 4
typedef struct pet_thread {
  ctr_pet_system *s;
  int64_t views[PT_VIEWS];
  const float *x;
  float *ref[PT_VIEWS];
  int64_t n;
  int rounds;
  double worst;
  int failed;
} pet_thread;

static void *pet_thread_run(void *arg) {
  pet_thread *t = (pet_thread *)arg;
  ctr_context *ctx = NULL;
  ctr_pet_projector *pg = NULL;
  float *b = malloc((size_t)t->n * sizeof(float));
  t->failed = pet_test_context(&ctx, 2) != CTR_OK || ctr_pet_projector_create(ctx, t->s, &pg) != CTR_OK;
  for (int r = 0; r < t->rounds && !t->failed; r++)
    for (int i = 0; i < PT_VIEWS && !t->failed; i++) {
      if (ctr_pet_project(pg, CTR_PET_FORWARD, t->views[i], t->x, b) != CTR_OK) t->failed = 1;
      else t->worst = fmax(t->worst, rel_rms_ff(b, t->ref[i], t->n));
    }
  free(b);
  ctr_pet_projector_free(pg);
  ctr_context_free(ctx);
  return NULL;
}

static void test_two_threads(void) {
  pet_thread t[2];
  memset(t, 0, sizeof t);
  const ctr_pet_params p[2] = {pet_test_params(37, 29, 13, 4.0), pet_test_params(33, 31, 11, 4.0)};
  ctr_pet_kernel_params k = pet_test_kernel_variant();
  float *x[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    const int64_t views[PT_VIEWS] = {3 + i, 17 + i, 40 + 9 * i, 80 + 5 * i};
    ctr_pet_projector *pc = NULL;
    CHECK_OK(ctr_pet_system_create(&p[i], &k, &t[i].s));
    CHECK_OK(ctr_pet_projector_create(g_cpu, t[i].s, &pc));
    t[i].n = p[i].nx * p[i].ny * p[i].nz;
    t[i].rounds = 25;
    x[i] = malloc((size_t)t[i].n * sizeof(float));
    pet_test_random(x[i], t[i].n, 31 + (unsigned)i);
    t[i].x = x[i];
    for (int v = 0; v < PT_VIEWS; v++) {
      t[i].views[v] = views[v];
      t[i].ref[v] = malloc((size_t)t[i].n * sizeof(float));
      if (pc) CHECK_OK(ctr_pet_project(pc, CTR_PET_FORWARD, views[v], x[i], t[i].ref[v]));
    }
    ctr_pet_projector_free(pc);
  }
  pthread_t th[2];
  if (t[0].s && t[1].s) {
    for (int i = 0; i < 2; i++) REQUIRE(pthread_create(&th[i], NULL, pet_thread_run, &t[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
      printf("two threads, projector %d: worst GPU vs CPU relative RMS of %d x %d views %.2e\n", i,
             t[i].rounds, PT_VIEWS, t[i].worst);
      CHECK_MSG(!t[i].failed, "two threads, projector %d failed: %s", i, ctr_error_detail());
      CHECK_MSG(t[i].worst <= 2e-6, "two threads, projector %d: GPU vs CPU relative RMS %.3g", i,
                t[i].worst);
    }
  }
  for (int i = 0; i < 2; i++) {
    for (int v = 0; v < PT_VIEWS; v++) free(t[i].ref[v]);
    free(x[i]);
    ctr_pet_system_free(t[i].s);
  }
}

int main(void) {
  if (pet_test_context(&g_gpu, 2) != CTR_OK) return 77;
  CHECK_OK(pet_test_context(&g_cpu, 1));
  const int64_t views[] = {0, 11, 40 + 25, 80 + 33};
  ctr_pet_kernel_params k = pet_test_kernel_variant();
  compare_projectors("variant 37x29x13", pet_test_params(37, 29, 13, 4.0), k, views, 4, 2e-6);
  k.asymmetric = 1;
  compare_projectors("asymmetric 37x29x21", pet_test_params(37, 29, 21, 4.0), k, views, 4, 2e-6);
  /* support larger than constant memory holds: the runs come from global memory */
  ctr_pet_kernel_params big = CTR_PET_KERNEL_PARAMS_INIT;
  big.tof_fwhm_ps = 900, big.radial_fwhm_center_mm = 10, big.radial_fwhm_edge_mm = 100;
  big.axial_fwhm_mm = 10, big.edge_radius_mm = 60;
  const int64_t v2[] = {5, 80 + 17};
  compare_projectors("wide kernels at 2 mm", pet_test_params(22, 20, 6, 2.0), big, v2, 2, 2e-6);
  test_fft();
  test_recon();
  test_two_threads();
  ctr_context_free(g_cpu);
  ctr_context_free(g_gpu);
  return th_finish("test_gpu_pet");
}
