/* CUDA FDK benchmark (issue: CUDA cone-beam FDK).
 *
 *   bench_fdk_cuda --case A|B [--sweep] [--variants tex,exact-pair,...] [--repeats R]
 *                  [--json FILE] [--dump DIR] [--host auto,staged,registered,driver]
 *                  [--no-curved] [--study lu2016] [--autotune] [--hybrid]
 *
 * Case A: RabbitCT-sized, 512^3 (0.5 mm) from 496 views of 1248 x 960.
 * Case B: Lu et al. 2016's medium, 1024^3 (0.25 mm) from 1200 views of 1024^2.
 * Projections are exact Shepp-Logan line integrals. Reports:
 *  - backprojection throughput (GUPS = views x voxels / s / 1e9) of each
 *    kernel variant (alu: the shared-memory kernel of issue 48, its fixed
 *    tile swept over N' and Z' only), with --sweep over N' (views per
 *    launch), Z' (slices per thread) and block shapes; median of R runs after
 *    a warm-up, data on the GPU;
 *  - end to end (host projections -> host volume, set-up included) through
 *    the streamed pipeline users run, texture and exact, from pinned and
 *    from pageable (malloc'd) memory, and exact with ctr_tuning.bp_alu on
 *    ("exact-alu", pinned), median of R, with the per-stage
 *    breakdown; the pageable runs once per --host setting (ctr_tuning
 *    host_transfer: the host-transfer layer's path, default auto), named
 *    ".../pageable" for auto and ".../pageable-SETTING" for the others;
 *  - the cylindrical (curved) detector's backprojection against the flat
 *    one's (issue 45's target: within 1.3x of the flat's time), each
 *    variant with the library's defaults on the case's geometry with a
 *    cylindrical detector of the same pitch (arc lengths), fed the flat
 *    case's filtered views (the values do not change the time); --no-curved
 *    leaves it out;
 *  - with --autotune, only the autotuner against the defaults: the tuning
 *    pass's time and the end-to-end runs tuned and with tune off, texture
 *    and exact (docs/tuning.md, "Autotuning");
 *  - with --hybrid, only issue 48's hybrid: tex-pair-half on a share of the views
 *    and an exact kernel (exact-pair, alu) on the rest, side by side on two streams,
 *    each into its own volume, summed (ctr__cuda_backproject_hybrid), over shares
 *    0 .. 1 (0 and 1: one kernel alone through the same harness), with each
 *    stream's own time and the relative RMS against exact-pair alone;
 *  - with --study lu2016, only Lu et al. 2016's Figs. 9-10 study (block
 *    shapes, N', Z' of the texture kernel; docs/seed-studies.md);
 *  - with --dump, the projections, geometry and our volumes for the ASTRA
 *    comparison (bench/astra_compare.py).
 * Writes the benchmark JSON of docs/design.md. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "ctrecon.h"

#if CTR_HAVE_CUDA
#include "conebeam/cuda/bp_config.h"
#include "bench_floor.h"

typedef bench_cone bench_case;

static const bench_case CASES[] = {BENCH_CASE_A, BENCH_CASE_B};

static bench_json json;

static double gups(const bench_case *c, double ms) {
  return (double)c->nviews * (double)c->n * (double)c->n * (double)c->n / (ms * 1e-3) / 1e9;
}

/* Times one backprojection configuration (median of `repeats`), prints and
 * records it, and keeps it in *best if it is the fastest so far. */
static void time_config(const bench_case *c, const ctr_geometry *g, const ctr_context *ctx,
                        const ctr_fdk_options *o, const float *filt, int repeats,
                        ctr__bp_config cfg, ctr__bp_config *best, double *best_ms) {
  double ms;
  if (ctr__cuda_backproject(ctx, g, o, &cfg, filt, NULL, repeats, &ms))
    BENCH_DIE("backproject: %s", ctr_error_detail());
  printf("%-10s %4d %4d %3dx%-3d %10.2f %8.1f\n", ctr__bp_variant_name(cfg.variant),
         cfg.views_per_launch, cfg.slices_per_thread, cfg.block_x, cfg.block_y, ms, gups(c, ms));
  fflush(stdout);
  if (json.f)
    bench_json_case(&json, "\"name\": \"%s/bp/%s/N%d/Z%d/%dx%d\", \"seconds\": %.6f, \"gups\": %.1f", c->name,
              ctr__bp_variant_name(cfg.variant), cfg.views_per_launch, cfg.slices_per_thread,
              cfg.block_x, cfg.block_y, ms * 1e-3, gups(c, ms));
  if (ms < *best_ms) *best_ms = ms, *best = cfg;
}

