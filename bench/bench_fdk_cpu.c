/* CPU FDK benchmark: backprojection throughput (GUPS = views x voxels /
 * seconds / 1e9, as Lu et al. 2016, Table 1) and the filter stage, median of
 * repeats after a warm-up. Writes JSON (the benchmark layout of docs/design.md).
 *
 *   bench_fdk_cpu [--size N] [--views V] [--det D] [--repeats R] [--batch B] [--json FILE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_common.h"
#include "ctrecon.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define DIE(...)                      \
  do {                                \
    fprintf(stderr, __VA_ARGS__);     \
    fputc('\n', stderr);              \
    return 1;                         \
  } while (0)

int main(int argc, char **argv) {
  int64_t n = 256, views = 360, det = 256;
  int repeats = 3;
  int64_t batch = 0;
  const char *json = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--size") && i + 1 < argc) n = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--views") && i + 1 < argc) views = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--det") && i + 1 < argc) det = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoll(argv[++i]);
    else DIE("usage: %s [--size N] [--views V] [--det D] [--repeats R] [--batch B] [--json FILE]", argv[0]);
  }
  if (n < 1 || views < 1 || det < 1 || repeats < 1 || repeats > 100) DIE("bad sizes");
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 1000;
  p.sdd = 1500;
  p.nu = p.nv = det;
  p.du = p.dv = 1.5 * 1.2 * (double)n / (double)det;
  p.nviews = views;
  ctr_volume_geometry vol = {n, n, n, 1, 1, 1, 0, 0, 0};
  ctr_geometry *g = NULL;
  ctr_context *ctx = NULL;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  if (ctr_geometry_create_circular(&p, &vol, &g) || ctr_context_create(&co, &ctx))
    DIE("setup: %s", ctr_error_detail());
  const size_t np = (size_t)(det * det * views), nv = (size_t)(n * n * n);
  float *proj = malloc(np * sizeof(float)), *vbuf = malloc(nv * sizeof(float));
  if (!proj || !vbuf) DIE("out of memory");
  srand(1);
  for (size_t i = 0; i < np; i++) proj[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  int64_t vd[3] = {n, n, n};
  ctr_array va = ctr_array_make(vbuf, CTR_DTYPE_FLOAT32, 3, vd);
  double *t_bp = calloc((size_t)repeats, sizeof(double));
  double *t_f = calloc((size_t)repeats, sizeof(double));
  float *work = malloc(np * sizeof(float));
  for (int r = -1; r < repeats; r++) { /* r = -1 is the warm-up */
    memcpy(work, proj, np * sizeof(float));
    double t0 = now();
    if (ctr_fdk_filter(ctx, g, NULL, 0, views, work)) DIE("filter: %s", ctr_error_detail());
    double t1 = now();
    memset(vbuf, 0, nv * sizeof(float));
    ctr_fdk_options bo = CTR_FDK_OPTIONS_INIT;
    bo.views_per_batch = batch;
    if (ctr_fdk_backproject(ctx, g, &bo, 0, views, work, &va)) DIE("bp: %s", ctr_error_detail());
    double t2 = now();
    if (r >= 0) {
      t_f[r] = t1 - t0;
      t_bp[r] = t2 - t1;
    }
  }
  const double bp = bench_median(t_bp, repeats), fl = bench_median(t_f, repeats);
  const double gups = (double)views * (double)nv / bp / 1e9;
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  printf("CPU FDK %lld^3 from %lld views of %lld^2, %d threads: backprojection %.3f s (%.3f GUPS), "
         "filter %.3f s, median of %d\n",
         (long long)n, (long long)views, (long long)det, threads, bp, gups, fl, repeats);
  if (json) {
    FILE *f = fopen(json, "w");
    if (!f) DIE("cannot write %s", json);
    char date[32];
    bench_date(date, sizeof date);
    fprintf(f,
            "{\n  \"gpu\": null,\n  \"cpu_threads\": %d,\n  \"date\": \"%s\",\n  \"revision\": \"%s\",\n"
            "  \"command\": \"bench_fdk_cpu --size %lld --views %lld --det %lld --repeats %d\",\n"
            "  \"cases\": [\n    {\"name\": \"cpu-backprojection\", \"seconds\": %.6f, \"gups\": %.4f,"
            " \"volume\": [%lld, %lld, %lld], \"views\": %lld, \"detector\": [%lld, %lld]},\n"
            "    {\"name\": \"cpu-filter\", \"seconds\": %.6f, \"views\": %lld, \"detector\": [%lld, %lld]}\n"
            "  ]\n}\n",
            threads, date, bench_revision(), (long long)n, (long long)views, (long long)det,
            repeats, bp, gups, (long long)n, (long long)n, (long long)n, (long long)views,
            (long long)det, (long long)det, fl, (long long)views, (long long)det, (long long)det);
    fclose(f);
  }
  free(t_bp);
  free(t_f);
  free(work);
  free(proj);
  free(vbuf);
  ctr_geometry_free(g);
  ctr_context_free(ctx);
  return 0;
}
