/* Parallel-beam backprojection benchmark (issue 5; Chilingaryan et al. 2020, Tables 13-24):
 * every GPU kernel on N angles x N bins -> N^2 slices, several slices,
 * sinograms already on the GPU, median of repeats; accuracy of each kernel
 * against the double-precision CPU reference on the first slice.
 *
 *   bench_fbp [--n 2048] [--angles 2048] [--slices 8] [--repeats 5]
 *             [--kernels tex,tex2,alu,alu2] [--hybrid-tex 0,1,2] [--json FILE] [--check]
 *       --check: exit 2 when a kernel's relative RMS against its double
 *       reference exceeds 5e-2 (the approximate modes stay below 1e-2;
 *       wrong angles give 0.6-1.0), and 3 when a kernel failed
 *       --hybrid-tex: the hybrid kernel once per value of its texture blocks
 *       per SM (ctr_tuning.fbp_hybrid_tex; -1 = none), cases named hybrid-tN
 *   bench_fbp --e2e [--n 2048] [--angles 2048] [--slices 2048]
 *             [--memory pinned|pageable|both | --pageable] [--repeats 3] [--json FILE]
 *       end to end: n x n uint16 projections (rows = slices) with flat and
 *       dark fields in host memory -> slices in host memory, each call of
 *       ctr_fbp_projections on the GPU timed whole (its set-up, flat-field,
 *       filter and transfers included; the CUDA context and a 16-slice
 *       warm-up are not), median of the repeats. Pinned: ctr_host_alloc;
 *       pageable: malloc, as a numpy user's arrays (--pageable = --memory
 *       pageable). The input is a synthetic attenuation pattern.
 *   bench_fbp --study chilingaryan-tables [--n 2048] [--angles 2048] [--slices 8]
 *             [--repeats 5] [--json FILE]
 *       Chilingaryan et al. 2020, Tables 18 and 19 on this GPU: the exact ALU
 *       kernels alu (one slice, as the paper's Table 19) and alu2 (two),
 *       linear and nearest, under every occupancy target
 *       (ctr_tuning.fbp_occupancy: none, 50, 75, 100 %), shared-memory
 *       carveout (fbp_carveout: driver, shared, l1) and angle cache
 *       (fbp_angle_cache: shared, offset, registers), each the median of the
 *       repeats, with the instance's registers, local memory and theoretical
 *       occupancy (the CUDA runtime's attributes and occupancy calculator),
 *       and whether its slices are the default's bits (exit 2 when a case's
 *       are not). Plot: bench/plot_chilingaryan_tables.py. */
#include "bench_common.h"
#include "ctrecon.h"
#include "parbeam/cuda/parbeam_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DIE(...)                                \
  do {                                          \
    fprintf(stderr, "bench_fbp: " __VA_ARGS__); \
    fprintf(stderr, "\n");                      \
    exit(1);                                    \
  } while (0)

#if CTR_HAVE_CUDA
#include "bench_floor.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

enum { E2E_MAX_REPEATS = 16 };

/* One memory kind: fills the projections, warms up on 16 slices (CUDA
 * context, cuFFT plans), then times `repeats` whole calls (each with its own
 * set-up: buffers, plans) into runs[]; returns the median. pageable: malloc'd
 * input and output, both touched before timing (as numpy arrays holding data);
 * otherwise pinned (ctr_host_alloc). */