/* Lu et al. 2016 (seed 000), Figs. 9 and 10, on this GPU: the texture kernel
 * (their Algorithm 1's) over thread-block shapes of 256 threads (16x16 ..
 * 256x1) and the projection subset size N' (views per launch, 4 .. 64) for
 * blocks of 64, 128 and 256 threads, at 8 slices a thread (Z'); then Z' (1
 * .. 16) at the best N' and block. Their findings (GTX 980): square 16x16
 * blocks fastest, 256x1 slowest; N' = 20 best for 256-thread blocks. */
static void study_lu2016(const bench_case *c, const ctr_geometry *g, const ctr_context *ctx,
                         const ctr_fdk_options *o, const float *filt, int repeats) {
  static const int shapes[][2] = {{16, 16}, {32, 8}, {64, 4}, {128, 2}, {256, 1}};
  static const int squares[][2] = {{8, 8}, {16, 8}, {16, 16}};
  static const int nps[] = {4, 8, 16, 20, 32, 48, 64};
  static const int zps[] = {1, 2, 4, 8, 16};
  ctr__bp_config base = {CTR__BP_TEX, 0, 0, 0, 0, 0, 0, 0}, best;
  base = ctr__bp_config_resolve(g, o, &base);
  base.slices_per_thread = 8;
  best = base;
  double best_ms = 1e30;
  printf("Lu et al. 2016 Fig. 9: block shapes of 256 threads (N' 20, Z' 8)\n");
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    ctr__bp_config cfg = base;
    cfg.views_per_launch = 20, cfg.block_x = shapes[k][0], cfg.block_y = shapes[k][1];
    time_config(c, g, ctx, o, filt, repeats, cfg, &best, &best_ms);
  }
  printf("Lu et al. 2016 Fig. 10: N' x block size (Z' 8)\n");
  for (size_t k = 0; k < sizeof squares / sizeof squares[0]; k++)
    for (size_t n = 0; n < sizeof nps / sizeof nps[0]; n++) {
      ctr__bp_config cfg = base;
      cfg.views_per_launch = nps[n], cfg.block_x = squares[k][0], cfg.block_y = squares[k][1];
      time_config(c, g, ctx, o, filt, repeats, cfg, &best, &best_ms);
    }
  printf("Z' (slices a thread) at the best N' %d and block %dx%d\n", best.views_per_launch,
         best.block_x, best.block_y);
  const ctr__bp_config top = best;
  for (size_t z = 0; z < sizeof zps / sizeof zps[0]; z++) {
    ctr__bp_config cfg = top;
    cfg.slices_per_thread = zps[z];
    time_config(c, g, ctx, o, filt, repeats, cfg, &best, &best_ms);
  }
  printf("best: N' %d, Z' %d, block %dx%d: %.2f ms (%.1f GUPS)\n", best.views_per_launch,
         best.slices_per_thread, best.block_x, best.block_y, best_ms, gups(c, best_ms));
}

/* The curved detector's backprojection time against the flat one's, per
 * variant (the library's defaults for each geometry; the pair variants
 * need the whole symmetric volume, which the cases have). */
/* --autotune: the autotuner against today's defaults (issue 48's target:
 * tuned never slower, a new class tuned in under 10 s). For texture and
 * exact interpolation: the tuning pass (ctr_tune_fdk, forced, into a fresh
 * cache directory), timed whole, then the end-to-end run of the tuned
 * context and of one with tune off, median of R each after a warm-up, and
 * their backprojection times inside the pipeline. */
