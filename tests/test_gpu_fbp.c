/* Parallel-beam backprojection on the GPU: every kernel, linear and nearest
 * interpolation, against the CPU double-precision reference on random
 * filtered sinograms and geometries (axis offset, per-projection shifts,
 * arbitrary angles, non-square slices, pixel != bin), and several slices
 * (the pair kernels take two and an odd one left, tex4h three in one
 * four-slice launch). Exits 77 without a GPU. */
#include "harness.h"

#include <stdlib.h>
#include <unistd.h>

#if CTR_HAVE_CUDA
#include "fbp_reference.h"
#include "parbeam/cuda/parbeam_cuda.h"

typedef struct ctx_pair {
  ctr_context *cpu, *gpu;
} ctx_pair;

/* The kernel cache of the automatic choice: a private directory, given to
 * every context through its tuning table. */
static char g_cache[] = "/tmp/ctr_fbp_cache_XXXXXX";

/* A CUDA context whose tuning table has key = value (NULL: the defaults)
 * and the private cache directory. */
static ctr_context *tuned_context(const char *key, const char *value) {
  ctr_tuning t;
  CHECK_OK(ctr_tuning_init(&t, CTR_TUNING_VERSION));
  t.cache_dir = g_cache;
  if (key) CHECK_OK(ctr_tuning_set(&t, key, value));
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  co.tuning = &t;
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(&co, &ctx));
  return ctx;
}

/* The largest |a - b| over the largest |b|. */
static double max_rel_diff(const float *a, const float *b, int64_t n) {
  double d = 0, m = 0;
  for (int64_t i = 0; i < n; i++) {
    d = fmax(d, fabs((double)a[i] - (double)b[i]));
    m = fmax(m, fabs((double)b[i]));
  }
  return m > 0 ? d / m : INFINITY;
}