static double e2e_kind(ctr_context *ctx, const ctr_parallel_geometry *g, int64_t n, int64_t na,
                       int64_t ns, int pageable, int repeats, double *runs, double *fill_s,
                       ctr_fbp_timings *med_timings) {
  const int64_t rows = ns, npix = n * rows, plane = n * n;
  const size_t proj_bytes = sizeof(uint16_t) * (size_t)(npix * na), out_bytes = sizeof(float) * (size_t)(plane * ns);
  uint16_t *proj = pageable ? malloc(proj_bytes) : ctr_host_alloc(proj_bytes);
  float *out = pageable ? malloc(out_bytes) : ctr_host_alloc(out_bytes);
  float *flat = malloc(sizeof(float) * (size_t)npix), *dark = malloc(sizeof(float) * (size_t)npix);
  if (!proj || !out || !flat || !dark) DIE("out of %s memory", pageable ? "host" : "pinned host");
  for (int64_t i = 0; i < npix; i++) {
    flat[i] = 40000.0f;
    dark[i] = 100.0f;
  }
  /* Each projection: one attenuation profile (a shifted disk) on every row. */
  const double t0 = now_s();
#pragma omp parallel for schedule(static)
  for (int64_t a = 0; a < na; a++) {
    uint16_t prof[16384];
    for (int64_t b = 0; b < n && b < 16384; b++) {
      const double x = (double)b - 0.5 * (double)n - 0.2 * (double)n * cos(0.003 * (double)a);
      const double r = 0.3 * (double)n, att = x * x < r * r ? 2.0 * sqrt(r * r - x * x) / r : 0.0;
      prof[b] = (uint16_t)lrint(100.0 + 39900.0 * exp(-att));
    }
    for (int64_t r = 0; r < rows; r++) memcpy(proj + (a * rows + r) * n, prof, sizeof(uint16_t) * (size_t)n);
  }
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < ns; s++) memset(out + s * plane, 0, sizeof(float) * (size_t)plane);
  *fill_s = now_s() - t0;
  ctr_fbp_options fo = CTR_FBP_OPTIONS_INIT;
  const int64_t pd[3] = {n, rows, na};
  const ctr_array pa = ctr_array_make(proj, CTR_DTYPE_UINT16, 3, pd);
  const int64_t wd[3] = {n, n, 16 < ns ? 16 : ns}, vd[3] = {n, n, ns};
  ctr_array wa = ctr_array_make(out, CTR_DTYPE_FLOAT32, 3, wd), va = ctr_array_make(out, CTR_DTYPE_FLOAT32, 3, vd);
  if (ctr_fbp_projections(ctx, g, &fo, &pa, flat, dark, 0, &wa)) DIE("%s", ctr_error_detail());
  /* each run's per-GPU busy times (events on the GPUs' streams); those of
   * the median run are reported */
  static ctr_fbp_timings tims[E2E_MAX_REPEATS];
  for (int r = 0; r < repeats; r++) {
    ctr_fbp_timings_init(&tims[r], CTR_FBP_TIMINGS_VERSION);
    fo.timings = &tims[r];
    const double t1 = now_s();
    if (ctr_fbp_projections(ctx, g, &fo, &pa, flat, dark, 0, &va)) DIE("%s", ctr_error_detail());
    runs[r] = now_s() - t1;
  }
  const double med = bench_median(runs, repeats);
  int at = 0; /* the run nearest the median (an even count averages two) */
  for (int r = 1; r < repeats; r++)
    if (fabs(runs[r] - med) < fabs(runs[at] - med)) at = r;
  *med_timings = tims[at];
  if (pageable) {
    free(proj);
    free(out);
  } else {
    ctr_host_free(proj);
    ctr_host_free(out);
  }
  free(flat);
  free(dark);
  return med;
}

/* memory: "pinned", "pageable" or "both" (pinned first; each kind's buffers
 * are freed before the next is allocated). */
/* --gpus N with --e2e: the context's GPUs are 0 .. N-1 (0: every visible one). */
static int g_gpus;