static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void autotune_compare(const bench_case *c, const ctr_geometry *g, const ctr_fdk_options *o,
                             float *proj, float *volume, int repeats) {
  char dir[] = "/tmp/bench_tune_XXXXXX";
  if (!mkdtemp(dir)) BENCH_DIE("mkdtemp: cannot make the cache directory");
  const char *off_kv[2] = {"tune", "off"}, *on_kv[2] = {"cache_dir", dir};
  ctr_context *off = bench_context(CTR_DEVICE_CUDA, off_kv, 1);
  ctr_context *on = bench_context(CTR_DEVICE_CUDA, on_kv, 1);
  ctr_tune_report *rep = calloc(1, sizeof *rep);
  if (!off || !on || !rep || ctr_tune_report_init(rep, CTR_TUNE_REPORT_VERSION))
    BENCH_DIE("autotune: contexts");
  const int64_t pd[3] = {c->nu, c->nv, c->nviews}, vd[3] = {c->n, c->n, c->n};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(volume, CTR_DTYPE_FLOAT32, 3, vd);
  const int r_count = repeats < 16 ? (repeats > 0 ? repeats : 1) : 16;
  for (int q = 0; q < 2; q++) {
    ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
    so.fdk = *o;
    so.fdk.interp = q == 0 ? CTR_INTERP_TEXTURE : CTR_INTERP_EXACT;
    const char *mode = q == 0 ? "texture" : "exact";
    const double t0 = wall_s();
    if (ctr_tune_fdk(on, g, &so.fdk, 1, rep)) BENCH_DIE("tune: %s", ctr_error_detail());
    const double pass_s = wall_s() - t0;
    double tot[2][16], bp[2][16];
    for (int k = 0; k < 2; k++) /* 0: tune off (the defaults), 1: tuned */
      for (int r = -1; r < r_count; r++) {
        ctr_fdk_stream_report fr = CTR_FDK_STREAM_REPORT_INIT;
        if (ctr_fdk_stream_memory(k ? on : off, g, &so, &pa, &va, &fr))
          BENCH_DIE("fdk: %s", ctr_error_detail());
        if (r >= 0) tot[k][r] = fr.timings.total, bp[k][r] = fr.timings.backproject;
      }
    const double d_s = bench_median(tot[0], r_count), t_s = bench_median(tot[1], r_count);
    const double d_bp = bench_median(bp[0], r_count), t_bp = bench_median(bp[1], r_count);
    printf("autotune %-7s: pass %.2f s (search %.2f s, %d of %d candidates%s), chosen %s "
           "(trial %.3f ms, default %.3f ms) | end to end default %.1f ms, tuned %.1f ms | "
           "backprojection default %.1f ms (%.0f GUPS), tuned %.1f ms (%.0f GUPS)\n",
           mode, pass_s, rep->seconds, rep->ncandidates, rep->total,
           rep->budget_hit ? ", budget spent" : "", rep->params[0] ? rep->params : rep->note,
           rep->ms, rep->default_ms, d_s * 1e3, t_s * 1e3, d_bp * 1e3, gups(c, d_bp * 1e3),
           t_bp * 1e3, gups(c, t_bp * 1e3));
    bench_json_case(&json, "\"name\": \"%s/autotune/%s\", \"interp\": \"%s\", "
                    "\"seconds\": %.6f, \"default_seconds\": %.6f, \"backprojection_seconds\": "
                    "%.6f, \"default_backprojection_seconds\": %.6f, \"gups\": %.1f, "
                    "\"default_gups\": %.1f, \"tuning_pass_seconds\": %.3f, "
                    "\"search_seconds\": %.3f, \"candidates_timed\": %d, \"candidates\": %d, "
                    "\"chosen\": \"%s\", \"trial_ms\": %.4f, \"trial_default_ms\": %.4f, "
                    "\"repeats\": %d",
                    c->name, mode, mode, t_s, d_s, t_bp, d_bp, gups(c, t_bp * 1e3),
                    gups(c, d_bp * 1e3), pass_s, rep->seconds, rep->ncandidates, rep->total,
                    rep->params, rep->ms, rep->default_ms, r_count);
  }
  int removed = 0;
  ctr_tune_cache_clear(on, NULL, &removed);
  rmdir(dir);
  free(rep);
  ctr_context_free(on);
  ctr_context_free(off);
}

