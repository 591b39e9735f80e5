/* Out-of-core FDK benchmark (issue 4; seed 000 Table 3-4 "large dataset"):
 * N^3 volume from V projections of D^2 pixels, file to file through the
 * streamed pipeline, with the per-step busy times; and the in-memory
 * comparison of the streamed path with the CUDA FDK's in-core pipeline.
 *
 *   bench_ooc gen  --dir DIR [--n N --views V --det D] [--u16]
 *       writes DIR/proj.raw (float32, or uint16 x 1000 with --u16) and
 *       DIR/geom.json. The projections are the Shepp-Logan head's exact line
 *       integrals on a detector of D/4 pixels, upsampled bilinearly to D
 *       (the benchmark times the pipeline; the content only has to be a
 *       realistic CT).
 *   bench_ooc run  --dir DIR --name NAME [--u16] [--gpu-mem SIZE] [--read-rate B/s
 *       --write-rate B/s] [--json FILE]
 *       DIR/proj.raw -> DIR/vol.nrrd (uint16 with --u16), deleted afterwards.
 *   bench_ooc memory [--n 1024 --views 1200 --det 1024] [--repeats 3] [--json FILE]
 *       pinned arrays in memory: ctr_fdk_stream_memory vs ctr__cuda_fdk. */
#include "bench_common.h"
#include "ctrecon.h"
#if CTR_HAVE_CUDA
#include "conebeam/cuda/bp_config.h"
#endif

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DIE(...)                                      \
  do {                                                \
    fprintf(stderr, "bench_ooc: " __VA_ARGS__);       \
    fprintf(stderr, "\n");                            \
    exit(1);                                          \
  } while (0)

typedef struct args {
  const char *mode, *dir, *name, *json;
  int64_t n, views, det;
  int u16, repeats;
  uint64_t gpu_mem;
  double read_rate, write_rate;
} args;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static ctr_geometry *make_geometry(const args *a, int64_t det) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 1000;
  p.sdd = 1500;
  p.nu = p.nv = det;
  p.du = p.dv = 0.2 * (double)a->det / (double)det; /* 409.6 mm detector */
  p.nviews = a->views;
  const double voxel = 250.0 / (double)a->n;
  ctr_volume_geometry vol = {a->n, a->n, a->n, voxel, voxel, voxel, 0, 0, 0};
  ctr_geometry *g = NULL;
  if (ctr_geometry_create_circular(&p, &vol, &g)) DIE("geometry: %s", ctr_error_detail());
  return g;
}

static char *path_in(const args *a, const char *name) {
  static char buf[4][1024];
  static int k;
  char *b = buf[k++ % 4];
  snprintf(b, sizeof buf[0], "%s/%s", a->dir, name);
  return b;
}

/* Bilinear upsampling of a coarse view (c x c) to d x d about the centre. */
static void upsample(const float *src, int64_t c, float *dst, int64_t d) {
  const double f = (double)c / (double)d, oc = 0.5 * (double)(c - 1), od = 0.5 * (double)(d - 1);
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < d; v++) {
    double y = (v - od) * f + oc;
    y = y < 0 ? 0 : y > c - 1 ? c - 1 : y;
    const int64_t y0 = (int64_t)y < c - 1 ? (int64_t)y : c - 2;
    const double fy = y - y0;
    for (int64_t u = 0; u < d; u++) {
      double x = (u - od) * f + oc;
      x = x < 0 ? 0 : x > c - 1 ? c - 1 : x;
      const int64_t x0 = (int64_t)x < c - 1 ? (int64_t)x : c - 2;
      const double fx = x - x0;
      const float *r0 = src + y0 * c, *r1 = r0 + c;
      dst[v * d + u] = (float)((1 - fy) * ((1 - fx) * r0[x0] + fx * r0[x0 + 1]) +
                               fy * ((1 - fx) * r1[x0] + fx * r1[x0 + 1]));
    }
  }
}