static int e2e(int64_t n, int64_t na, int64_t ns, const char *memory, int repeats, const char *json) {
  const int both = !strcmp(memory, "both");
  const int kinds[2] = {both || !strcmp(memory, "pinned"), both || !strcmp(memory, "pageable")};
  if (!kinds[0] && !kinds[1]) DIE("--memory: expected pinned, pageable or both, got '%s'", memory);
  if (repeats < 1 || repeats > E2E_MAX_REPEATS) DIE("--repeats: 1 .. %d for --e2e", E2E_MAX_REPEATS);
  ctr_parallel_params pp = CTR_PARALLEL_PARAMS_INIT;
  pp.nbins = n;
  pp.nangles = na;
  ctr_parallel_geometry *g = NULL;
  if (ctr_parallel_create(&pp, &g)) DIE("%s", ctr_error_detail());
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = getenv("BENCH_CPU") ? CTR_DEVICE_CPU : CTR_DEVICE_CUDA; /* BENCH_CPU=1: smoke test */
  int devices[64];
  for (int i = 0; i < g_gpus && i < 64; i++) devices[i] = i;
  co.ndevices = g_gpus;
  co.devices = g_gpus ? devices : NULL;
  ctr_context *ctx = NULL;
  if (ctr_context_create(&co, &ctx)) DIE("%s", ctr_error_detail());
  printf("e2e on %d GPU(s)\n", ctr_context_get_device_count(ctx));
  FILE *f = NULL;
  if (json) {
    ctr_device_info info = CTR_DEVICE_INFO_INIT;
    char date[64];
    ctr_cuda_get_device_info(0, &info);
    f = fopen(json, "w");
    if (!f) DIE("cannot write %s", json);
    fprintf(f, "{\"gpu\": \"%s\", \"date\": \"%s\", \"revision\": \"%s\", \"command\": \"bench_fbp --e2e --n %lld "
               "--angles %lld --slices %lld --memory %s --repeats %d\",\n \"cases\": [\n",
            info.name, bench_date(date, sizeof date), bench_revision(), (long long)n, (long long)na,
            (long long)ns, memory, repeats);
  }
  int first = 1;
  bench_floor fr;
  if (bench_floor_measure(&fr)) DIE("floor: out of memory");
  printf("floor rates: DMA %.1f GB/s up, %.1f down; staged host copy %.1f up, %.1f down (GB/s)\n",
         fr.dma_up, fr.dma_down, fr.copy_up, fr.copy_down);
  double pinned_s = -1;
  for (int k = 0; k < 2; k++) {
    if (!kinds[k]) continue;
    const char *kind = k ? "pageable" : "pinned";
    double runs[E2E_MAX_REPEATS], fill_s = 0;
    ctr_fbp_timings tim = CTR_FBP_TIMINGS_INIT;
    const double secs = e2e_kind(ctx, g, n, na, ns, k, repeats, runs, &fill_s, &tim);
    const double gups = (double)na * (double)(n * n) * (double)ns / secs / 1e9;
    if (k == 0) pinned_s = secs;
    /* the floor: the pinned time (when measured) and the host copies the DMA cannot hide */
    const double floor_s = pinned_s < 0 ? -1
        : bench_floor_seconds(&fr, pinned_s, 2.0 * (double)(n * na) * (double)ns, 4.0 * (double)(n * n) * (double)ns);
    printf("end to end: %lld slices of %lld^2 from %lld uint16 projections of %lld x %lld in %s "
           "host memory: %.3f s, median of %d (%.0f GUPS overall; input filled in %.1f s)\n",
           (long long)ns, (long long)n, (long long)na, (long long)n, (long long)ns, kind, secs, repeats,
           gups, fill_s);
    if (k == 1 && floor_s > 0) printf("  pageable floor %.3f s (pinned %.3f s + host copies the DMA cannot hide)\n", floor_s, pinned_s);
    for (int d = 0; d < tim.ndevices; d++) /* Okitsu et al. 2010, Fig. 4 */
      printf("  GPU %d busy (median run): %lld chunks, upload %.3f s, filter %.3f s, backprojection "
             "%.3f s, download %.3f s\n", tim.device[d].device, (long long)tim.device[d].chunks,
             tim.device[d].upload, tim.device[d].filter, tim.device[d].backproject,
             tim.device[d].download);
    if (f) {
      fprintf(f, "%s  {\"name\": \"e2e-uint16-%s\", \"memory\": \"%s\", \"seconds\": %.3f, \"gups\": %.1f, "
                 "\"n\": %lld, \"angles\": %lld, \"slices\": %lld, \"kernel\": \"auto\", \"setup_included\": true, "
                 "\"repeats\": %d, \"gpus\": %d, \"floor_seconds\": %.4f, ",
              first ? "" : ",\n", kind, kind, secs, gups, (long long)n, (long long)na, (long long)ns,
              repeats, ctr_context_get_device_count(ctx), floor_s);
      bench_json_runs(f, runs, repeats);
      fprintf(f, ", \"workers\": [");
      for (int d = 0; d < tim.ndevices; d++)
        fprintf(f, "%s{\"device\": %d, \"chunks\": %lld, \"upload\": %.4f, \"filter\": %.4f, "
                   "\"backproject\": %.4f, \"download\": %.4f}",
                d ? ", " : "", tim.device[d].device, (long long)tim.device[d].chunks,
                tim.device[d].upload, tim.device[d].filter, tim.device[d].backproject,
                tim.device[d].download);
      fprintf(f, "]}");
      first = 0;
    }
  }
  if (f) {
    fprintf(f, "\n ]}\n");
    fclose(f);
  }
  ctr_context_free(ctx);
  ctr_parallel_free(g);
  return 0;
}
#endif

