/* Parallel-beam GPU backprojection at and past every angle limit of the
 * kernels: 1, 2047, 2048 (the layers of one texture, MAX_TEX_LAYERS),
 * 2049, 3000, 6144 and 10000 angles, every kernel, against the CPU's
 * double-precision reference; each run repeated and compared bit for bit
 * (the hybrid kernel with its tiles all on the ALU: its default mix hands
 * tiles to whichever path asks first); two contexts on two threads at once
 * with different geometries; and the whole pipeline (ctr_fbp: cuFFT filter,
 * two streams) against the CPU path past 2048 angles. Until 2026-12 the
 * kernels' angles sat in one constant-memory bank of 2048 for the process,
 * rewritten between launches without waiting: past 2048 angles, or with two
 * runs at once, slices came out 64-103 % wrong and differed run to run.
 * Also the ALU kernels' launch variants (ctr_tuning.fbp_occupancy,
 * fbp_carveout, fbp_angle_cache) bit for bit against the default at 2500
 * angles. Exits 77 without a GPU. */
#include "harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if CTR_HAVE_CUDA
#include "fbp_reference.h"
#include "parbeam/cuda/parbeam_cuda.h"

static const int64_t k_angles[] = {1, 2047, 2048, 2049, 3000, 6144, 10000};
enum { NB = 48, NXY = 40, NS = 2 };

/* A geometry of na angles over 180 degrees from start, nb bins, nxy x nxy
 * pixels (axis off centre). */
static ctr_parallel_geometry *geometry_of(int64_t na, double start, int64_t nb, int64_t nxy) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = nb;
  p.nangles = na;
  p.nx = p.ny = nxy;
  p.axis = 0.5 * (double)(nb - 1) + 1.37;
  p.angle_start_deg = start;
  ctr_parallel_geometry *g = NULL;
  CHECK_OK(ctr_parallel_create(&p, &g));
  return g;
}
static ctr_parallel_geometry *geometry(int64_t na, double start) { return geometry_of(na, start, NB, NXY); }

/* Smooth rows of nb bins that differ from angle to angle (a wrong angle's
 * row is a wrong value). */
static float *sinograms_of(int64_t na, int64_t ns, int64_t nb) {
  float *s = malloc(sizeof(float) * (size_t)(nb * na * ns));
  for (int64_t k = 0; k < nb * na * ns; k++) {
    const int64_t b = k % nb, a = (k / nb) % na, sl = k / (nb * na);
    s[k] = (float)(sin(0.11 * (double)b + 0.0037 * (double)a + (double)sl) + 0.25 * cos(0.9 * (double)a));
  }
  return s;
}
static float *sinograms(int64_t na, int64_t ns) { return sinograms_of(na, ns, NB); }

/* A CUDA context with n tuning settings kv[2i] = kv[2i + 1]. */
static ctr_context *cuda_context_kv(const char *const *kv, int n) {
  ctr_tuning t;
  CHECK_OK(ctr_tuning_init(&t, CTR_TUNING_VERSION));
  t.tune = -1; /* no timing runs of the automatic choice: auto is alu2 */
  for (int i = 0; i < n; i++) CHECK_OK(ctr_tuning_set(&t, kv[2 * i], kv[2 * i + 1]));
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  co.tuning = &t;
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(&co, &ctx));
  return ctx;
}

/* A CUDA context with one tuning setting (key NULL: the defaults). */
static ctr_context *cuda_context(const char *key, const char *value) {
  const char *const kv[2] = {key, value};
  return cuda_context_kv(kv, key ? 1 : 0);
}

static const struct {
  const char *name, *key, *value;
  int os;       /* oversampling: its own reference */
  double bound; /* relative RMS, linear interpolation (test_gpu_fbp.c explains each) */
} k_kernels[] = {
    {"tex", NULL, NULL, 0, 5e-3},    {"tex2", NULL, NULL, 0, 5e-3},   {"alu", NULL, NULL, 0, 1e-5},
    {"alu2", NULL, NULL, 0, 1e-5},   {"alu-os", NULL, NULL, 1, 5e-3}, {"alu2-os", NULL, NULL, 1, 5e-3},
    {"tex-mp", NULL, NULL, 0, 5e-3}, {"tex4h", NULL, NULL, 0, 5e-3},  {"alu2-h", NULL, NULL, 0, 4e-3},
    {"hybrid", "fbp_hybrid_tex", "0", 0, 1e-5},                       {"hybrid", NULL, NULL, 0, 5e-3},
};
#define NKERNELS (sizeof k_kernels / sizeof k_kernels[0])