static void gen(const args *a) {
  const double t0 = now_s();
  const int64_t coarse = a->det / 4;
  ctr_geometry *g = make_geometry(a, a->det), *gc = make_geometry(a, coarse);
  if (ctr_geometry_save_json(g, path_in(a, "geom.json"))) DIE("%s", ctr_error_detail());
  ctr_phantom *ph = NULL;
  if (ctr_phantom_shepp_logan(120.0, 0.02, &ph)) DIE("%s", ctr_error_detail());
  const int64_t cpx = coarse * coarse, px = a->det * a->det;
  float *cproj = malloc(sizeof(float) * (size_t)(cpx * a->views));
  const int64_t cd[3] = {coarse, coarse, a->views};
  ctr_array ca = ctr_array_make(cproj, CTR_DTYPE_FLOAT32, 3, cd);
  if (!cproj || ctr_phantom_project(NULL, ph, gc, 1, &ca)) DIE("project: %s", ctr_error_detail());
  const double t1 = now_s();
  ctr_stack_info info = {CTR_STACK_INFO_VERSION, a->det, a->det, a->views, a->u16 ? CTR_DTYPE_UINT16 : CTR_DTYPE_FLOAT32,
                         {0, 0, 0}, {0, 0, 0}};
  ctr_stack_writer *w = NULL;
  if (ctr_stack_create(path_in(a, "proj.raw"), CTR_FORMAT_RAW, &info, &w)) DIE("%s", ctr_error_detail());
  const int64_t batch = 16;
  void *buf = NULL;
  if (posix_memalign(&buf, 4096, sizeof(float) * (size_t)(px * batch))) DIE("out of memory");
  float *fb = buf;
  void *buf16 = NULL;
  if (posix_memalign(&buf16, 4096, sizeof(uint16_t) * (size_t)(px * batch))) DIE("out of memory");
  uint16_t *o16 = buf16;
  for (int64_t v0 = 0; v0 < a->views; v0 += batch) {
    const int64_t n = a->views - v0 < batch ? a->views - v0 : batch;
    for (int64_t k = 0; k < n; k++) upsample(cproj + (v0 + k) * cpx, coarse, fb + k * px, a->det);
    if (a->u16) { /* x 1000 */
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n * px; i++) o16[i] = (uint16_t)lrintf(fminf(65535.f, fmaxf(0.f, fb[i] * 1000.f)));
      if (ctr_stack_write(w, v0, n, CTR_DTYPE_UINT16, o16)) DIE("%s", ctr_error_detail());
    } else if (ctr_stack_write(w, v0, n, CTR_DTYPE_FLOAT32, fb)) {
      DIE("%s", ctr_error_detail());
    }
  }
  if (ctr_stack_commit(w)) DIE("%s", ctr_error_detail());
  /* Nothing of the input stays in the page cache (direct I/O already). */
  int fd = open(path_in(a, "proj.raw"), O_RDONLY);
  if (fd >= 0) {
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  printf("generated %s: %lld views of %lld^2 %s in %.1f s (projection %.1f s)\n",
         path_in(a, "proj.raw"), (long long)a->views, (long long)a->det,
         a->u16 ? "uint16" : "float32", now_s() - t0, t1 - t0);
  free(buf);
  free(buf16);
  free(cproj);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
  ctr_geometry_free(gc);
}

static int on_progress(void *user, const char *stage, double f) {
  (void)user, (void)stage, (void)f;
  return 0;
}

static ctr_context *gpu_context(void) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = getenv("BENCH_CPU") ? CTR_DEVICE_CPU : CTR_DEVICE_CUDA; /* BENCH_CPU=1: smoke test */
  co.progress = on_progress;
  ctr_context *ctx = NULL;
  if (ctr_context_create(&co, &ctx)) DIE("%s", ctr_error_detail());
  return ctx;
}