#if CTR_HAVE_CUDA
/* ns slices of n bins x na angles of a Shepp-Logan phantom at heights
 * across it, ramp-filtered (dump: the unfiltered ones to DIR/sino.raw); *g
 * their geometry (n x n pixels). */
static float *filtered_sinograms(int64_t n, int64_t na, int64_t ns, const char *dump,
                                 ctr_parallel_geometry **g) {
  ctr_parallel_params pp = CTR_PARALLEL_PARAMS_INIT;
  pp.nbins = n;
  pp.nangles = na;
  if (ctr_parallel_create(&pp, g)) DIE("%s", ctr_error_detail());
  ctr_phantom *ph = NULL;
  if (ctr_phantom_shepp_logan(0.45 * (double)n, 1.0, &ph)) DIE("%s", ctr_error_detail());
  float *sino = malloc(sizeof(float) * (size_t)(n * na * ns));
  double *z = malloc(sizeof(double) * (size_t)ns);
  if (!sino || !z) DIE("out of memory");
  for (int64_t s = 0; s < ns; s++) z[s] = 0.3 * (double)n * ((double)s / (double)ns - 0.5);
  if (ctr_phantom_sinogram(ph, *g, ns, z, 1, sino)) DIE("%s", ctr_error_detail());
  if (dump) bench_save_raw(dump, "sino.raw", sino, sizeof(float) * (size_t)(n * na * ns));
  ctr_fbp_options fo = CTR_FBP_OPTIONS_INIT;
  if (ctr_fbp_filter(NULL, *g, &fo, ns, sino)) DIE("%s", ctr_error_detail());
  ctr_phantom_free(ph);
  free(z);
  return sino;
}

/* The sweep of --study chilingaryan-tables: ctr_tuning's text values. */
static const char *const k_occupancy[] = {"auto", "50", "75", "100"};
static const char *const k_carveout[] = {"driver", "shared", "l1"};
static const char *const k_angle_cache[] = {"shared", "offset", "registers"};

/* One case of the study: kernel with interpolation interp under the
 * settings kv (3 pairs), timed; base: the default's slices (is_base: this
 * is the default, its slices copied there). Prints a line, and a JSON
 * object to f (json_first: the first). Returns whether the slices are
 * base's bits. */