/* Every kernel at na angles: against the reference, and a repeat bit for
 * bit (except the hybrid kernel's default mix). */
static void angles_case(ctr_context *const *ctx, int64_t na) {
  ctr_parallel_geometry *g = geometry(na, 0.31);
  if (!g) return;
  const int64_t n = (int64_t)NXY * NXY * NS;
  float *sino = sinograms(na, NS), *out = malloc(sizeof(float) * (size_t)n),
        *again = malloc(sizeof(float) * (size_t)n);
  double *ref = calloc((size_t)n, sizeof(double)), *ref_os = malloc(sizeof(double) * (size_t)n);
  CHECK_OK(ctr_fbp_backproject_reference(g, CTR_FBP_LINEAR, NS, sino, ref));
  oversampled_reference(g, NS, sino, ref_os);
  for (size_t k = 0; k < NKERNELS; k++) {
    ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
    o.kernel = k_kernels[k].name;
    memset(out, 0xff, sizeof(float) * (size_t)n);
    CHECK_OK(ctr__fbp_bp_cuda(ctx[k], g, &o, NS, sino, out, NULL));
    const double e = rel_rms(out, k_kernels[k].os ? ref_os : ref, n);
    printf("%5lld angles, %-7s%s: relative RMS vs double reference %.2e (bound %.0e)\n", (long long)na,
           k_kernels[k].name, k_kernels[k].key ? " (all ALU)" : "", e, k_kernels[k].bound);
    CHECK_MSG(e < k_kernels[k].bound, "%lld angles, kernel %s%s: relative RMS %g", (long long)na,
              k_kernels[k].name, k_kernels[k].key ? " (fbp_hybrid_tex 0)" : "", e);
    if (!strcmp(k_kernels[k].name, "hybrid") && !k_kernels[k].key) continue;
    memset(again, 0, sizeof(float) * (size_t)n);
    CHECK_OK(ctr__fbp_bp_cuda(ctx[k], g, &o, NS, sino, again, NULL));
    CHECK_MSG(!memcmp(out, again, sizeof(float) * (size_t)n),
              "%lld angles, kernel %s: two runs gave different bits", (long long)na, k_kernels[k].name);
  }
  free(sino);
  free(out);
  free(again);
  free(ref);
  free(ref_os);
  ctr_parallel_free(g);
}

/* One thread's runs: its own context and geometry, `rounds` backprojections
 * with kernel `kernel`, each against the reference. */
typedef struct worker {
  int64_t na;
  double start;
  const char *kernel;
  int rounds;
  double worst;
  int failed;
} worker;

static void *worker_run(void *arg) {
  worker *w = (worker *)arg;
  ctr_context *ctx = cuda_context(NULL, NULL);
  ctr_parallel_geometry *g = geometry(w->na, w->start);
  const int64_t n = (int64_t)NXY * NXY * NS;
  float *sino = sinograms(w->na, NS), *out = malloc(sizeof(float) * (size_t)n);
  double *ref = calloc((size_t)n, sizeof(double));
  w->failed = !ctx || !g || ctr_fbp_backproject_reference(g, CTR_FBP_LINEAR, NS, sino, ref) != CTR_OK;
  for (int r = 0; r < w->rounds && !w->failed; r++) {
    ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
    o.kernel = w->kernel;
    if (ctr__fbp_bp_cuda(ctx, g, &o, NS, sino, out, NULL) != CTR_OK) w->failed = 1;
    else w->worst = fmax(w->worst, rel_rms(out, ref, n));
  }
  free(sino);
  free(out);
  free(ref);
  ctr_parallel_free(g);
  ctr_context_free(ctx);
  return NULL;
}

