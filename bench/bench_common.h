/* What every benchmark JSON carries besides its cases (DESIGN.md): the UTC
 * date and the git revision (CTR_GIT_REVISION, set by scripts/gpu-check.sh;
 * "unknown" otherwise); and the median of repeated runs with every run
 * (issue 26). */
#ifndef CTR_BENCH_COMMON_H
#define CTR_BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