static int study_case(const ctr_parallel_geometry *g, int64_t ns, const float *sino, float *out,
                      float *base, int is_base, const char *kernel, int interp,
                      const char *const *kv, int repeats, FILE *f, int json_first) {
  const ctr_parallel_params *p = ctr_parallel_get_params(g);
  const int64_t plane = p->nx * p->ny;
  ctr_context *ctx = bench_context(CTR_DEVICE_CUDA, kv, 3);
  if (!ctx) DIE("--study: the settings %s=%s %s=%s %s=%s", kv[0], kv[1], kv[2], kv[3], kv[4], kv[5]);
  ctr_fbp_options fo = CTR_FBP_OPTIONS_INIT;
  fo.kernel = kernel;
  fo.interp = (ctr_fbp_interp)interp;
  double ms = 0;
  ctr__fbp_kernel_attrs at;
  if (ctr__fbp_bench_cuda(ctx, g, &fo, ns, sino, out, repeats, &ms) ||
      ctr__fbp_kernel_info(ctx, g, &fo, strcmp(kernel, "alu2") || ns < 2 ? 1 : 2, &at))
    DIE("--study %s %s: %s", kernel, interp ? "nearest" : "linear", ctr_error_detail());
  ctr_context_free(ctx);
  const size_t bytes = sizeof(float) * (size_t)(plane * ns);
  if (is_base) memcpy(base, out, bytes);
  const int same = !memcmp(base, out, bytes);
  const double gups = (double)p->nangles * (double)plane * (double)ns / (ms * 1e-3) / 1e9;
  const double occ = (double)(at.blocks_per_sm * at.threads) / (double)at.max_threads_per_sm;
  printf("%-4s %-7s occupancy %-4s carveout %-6s angle cache %-9s: %8.3f ms %7.1f GUPS  %3d "
         "registers, %3d B local, %2d blocks/SM (%3.0f %%)%s\n", kernel, interp ? "nearest" : "linear",
         kv[1], kv[3], kv[5], ms, gups, at.registers, at.local_bytes, at.blocks_per_sm, 100 * occ,
         same ? "" : "  NOT THE DEFAULT'S BITS");
  if (f)
    fprintf(f, "%s  {\"name\": \"%s-%s-occ-%s-carveout-%s-cache-%s\", \"kernel\": \"%s\", "
            "\"interp\": \"%s\", \"occupancy_target\": \"%s\", \"carveout\": \"%s\", "
            "\"angle_cache\": \"%s\", \"seconds\": %.6f, \"gups\": %.1f, \"n\": %lld, "
            "\"angles\": %lld, \"slices\": %lld, \"repeats\": %d, \"registers\": %d, "
            "\"local_bytes\": %d, \"shared_bytes\": %d, \"threads\": %d, \"min_blocks\": %d, "
            "\"blocks_per_sm\": %d, \"theoretical_occupancy\": %.4f, \"same_bits_as_default\": %s}",
            json_first ? "" : ",\n", kernel, interp ? "nearest" : "linear", kv[1], kv[3], kv[5], kernel,
            interp ? "nearest" : "linear", kv[1], kv[3], kv[5], ms * 1e-3, gups, (long long)p->nx,
            (long long)p->nangles, (long long)ns, repeats, at.registers, at.local_bytes,
            at.shared_bytes, at.threads, at.min_blocks, at.blocks_per_sm, occ, same ? "true" : "false");
  return same;
}

/* --study chilingaryan-tables (the file's header). Returns 2 when a case's
 * slices are not the default's bits. */
static int study_tables(int64_t n, int64_t na, int64_t ns, int repeats, const char *json) {
  ctr_parallel_geometry *g = NULL;
  const size_t bytes = sizeof(float) * (size_t)(n * n * ns);
  float *sino = filtered_sinograms(n, na, ns, NULL, &g), *out = malloc(bytes), *base = malloc(bytes);
  if (!out || !base) DIE("out of memory");
  FILE *f = NULL;
  if (json) {
    ctr_device_info info = CTR_DEVICE_INFO_INIT;
    char date[64];
    ctr_cuda_get_device_info(0, &info);
    if (!(f = fopen(json, "w"))) DIE("cannot write %s", json);
    fprintf(f, "{\"gpu\": \"%s\", \"date\": \"%s\", \"revision\": \"%s\", \"study\": "
            "\"chilingaryan-tables\", \"command\": \"bench_fbp --study chilingaryan-tables --n %lld "
            "--angles %lld --slices %lld --repeats %d\",\n \"cases\": [\n", info.name,
            bench_date(date, sizeof date), bench_revision(), (long long)n, (long long)na,
            (long long)ns, repeats);
  }
  /* the exact ALU kernels: one slice (alu, as the paper's Table 19) and two
   * (alu2), linear and nearest */
  static const struct { const char *kernel; int interp; } runs[4] = {
      {"alu", 0}, {"alu2", 0}, {"alu", 1}, {"alu2", 1}};
  int differ = 0;
  for (int r = 0; r < 4; r++)
    for (size_t a = 0; a < sizeof k_occupancy / sizeof k_occupancy[0]; a++)
      for (size_t b = 0; b < sizeof k_carveout / sizeof k_carveout[0]; b++)
        for (size_t c = 0; c < sizeof k_angle_cache / sizeof k_angle_cache[0]; c++) {
          const char *const kv[6] = {"fbp_occupancy", k_occupancy[a], "fbp_carveout", k_carveout[b],
                                     "fbp_angle_cache", k_angle_cache[c]};
          const int is_base = !a && !b && !c; /* the defaults: auto, driver, shared */
          differ += !study_case(g, ns, sino, out, base, is_base, runs[r].kernel, runs[r].interp, kv,
                                repeats, f, is_base && !r);
        }
  if (f) {
    fprintf(f, "\n ]}\n");
    fclose(f);
  }
  ctr_parallel_free(g);
  free(sino);
  free(out);
  free(base);
  if (differ) printf("study: %d cases differ from their default's bits\n", differ);
  return differ ? 2 : 0;
}
#endif

