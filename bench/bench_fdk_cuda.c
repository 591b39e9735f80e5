/* CUDA FDK benchmark (issue: CUDA cone-beam FDK).
 *
 *   bench_fdk_cuda --case A|B [--sweep] [--variants tex,exact-pair,...] [--repeats R]
 *                  [--json FILE] [--dump DIR]
 *
 * Case A: RabbitCT-sized, 512^3 (0.5 mm) from 496 views of 1248 x 960.
 * Case B: seed 000 medium, 1024^3 (0.25 mm) from 1200 views of 1024^2.
 * Projections are exact Shepp-Logan line integrals. Reports:
 *  - backprojection throughput (GUPS = views x voxels / s / 1e9) of each
 *    kernel variant, with --sweep over N' (views per launch), Z' (slices per
 *    thread) and block shapes; median of R runs after a warm-up, data on the
 *    GPU;
 *  - end to end (pinned host projections -> pinned host volume) for the best
 *    texture and exact configurations, with the per-stage breakdown;
 *  - with --dump, the projections, geometry and our volumes for the ASTRA
 *    comparison (bench/astra_compare.py).
 * Writes the DESIGN.md benchmark JSON. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "ctrecon.h"

#if CTR_HAVE_CUDA
#include "conebeam/cuda/bp_config.h"

#define DIE(...)                  \
  do {                            \
    fprintf(stderr, __VA_ARGS__); \
    fputc('\n', stderr);          \
    exit(1);                      \
  } while (0)

typedef struct bench_case {
  const char *name;
  int64_t n, nu, nv, nviews;
  double voxel, sid, sdd, pitch;
} bench_case;

static const bench_case CASES[] = {
    {"A", 512, 1248, 960, 496, 0.5, 750.0, 1200.0, 0.55},
    {"B", 1024, 1024, 1024, 1200, 0.25, 1000.0, 1500.0, 0.40},
};

static FILE *json;
static int json_first = 1;

static void json_case(const char *fmt, ...) {
  va_list ap;
  fprintf(json, "%s    {", json_first ? "" : ",\n");
  json_first = 0;
  va_start(ap, fmt);
  vfprintf(json, fmt, ap);
  va_end(ap);
  fputc('}', json);
}

/* 1 if `name` is one of the comma-separated tokens of `list`. */
static int listed(const char *list, const char *name) {
  const size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    const size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && !strncmp(p, name, n)) return 1;
    p += len + (e ? 1 : 0);
  }
  return 0;
}

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
    DIE("backproject: %s", ctr_error_detail());
  printf("%-10s %4d %4d %3dx%-3d %10.2f %8.1f\n", ctr__bp_variant_name(cfg.variant),
         cfg.views_per_launch, cfg.slices_per_thread, cfg.block_x, cfg.block_y, ms, gups(c, ms));
  fflush(stdout);
  if (json)
    json_case("\"name\": \"%s/bp/%s/N%d/Z%d/%dx%d\", \"seconds\": %.6f, \"gups\": %.1f", c->name,
              ctr__bp_variant_name(cfg.variant), cfg.views_per_launch, cfg.slices_per_thread,
              cfg.block_x, cfg.block_y, ms * 1e-3, gups(c, ms));
  if (ms < *best_ms) *best_ms = ms, *best = cfg;
}

static int write_raw(const char *dir, const char *name, const void *p, size_t bytes) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  size_t w = fwrite(p, 1, bytes, f);
  return fclose(f) == 0 && w == bytes;
}