/* --hybrid: texture and exact kernels side by side (see the header). */
static void hybrid_study(const bench_case *c, const ctr_geometry *g, const ctr_context *ctx,
                         const ctr_fdk_options *o, const float *filt, int repeats) {
  const size_t nvox = (size_t)(c->n * c->n * c->n);
  float *ref = malloc(nvox * sizeof(float)), *hv = malloc(nvox * sizeof(float));
  if (!ref || !hv) BENCH_DIE("hybrid: out of host memory");
  const ctr__bp_config tex = {CTR__BP_TEX_PAIR_HALF, 0, 0, 0, 0, 0, 0, 0};
  const ctr__bp_config exact[2] = {{CTR__BP_EXACT_PAIR, 0, 0, 0, 0, 0, 0, 0},
                                   {CTR__BP_ALU, 0, 0, 0, 0, 0, 0, 1}};
  double ms_ref;
  if (ctr__cuda_backproject(ctx, g, o, &exact[0], filt, ref, repeats, &ms_ref))
    BENCH_DIE("hybrid: %s", ctr_error_detail());
  double norm = 0;
  for (size_t i = 0; i < nvox; i++) norm += (double)ref[i] * ref[i];
  printf("hybrid: tex-pair-half on a share of the views beside an exact kernel on the rest "
         "(exact-pair alone: %.2f ms, %.1f GUPS)\n%-24s %6s %9s %8s %9s %9s %9s\n", ms_ref,
         gups(c, ms_ref), "pair", "share", "ms", "GUPS", "tex ms", "exact ms", "rel RMS");
  static const double shares[] = {0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
  for (int e = 0; e < 2; e++)
    for (size_t k = 0; k < sizeof shares / sizeof shares[0]; k++) {
      double ms, parts[2];
      if (ctr__cuda_backproject_hybrid(ctx, g, o, &tex, &exact[e], shares[k], filt, hv, repeats,
                                       &ms, parts))
        BENCH_DIE("hybrid: %s", ctr_error_detail());
      double d = 0;
      for (size_t i = 0; i < nvox; i++) d += ((double)hv[i] - ref[i]) * ((double)hv[i] - ref[i]);
      const double rel = norm > 0 ? sqrt(d / norm) : 0;
      char name[64];
      snprintf(name, sizeof name, "tex-pair-half+%s", ctr__bp_variant_name(exact[e].variant));
      printf("%-24s %6.2f %9.2f %8.1f %9.2f %9.2f %9.2e\n", name, shares[k], ms, gups(c, ms),
             parts[0], parts[1], rel);
      fflush(stdout);
      bench_json_case(&json, "\"name\": \"%s/hybrid/%s/%.2f\", \"share_texture\": %.2f, "
                      "\"seconds\": %.6f, \"gups\": %.1f, \"texture_stream_seconds\": %.6f, "
                      "\"exact_stream_seconds\": %.6f, \"rel_rms_vs_exact_pair\": %.3e, "
                      "\"exact_pair_alone_seconds\": %.6f", c->name, name, shares[k], shares[k],
                      ms * 1e-3, gups(c, ms), parts[0] * 1e-3, parts[1] * 1e-3, rel, ms_ref * 1e-3);
    }
  free(ref);
  free(hv);
}

static void curved_vs_flat(const bench_case *c, const ctr_geometry *g, const ctr_context *ctx,
                           const ctr_fdk_options *o, const float *filt, int repeats,
                           const char *only) {
  static const ctr__bp_variant variants[] = {CTR__BP_TEX_PAIR_HALF, CTR__BP_TEX,
                                             CTR__BP_EXACT_PAIR, CTR__BP_EXACT};
  ctr_geometry *gc = bench_cone_geometry_shape(c, CTR_DETECTOR_CYLINDRICAL);
  printf("\ncylindrical detector against flat (backprojection, library defaults)\n");
  printf("%-14s %10s %10s %8s %8s %7s\n", "variant", "flat ms", "curved ms", "flat", "curved",
         "ratio");
  for (size_t k = 0; k < sizeof variants / sizeof variants[0]; k++) {
    if (only && !bench_listed(only, ctr__bp_variant_name(variants[k]))) continue;
    const ctr__bp_config req = {variants[k], 0, 0, 0, 0, 0, 0, 0};
    const ctr__bp_config cf = ctr__bp_config_resolve(g, o, &req);
    const ctr__bp_config cc = ctr__bp_config_resolve(gc, o, &req);
    double mf, mc;
    if (ctr__cuda_backproject(ctx, g, o, &cf, filt, NULL, repeats, &mf) ||
        ctr__cuda_backproject(ctx, gc, o, &cc, filt, NULL, repeats, &mc))
      BENCH_DIE("backproject: %s", ctr_error_detail());
    printf("%-14s %10.2f %10.2f %8.1f %8.1f %7.3f\n", ctr__bp_variant_name(variants[k]), mf, mc,
           gups(c, mf), gups(c, mc), mc / mf);
    fflush(stdout);
    if (json.f)
      bench_json_case(&json, "\"name\": \"%s/bp-curved/%s\", \"seconds\": %.6f, \"gups\": %.1f, "
                      "\"flat_seconds\": %.6f, \"flat_gups\": %.1f, \"time_ratio\": %.4f", c->name,
                      ctr__bp_variant_name(variants[k]), mc * 1e-3, gups(c, mc), mf * 1e-3,
                      gups(c, mf), mc / mf);
  }
  ctr_geometry_free(gc);
}

int main(int argc, char **argv) {
  const bench_case *c = &CASES[0];
  int sweep = 0, repeats = 3, curved = 1, study = 0, autotune = 0, hybrid = 0;
  const char *json_path = NULL, *dump = NULL, *only = NULL, *hosts = "auto";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--case") && i + 1 < argc) {
      const char *n = argv[++i];
      c = !strcmp(n, "B") ? &CASES[1] : &CASES[0];
    } else if (!strcmp(argv[i], "--sweep")) sweep = 1;
    else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--variants") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
    else if (!strcmp(argv[i], "--host") && i + 1 < argc) hosts = argv[++i];
    else if (!strcmp(argv[i], "--no-curved")) curved = 0;
    else if (!strcmp(argv[i], "--autotune")) autotune = 1;
    else if (!strcmp(argv[i], "--hybrid")) hybrid = 1;
    else if (!strcmp(argv[i], "--study") && i + 1 < argc && !strcmp(argv[i + 1], "lu2016"))
      study = 1, i++;
    else BENCH_DIE("usage: %s --case A|B [--sweep] [--variants a,b] [--repeats R] [--json FILE] [--dump DIR] "
                   "[--host auto,staged,registered,driver] [--no-curved] [--study lu2016] [--autotune] "
                   "[--hybrid]", argv[0]);
  }
  if (ctr_cuda_get_device_count() < 1) BENCH_DIE("no usable GPU");
  ctr_device_info info = CTR_DEVICE_INFO_INIT;
  if (ctr_cuda_get_device_info(0, &info)) BENCH_DIE("%s", ctr_error_detail());

  ctr_geometry *g = bench_cone_geometry(c);
  ctr_phantom *ph = NULL;
  ctr_context *gctx = NULL;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  if (ctr_context_create(&co, &gctx) ||
      ctr_phantom_shepp_logan(0.95 * 0.5 * (double)c->n * c->voxel, 0.02, &ph))
    BENCH_DIE("setup: %s", ctr_error_detail());
  const size_t np = (size_t)(c->nu * c->nv * c->nviews), nvox = (size_t)(c->n * c->n * c->n);
  float *proj = ctr_host_alloc(np * sizeof(float)); /* pinned: full-speed transfers */
  float *filt = malloc(np * sizeof(float));
  float *volume = ctr_host_alloc(nvox * sizeof(float));
  if (!proj || !filt || !volume) BENCH_DIE("out of host memory");
  int64_t pd[3] = {c->nu, c->nv, c->nviews};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  fprintf(stderr, "case %s: projecting Shepp-Logan (%lld views of %lld x %lld)...\n", c->name,
          (long long)c->nviews, (long long)c->nu, (long long)c->nv);
  if (ctr_phantom_project(NULL, ph, g, 1, &pa)) BENCH_DIE("project: %s", ctr_error_detail());
  memcpy(filt, proj, np * sizeof(float));
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.nz = c->n;
  if (ctr_fdk_filter(NULL, g, &o, 0, c->nviews, filt)) BENCH_DIE("filter: %s", ctr_error_detail());

  if (json_path) {
    json.f = fopen(json_path, "w");
    if (!json.f) BENCH_DIE("cannot write %s", json_path);
    char date[32];
    bench_date(date, sizeof date);
    fprintf(json.f,
            "{\n  \"gpu\": \"%s\",\n  \"date\": \"%s\",\n  \"revision\": \"%s\",\n  \"command\": "
            "\"bench_fdk_cuda --case %s%s%s%s%s --repeats %d\",\n  \"case\": {\"name\": \"%s\", "
            "\"volume\": [%lld, %lld, %lld], \"voxel_mm\": %g, \"views\": %lld, \"detector\": "
            "[%lld, %lld], \"sid\": %g, \"sdd\": %g, \"pitch_mm\": %g},\n  \"cases\": [\n",
            info.name, date, bench_revision(), c->name, sweep ? " --sweep" : "",
            study ? " --study lu2016" : "", autotune ? " --autotune" : "",
            hybrid ? " --hybrid" : "", repeats,
            c->name, (long long)c->n, (long long)c->n, (long long)c->n, c->voxel,
            (long long)c->nviews, (long long)c->nu, (long long)c->nv, c->sid, c->sdd, c->pitch);
  }

  if (autotune) { /* the autotuner against the defaults, alone */
    autotune_compare(c, g, &o, proj, volume, repeats);
    if (json.f) fprintf(json.f, "\n  ]\n}\n"), fclose(json.f);
    return 0;
  }
  if (hybrid) { /* the hybrid alone */
    hybrid_study(c, g, gctx, &o, filt, repeats);
    if (json.f) fprintf(json.f, "\n  ]\n}\n"), fclose(json.f);
    return 0;
  }
  if (study) { /* the seed's study alone */
    study_lu2016(c, g, gctx, &o, filt, repeats);
    if (json.f) fprintf(json.f, "\n  ]\n}\n"), fclose(json.f);
    return 0;
  }

  /* Backprojection throughput per variant and configuration. */
  enum { NVAR = 8, NBLOCKS = 8 };
  static const ctr__bp_variant variants[NVAR] = {CTR__BP_TEX,          CTR__BP_TEX_PAIR,
                                                 CTR__BP_TEX_PAIR_HALF, CTR__BP_EXACT,
                                                 CTR__BP_EXACT_PAIR,    CTR__BP_PRECISE,
                                                 CTR__BP_PRECISE_PAIR,  CTR__BP_ALU};
  static const int nps[] = {32, 64}, zps[] = {8, 16};
  static const int blocks[NBLOCKS][2] = {{16, 16}, {32, 8}, {32, 4}, {64, 4},
                                         {16, 8},  {8, 8},  {8, 4},  {16, 4}};
  ctr__bp_config best[NVAR];
  double best_ms[NVAR];
  printf("%-10s %4s %4s %7s %10s %8s\n", "variant", "N'", "Z'", "block", "ms", "GUPS");
  for (int vi = 0; vi < NVAR; vi++) {
    best_ms[vi] = 1e30;
    ctr__bp_config dflt = {variants[vi], 0, 0, 0, 0, 0, 0, 0};
    best[vi] = ctr__bp_config_resolve(g, &o, &dflt); /* the library's tuned defaults */
    if (only && !bench_listed(only, ctr__bp_variant_name(variants[vi]))) continue;
    if (!sweep) {
      time_config(c, g, gctx, &o, filt, repeats, best[vi], &best[vi], &best_ms[vi]);
      continue;
    }
    const ctr__bp_config base = best[vi];
    if (variants[vi] == CTR__BP_ALU) { /* a fixed 16 x 16 tile: N' x Z' only */
      static const int azps[] = {4, 8, 16};
      for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++) {
          ctr__bp_config cfg = base;
          cfg.views_per_launch = nps[a], cfg.slices_per_thread = azps[b];
          time_config(c, g, gctx, &o, filt, repeats, cfg, &best[vi], &best_ms[vi]);
        }
      continue;
    }
    for (int a = 0; a < 2; a++) /* N' x Z' with 16x16 blocks, then block shapes */
      for (int b = 0; b < 2; b++) {
        ctr__bp_config cfg = base;
        cfg.views_per_launch = nps[a], cfg.slices_per_thread = zps[b];
        cfg.block_x = cfg.block_y = 16;
        time_config(c, g, gctx, &o, filt, repeats, cfg, &best[vi], &best_ms[vi]);
      }
    for (int k = 1; k < NBLOCKS; k++) {
      ctr__bp_config cfg = best[vi];
      cfg.block_x = blocks[k][0];
      cfg.block_y = blocks[k][1];
      time_config(c, g, gctx, &o, filt, repeats, cfg, &best[vi], &best_ms[vi]);
    }
  }

  if (curved) curved_vs_flat(c, g, gctx, &o, filt, repeats, only);

  /* End to end through the path users run (ctr_fdk_stream_memory: plan,
   * engine, host projections -> host volume), texture and exact
   * interpolation, with the library's tuned kernel defaults, from pinned
   * memory (ctr_host_alloc) and from pageable memory (malloc'd projections
   * and volume, touched before timing, as numpy arrays holding data). The
   * total includes the set-up (allocations, cuFFT plans); median of the
   * repeats after one untimed call. */
  float *proj_pg = malloc(np * sizeof(float)), *volume_pg = malloc(nvox * sizeof(float));
  if (!proj_pg || !volume_pg) BENCH_DIE("out of host memory (pageable copies)");
  memcpy(proj_pg, proj, np * sizeof(float));
  memset(volume_pg, 0, nvox * sizeof(float));
  static const char *const host_settings[] = {"auto", "staged", "registered", "driver"};
  bench_floor floor_rates;
  if (bench_floor_measure(&floor_rates)) BENCH_DIE("floor: out of memory");
  printf("floor rates: DMA %.1f GB/s up, %.1f down; staged host copy %.1f up, %.1f down (GB/s)\n",
         floor_rates.dma_up, floor_rates.dma_down, floor_rates.copy_up, floor_rates.copy_down);
  /* q: texture, exact, exact with the ALU kernel (ctr_tuning.bp_alu on; pinned only) */
  for (int q = 0; q < 3; q++) {
    double pinned_s = 0;
    for (int m = 0; m < 5; m++) { /* pinned, then pageable under each host setting */
      if (m > 0 && (q == 2 || !bench_listed(hosts, host_settings[m - 1]))) continue;
      const char *kv[2] = {"host_transfer", m > 1 ? host_settings[m - 1] : "auto"};
      static const char *const alu_kv[2] = {"bp_alu", "on"};
      ctr_context *ectx = q == 2  ? bench_context(CTR_DEVICE_CUDA, alu_kv, 1)
                          : m > 1 ? bench_context(CTR_DEVICE_CUDA, kv, 1)
                                  : gctx;
      if (!ectx) BENCH_DIE("context for --host %s", kv[1]);
      ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
      so.fdk = o;
      so.fdk.interp = q == 0 ? CTR_INTERP_TEXTURE : CTR_INTERP_EXACT;
      const int64_t pd[3] = {c->nu, c->nv, c->nviews}, vd[3] = {c->n, c->n, c->n};
      ctr_array pa = ctr_array_make(m == 0 ? proj : proj_pg, CTR_DTYPE_FLOAT32, 3, pd);
      ctr_array va = ctr_array_make(m == 0 ? volume : volume_pg, CTR_DTYPE_FLOAT32, 3, vd);
      double tot[16] = {0};
      ctr_fdk_stream_report tm[16];
      const int r_count = repeats < 16 ? repeats : 16;
      for (int r = -1; r < r_count; r++) {
        ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
        if (ctr_fdk_stream_memory(ectx, g, &so, &pa, &va, &rep)) BENCH_DIE("fdk: %s", ctr_error_detail());
        if (r >= 0) {
          tm[r] = rep;
          tot[r] = rep.timings.total;
        }
      }
      int med = 0; /* the run with the median total */
      for (int r = 0; r < r_count; r++) {
        int below = 0;
        for (int s = 0; s < r_count; s++) below += tot[s] < tot[r];
        if (below == r_count / 2) med = r;
      }
      const ctr_fdk_stream_timings *t = &tm[med].timings;
      if (ectx != gctx) ctr_context_free(ectx);
      char mem[48];
      snprintf(mem, sizeof mem, "%s%s%s", m == 0 ? "pinned" : "pageable", m > 1 ? "-" : "",
               m > 1 ? host_settings[m - 1] : "");
      const char *mode = q == 0 ? "texture" : q == 1 ? "exact" : "exact-alu";
      if (m == 0) pinned_s = t->total;
      const double floor_s = bench_floor_seconds(&floor_rates, pinned_s, (double)np * 4.0, (double)nvox * 4.0);
      printf("end to end %-8s %-8s: %.1f ms (set-up %.1f ms included), median of %d | busy: upload %.1f, "
             "filter %.1f, backprojection %.1f (%.0f GUPS), download %.1f ms | pageable floor %.1f ms\n",
             mode, mem, t->total * 1e3, t->setup * 1e3, r_count, t->upload * 1e3, t->filter * 1e3,
             t->backproject * 1e3, gups(c, t->backproject * 1e3), t->download * 1e3, floor_s * 1e3);
      if (json.f) {
        char runs[16 * 16] = "";
        for (int r = 0, len = 0; r < r_count; r++)
          len += snprintf(runs + len, sizeof runs - (size_t)len, "%s%.6f", r ? ", " : "", tot[r]);
        bench_json_case(&json, "\"name\": \"%s/end-to-end/%s/%s\", \"interp\": \"%s\", \"memory\": \"%s\", "
                  "\"seconds\": %.6f, \"setup_seconds\": %.6f, \"setup_included\": true, "
                  "\"upload_ms\": %.3f, \"filter_ms\": %.3f, \"backprojection_ms\": %.3f, "
                  "\"download_ms\": %.3f, \"gups_in_pipeline\": %.1f, \"views_per_batch\": %lld, "
                  "\"floor_seconds\": %.6f, \"repeats\": %d, \"runs\": [%s]",
                  c->name, mode, mem, mode, mem, t->total, t->setup, t->upload * 1e3, t->filter * 1e3,
                  t->backproject * 1e3, t->download * 1e3, gups(c, t->backproject * 1e3),
                  (long long)tm[med].plan.views_per_batch, floor_s, r_count, runs);
      }
      if (dump && m == 0 && q < 2) {
        char name[64];
        snprintf(name, sizeof name, "ours_%s.raw", mode);
        bench_save_raw(dump, name, volume, nvox * sizeof(float));
      }
    }
  }
  free(proj_pg);
  free(volume_pg);
  if (dump) {
    char path[1024];
    snprintf(path, sizeof path, "%s/geometry.json", dump);
    bench_save_raw(dump, "proj.raw", proj, np * sizeof(float));
    if (ctr_geometry_save_json(g, path, 1))
      BENCH_DIE("cannot dump to %s: %s", dump, ctr_error_detail());
  }
  if (json.f) {
    fprintf(json.f, "\n  ]\n}\n");
    fclose(json.f);
  }
  ctr_host_free(proj);
  ctr_host_free(volume);
  free(filt);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
  ctr_context_free(gctx);
  return 0;
}
#else
int main(void) {
  fprintf(stderr, "bench_fdk_cuda: built without CUDA\n");
  return 1;
}
#endif
