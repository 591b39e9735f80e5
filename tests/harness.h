/* Minimal test harness: CHECK-style assertions that report file:line and keep
 * going, a final summary, exit 1 on any failure, 77 to skip. */
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

static inline int th_finish(const char *name) {
  printf("%s: %d checks, %d failed\n", name, th_checks, th_failures);
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

#endif