int main(int argc, char **argv) {
  const bench_case *c = &CASES[0];
  int sweep = 0, repeats = 3;
  const char *json_path = NULL, *dump = NULL, *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--case") && i + 1 < argc) {
      const char *n = argv[++i];
      c = !strcmp(n, "B") ? &CASES[1] : &CASES[0];
    } else if (!strcmp(argv[i], "--sweep")) sweep = 1;
    else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--variants") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
    else DIE("usage: %s --case A|B [--sweep] [--variants a,b] [--repeats R] [--json FILE] [--dump DIR]", argv[0]);
  }
  if (ctr_cuda_get_device_count() < 1) DIE("no usable GPU");
  ctr_device_info info = CTR_DEVICE_INFO_INIT;
  if (ctr_cuda_get_device_info(0, &info)) DIE("%s", ctr_error_detail());

  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = c->sid;
  p.sdd = c->sdd;
  p.nu = c->nu;
  p.nv = c->nv;
  p.du = p.dv = c->pitch;
  p.nviews = c->nviews;
  ctr_volume_geometry vol = {c->n, c->n, c->n, c->voxel, c->voxel, c->voxel, 0, 0, 0};
  ctr_geometry *g = NULL;
  ctr_phantom *ph = NULL;
  ctr_context *gctx = NULL;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CUDA;
  if (ctr_geometry_create_circular(&p, &vol, &g) || ctr_context_create(&co, &gctx) ||
      ctr_phantom_shepp_logan(0.95 * 0.5 * (double)c->n * c->voxel, 0.02, &ph))
    DIE("setup: %s", ctr_error_detail());
  const size_t np = (size_t)(c->nu * c->nv * c->nviews), nvox = (size_t)(c->n * c->n * c->n);
  float *proj = ctr_host_alloc(np * sizeof(float)); /* pinned: full-speed transfers */
  float *filt = malloc(np * sizeof(float));
  float *volume = ctr_host_alloc(nvox * sizeof(float));
  if (!proj || !filt || !volume) DIE("out of host memory");
  int64_t pd[3] = {c->nu, c->nv, c->nviews};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  fprintf(stderr, "case %s: projecting Shepp-Logan (%lld views of %lld x %lld)...\n", c->name,
          (long long)c->nviews, (long long)c->nu, (long long)c->nv);
  if (ctr_phantom_project(NULL, ph, g, 1, &pa)) DIE("project: %s", ctr_error_detail());
  memcpy(filt, proj, np * sizeof(float));
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.nz = c->n;
  if (ctr_fdk_filter(NULL, g, &o, 0, c->nviews, filt)) DIE("filter: %s", ctr_error_detail());

  if (json_path) {
    json = fopen(json_path, "w");
    if (!json) DIE("cannot write %s", json_path);
    char date[32];
    bench_date(date, sizeof date);
    fprintf(json,
            "{\n  \"gpu\": \"%s\",\n  \"date\": \"%s\",\n  \"revision\": \"%s\",\n  \"command\": "
            "\"bench_fdk_cuda --case %s%s --repeats %d\",\n  \"case\": {\"name\": \"%s\", "
            "\"volume\": [%lld, %lld, %lld], \"voxel_mm\": %g, \"views\": %lld, \"detector\": "
            "[%lld, %lld], \"sid\": %g, \"sdd\": %g, \"pitch_mm\": %g},\n  \"cases\": [\n",
            info.name, date, bench_revision(), c->name, sweep ? " --sweep" : "", repeats,
            c->name, (long long)c->n, (long long)c->n, (long long)c->n, c->voxel,
            (long long)c->nviews, (long long)c->nu, (long long)c->nv, c->sid, c->sdd, c->pitch);
  }

  /* Backprojection throughput per variant and configuration. */
  enum { NVAR = 7, NBLOCKS = 8 };
  static const ctr__bp_variant variants[NVAR] = {CTR__BP_TEX,          CTR__BP_TEX_PAIR,
                                                 CTR__BP_TEX_PAIR_HALF, CTR__BP_EXACT,
                                                 CTR__BP_EXACT_PAIR,    CTR__BP_PRECISE,
                                                 CTR__BP_PRECISE_PAIR};
  static const int nps[] = {32, 64}, zps[] = {8, 16};
  static const int blocks[NBLOCKS][2] = {{16, 16}, {32, 8}, {32, 4}, {64, 4},
                                         {16, 8},  {8, 8},  {8, 4},  {16, 4}};
  ctr__bp_config best[NVAR];
  double best_ms[NVAR];
  printf("%-10s %4s %4s %7s %10s %8s\n", "variant", "N'", "Z'", "block", "ms", "GUPS");
  for (int vi = 0; vi < NVAR; vi++) {
    best_ms[vi] = 1e30;
    ctr__bp_config dflt = {variants[vi], 0, 0, 0, 0, 0, 0};
    best[vi] = ctr__bp_config_resolve(g, &o, &dflt); /* the library's tuned defaults */
    if (only && !listed(only, ctr__bp_variant_name(variants[vi]))) continue;
    if (!sweep) {
      time_config(c, g, gctx, &o, filt, repeats, best[vi], &best[vi], &best_ms[vi]);
      continue;
    }
    const ctr__bp_config base = best[vi];
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

  /* End to end with the best half2 texture-pair (each pipeline mode) and
   * exact-pair configurations. */
  static const int e2e_variant[4] = {2, 2, 2, 4};
  static const int e2e_pipe[4] = {CTR__PIPE_FILTER_PRIORITY, CTR__PIPE_FILTER_STREAM,
                                  CTR__PIPE_SERIAL, CTR__PIPE_DEFAULT};
  static const char *pipe_name[4] = {"default", "filter-priority", "filter-stream", "serial"};
  for (int q = 0; q < 4; q++) {
    ctr__bp_config cfg = best[e2e_variant[q]];
    cfg.pipeline = e2e_pipe[q];
    ctr_fdk_options eo = o;
    eo.interp = q < 3 ? CTR_INTERP_TEXTURE : CTR_INTERP_EXACT;
    double tot[16] = {0};
    ctr__cuda_timings tm[16];
    int r_count = repeats < 16 ? repeats : 16;
    for (int r = -1; r < r_count; r++) {
      ctr__cuda_timings t;
      if (ctr__cuda_fdk(gctx, g, &eo, &cfg, proj, CTR_DTYPE_FLOAT32, volume, &t))
        DIE("fdk: %s", ctr_error_detail());
      if (r >= 0) {
        tm[r] = t;
        tot[r] = t.total_ms;
      }
    }
    int med = 0; /* the run with the median total */
    for (int r = 0; r < r_count; r++) {
      int below = 0;
      for (int s = 0; s < r_count; s++) below += tot[s] < tot[r];
      if (below == r_count / 2) med = r;
    }
    const ctr__cuda_timings *t = &tm[med];
    printf("end to end %-13s %-15s: %.1f ms (setup %.1f ms not included) | busy: upload %.1f, "
           "filter %.1f, backprojection %.1f (%.0f GUPS), download %.1f ms\n",
           ctr__bp_variant_name(t->variant), pipe_name[t->pipeline], t->total_ms, t->setup_ms,
           t->upload_ms, t->filter_ms, t->backproject_ms, gups(c, t->backproject_ms),
           t->download_ms);
    if (json)
      json_case("\"name\": \"%s/end-to-end/%s/%s\", \"seconds\": %.6f, \"setup_seconds\": %.6f, "
                "\"upload_ms\": %.3f, \"filter_ms\": %.3f, \"backprojection_ms\": %.3f, "
                "\"download_ms\": %.3f, \"gups_in_pipeline\": %.1f, \"views_per_launch\": %d, "
                "\"slices_per_thread\": %d, \"block\": [%d, %d]",
                c->name, ctr__bp_variant_name(t->variant), pipe_name[t->pipeline],
                t->total_ms * 1e-3, t->setup_ms * 1e-3, t->upload_ms, t->filter_ms,
                t->backproject_ms, t->download_ms, gups(c, t->backproject_ms),
                cfg.views_per_launch, cfg.slices_per_thread, cfg.block_x, cfg.block_y);
    if (dump && (q == 0 || q == 3)) {
      char name[64];
      snprintf(name, sizeof name, "ours_%s.raw", q == 0 ? "texture" : "exact");
      if (!write_raw(dump, name, volume, nvox * sizeof(float))) DIE("cannot write %s/%s", dump, name);
    }
  }
  if (dump) {
    char path[1024];
    snprintf(path, sizeof path, "%s/geometry.json", dump);
    if (!write_raw(dump, "proj.raw", proj, np * sizeof(float)) || ctr_geometry_save_json(g, path))
      DIE("cannot dump to %s: %s", dump, ctr_error_detail());
  }
  if (json) {
    fprintf(json, "\n  ]\n}\n");
    fclose(json);
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