/* Two contexts on two threads with different angles, at once. */
static void test_two_threads(void) {
  static const char *kernels[] = {"alu2", "tex"};
  for (int k = 0; k < 2; k++) {
    worker w[2] = {{3000, 0.31, kernels[k], 20, 0, 0}, {2049, 17.9, kernels[k], 20, 0, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) REQUIRE(pthread_create(&t[i], NULL, worker_run, &w[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
      const double bound = k ? 5e-3 : 1e-5;
      printf("two threads, %s, %lld angles: worst relative RMS of 20 runs %.2e (bound %.0e)\n",
             kernels[k], (long long)w[i].na, w[i].worst, bound);
      CHECK_MSG(!w[i].failed, "two threads, %s, thread %d failed: %s", kernels[k], i, ctr_error_detail());
      CHECK_MSG(w[i].worst < bound, "two threads, %s, %lld angles: relative RMS %g", kernels[k],
                (long long)w[i].na, w[i].worst);
    }
  }
}

/* ctr_fbp (filter and backprojection, the two-stream pipeline) on the GPU
 * against the CPU past 2048 angles. */
static void test_pipeline(ctr_context *gpu) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  ctr_context *cpu = NULL;
  CHECK_OK(ctr_context_create(&co, &cpu));
  static const int64_t nas[] = {3000, 6144};
  static const char *kernels[] = {"alu2", "tex"};
  const int64_t ns = 5, n = (int64_t)NXY * NXY * ns;
  for (int i = 0; i < 2 && cpu; i++) {
    ctr_parallel_geometry *g = geometry(nas[i], 0.31);
    if (!g) continue;
    float *sino = sinograms(nas[i], ns), *a = malloc(sizeof(float) * (size_t)n),
          *b = malloc(sizeof(float) * (size_t)n);
    const int64_t sd[3] = {NB, nas[i], ns}, vd[3] = {NXY, NXY, ns};
    const ctr_array si = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
    ctr_array va = ctr_array_make(a, CTR_DTYPE_FLOAT32, 3, vd), vb = ctr_array_make(b, CTR_DTYPE_FLOAT32, 3, vd);
    ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
    CHECK_OK(ctr_fbp(cpu, g, &o, &si, &va));
    for (int k = 0; k < 2; k++) {
      o.kernel = kernels[k];
      CHECK_OK(ctr_fbp(gpu, g, &o, &si, &vb));
      double e = 0, r = 0;
      for (int64_t j = 0; j < n; j++) {
        e += ((double)a[j] - b[j]) * ((double)a[j] - b[j]);
        r += (double)a[j] * a[j];
      }
      e = sqrt(e / r);
      const double bound = k ? 5e-3 : 2e-5;
      printf("ctr_fbp, %lld angles, %s: GPU vs CPU relative RMS %.2e (bound %.0e)\n", (long long)nas[i],
             kernels[k], e, bound);
      CHECK_MSG(e < bound, "ctr_fbp %lld angles kernel %s: %g", (long long)nas[i], kernels[k], e);
    }
    free(sino);
    free(a);
    free(b);
    ctr_parallel_free(g);
  }
  ctr_context_free(cpu);
}

/* The launch variants of the exact ALU kernels (ctr_tuning.fbp_occupancy,
 * fbp_carveout and fbp_angle_cache; Chilingaryan et al. 2020, Tables 18 and 19) change
 * the registers, the occupancy and where the angles' constants sit, never
 * the arithmetic: each gives the default's bits, and the default agrees
 * with the CPU's double reference. 2500 angles (two launch groups),
 * 100 x 100 pixels (two 64-pixel tiles a side, the second partial), 150
 * bins; alu and alu2, linear and nearest. */
static void test_variants(ctr_context *plain) {
  enum { VB = 150, VXY = 100 };
  const int64_t na = 2500, n = (int64_t)VXY * VXY * NS;
  static const char *const kernels[2] = {"alu", "alu2"};
  static const char *const occ[] = {"auto", "0", "50", "75", "100"};
  static const char *const carve[] = {"driver", "shared", "l1", "37"};
  static const char *const cache[] = {"shared", "offset", "registers"};
  ctr_parallel_geometry *g = geometry_of(na, 0.31, VB, VXY);
  if (!g) return;
  float *sino = sinograms_of(na, NS, VB), *base[2][2], *out = malloc(sizeof(float) * (size_t)n);
  double *ref = malloc(sizeof(double) * (size_t)n);
  for (int interp = 0; interp < 2; interp++) {
    memset(ref, 0, sizeof(double) * (size_t)n);
    CHECK_OK(ctr_fbp_backproject_reference(g, (ctr_fbp_interp)interp, NS, sino, ref));
    for (int k = 0; k < 2; k++) {
      ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
      o.kernel = kernels[k];
      o.interp = (ctr_fbp_interp)interp;
      base[interp][k] = malloc(sizeof(float) * (size_t)n);
      CHECK_OK(ctr__fbp_bp_cuda(plain, g, &o, NS, sino, base[interp][k], NULL));
      const double e = rel_rms(base[interp][k], ref, n), bound = interp ? 5e-3 : 1e-5;
      printf("variants: %s %s default, %lld angles: relative RMS vs double reference %.2e (bound "
             "%.0e)\n", kernels[k], interp ? "nearest" : "linear", (long long)na, e, bound);
      CHECK_MSG(e < bound, "%s %s default at %lld angles: relative RMS %g", kernels[k],
                interp ? "nearest" : "linear", (long long)na, e);
    }
  }
  int runs = 0, differ = 0;
  for (size_t a = 0; a < sizeof occ / sizeof occ[0]; a++)
    for (size_t b = 0; b < sizeof carve / sizeof carve[0]; b++)
      for (size_t c = 0; c < sizeof cache / sizeof cache[0]; c++) {
        const char *const kv[6] = {"fbp_occupancy", occ[a], "fbp_carveout", carve[b],
                                   "fbp_angle_cache", cache[c]};
        ctr_context *ctx = cuda_context_kv(kv, 3);
        for (int interp = 0; interp < 2 && ctx; interp++)
          for (int k = 0; k < 2; k++) {
            ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
            o.kernel = kernels[k];
            o.interp = (ctr_fbp_interp)interp;
            memset(out, 0xff, sizeof(float) * (size_t)n);
            CHECK_OK(ctr__fbp_bp_cuda(ctx, g, &o, NS, sino, out, NULL));
            runs++;
            if (memcmp(out, base[interp][k], sizeof(float) * (size_t)n)) {
              differ++;
              CHECK_MSG(0, "%s %s, occupancy %s, carveout %s, angle cache %s: not the default's bits",
                        kernels[k], interp ? "nearest" : "linear", occ[a], carve[b], cache[c]);
            }
          }
        ctr_context_free(ctx);
      }
  printf("variants: %d runs (occupancy x carveout x angle cache x kernel x interpolation), %d "
         "differ from the default's bits\n", runs, differ);
  CHECK(runs == 5 * 4 * 3 * 2 * 2);
  for (int interp = 0; interp < 2; interp++)
    for (int k = 0; k < 2; k++) free(base[interp][k]);
  free(sino);
  free(out);
  free(ref);
  ctr_parallel_free(g);
}

int main(void) {
  if (ctr_cuda_get_device_count() < 1) {
    printf("no usable GPU: skipped\n");
    return 77;
  }
  ctr_context *ctx[NKERNELS];
  ctr_context *plain = cuda_context(NULL, NULL);
  for (size_t k = 0; k < NKERNELS; k++)
    ctx[k] = k_kernels[k].key ? cuda_context(k_kernels[k].key, k_kernels[k].value) : plain;
  if (plain)
    for (size_t i = 0; i < sizeof k_angles / sizeof k_angles[0]; i++) angles_case(ctx, k_angles[i]);
  test_two_threads();
  if (plain) test_pipeline(plain);
  if (plain) test_variants(plain);
  for (size_t k = 0; k < NKERNELS; k++)
    if (ctx[k] != plain) ctr_context_free(ctx[k]);
  ctr_context_free(plain);
  return th_finish("test_gpu_fbp_angles");
}
#else
int main(void) {
  printf("built without CUDA: skipped\n");
  return 77;
}
#endif