static void one_case(ctr_context *ctx, int kind) {
  const int64_t nb = 97 + 40 * kind, na = 150 + 31 * kind, ns = 3;
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = nb;
  p.nangles = na;
  double *angles = malloc(sizeof(double) * (size_t)na), *shift = malloc(sizeof(double) * (size_t)na);
  for (int64_t a = 0; a < na; a++) {
    angles[a] = th_uniform(0, 180);
    shift[a] = th_uniform(-1.5, 1.5);
  }
  p.angle_start_deg = 0.123 + th_uniform(0, 1); /* no exact half-bin ties (see below) */
  if (kind >= 1) {
    p.angles_deg = angles;
    p.axis = 0.5 * (double)(nb - 1) + th_uniform(-4, 4);
    p.axis_shift = shift;
  }
  if (kind == 2) {
    p.nx = 71;
    p.ny = 53;
    p.voxel = 1.37;
  }
  ctr_parallel_geometry *g = NULL;
  CHECK_OK(ctr_parallel_create(&p, &g));
  if (!g) return;
  const ctr_parallel_params *r = ctr_parallel_get_params(g);
  const int64_t plane = r->nx * r->ny;
  float *sino = malloc(sizeof(float) * (size_t)(nb * na * ns));
  float *out = malloc(sizeof(float) * (size_t)(plane * ns));
  double *ref = calloc((size_t)(plane * ns), sizeof(double));
  /* Smooth random rows (filtered data are smooth at the bin scale) */
  for (int64_t k = 0; k < nb * na * ns; k++)
    sino[k] = (float)(sin(0.05 * (double)(k % nb) + (double)(k / nb)) + th_uniform(-0.3, 0.3));
  /* Bounds (relative RMS vs the double reference of the same interpolation;
   * oversampling vs its own semantics):
   * - Texture linear interpolation has 8-bit weights (~1e-3); the ALU
   *   kernels are exact up to float rounding.
   * - Nearest lookups agree except where a position lies within float
   *   rounding (~1e-5 bin) of a half-bin: there the GPU and the double
   *   reference may pick neighbouring bins (random data make each such pick
   *   count).
   * - Oversampling is checked against its own semantics (positions rounded
   *   to 1/4 bin), up to picks that flip at quarter-bin ties.
   * - Half-precision data (tex4h, alu2-h): each value rounded to 11
   *   significant bits (relative <= 2^-12) after a power-of-two scale;
   *   alu2-h also rounds the interpolation fraction and result to half. A CPU
   *   emulation on these three geometries gave alu2-h 2.4e-4 .. 1.1e-3
   *   (linear), 1.7e-4 .. 6.6e-4 (nearest), tex4h 3.6e-4 .. 1.6e-3 (tex
   *   1.4e-3 in the same emulation: the weights dominate).
   * - hybrid: texture units as tex2, ALU tiles as alu2; run with all tiles
   *   on the ALU (ctr_tuning.fbp_hybrid_tex = -1, "0" in text: exact), all
   *   on the texture units (64: every block a texture block) and the
   *   default mix.
   * - The texture kernels also with their angles in launches of 32
   *   (ctr_tuning.fbp_tex_chunk) and all in one launch: each pixel's sum is
   *   grouped differently, nothing else changes. */
  static const struct {
    const char *name, *key, *value; /* a tuning setting for the run (key NULL: none) */
    int os;                         /* oversampling: linear only, own reference */
    double linear, nearest;         /* bounds */
  } kc[] = {
      {"tex", NULL, NULL, 0, 5e-3, 5e-3},     {"tex2", NULL, NULL, 0, 5e-3, 5e-3},
      {"alu", NULL, NULL, 0, 1e-5, 5e-3},     {"alu2", NULL, NULL, 0, 1e-5, 5e-3},
      {"alu-os", NULL, NULL, 1, 5e-3, 0},     {"alu2-os", NULL, NULL, 1, 5e-3, 0},
      {"tex-mp", NULL, NULL, 0, 5e-3, 5e-3},  {"tex4h", NULL, NULL, 0, 5e-3, 5e-3},
      {"alu2-h", NULL, NULL, 0, 4e-3, 5e-3},  {"hybrid", "fbp_hybrid_tex", "0", 0, 1e-5, 5e-3},
      {"hybrid", "fbp_hybrid_tex", "64", 0, 5e-3, 5e-3}, {"hybrid", NULL, NULL, 0, 5e-3, 5e-3},
      {"tex", "fbp_tex_chunk", "32", 0, 5e-3, 5e-3},     {"tex", "fbp_tex_chunk", "0", 0, 5e-3, 5e-3},
      {"tex2", "fbp_tex_chunk", "32", 0, 5e-3, 5e-3},    {"tex-mp", "fbp_tex_chunk", "32", 0, 5e-3, 5e-3},
  };
  const size_t nkc = sizeof kc / sizeof kc[0];
  float *first = malloc(sizeof(float) * (size_t)(plane * ns)); /* a kernel's untuned run */
  for (int interp = 0; interp < 2; interp++) {
    memset(ref, 0, sizeof(double) * (size_t)(plane * ns));
    CHECK_OK(ctr_fbp_backproject_reference(g, (ctr_fbp_interp)interp, ns, sino, ref));
    double *ref_os = interp == 0 ? malloc(sizeof(double) * (size_t)(plane * ns)) : NULL;
    if (ref_os) oversampled_reference(g, ns, sino, ref_os);
    for (size_t k = 0; k < nkc; k++) {
      if (kc[k].os && interp == 1) continue; /* oversampling approximates linear interpolation */
      ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
      o.kernel = kc[k].name;
      o.interp = (ctr_fbp_interp)interp;
      ctr_context *run = kc[k].key ? tuned_context(kc[k].key, kc[k].value) : ctx;
      if (!run) continue;
      memset(out, 0xff, sizeof(float) * (size_t)(plane * ns));
      CHECK_OK(ctr__fbp_bp_cuda(run, g, &o, ns, sino, out, NULL));
      if (run != ctx) ctr_context_free(run);
      const double e = rel_rms(out, kc[k].os ? ref_os : ref, plane * ns);
      const double bound = interp ? kc[k].nearest : kc[k].linear;
      printf("geometry %d %-7s %s%s%-3s %-7s: relative RMS vs double reference %.2e (bound %.0e)\n",
             kind, kc[k].name, kc[k].key ? kc[k].key : "", kc[k].key ? "=" : "",
             kc[k].value ? kc[k].value : "", interp ? "nearest" : "linear", e, bound);
      CHECK_MSG(e < bound, "kernel %s (%s = %s) interp %d geometry %d: %g", kc[k].name,
                kc[k].key ? kc[k].key : "-", kc[k].value ? kc[k].value : "default", interp, kind, e);
      /* a texture-chunk setting: the same slices as the untuned run of the
       * kernel (the first entry of its name), up to the sum's grouping */
      if (kc[k].key && !strcmp(kc[k].key, "fbp_tex_chunk") && first) {
        for (size_t j = 0; j < nkc; j++)
          if (!kc[j].key && !strcmp(kc[j].name, kc[k].name)) {
            o.kernel = kc[j].name;
            CHECK_OK(ctr__fbp_bp_cuda(ctx, g, &o, ns, sino, first, NULL));
            break;
          }
        const double d = max_rel_diff(out, first, plane * ns);
        CHECK_MSG(d < 1e-5, "kernel %s, fbp_tex_chunk %s against the default: largest difference "
                  "%g of the largest value", kc[k].name, kc[k].value, d);
      }
    }
    free(ref_os);
  }
  free(first);
  /* An unknown kernel name is an argument error naming it. */
  ctr_fbp_options bad = CTR_FBP_OPTIONS_INIT;
  bad.kernel = "warp-drive";
  CHECK(ctr__fbp_bp_cuda(ctx, g, &bad, 1, sino, out, NULL) == CTR_E_INVALID_ARGUMENT);
  CHECK(strstr(ctr_error_detail(), "warp-drive") != NULL);
  free(angles);
  free(shift);
  free(sino);
  free(out);
  free(ref);
  ctr_parallel_free(g);
}

