/* Host vector operations of the iterative algorithms (OpenMP). The
 * elementwise formulas are itmath.h's, never contracted (-ffp-contract=off),
 * so host and device vectors evolve with the same bits; reductions add in
 * double over fixed chunks, independent of the thread count. */
#include "iterative/iterative.h"

#include <stdlib.h>
#include <string.h>

void ctr__hvec_fill(int nt, float *y, int64_t n, float c) {
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t i = 0; i < n; i++) y[i] = c;
}

/* In parallel chunks of CTR__VEC_CHUNK elements. */
void ctr__hvec_copy(int nt, float *dst, const float *src, int64_t n) {
  const int64_t nc = (n + CTR__VEC_CHUNK - 1) / CTR__VEC_CHUNK;
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t c = 0; c < nc; c++) {
    const int64_t i0 = c * CTR__VEC_CHUNK, m = i0 + CTR__VEC_CHUNK < n ? CTR__VEC_CHUNK : n - i0;
    memcpy(dst + i0, src + i0, sizeof(float) * (size_t)m);
  }
}

void ctr__hvec_comb(int nt, float *z, int64_t n, float a, const float *x, float b, const float *y) {
  if (!y || b == 0.0f) {
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t i = 0; i < n; i++) z[i] = CTR__FMUL(a, x[i]);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t i = 0; i < n; i++) z[i] = ctr__it_comb(a, x[i], b, y[i]);
}

void ctr__hvec_mul(int nt, float *z, int64_t n, const float *x, const float *y) {
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t i = 0; i < n; i++) z[i] = CTR__FMUL(x[i], y[i]);
}

void ctr__hvec_recip(int nt, float *y, int64_t n, const float *x, float threshold) {
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t i = 0; i < n; i++) y[i] = ctr__it_recip(x[i], threshold);
}

void ctr__hvec_clip(int nt, float *y, int64_t n, float lo, float hi) {
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t i = 0; i < n; i++) y[i] = ctr__it_clip(y[i], lo, hi);
}

/* sum over i of x[i] y[i] (dist = 0) or (x[i] - y[i])^2 (dist = 1). */
static double reduce(int nt, const float *x, const float *y, int64_t n, int dist) {
  const int64_t nc = (n + CTR__VEC_CHUNK - 1) / CTR__VEC_CHUNK;
  double *part = malloc(sizeof(double) * (size_t)(nc > 0 ? nc : 1));
  if (!part) return NAN; /* 8 bytes per 64 Ki elements: never in practice */
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t c = 0; c < nc; c++) {
    const int64_t i1 = (c + 1) * CTR__VEC_CHUNK < n ? (c + 1) * CTR__VEC_CHUNK : n;
    double s = 0.0;
    for (int64_t i = c * CTR__VEC_CHUNK; i < i1; i++) {
      const double a = x[i], b = y[i];
      s += dist ? (a - b) * (a - b) : a * b;
    }
    part[c] = s;
  }
  double s = 0.0;
  for (int64_t c = 0; c < nc; c++) s += part[c];
  free(part);
  return s;
}

double ctr__hvec_dot(int nt, const float *x, const float *y, int64_t n) {
  return reduce(nt, x, y, n, 0);
}
double ctr__hvec_dist2(int nt, const float *x, const float *y, int64_t n) {
  return reduce(nt, x, y, n, 1);
}

void ctr__hvec_tv_primal(int nt, float *z, const float *g, const float *P, const int64_t n[3], float mu,
                         float lo, float hi) {
  const int64_t nvox = n[0] * n[1] * n[2];
#pragma omp parallel for collapse(2) schedule(static) num_threads(nt)
  for (int64_t k = 0; k < n[2]; k++)
    for (int64_t j = 0; j < n[1]; j++)
      for (int64_t i = 0; i < n[0]; i++) {
        const int64_t c = (k * n[1] + j) * n[0] + i;
        z[c] = ctr__it_tv_primal_at(g, P, c, nvox, i, j, k, n, mu, lo, hi);
      }
}

void ctr__hvec_tv_dual(int nt, float *P, const float *z, const int64_t n[3], float tau) {
  const int64_t nvox = n[0] * n[1] * n[2];
#pragma omp parallel for collapse(2) schedule(static) num_threads(nt)
  for (int64_t k = 0; k < n[2]; k++)
    for (int64_t j = 0; j < n[1]; j++)
      for (int64_t i = 0; i < n[0]; i++)
        ctr__it_tv_dual_at(P, z, (k * n[1] + j) * n[0] + i, nvox, i, j, k, n, tau);
}

void ctr__hvec_penalty(int nt, float *out, const float *x, const float *v, const int64_t n[3],
                       float delta, int64_t z0, int64_t z1) {
#pragma omp parallel for collapse(2) schedule(static) num_threads(nt)
  for (int64_t k = z0; k < z1; k++)
    for (int64_t j = 0; j < n[1]; j++)
      for (int64_t i = 0; i < n[0]; i++) {
        const int64_t c = (k * n[1] + j) * n[0] + i;
        out[c] = ctr__it_penalty_at(x, v, c, i, j, k, n, delta);
      }
}

void ctr__hvec_count_weights(int nt, float *y, int64_t n, const float *x, double i0) {
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t i = 0; i < n; i++) y[i] = ctr__it_count_weight(x[i], i0);
}