static FILE *open_json(const args *a, const char *command) {
  if (!a->json) return NULL;
  FILE *f = fopen(a->json, "w");
  if (!f) DIE("cannot write %s", a->json);
  ctr_device_info info = CTR_DEVICE_INFO_INIT;
  char date[64];
  ctr_cuda_get_device_info(0, &info);
  fprintf(f, "{\"gpu\": \"%s\", \"date\": \"%s\", \"revision\": \"%s\", \"command\": \"%s\",\n"
             " \"cases\": [\n", info.name, bench_date(date, sizeof date), bench_revision(), command);
  return f;
}

static void run(const args *a) {
  ctr_geometry *g = NULL;
  if (ctr_geometry_load_json(path_in(a, "geom.json"), &g)) DIE("%s", ctr_error_detail());
  int64_t nu, nv;
  double du, dv;
  ctr_geometry_get_detector(g, &nu, &nv, &du, &dv);
  const ctr_volume_geometry vol = ctr_geometry_get_volume(g);
  ctr_stack_info hint = {CTR_STACK_INFO_VERSION, nu, nv, ctr_geometry_get_view_count(g), a->u16 ? CTR_DTYPE_UINT16 : CTR_DTYPE_FLOAT32,
                         {0, 0, 0}, {0, 0, 0}};
  ctr_context *ctx = gpu_context();
  ctr_stack_reader *r = NULL;
  if (ctr_stack_open(path_in(a, "proj.raw"), CTR_FORMAT_RAW, &hint, 0, &r)) DIE("%s", ctr_error_detail());
  ctr_stream_options so = CTR_STREAM_OPTIONS_INIT;
  so.gpu_budget = a->gpu_mem;
  so.out_dtype = a->u16 ? CTR_DTYPE_UINT16 : CTR_DTYPE_FLOAT32;
  so.input_scale = a->u16 ? 1000.0 : 1.0;
  so.out_scale = 1000.0;
  const char *out = path_in(a, "vol.nrrd");
  ctr_stream_report rep = CTR_STREAM_REPORT_INIT;
  const double t0 = now_s();
  if (ctr_fdk_stream(ctx, g, &so, r, out, CTR_FORMAT_NRRD, &rep)) DIE("run: %s", ctr_error_detail());
  const double wall = now_s() - t0;
  const double in_bytes = (double)(nu * nv * hint.count) * (double)ctr_dtype_size(hint.dtype);
  const double out_bytes = (double)(vol.nx * vol.ny * vol.nz) * (double)ctr_dtype_size(so.out_dtype);
  const double floor_s = a->read_rate > 0 && a->write_rate > 0
                             ? in_bytes / a->read_rate + out_bytes / a->write_rate : 0;
  /* The floor at DESIGN.md's reference rates (1.8 GB/s read, 1.4 GB/s write). */
  const double floor_ref = in_bytes / 1.8e9 + out_bytes / 1.4e9;
  char plan[512];
  ctr_plan_describe(&rep.plan, plan, sizeof plan);
  const ctr_stream_timings *t = &rep.timings;
  const double gups = (double)hint.count * (double)(vol.nx * vol.ny * vol.nz) / t->backproject / 1e9;
  printf("%s: %s\n  wall %.2f s, I/O floor %.2f s at the measured rates (%.3fx), %.2f s at "
         "1.8/1.4 GB/s (%.3fx), values %.4g .. %.4g\n", a->name, plan, wall, floor_s,
         floor_s > 0 ? wall / floor_s : 0, floor_ref, wall / floor_ref, rep.min, rep.max);
  printf("  busy s: read %.2f upload %.2f filter %.2f store %.2f reload %.2f backproject %.2f "
         "(%.0f GUPS) download %.2f write %.2f setup %.2f total %.2f\n",
         t->read, t->upload, t->filter, t->store, t->reload, t->backproject, gups, t->download,
         t->write, t->setup, t->total);
  FILE *f = open_json(a, "bench_ooc run");
  if (f) {
    fprintf(f,
            "  {\"name\": \"%s\", \"seconds\": %.3f, \"floor_seconds\": %.3f, \"ratio_to_floor\": %.4f,\n"
            "   \"floor_reference_seconds\": %.3f, \"ratio_to_reference_floor\": %.4f,\n"
            "   \"n\": %lld, \"views\": %lld, \"det\": %lld, \"input_dtype\": \"%s\", \"output_dtype\": \"%s\",\n"
            "   \"input_bytes\": %.0f, \"output_bytes\": %.0f, \"read_rate\": %.0f, \"write_rate\": %.0f,\n"
            "   \"gpu_budget\": %llu, \"plan\": \"%s\", \"nslabs\": %lld, \"slab_slices\": %lld,\n"
            "   \"views_per_batch\": %lld, \"store\": \"%s\", \"pair\": %d, \"gups\": %.1f,\n"
            "   \"busy\": {\"read\": %.3f, \"upload\": %.3f, \"filter\": %.3f, \"store\": %.3f, "
            "\"reload\": %.3f, \"backproject\": %.3f, \"download\": %.3f, \"write\": %.3f, "
            "\"setup\": %.3f, \"total\": %.3f}}\n ]}\n",
            a->name, wall, floor_s, floor_s > 0 ? wall / floor_s : 0, floor_ref, wall / floor_ref,
            (long long)vol.nx,
            (long long)hint.count, (long long)nu, ctr_dtype_name(hint.dtype),
            ctr_dtype_name(so.out_dtype), in_bytes, out_bytes, a->read_rate, a->write_rate,
            (unsigned long long)a->gpu_mem, plan, (long long)rep.plan.nslabs,
            (long long)rep.plan.slab_slices, (long long)rep.plan.views_per_batch,
            ctr_store_name(rep.plan.store), rep.plan.pair, gups, t->read, t->upload, t->filter,
            t->store, t->reload, t->backproject, t->download, t->write, t->setup, t->total);
    fclose(f);
  }
  unlink(out);
  ctr_stack_close(r);
  ctr_context_free(ctx);
  ctr_geometry_free(g);
}

