/* RabbitCT's scoring, as its runner does it: reconstructed values are mapped
 * to 12-bit Hounsfield units with the file's scales and compared with the
 * uint16 reference volume voxel by voxel. */
#include "core/internal.h"

#include <math.h>

#define RCT_HU_MAX 4095

/* round(hu0 f + hu1) for f > 0, else 0, clipped to [0, 4095]. !(x > 0)
 * also sends NaN (in f or in the product) to 0. Computed in double so that
 * the result does not depend on float contraction; round() rather than
 * (v + 0.5) because the latter rounds 0.49999999999999994 up. */
static inline uint16_t hu_of(float f, double hu0, double hu1) {
  if (!(f > 0.0f)) return 0;
  const double v = hu0 * (double)f + hu1;
  if (!(v > 0.0)) return 0;
  if (v >= RCT_HU_MAX) return RCT_HU_MAX;
  return (uint16_t)round(v);
}

void ctr_rabbitct_to_hu(const float *f, int64_t n, float hu0, float hu1, uint16_t *out) {
  if (!f || !out || n <= 0) return;
  const double a = hu0, b = hu1;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) out[i] = hu_of(f[i], a, b);
}

ctr_status ctr_rabbitct_score_volume(const float *f, const uint16_t *ref, int64_t L, float hu0,
                                     float hu1, ctr_rabbitct_score *out) {
  if (!f || !ref || !out)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_score_volume: NULL argument");
  /* 65536^3 voxels still index within int64_t. */
  if (L < 1 || L > 65536)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_rabbitct_score_volume: L = %lld, expected 1..65536",
             (long long)L);
  const double a = hu0, b = hu1;
  const int64_t rows = L * L;
  double sse = 0.0, worst = 0.0;
  /* Each row's squared errors are integers summed exactly in int64 (at most
   * L * 65535^2); rows are accumulated in double. */
#pragma omp parallel for schedule(static) reduction(+ : sse) reduction(max : worst)
  for (int64_t row = 0; row < rows; row++) {
    const float *fr = f + row * L;
    const uint16_t *rr = ref + row * L;
    int64_t s = 0;
    int32_t m = 0;
    for (int64_t x = 0; x < L; x++) {
      const int32_t e = (int32_t)hu_of(fr[x], a, b) - (int32_t)rr[x];
      s += (int64_t)e * e;
      const int32_t ae = e < 0 ? -e : e;
      if (ae > m) m = ae;
    }
    sse += (double)s;
    if (m > worst) worst = m;
  }
  out->mse = sse / ((double)rows * (double)L);
  out->rmse = sqrt(out->mse);
  out->max_error = worst;
  /* Identical volumes have no finite PSNR; INFINITY says so unambiguously. */
  out->psnr = out->mse > 0.0 ? 10.0 * log10((double)RCT_HU_MAX * RCT_HU_MAX / out->mse)
                             : INFINITY;
  return CTR_OK;
}
