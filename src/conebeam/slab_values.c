/* Values of finished subvolumes: their range and the uint16 conversion of
 * the output (the CPU backend and the executor's main thread use them). */
#include "conebeam/fdk_internal.h"
#include "core/projmath.h"

#include <math.h>

/* The data policy for the output (src/core/values.c): a value that is
 * NaN, infinite or beyond CTR__VALUE_LIMIT is replaced by 0 and counted, in
 * the same pass that takes the range. */
int64_t ctr__slab_stats(float *v, int64_t n, float *mn, float *mx) {
  float lo = *mn, hi = *mx;
  int64_t bad = 0;
#pragma omp parallel for reduction(min : lo) reduction(max : hi) reduction(+ : bad) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    float x = v[i];
    if (!ctr__value_ok(x)) {
      v[i] = x = 0.0f;
      bad++;
    }
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  *mn = lo;
  *mx = hi;
  return bad;
}

void ctr__to_u16(const float *v, int64_t n, double scale, uint16_t *out, int64_t *below,
                 int64_t *above) {
  int64_t lo = 0, hi = 0;
  const float s = (float)scale;
#pragma omp parallel for reduction(+ : lo, hi) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float x = v[i] * s;
    if (!(x == x)) {
      out[i] = 0;
    } else if (x < 0.0f) {
      out[i] = 0;
      if (x <= -0.5f) lo++;
    } else if (x >= 65535.5f) {
      out[i] = 65535;
      hi++;
    } else {
      out[i] = (uint16_t)lrintf(x);
    }
  }
  *below += lo;
  *above += hi;
}