/* Projections (uint16 and float32) with flat and dark fields through
 * ctr_fbp_projections: the GPU pipeline (device flat-field, cuFFT filter,
 * two streams) equals the CPU path (FFTW filter, CPU backprojection). */
static void test_projections(ctx_pair c) {
  const int64_t nb = 96, nrows = 11, na = 120, row0 = 2, ns = 7;
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = nb;
  p.nangles = na;
  p.axis = 47.3;
  ctr_parallel_geometry *g = NULL;
  CHECK_OK(ctr_parallel_create(&p, &g));
  if (!g) return;
  const int64_t npix = nb * nrows, plane = nb * nb;
  uint16_t *p16 = malloc(sizeof(uint16_t) * (size_t)(npix * na));
  float *p32 = malloc(sizeof(float) * (size_t)(npix * na));
  float *flat = malloc(sizeof(float) * (size_t)npix), *dark = malloc(sizeof(float) * (size_t)npix);
  float *cpu = malloc(sizeof(float) * (size_t)(plane * ns)), *gpu = malloc(sizeof(float) * (size_t)(plane * ns));
  for (int64_t i = 0; i < npix; i++) {
    flat[i] = (float)th_uniform(30000, 32000);
    dark[i] = (float)th_uniform(90, 110);
  }
  for (int64_t a = 0; a < na; a++)
    for (int64_t i = 0; i < npix; i++) {
      const double b = (double)(i % nb) - 47.3 - 10.0 * cos(0.05 * (double)a);
      const double att = b * b < 900.0 ? 0.04 * sqrt(900.0 - b * b) : 0.0;
      const double v = dark[i] + (flat[i] - dark[i]) * exp(-att) + th_uniform(-3, 3);
      p16[a * npix + i] = (uint16_t)lrint(v);
      p32[a * npix + i] = (float)v;
    }
  const int64_t pd[3] = {nb, nrows, na}, vd[3] = {nb, nb, ns};
  ctr_array va_c = ctr_array_make(cpu, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array va_g = ctr_array_make(gpu, CTR_DTYPE_FLOAT32, 3, vd);
  /* The new kernels through the pipeline too (its own fbp_gpu state, two
   * streams, slices grouped as the pipeline groups them). */
  static const char *kernels[] = {NULL, "alu", "tex", "tex-mp", "tex4h", "alu2-h", "hybrid"};
  for (int dt = 0; dt < 2; dt++) {
    const ctr_array pa = ctr_array_make(dt ? (void *)p32 : (void *)p16,
                                        dt ? CTR_DTYPE_FLOAT32 : CTR_DTYPE_UINT16, 3, pd);
    ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
    o.window = CTR_WINDOW_HAMMING;
    CHECK_OK(ctr_fbp_projections(c.cpu, g, &o, &pa, flat, dark, row0, &va_c));
    for (int k = 0; k < 7; k++) {
      o.kernel = kernels[k];
      memset(gpu, 0xff, sizeof(float) * (size_t)(plane * ns));
      CHECK_OK(ctr_fbp_projections(c.gpu, g, &o, &pa, flat, dark, row0, &va_g));
      double e = 0, r = 0;
      for (int64_t i = 0; i < plane * ns; i++) {
        e += ((double)gpu[i] - cpu[i]) * ((double)gpu[i] - cpu[i]);
        r += (double)cpu[i] * cpu[i];
      }
      e = sqrt(e / r);
      const double bound = k >= 2 ? 5e-3 : 2e-5; /* texture weights, half data */
      printf("projections %s, kernel %s: GPU pipeline vs CPU relative RMS %.2e (bound %.0e)\n",
             dt ? "float32" : "uint16", kernels[k] ? kernels[k] : "auto", e, bound);
      CHECK_MSG(e < bound, "projections dtype %d kernel %d: %g", dt, k, e);
    }
  }
  /* ctr_fbp from sinograms: the GPU (cuFFT filter on the device) equals the
   * CPU (FFTW). */
  {
    float *sino = malloc(sizeof(float) * (size_t)(nb * na * ns));
    CHECK_OK(ctr_flatfield_sinograms(p16, CTR_DTYPE_UINT16, nb, nrows, na, flat, dark, row0, ns, sino, NULL));
    const int64_t sd[3] = {nb, na, ns};
    const ctr_array sa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
    ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
    o.window = CTR_WINDOW_SHEPP_LOGAN;
    CHECK_OK(ctr_fbp(c.cpu, g, &o, &sa, &va_c));
    memset(gpu, 0xff, sizeof(float) * (size_t)(plane * ns));
    CHECK_OK(ctr_fbp(c.gpu, g, &o, &sa, &va_g));
    double e = 0, r = 0;
    for (int64_t i = 0; i < plane * ns; i++) {
      e += ((double)gpu[i] - cpu[i]) * ((double)gpu[i] - cpu[i]);
      r += (double)cpu[i] * cpu[i];
    }
    e = sqrt(e / r);
    printf("ctr_fbp from sinograms: GPU vs CPU relative RMS %.2e (bound 2e-05)\n", e);
    CHECK(e < 2e-5);
    /* Per-GPU busy times: asking for them changes no bit; one chunk of 7
     * slices, every step timed; a second call adds to them; a CPU context
     * leaves them as they are. */
    float *again = malloc(sizeof(float) * (size_t)(plane * ns));
    ctr_array va_t = ctr_array_make(again, CTR_DTYPE_FLOAT32, 3, vd);
    ctr_fbp_timings tm;
    CHECK_OK(ctr_fbp_timings_init(&tm, CTR_FBP_TIMINGS_VERSION));
    o.timings = &tm;
    CHECK_OK(ctr_fbp(c.gpu, g, &o, &sa, &va_t));
    CHECK_MSG(!memcmp(again, gpu, sizeof(float) * (size_t)(plane * ns)),
              "ctr_fbp with timings: not the bits of the call without");
    const ctr_fbp_device_times *d = &tm.device[0];
    printf("ctr_fbp timings: %d GPU(s), GPU %d: %lld chunk(s), upload %.2e s, filter %.2e s, "
           "backprojection %.2e s, download %.2e s\n", tm.ndevices, d->device,
           (long long)d->chunks, d->upload, d->filter, d->backproject, d->download);
    CHECK(tm.ndevices == 1 && d->chunks == 1 && d->upload > 0 && d->filter > 0 &&
          d->backproject > 0 && d->download > 0);
    const double bp1 = d->backproject;
    CHECK_OK(ctr_fbp(c.gpu, g, &o, &sa, &va_t));
    CHECK(tm.ndevices == 1 && d->chunks == 2 && d->backproject > bp1);
    ctr_fbp_timings cpu_tm;
    CHECK_OK(ctr_fbp_timings_init(&cpu_tm, CTR_FBP_TIMINGS_VERSION));
    o.timings = &cpu_tm;
    CHECK_OK(ctr_fbp(c.cpu, g, &o, &sa, &va_t));
    CHECK(cpu_tm.ndevices == 0 && cpu_tm.device[0].chunks == 0);
    free(again);
    free(sino);
  }
  free(p16);
  free(p32);
  free(flat);
  free(dark);
  free(cpu);
  free(gpu);
  ctr_parallel_free(g);
}

/* nb bins, na angles over 180 degrees, the default axis and slices (NULL on
 * failure, counted). */
static ctr_parallel_geometry *plain_geometry(int64_t nb, int64_t na) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = nb;
  p.nangles = na;
  ctr_parallel_geometry *g = NULL;
  CHECK_OK(ctr_parallel_create(&p, &g));
  return g;
}

