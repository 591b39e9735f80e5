/* What every benchmark JSON carries besides its cases (docs/design.md): the UTC
 * date and the git revision (CTR_GIT_REVISION, set by scripts/gpu-check.sh;
 * "unknown" otherwise); the median of repeated runs with every run (issue
 * 26); and the contexts of benchmarks that set tuning switches: through the
 * API (docs/tuning.md), never the environment. */
#ifndef CTR_BENCH_COMMON_H
#define CTR_BENCH_COMMON_H

#include "ctrecon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* Median of n <= 64 values (the upper one of the middle two for even n). */
static inline double bench_median(const double *x, int n) {
  double s[64];
  if (n < 1) return 0;
  if (n > 64) n = 64;
  memcpy(s, x, sizeof(double) * (size_t)n);
  qsort(s, (size_t)n, sizeof(double), bench_cmp_double);
  return s[n / 2];
}

/* "runs": [x0, x1, ...] into a JSON case. */
static inline void bench_json_runs(FILE *f, const double *runs, int n) {
  fprintf(f, "\"runs\": [");
  for (int i = 0; i < n; i++) fprintf(f, "%s%.6f", i ? ", " : "", runs[i]);
  fprintf(f, "]");
}

#endif