int main(int argc, char **argv) {
#if CTR_HAVE_CUDA
  int64_t n = 2048, na = 2048, ns = 8;
  int repeats = -1, end_to_end = 0, check = 0, failures = 0;
  double worst = 0;
  const char *kernels = "tex,tex2,tex-mp,tex4h,alu,alu2,alu2-h,hybrid,alu-os,alu2-os";
  const char *json = NULL, *dump = NULL, *hybrid_tex = NULL, *memory = "pinned", *study = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--e2e")) { end_to_end = 1; continue; }
    if (!strcmp(argv[i], "--pageable")) { memory = "pageable"; continue; }
    if (!strcmp(argv[i], "--check")) { check = 1; continue; }
    if (i + 1 >= argc) DIE("%s needs a value", argv[i]);
    if (!strcmp(argv[i], "--n")) n = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--angles")) na = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--slices")) ns = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--repeats")) repeats = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--kernels")) kernels = argv[i + 1];
    else if (!strcmp(argv[i], "--json")) json = argv[i + 1];
    else if (!strcmp(argv[i], "--dump")) dump = argv[i + 1];
    else if (!strcmp(argv[i], "--hybrid-tex")) hybrid_tex = argv[i + 1];
    else if (!strcmp(argv[i], "--memory")) memory = argv[i + 1];
    else if (!strcmp(argv[i], "--gpus")) g_gpus = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--study")) study = argv[i + 1];
    else DIE("unknown option %s", argv[i]);
    i++;
  }
  if (end_to_end) return e2e(n, na, ns, memory, repeats < 0 ? 3 : repeats, json);
  if (repeats < 0) repeats = 5;
  if (study && strcmp(study, "chilingaryan-tables"))
    DIE("--study: expected chilingaryan-tables, got '%s'", study);
  if (study) return study_tables(n, na, ns, repeats, json);
  ctr_parallel_geometry *g = NULL;
  const int64_t plane = n * n;
  float *sino = filtered_sinograms(n, na, ns, dump, &g);
  float *out = malloc(sizeof(float) * (size_t)(plane * ns));
  double *ref = malloc(sizeof(double) * (size_t)plane), *ref_lin = malloc(sizeof(double) * (size_t)plane);
  if (!out || !ref || !ref_lin) DIE("out of memory");
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  ctr_context *ctx = NULL;
  if (ctr_context_create(&co, &ctx)) DIE("%s", ctr_error_detail());
  ctr_fbp_options fo = CTR_FBP_OPTIONS_INIT;
  memset(ref, 0, sizeof(double) * (size_t)plane);
  FILE *f = NULL;
  if (json) {
    ctr_device_info info = CTR_DEVICE_INFO_INIT;
    char date[64];
    ctr_cuda_get_device_info(0, &info);
    f = fopen(json, "w");
    if (!f) DIE("cannot write %s", json);
    fprintf(f, "{\"gpu\": \"%s\", \"date\": \"%s\", \"revision\": \"%s\", \"command\": \"bench_fbp\",\n \"cases\": [\n",
            info.name, bench_date(date, sizeof date), bench_revision());
  }
  int first = 1;
  /* Quality of every mode against the exact linear reconstruction, as
   * Chilingaryan et al. 2020's profile comparisons of its approximate modes. */
  memset(ref_lin, 0, sizeof(double) * (size_t)plane);
  if (ctr_fbp_backproject_reference(g, CTR_FBP_LINEAR, 1, sino, ref_lin)) DIE("%s", ctr_error_detail());
  for (int interp = 0; interp < 2; interp++) {
    memset(ref, 0, sizeof(double) * (size_t)plane);
    if (ctr_fbp_backproject_reference(g, (ctr_fbp_interp)interp, 1, sino, ref)) DIE("%s", ctr_error_detail());
    char list[256];
    snprintf(list, sizeof list, "%s", kernels);
    /* Cases: the kernels, the hybrid once per --hybrid-tex value. */
    char cases[64][32];
    int ncases = 0;
    for (char *k = strtok(list, ","); k && ncases < 64; k = strtok(NULL, ",")) {
      if (interp == 1 && strstr(k, "-os")) continue; /* oversampling is its own (linear) mode */
      if (!strcmp(k, "hybrid") && hybrid_tex) {
        char hl[256];
        snprintf(hl, sizeof hl, "%s", hybrid_tex);
        for (char *save = NULL, *v = strtok_r(hl, ",", &save); v && ncases < 64; v = strtok_r(NULL, ",", &save))
          snprintf(cases[ncases++], sizeof cases[0], "hybrid-t%s", v);
      } else
        snprintf(cases[ncases++], sizeof cases[0], "%s", k);
    }
    for (int c = 0; c < ncases; c++) {
      const char *label = cases[c];
      char k[32];
      snprintf(k, sizeof k, "%s", label);
      ctr_context *run = ctx;
      if (!strncmp(k, "hybrid-t", 8)) { /* the texture blocks through the tuning table */
        const char *const kv[2] = {"fbp_hybrid_tex", k + 8};
        if (!(run = bench_context(CTR_DEVICE_CUDA, kv, 1))) DIE("--hybrid-tex %s", k + 8);
        k[6] = '\0';
      }
      fo.kernel = k;
      fo.interp = (ctr_fbp_interp)interp;
      double ms = 0;
      const int failed = ctr__fbp_bench_cuda(run, g, &fo, ns, sino, out, repeats, &ms) != CTR_OK;
      if (run != ctx) ctr_context_free(run);
      if (failed) {
        printf("%-9s %-7s failed: %s\n", label, interp ? "nearest" : "linear", ctr_error_detail());
        failures++;
        continue;
      }
      double e = 0, el = 0, r = 0;
      for (int64_t i = 0; i < plane; i++) {
        e += (out[i] - ref[i]) * (out[i] - ref[i]);
        el += (out[i] - ref_lin[i]) * (out[i] - ref_lin[i]);
        r += ref_lin[i] * ref_lin[i];
      }
      const double rel = sqrt(e / r), rel_lin = sqrt(el / r);
      worst = fmax(worst, rel);
      const double gups = (double)na * (double)plane * (double)ns / (ms * 1e-3) / 1e9;
      if (dump && interp == 0 && !strcmp(k, "alu2"))
        bench_save_raw(dump, "ours.raw", out, sizeof(float) * (size_t)(plane * ns));
      printf("%-9s %-7s %4lld slices: %8.3f ms  %7.1f GUPS  relative RMS vs its double reference "
             "%.2e, vs exact linear %.2e\n", label, interp ? "nearest" : "linear", (long long)ns, ms,
             gups, rel, rel_lin);
      if (f) {
        fprintf(f, "%s  {\"name\": \"%s-%s\", \"kernel\": \"%s\", \"interp\": \"%s\", \"seconds\": %.6f, "
                "\"gups\": %.1f, \"n\": %lld, \"angles\": %lld, \"slices\": %lld, \"repeats\": %d, "
                "\"relative_rms\": %.3e, \"relative_rms_vs_linear\": %.3e",
                first ? "" : ",\n", label, interp ? "nearest" : "linear", k, interp ? "nearest" : "linear",
                ms * 1e-3, gups, (long long)n, (long long)na, (long long)ns, repeats, rel, rel_lin);
        if (!strncmp(label, "hybrid-t", 8)) fprintf(f, ", \"hybrid_tex_per_sm\": %d", atoi(label + 8));
        fprintf(f, "}");
        first = 0;
      }
    }
  }
  if (f) {
    fprintf(f, "\n ]}\n");
    fclose(f);
  }
  ctr_context_free(ctx);
  ctr_parallel_free(g);
  free(sino);
  free(out);
  free(ref);
  free(ref_lin);
  if (check && failures) {
    printf("check: %d kernel runs failed\n", failures);
    return 3;
  }
  if (check && !(worst <= 5e-2)) {
    printf("check: worst relative RMS %.2e against the double reference exceeds 5e-2\n", worst);
    return 2;
  }
  if (check) printf("check: every kernel within 5e-2 of its double reference (worst %.2e)\n", worst);
  return 0;
#else
  (void)argc;
  (void)argv;
  fprintf(stderr, "bench_fbp: built without CUDA\n");
  return 1;
#endif
}