static int cmp_double(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static void memory(const args *a) {
#if CTR_HAVE_CUDA
  ctr_geometry *g = make_geometry(a, a->det);
  const int64_t coarse = a->det / 4, px = a->det * a->det, cpx = coarse * coarse;
  ctr_geometry *gc = make_geometry(a, coarse);
  ctr_phantom *ph = NULL;
  if (ctr_phantom_shepp_logan(120.0, 0.02, &ph)) DIE("%s", ctr_error_detail());
  float *cproj = malloc(sizeof(float) * (size_t)(cpx * a->views));
  const int64_t cd[3] = {coarse, coarse, a->views};
  ctr_array ca = ctr_array_make(cproj, CTR_DTYPE_FLOAT32, 3, cd);
  if (!cproj || ctr_phantom_project(NULL, ph, gc, 1, &ca)) DIE("project: %s", ctr_error_detail());
  float *proj = ctr_host_alloc(sizeof(float) * (size_t)(px * a->views));
  float *vol = ctr_host_alloc(sizeof(float) * (size_t)(a->n * a->n * a->n));
  if (!proj || !vol) DIE("out of pinned memory");
  for (int64_t v = 0; v < a->views; v++) upsample(cproj + v * cpx, coarse, proj + v * px, a->det);
  const int64_t pd[3] = {a->det, a->det, a->views}, vd[3] = {a->n, a->n, a->n};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_context *ctx = gpu_context();
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.nz = a->n;
  ctr_stream_options so = CTR_STREAM_OPTIONS_INIT;
  const int reps = a->repeats;
  double ts[16], tc[16], bp[16];
  ctr_stream_report rep = CTR_STREAM_REPORT_INIT;
  for (int i = -1; i < reps; i++) { /* i = -1 warms up */
    double t0 = now_s();
    if (ctr_fdk_stream_memory(ctx, g, &so, &pa, &va, &rep)) DIE("stream: %s", ctr_error_detail());
    const double s = now_s() - t0;
    ctr__cuda_timings tm;
    t0 = now_s();
    if (ctr__cuda_fdk(ctx, g, &o, NULL, proj, CTR_DTYPE_FLOAT32, vol, &tm)) DIE("in-core: %s", ctr_error_detail());
    const double c = now_s() - t0;
    if (i >= 0) {
      ts[i] = s;
      tc[i] = c;
      bp[i] = rep.timings.backproject;
    }
  }
  qsort(ts, (size_t)reps, sizeof(double), cmp_double);
  qsort(tc, (size_t)reps, sizeof(double), cmp_double);
  qsort(bp, (size_t)reps, sizeof(double), cmp_double);
  const double ms = ts[reps / 2], mc = tc[reps / 2];
  char plan[512];
  ctr_plan_describe(&rep.plan, plan, sizeof plan);
  printf("memory %lld^3 from %lld x %lld^2: streamed %.3f s (%s), in-core %.3f s: %+.1f %%\n",
         (long long)a->n, (long long)a->views, (long long)a->det, ms, plan, mc,
         100.0 * (ms / mc - 1.0));
  FILE *f = open_json(a, "bench_ooc memory");
  if (f) {
    fprintf(f,
            "  {\"name\": \"memory-%lld\", \"seconds\": %.4f, \"incore_seconds\": %.4f, "
            "\"overhead_percent\": %.2f, \"backproject_seconds\": %.4f, \"n\": %lld, \"views\": %lld, "
            "\"det\": %lld, \"repeats\": %d, \"plan\": \"%s\"}\n ]}\n",
            (long long)a->n, ms, mc, 100.0 * (ms / mc - 1.0), bp[reps / 2], (long long)a->n,
            (long long)a->views, (long long)a->det, reps, plan);
    fclose(f);
  }
  ctr_context_free(ctx);
  ctr_host_free(proj);
  ctr_host_free(vol);
  free(cproj);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
  ctr_geometry_free(gc);
#else
  (void)a;
  DIE("built without CUDA");
#endif
}

int main(int argc, char **argv) {
  args a = {NULL, ".", "run", NULL, 2048, 1200, 2048, 0, 3, 0, 0, 0};
  if (argc < 2) DIE("usage: bench_ooc gen|run|memory [options] (see the source's header)");
  a.mode = argv[1];
  int det_given = 0;
  for (int i = 2; i < argc; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(k, "--u16")) { a.u16 = 1; continue; }
    if (!v) DIE("%s needs a value", k);
    i++;
    if (!strcmp(k, "--dir")) a.dir = v;
    else if (!strcmp(k, "--name")) a.name = v;
    else if (!strcmp(k, "--json")) a.json = v;
    else if (!strcmp(k, "--n")) a.n = atoll(v);
    else if (!strcmp(k, "--views")) a.views = atoll(v);
    else if (!strcmp(k, "--det")) { a.det = atoll(v); det_given = 1; }
    else if (!strcmp(k, "--repeats")) a.repeats = atoi(v);
    else if (!strcmp(k, "--read-rate")) a.read_rate = atof(v);
    else if (!strcmp(k, "--write-rate")) a.write_rate = atof(v);
    else if (!strcmp(k, "--gpu-mem")) { if (ctr_size_parse(v, &a.gpu_mem)) DIE("%s", ctr_error_detail()); }
    else DIE("unknown option %s", k);
  }
  if (!det_given) a.det = a.n;
  if (a.repeats < 1 || a.repeats > 16) a.repeats = 3;
  if (!strcmp(a.mode, "gen")) gen(&a);
  else if (!strcmp(a.mode, "run")) run(&a);
  else if (!strcmp(a.mode, "memory")) memory(&a);
  else DIE("unknown mode %s", a.mode);
  return 0;
}
