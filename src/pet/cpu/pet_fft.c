/* The CPU's FFT reference for symmetric invariant kernels (Ha et al. 2013's
 * baseline): the view's kernel, untruncated but with the truncated kernel's
 * normalisation, applied as a cyclic convolution on the zero-padded lattice
 * with FFTW (the CUDA backend's with cuFFT; ctr_pet_project_fft, in
 * pet_projector.c, checks the arguments and dispatches). */
#include "pet/pet.h"

#include <fftw3.h>
#include <stdlib.h>
#include <string.h>

ctr_status ctr__pet_fft_cpu(ctr_pet_system *s, int64_t view, int64_t pad, const float *in,
                            float *out) {
  const ctr_pet_params *p = &s->p;
  const int64_t n[3] = {p->nx + 2 * pad, p->ny + 2 * pad, p->nz + 2 * pad};
  const int64_t nr = n[0] * n[1] * n[2], nc = (n[0] / 2 + 1) * n[1] * n[2];
  ctr_status st = CTR_OK;
  double *k = fftw_malloc((size_t)nr * sizeof(double)), *x = fftw_malloc((size_t)nr * sizeof(double));
  fftw_complex *K = fftw_malloc((size_t)nc * sizeof(fftw_complex));
  fftw_complex *X = fftw_malloc((size_t)nc * sizeof(fftw_complex));
  fftw_plan fk = NULL, fx = NULL, bx = NULL;
  if (!k || !x || !K || !X)
    CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "FFT reference: no memory for %lld-voxel arrays",
                  (long long)nr);
  CTR_CHECK_GOTO(st, ctr__pet_fft_kernel(s, view, n, k));
  memset(x, 0, (size_t)nr * sizeof(double));
  for (int64_t z = 0; z < p->nz; z++)
    for (int64_t y = 0; y < p->ny; y++)
      for (int64_t i = 0; i < p->nx; i++)
        x[((z + pad) * n[1] + y + pad) * n[0] + i + pad] = in[(z * p->ny + y) * p->nx + i];
  /* FFTW's dims are slowest first */
  fk = fftw_plan_dft_r2c_3d((int)n[2], (int)n[1], (int)n[0], k, K, FFTW_ESTIMATE);
  fx = fftw_plan_dft_r2c_3d((int)n[2], (int)n[1], (int)n[0], x, X, FFTW_ESTIMATE);
  bx = fftw_plan_dft_c2r_3d((int)n[2], (int)n[1], (int)n[0], X, x, FFTW_ESTIMATE);
  if (!fk || !fx || !bx) CTR_FAIL_GOTO(st, CTR_E_FFT, "FFTW could not plan a %lld^3-ish transform", (long long)n[0]);
  fftw_execute(fk);
  fftw_execute(fx);
  for (int64_t i = 0; i < nc; i++) {
    double re = X[i][0] * K[i][0] - X[i][1] * K[i][1];
    double im = X[i][0] * K[i][1] + X[i][1] * K[i][0];
    X[i][0] = re / nr, X[i][1] = im / nr;
  }
  fftw_execute(bx);
  for (int64_t z = 0; z < p->nz; z++)
    for (int64_t y = 0; y < p->ny; y++)
      for (int64_t i = 0; i < p->nx; i++)
        out[(z * p->ny + y) * p->nx + i] = (float)x[((z + pad) * n[1] + y + pad) * n[0] + i + pad];
cleanup:
  if (fk) fftw_destroy_plan(fk);
  if (fx) fftw_destroy_plan(fx);
  if (bx) fftw_destroy_plan(bx);
  fftw_free(k), fftw_free(x), fftw_free(K), fftw_free(X);
  return st;
}
