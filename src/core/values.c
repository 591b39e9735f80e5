/* The one policy for non-finite and out-of-range data (docs/architecture.md,
 * "Bad values"): values that are NaN, infinite or larger in magnitude than
 * CTR__VALUE_LIMIT are counted and replaced by 0, and the count is reported
 * (a warning through the context's log); in strict mode any such value is an
 * error naming what held it. Every command and library entry point that
 * takes data or writes results uses these helpers. */
#include "core/projmath.h"
#include "core/internal.h"

int64_t ctr__values_count(const float *v, int64_t n) {
  int64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
  for (int64_t i = 0; i < n; i++) bad += !ctr__value_ok(v[i]);
  return bad;
}

int64_t ctr__values_sanitize_nonneg(float *v, int64_t n) {
  int64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
  for (int64_t i = 0; i < n; i++)
    if (!(v[i] >= 0.0f && ctr__value_ok(v[i]))) {
      v[i] = 0.0f;
      bad++;
    }
  return bad;
}

/* The sum, when asked, in at most SUM_PIECES pieces whose bounds depend on n
 * only, each summed in order in double and the pieces added in order: the
 * same bits for any thread count (an OpenMP reduction of the sum would not
 * be). One pass over v for both answers: the PET reconstruction's data check
 * and uniform start (a serial sum of 0.5 GB took 0.1 s of its first
 * iteration). */
enum { SUM_PIECES = 4096 };

int64_t ctr__values_count_nonneg(const float *v, int64_t n, double *sum) {
  int64_t bad = 0;
  if (!sum) {
#pragma omp parallel for schedule(static) reduction(+ : bad)
    for (int64_t i = 0; i < n; i++) bad += !(v[i] >= 0.0f && ctr__value_ok(v[i]));
    return bad;
  }
  double part[SUM_PIECES];
  const int64_t len = n / SUM_PIECES + 1, pieces = (n + len - 1) / len;
#pragma omp parallel for schedule(static) reduction(+ : bad)
  for (int64_t k = 0; k < pieces; k++) {
    const int64_t end = (k + 1) * len < n ? (k + 1) * len : n;
    double s = 0;
    for (int64_t i = k * len; i < end; i++) {
      const int ok = v[i] >= 0.0f && ctr__value_ok(v[i]);
      bad += !ok;
      s += ok ? v[i] : 0.0; /* a bad value counts as the 0 that replaces it */
    }
    part[k] = s;
  }
  *sum = 0;
  for (int64_t k = 0; k < pieces; k++) *sum += part[k];
  return bad;
}

int64_t ctr__values_sanitize(float *v, int64_t n) {
  int64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
  for (int64_t i = 0; i < n; i++)
    if (!ctr__value_ok(v[i])) {
      v[i] = 0.0f;
      bad++;
    }
  return bad;
}

ctr_status ctr__values_report_kind(const ctr_context *ctx, int strict, int64_t bad,
                                   const char *what, const char *kind, const char *fate) {
  if (bad <= 0) return CTR_OK;
  if (strict)
    CTR_FAIL(CTR_E_FORMAT, "%s: %lld %s: expected none (strict mode); fix the data, or drop "
             "strict mode to accept them (%s)", what, (long long)bad, kind, fate);
  ctr__log(ctx, CTR_LOG_WARNING, "%s: %lld %s, %s", what, (long long)bad, kind, fate);
  return CTR_OK;
}

ctr_status ctr__values_report(const ctr_context *ctx, int strict, int64_t bad, const char *what) {
  return ctr__values_report_kind(ctx, strict, bad, what, CTR__BAD_VALUES, "replaced by 0");
}