/* The automatic kernel choice: a tuning run on first use writes the cache,
 * the next run reads it; a corrupt cache is re-tuned, not fatal. */
/* Each run in a new context: a context keeps its choice (ctr__context_memo),
 * so only a new one reads the cache file, and the corrupt one must be
 * replaced by a fresh timing. */
static void test_autotune(void) {
  const int64_t nb = 128, na = 90, ns = 2;
  ctr_parallel_geometry *g = plain_geometry(nb, na);
  if (!g) return;
  float *sino = malloc(sizeof(float) * (size_t)(nb * na * ns));
  float *out = malloc(sizeof(float) * (size_t)(nb * nb * ns));
  double *ref = calloc((size_t)(nb * nb * ns), sizeof(double));
  for (int64_t k = 0; k < nb * na * ns; k++) sino[k] = (float)sin(0.07 * (double)(k % nb) + (double)(k / nb));
  CHECK_OK(ctr_fbp_backproject_reference(g, CTR_FBP_LINEAR, ns, sino, ref));
  char path[128];
  snprintf(path, sizeof path, "%s/fbp-kernels.json", g_cache);
  for (int run = 0; run < 3; run++) {
    if (run == 2) { /* corrupt the cache */
      FILE *f = fopen(path, "w");
      if (f) {
        fputs("{ not json", f);
        fclose(f);
      }
    }
    ctr_fbp_options o = CTR_FBP_OPTIONS_INIT; /* kernel NULL: automatic */
    ctr_context *ctx = tuned_context(NULL, NULL);
    if (!ctx) break;
    CHECK_OK(ctr__fbp_bp_cuda(ctx, g, &o, ns, sino, out, NULL));
    ctr_context_free(ctx);
    const double e = rel_rms(out, ref, nb * nb * ns);
    FILE *f = fopen(path, "r");
    char text[4096] = "";
    if (f) {
      size_t n = fread(text, 1, sizeof text - 1, f);
      text[n] = '\0';
      fclose(f);
    }
    printf("autotune run %d: cache %s, relative RMS %.2e\n", run, strstr(text, "\"kernel\"") ? "written" : "MISSING", e);
    /* cJSON separates keys and values by a tab */
    CHECK(strstr(text, "\"kernel\"") != NULL && strstr(text, "\"nbins\":\t128") != NULL);
    CHECK(e < 1e-5);
  }
  free(sino);
  free(out);
  free(ref);
  ctr_parallel_free(g);
}

