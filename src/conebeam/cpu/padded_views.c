/* Zero-bordered ("padded") copies of views for the CPU backprojector
 * (projmath.h's layout), with the data policy applied on the way. */
#include "conebeam/cpu/backproject.h"

#include <string.h>

int64_t ctr__fill_padded_columns(const ctr_geometry *g, const void *src, ctr_dtype dtype,
                                 int64_t n, float scale, int64_t nu_out, int64_t col0,
                                 float *dst) {
  const int64_t nu = g->nu, nv = g->nv, size = ctr__padded_size(nu_out, nv);
  const int pitch = ctr__padded_pitch(nu_out);
  int64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
  for (int64_t k = 0; k < n; k++) {
    float *img = dst + k * size;
    memset(img, 0, (size_t)size * sizeof(float));
    float *o = img + ctr__padded_origin(nu_out) + col0;
    for (int64_t v = 0; v < nv; v++) {
      const int64_t s = (k * nv + v) * nu;
      float *row = o + v * pitch;
      if (dtype == CTR_DTYPE_FLOAT32) {
        const float *in = (const float *)src + s;
        for (int64_t u = 0; u < nu; u++) {
          /* The data policy: NaN / Inf / beyond CTR__VALUE_LIMIT would spread
           * over the whole row in the filter. */
          const float x = in[u] * scale;
          const int ok = ctr__value_ok(x);
          bad += !ok;
          row[u] = ok ? x : 0.0f;
        }
      } else {
        const uint16_t *in = (const uint16_t *)src + s;
        for (int64_t u = 0; u < nu; u++) row[u] = (float)in[u] * scale;
      }
    }
  }
  return bad;
}

int64_t ctr__fill_padded_scaled(const ctr_geometry *g, const void *src, ctr_dtype dtype, int64_t n,
                                float scale, float *dst) {
  return ctr__fill_padded_columns(g, src, dtype, n, scale, g->nu, 0, dst);
}

/* Copies n views (float32 or uint16, unpadded) into the padded batch buffer,
 * borders zeroed (x 1 is exact); returns the bad values replaced by 0. */
int64_t ctr__fill_padded(const ctr_geometry *g, const void *src, ctr_dtype dtype, int64_t n,
                         float *dst) {
  return ctr__fill_padded_scaled(g, src, dtype, n, 1.0f, dst);
}

