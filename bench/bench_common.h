/* What every benchmark JSON carries besides its cases (docs/design.md): the UTC
 * date and the git revision (CTR_GIT_REVISION, set by scripts/gpu-check.sh;
 * "unknown" otherwise); the median of repeated runs with every run (issue
 * 26); and the contexts of benchmarks that set tuning switches: through the
 * API (docs/tuning.md), never the environment. */
#ifndef CTR_BENCH_COMMON_H
#define CTR_BENCH_COMMON_H

#include "ctrecon.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A failed setup ends the benchmark: the message on stderr, exit status 1. */
#define BENCH_DIE(...)            \
  do {                            \
    fprintf(stderr, __VA_ARGS__); \
    fputc('\n', stderr);          \
    exit(1);                      \
  } while (0)

/* 1 if `name` is one of the comma-separated tokens of `list`. */
static inline int bench_listed(const char *list, const char *name) {
  const size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    const size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && !strncmp(p, name, n)) return 1;
    p += len + (e ? 1 : 0);
  }
  return 0;
}

/* The "cases" list of a benchmark JSON: f (NULL: none) and whether a case
 * was written yet. */
typedef struct bench_json {
  FILE *f;
  int written;
} bench_json;

/* One case object: "{" fmt "}" after the separator the list needs. */
static inline void bench_json_case(bench_json *j, const char *fmt, ...) {
  if (!j->f) return;
  va_list ap;
  fprintf(j->f, "%s    {", j->written ? ",\n" : "");
  j->written = 1;
  va_start(ap, fmt);
  vfprintf(j->f, fmt, ap);
  va_end(ap);
  fputc('}', j->f);
  fflush(j->f);
}

/* A circular cone-beam case: n^3 voxels of `voxel` mm from nviews views of
 * nu x nv pixels of `pitch` mm over 360 degrees. */
typedef struct bench_cone {
  const char *name;
  int64_t n, nu, nv, nviews;
  double voxel, sid, sdd, pitch;
} bench_cone;

/* Lu et al. 2016's sizes: A (RabbitCT-sized), B (their medium case). */
#define BENCH_CASE_A {"A", 512, 1248, 960, 496, 0.5, 750.0, 1200.0, 0.55}
#define BENCH_CASE_B {"B", 1024, 1024, 1024, 1200, 0.25, 1000.0, 1500.0, 0.40}

/* The case's geometry (centred volume) on a detector of the given shape
 * (a cylindrical one: the same pitch as arc lengths); exits on failure. */
static inline ctr_geometry *bench_cone_geometry_shape(const bench_cone *c,
                                                      ctr_detector_shape shape) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.detector = shape;
  p.sid = c->sid;
  p.sdd = c->sdd;
  p.nu = c->nu;
  p.nv = c->nv;
  p.du = p.dv = c->pitch;
  p.nviews = c->nviews;
  ctr_volume_geometry vol = {c->n, c->n, c->n, c->voxel, c->voxel, c->voxel, 0, 0, 0};
  ctr_geometry *g = NULL;
  if (ctr_geometry_create_circular(&p, &vol, &g)) BENCH_DIE("geometry: %s", ctr_error_detail());
  return g;
}

/* The case's geometry on its flat detector. */
static inline ctr_geometry *bench_cone_geometry(const bench_cone *c) {
  return bench_cone_geometry_shape(c, CTR_DETECTOR_FLAT);
}

/* bytes of data into dir/name; exits on failure. */
static inline void bench_save_raw(const char *dir, const char *name, const void *data, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, bytes, f) != bytes) BENCH_DIE("cannot write %s", path);
  fclose(f);
}

/* A context on `device` whose tuning table has kv[2i] = kv[2i+1] for i <
 * n (ctr_tuning_set's text form); NULL, with the reason on stderr, on
 * failure. */
static inline ctr_context *bench_context(ctr_device_kind device, const char *const *kv, int n) {
  ctr_tuning t;
  ctr_context *ctx = NULL;
  ctr_status st = ctr_tuning_init(&t, CTR_TUNING_VERSION);
  for (int i = 0; i < n && st == CTR_OK; i++) st = ctr_tuning_set(&t, kv[2 * i], kv[2 * i + 1]);
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = device;
  co.tuning = &t;
  if (st == CTR_OK) st = ctr_context_create(&co, &ctx);
  if (st != CTR_OK) fprintf(stderr, "context: %s\n", ctr_error_detail());
  return ctx;
}

static inline const char *bench_revision(void) {
  const char *rev = getenv("CTR_GIT_REVISION");
  return rev ? rev : "unknown";
}

/* ISO 8601 UTC time stamp into buf. */
static inline const char *bench_date(char *buf, size_t n) {
  time_t t = time(NULL);
  strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  return buf;
}

static inline int bench_cmp_double(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* The median of x[0 .. n), n <= 64 (the mean of the middle two for even n);
 * x is left as it was. */
static inline double bench_median(const double *x, int n) {
  double s[64];
  if (n < 1) return 0;
  if (n > 64) n = 64;
  memcpy(s, x, sizeof(double) * (size_t)n);
  qsort(s, (size_t)n, sizeof(double), bench_cmp_double);
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

/* "runs": [x0, x1, ...] into a JSON case. */
static inline void bench_json_runs(FILE *f, const double *runs, int n) {
  fprintf(f, "\"runs\": [");
  for (int i = 0; i < n; i++) fprintf(f, "%s%.6f", i ? ", " : "", runs[i]);
  fprintf(f, "]");
}

#endif