/* ctr_fbp_options.gpu_budget: a budget that holds chunks of 3 slices (not
 * the pipeline's 16) gives the slices of the default budget, and one too
 * small for chunks of one slice is refused naming the option. The kernel is
 * fixed: the automatic choice is made per chunk size. ctr_fbp_backproject
 * takes all 40 slices at once without one; a budget that holds 13 makes
 * chunks of 12, 12, 12 and 4 (multiples of 4: each launch of the 2- and
 * 4-slice kernels takes the slices it takes in one pass) with the same bits
 * and the data policy's count summed over the chunks. Not the hybrid
 * kernel, whose units take tiles as they come (not bit-reproducible between
 * two runs). */
static void test_small_budget(ctr_context *ctx) {
  const int64_t nb = 120, na = 90, ns = 40;
  ctr_parallel_geometry *g = plain_geometry(nb, na);
  if (!g) return;
  const ctr_parallel_params *r = ctr_parallel_get_params(g);
  const int64_t plane = r->nx * r->ny;
  float *sino = malloc(sizeof(float) * (size_t)(nb * na * ns));
  float *a = malloc(sizeof(float) * (size_t)(plane * ns)), *b = malloc(sizeof(float) * (size_t)(plane * ns));
  for (int64_t k = 0; k < nb * na * ns; k++)
    sino[k] = (float)((k % nb) > 30 && (k % nb) < 90) * (float)(1 + (k / (nb * na)) % 7);
  const int64_t sd[3] = {nb, na, ns}, od[3] = {r->nx, r->ny, ns};
  const ctr_array sa = ctr_array_make(sino, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_array aa = ctr_array_make(a, CTR_DTYPE_FLOAT32, 3, od), ab = ctr_array_make(b, CTR_DTYPE_FLOAT32, 3, od);
  ctr_fbp_options o = CTR_FBP_OPTIONS_INIT;
  o.kernel = "alu";
  CHECK_OK(ctr_fbp(ctx, g, &o, &sa, &aa));
  o.gpu_budget = ctr__fbp_gpu_bytes(r, sizeof(float), 0, 3);
  int64_t chunk = 0;
  CHECK_OK(ctr__fbp_gpu_chunk(r, sizeof(float), 0, ns, o.gpu_budget, "x", &chunk));
  CHECK(chunk == 3);
  CHECK_OK(ctr_fbp(ctx, g, &o, &sa, &ab));
  const double d = max_rel_diff(b, a, plane * ns);
  printf("gpu_budget for chunks of 3 slices: max relative difference %.2e\n", d);
  CHECK(d < 1e-6 && a[plane * 5 + plane / 2 + r->nx / 2] != 0);
  o.gpu_budget = ctr__fbp_gpu_bytes(r, sizeof(float), 0, 1) - 1;
  CHECK_FAILS(ctr_fbp(ctx, g, &o, &sa, &ab), CTR_E_DEVICE_OUT_OF_MEMORY, "ctr_fbp_options.gpu_budget");
  /* ctr_fbp_backproject */
  sino[nb * na * 17 + 40] = NAN; /* one bad value, in the second chunk */
  CHECK_OK(ctr__fbp_bp_gpu_chunk(r, ns, ctr__fbp_bp_gpu_bytes(r, 13), "x", &chunk));
  CHECK(chunk == 12);
  static const char *const kernels[] = {"alu", "alu2", "tex2", "tex4h", "alu2-h"};
  for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
    ctr_value_counts ca = CTR_VALUE_COUNTS_INIT, cb = CTR_VALUE_COUNTS_INIT;
    ctr_fbp_options ob = CTR_FBP_OPTIONS_INIT;
    ob.kernel = kernels[k];
    ob.counts = &ca;
    CHECK_OK(ctr_fbp_backproject(ctx, g, &ob, ns, sino, a));
    ob.gpu_budget = ctr__fbp_bp_gpu_bytes(r, 13);
    ob.counts = &cb;
    CHECK_OK(ctr_fbp_backproject(ctx, g, &ob, ns, sino, b));
    CHECK_MSG(!memcmp(a, b, sizeof(float) * (size_t)(plane * ns)),
              "ctr_fbp_backproject, kernel %s: chunks of 12 slices differ from one pass",
              kernels[k]);
    CHECK_MSG(ca.output == cb.output && ca.output > 0 && a[plane * 30 + plane / 2 + r->nx / 2] != 0,
              "ctr_fbp_backproject, kernel %s: %lld and %lld bad slice values", kernels[k],
              (long long)ca.output, (long long)cb.output);
  }
  o.gpu_budget = ctr__fbp_bp_gpu_bytes(r, 1) - 1;
  CHECK_FAILS(ctr_fbp_backproject(ctx, g, &o, ns, sino, b), CTR_E_DEVICE_OUT_OF_MEMORY,
              "ctr_fbp_options.gpu_budget");
  CHECK(!strcmp(ctr_error_get_field(), "ctr_fbp_options.gpu_budget"));
  free(sino);
  free(a);
  free(b);
  ctr_parallel_free(g);
}

int main(void) {
  if (ctr_cuda_get_device_count() < 1) {
    printf("no usable GPU: skipped\n");
    return 77;
  }
  /* The kernel cache of the automatic choice goes to a private directory. */
  if (!mkdtemp(g_cache)) {
    perror("mkdtemp");
    return 1;
  }
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  ctr_context *ctx = tuned_context(NULL, NULL);
  if (!ctx) return th_finish("test_gpu_fbp");
  for (int kind = 0; kind < 3; kind++) one_case(ctx, kind);
  test_autotune();
  test_small_budget(ctx);
  ctx_pair c = {NULL, ctx};
  co.device = CTR_DEVICE_CPU;
  CHECK_OK(ctr_context_create(&co, &c.cpu));
  if (c.cpu) test_projections(c);
  ctr_context_free(c.cpu);
  ctr_context_free(ctx);
  char rm[128];
  snprintf(rm, sizeof rm, "%s/fbp-kernels.json", g_cache);
  remove(rm);
  rmdir(g_cache);
  return th_finish("test_gpu_fbp");
}
#else
int main(void) {
  printf("built without CUDA: skipped\n");
  return 77;
}
#endif
