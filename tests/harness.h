/* Minimal test harness: CHECK-style assertions that report file:line and keep
 * going, a final summary, exit 1 on any failure, 77 to skip. A test cannot
 * pass vacuously: th_finish fails one that ran no check, and setup that a test
 * function depends on is a check (REQUIRE, or a CHECK before the return), never
 * a silent early return. */
#ifndef CTR_TEST_HARNESS_H
#define CTR_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrecon.h"

static int th_checks = 0, th_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    th_checks++;                                                               \
    if (!(cond)) {                                                             \
      th_failures++;                                                           \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#define CHECK_MSG(cond, ...)                                           \
  do {                                                                 \
    th_checks++;                                                       \
    if (!(cond)) {                                                     \
      th_failures++;                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                    \
      fputc('\n', stderr);                                             \
    }                                                                  \
  } while (0)

/* Numeric closeness with the values printed on failure. */
#define CHECK_NEAR(a, b, tol)                                                       \
  do {                                                                              \
    double th_a = (double)(a), th_b = (double)(b), th_t = (double)(tol);            \
    th_checks++;                                                                    \
    if (!(fabs(th_a - th_b) <= th_t)) {                                             \
      th_failures++;                                                                \
      fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.9g, %s = %.9g, |diff| %.3g > %.3g\n", \
              __FILE__, __LINE__, #a, th_a, #b, th_b, fabs(th_a - th_b), th_t);      \
    }                                                                               \
  } while (0)

/* A call that must succeed; prints the status and detail otherwise. */
#define CHECK_OK(expr)                                                              \
  do {                                                                              \
    ctr_status th_s = (expr);                                                       \
    th_checks++;                                                                    \
    if (th_s != CTR_OK) {                                                           \
      th_failures++;                                                                \
      fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #expr,     \
              ctr_status_name(th_s), ctr_error_detail());                           \
    }                                                                               \
  } while (0)

/* A call that must fail with `status` and a detail containing `needle`. */
#define CHECK_FAILS(expr, status, needle)                                           \
  do {                                                                              \
    ctr_error_clear();                                                              \
    ctr_status th_s = (expr);                                                       \
    th_checks++;                                                                    \
    if (th_s != (status) || !strstr(ctr_error_detail(), (needle))) {                \
      th_failures++;                                                                \
      fprintf(stderr, "%s:%d: %s: expected %s with '%s', got %s: '%s'\n", __FILE__, \
              __LINE__, #expr, #status, (needle), ctr_status_name(th_s),            \
              ctr_error_detail());                                                  \
    }                                                                               \
  } while (0)

/* A precondition of the rest of a test function (a void function): counted
 * as a check; when it fails, the function returns. */
#define REQUIRE(cond)                                                                \
  do {                                                                               \
    th_checks++;                                                                     \
    if (!(cond)) {                                                                   \
      th_failures++;                                                                 \
      fprintf(stderr, "%s:%d: REQUIRE failed, the rest of %s is not run: %s\n",      \
              __FILE__, __LINE__, __func__, #cond);                                  \
      return;                                                                        \
    }                                                                                \
  } while (0)

/* The summary line and the exit status: 1 on any failed check, and also when
 * no check ran at all (a test that checks nothing proves nothing; a test that
 * cannot run here returns 77 instead). */
static inline int th_finish(const char *name) {
  printf("%s: %d checks, %d failed\n", name, th_checks, th_failures);
  if (th_checks == 0) {
    fprintf(stderr, "%s: FAILED: no check ran\n", name);
    return 1;
  }
  return th_failures ? 1 : 0;
}

/* Deterministic pseudo-random numbers for tests (xorshift64*). */
static unsigned long long th_rng_state = 0x9E3779B97F4A7C15ull;
static inline double th_uniform(double lo, double hi) {
  th_rng_state ^= th_rng_state >> 12;
  th_rng_state ^= th_rng_state << 25;
  th_rng_state ^= th_rng_state >> 27;
  unsigned long long r = th_rng_state * 0x2545F4914F6CDD1Dull;
  return lo + (hi - lo) * (double)(r >> 11) / 9007199254740992.0;
}

/* n floats uniform in [lo, hi) (malloc'ed; NULL when out of memory). */
static inline float *th_randoms(int64_t n, double lo, double hi) {
  float *v = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; v && i < n; i++) v[i] = (float)th_uniform(lo, hi);
  return v;
}

/* The dot product of two float arrays, in double. */
static inline double th_dot(const float *a, const float *b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += (double)a[i] * b[i];
  return s;
}

/* Relative RMS difference of a from b over n values (INFINITY when b is all
 * zero): float and double references. */
static inline double th_rel_rms_f(const float *a, const float *b, int64_t n) {
  double e = 0, s = 0;
  for (int64_t i = 0; i < n; i++) {
    e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    s += (double)b[i] * b[i];
  }
  return s > 0 ? sqrt(e / s) : INFINITY;
}
static inline double th_rel_rms_d(const float *a, const double *b, int64_t n) {
  double e = 0, s = 0;
  for (int64_t i = 0; i < n; i++) {
    e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    s += b[i] * b[i];
  }
  return s > 0 ? sqrt(e / s) : INFINITY;
}

/* A circular scan's parameters (the rest at their defaults). */
static inline ctr_circular_params th_circular_params(double sid, double sdd, int64_t nu,
                                                     int64_t nv, double du, double dv,
                                                     int64_t nviews, ctr_detector_shape shape) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = sid;
  p.sdd = sdd;
  p.nu = nu;
  p.nv = nv;
  p.du = du;
  p.dv = dv;
  p.nviews = nviews;
  p.detector = shape;
  return p;
}

/* Replaces *g by the same views with every matrix element (but P[2][3])
 * scaled by 1 +- up to `amount`: an arbitrary (tilted, skewed) orbit for
 * tests of the general path. Frees the old geometry; *g is NULL on failure. */
static inline void th_perturb_geometry(ctr_geometry **g, double amount) {
  if (!*g) return;
  const int64_t n = ctr_geometry_get_view_count(*g);
  int64_t nu, nv;
  ctr_geometry_get_detector(*g, &nu, &nv, NULL, NULL);
  const ctr_volume_geometry vol = ctr_geometry_get_volume(*g);
  double *M = malloc(sizeof(double) * 12 * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    ctr_geometry_get_matrix(*g, i, M + 12 * i);
    for (int k = 0; k < 11; k++) M[12 * i + k] *= 1 + th_uniform(-amount, amount);
  }
  ctr_geometry *h = NULL;
  CHECK_OK(ctr_geometry_create_matrices(nu, nv, 0, 0, n, M, &vol, &h));
  free(M);
  ctr_geometry_free(*g);
  *g = h;
}


/* The contexts of a test built for both backends (RTK's one source for the CPU
 * and CUDA): *cpu a CPU context, *ctx a CUDA one in the CTR_TEST_CUDA variant
 * (the CPU one otherwise). Returns 0; 77 (ctest's skip) when the GPU variant
 * finds no usable GPU, after printing "NAME: SKIPPED"; 1 on an error. */
static inline int th_contexts(const char *name, ctr_context **cpu, ctr_context **ctx) {
#ifdef CTR_TEST_CUDA
  if (ctr_cuda_get_device_count() < 1) {
    printf("%s: SKIPPED (no usable GPU)\n", name);
    return 77;
  }
#endif
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  if (ctr_context_create(&co, cpu) != CTR_OK) {
    fprintf(stderr, "CPU context: %s\n", ctr_error_detail());
    return 1;
  }
#ifdef CTR_TEST_CUDA
  co.device = CTR_DEVICE_CUDA;
  if (ctr_context_create(&co, ctx) != CTR_OK) {
    fprintf(stderr, "CUDA context: %s\n", ctr_error_detail());
    ctr_context_free(*cpu);
    return 1;
  }
#else
  *ctx = *cpu;
#endif
  return 0;
}

#endif
