/* FFT reference for symmetric invariant kernels (Ha et al. 2013's baseline): the
 * view's kernel, untruncated but with the truncated kernel's normalisation,
 * applied as a cyclic convolution on the zero-padded lattice with FFTW
 * (cuFFT on a CUDA context). */
#include "pet/pet.h"

#include <fftw3.h>
#include <stdlib.h>
#include <string.h>

static ctr_status check(ctr_pet_system *s, int64_t view, int64_t pad, const float *in,
                        const float *out) {
  if (!s || !in || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_project_fft: NULL argument");
  if (view < 0 || view >= s->nviews)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "view %lld: expected 0..%lld", (long long)view,
             (long long)s->nviews - 1);
  if (pad < 0 || pad > 4096)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "FFT zero padding %lld voxels: expected 0..4096",
             (long long)pad);
  if (!ctr_pet_system_is_kernel_invariant(s))
    CTR_FAIL(CTR_E_UNSUPPORTED,
             "the FFT reference needs symmetric invariant kernels (same LOR-radial FWHM at "
             "centre and edge, not asymmetric, not custom)");
  return CTR_OK;
}

static ctr_status fft_cpu(ctr_pet_system *s, int64_t view, int64_t pad, const float *in,
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

ctr_status ctr_pet_project_fft(ctr_context *ctx, ctr_pet_system *s, int64_t view, int64_t pad,
                               const float *in, float *out) {
  CTR_CHECK(check(s, view, pad, in, out));
  CTR_CHECK(ctr__gpu_rule(ctx, "ctr_pet_project_fft", 1, in, "in", out, "out"));
#if CTR_HAVE_CUDA
  if (ctx && ctr_context_get_device(ctx) == CTR_DEVICE_CUDA) {
    int dev = ctr__context_gpu(ctx, 0);
    return ctr__pet_cuda_fft(dev, s, view, pad, in, out);
  }
#endif
  return fft_cpu(s, view, pad, in, out);
}
