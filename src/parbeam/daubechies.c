/* The Daubechies filters of the wavelet stripe removal, computed by
 * spectral factorisation (Daubechies 1988), shared by the CPU and GPU
 * filters (cpu/stripes_cpu.c, cuda/corrections_cuda.cu). */
#include "parbeam/sync.h"

#include <complex.h>
#include <math.h>

ctr_status ctr__daubechies(int n, double *h) {
  if (n < 1 || n > 10) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "Daubechies order %d: expected 1 .. 10", n);
  /* P(y) = sum_k C(n - 1 + k, k) y^k; its roots y_j give the zeros z_j of the
   * filter inside the unit circle through y = (2 - z - 1/z) / 4. */
  double p[10];
  for (int k = 0; k < n; k++) {
    double c = 1.0;
    for (int i = 1; i <= k; i++) c = c * (double)(n - 1 + i) / (double)i;
    p[k] = c;
  }
  const int deg = n - 1;
  double complex root[10];
  /* Durand-Kerner on the monic polynomial */
  for (int j = 0; j < deg; j++) root[j] = cpow(0.4 + 0.9 * I, j);
  for (int it = 0; it < 500; it++) {
    double moved = 0;
    for (int j = 0; j < deg; j++) {
      double complex v = 1.0;
      for (int k = deg - 1; k >= 0; k--) v = v * root[j] + p[k] / p[deg];
      double complex d = 1.0;
      for (int i = 0; i < deg; i++)
        if (i != j) d *= root[j] - root[i];
      const double complex step = v / d;
      root[j] -= step;
      moved = fmax(moved, cabs(step));
    }
    if (moved < 1e-15) break;
  }
  /* (1 + z)^n prod (z - z_j), ascending powers */
  double complex c[21] = {1.0};
  int len = 1;
  for (int k = 0; k < n; k++, len++)
    for (int i = len; i > 0; i--) c[i] += c[i - 1];
  for (int j = 0; j < deg; j++) {
    const double complex b = 1.0 - 2.0 * root[j], s = csqrt(b * b - 1.0);
    double complex z = b + s;
    if (cabs(z) > 1.0) z = b - s;
    for (int i = len; i > 0; i--) c[i] = c[i - 1] - z * c[i];
    c[0] = -z * c[0];
    len++;
  }
  double sum = 0;
  for (int i = 0; i < 2 * n; i++) sum += creal(c[i]);
  for (int i = 0; i < 2 * n; i++) h[i] = creal(c[i]) * sqrt(2.0) / sum;
  return CTR_OK;
}
