/* cuFFT reference convolution for symmetric invariant kernels (the GPU form
 * of pet_fft.c): the kernel's spectrum is computed once per call, then
 * forward transform of the zero-padded image, product, inverse transform. */
#include "gpu/cuda_timing.cuh"
#include "gpu/gpu_buffers.h"
#include "pet/cuda/pet_cuda.h"

#include <stdlib.h>

__global__ void pet_fft_multiply(cufftComplex *x, const cufftComplex *__restrict__ k, long long n,
                                 float scale) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  cufftComplex a = x[i], b = k[i];
  x[i] = make_cuFloatComplex((a.x * b.x - a.y * b.y) * scale, (a.x * b.y + a.y * b.x) * scale);
}

/* Lattice image <-> the padded FFT grid (dir 0: embed with zeros, 1: extract). */
__global__ void pet_fft_embed(float *grid, float *img, int nx, int ny, int nz, int gx, int gy,
                              int pad, int dir) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
  if (x >= nx) return;
  long long gi = ((long long)(z + pad) * gy + y + pad) * gx + x + pad;
  long long ii = ((long long)z * ny + y) * nx + x;
  if (dir == 0)
    grid[gi] = img[ii];
  else
    img[ii] = grid[gi];
}

/* One call's buffers, from ctx's GPU buffer cache (ctx NULL: allocated and
 * freed), and plans. */
typedef struct fft_state {
  const ctr_context *ctx;
  int n[3];
  long long nr, nc, nimg;
  float *grid, *img;
  cufftComplex *spec, *kspec;
  cufftHandle fwd, inv;
  int have_fwd, have_inv;
} fft_state;

static void fft_free(fft_state *f) {
  cudaDeviceSynchronize(); /* the buffers go back unused */
  if (f->have_fwd) cufftDestroy(f->fwd);
  if (f->have_inv) cufftDestroy(f->inv);
  GPU_PUT(f->ctx, f->grid, (size_t)f->nr * sizeof(float));
  GPU_PUT(f->ctx, f->img, (size_t)f->nimg * sizeof(float));
  GPU_PUT(f->ctx, f->spec, (size_t)f->nc * sizeof(cufftComplex));
  GPU_PUT(f->ctx, f->kspec, (size_t)f->nc * sizeof(cufftComplex));
}

static ctr_status fft_setup(const ctr_context *ctx, ctr_pet_system *s, int64_t view, int64_t pad,
                            fft_state *f) {
  ctr_status st = CTR_OK;
  const ctr_pet_params *p = &s->p;
  f->ctx = ctx;
  f->nimg = (long long)(p->nx * p->ny * p->nz);
  const int64_t n[3] = {p->nx + 2 * pad, p->ny + 2 * pad, p->nz + 2 * pad};
  float *hk = NULL;
  double *dk = NULL;
  for (int i = 0; i < 3; i++) f->n[i] = (int)n[i];
  f->nr = n[0] * n[1] * n[2], f->nc = (n[0] / 2 + 1) * n[1] * n[2];
  dk = (double *)ctr__malloc((size_t)f->nr * sizeof(double), "FFT kernel");
  hk = (float *)ctr__malloc((size_t)f->nr * sizeof(float), "FFT kernel");
  if (!dk || !hk) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "%s", ctr_error_detail());
  CTR_CHECK_GOTO(st, ctr__pet_fft_kernel(s, view, n, dk));
  for (long long i = 0; i < f->nr; i++) hk[i] = (float)dk[i];
  GPU_GET(ctx, f->grid, (size_t)f->nr * sizeof(float), "PET FFT grid");
  GPU_GET(ctx, f->img, (size_t)f->nimg * sizeof(float), "PET FFT image");
  GPU_GET(ctx, f->spec, (size_t)f->nc * sizeof(cufftComplex), "PET FFT spectrum");
  GPU_GET(ctx, f->kspec, (size_t)f->nc * sizeof(cufftComplex), "PET FFT kernel spectrum");
  /* the plans' work areas: after the kept buffers when the GPU is full */
  CUFFT(ctr__gpu_retry(ctx, CUFFT_SUCCESS, [&] {
    return cufftPlan3d(&f->fwd, f->n[2], f->n[1], f->n[0], CUFFT_R2C);
  }));
  f->have_fwd = 1;
  CUFFT(ctr__gpu_retry(ctx, CUFFT_SUCCESS, [&] {
    return cufftPlan3d(&f->inv, f->n[2], f->n[1], f->n[0], CUFFT_C2R);
  }));
  f->have_inv = 1;
  CU(cudaMemcpy(f->grid, hk, (size_t)f->nr * sizeof(float), cudaMemcpyHostToDevice));
  CUFFT(cufftExecR2C(f->fwd, f->grid, f->kspec));
cleanup:
  free(dk), free(hk);
  return st;
}

/* grid <- image embedded, forward, product, inverse; image <- extracted. */
static ctr_status fft_apply(const ctr_pet_params *p, int64_t pad, fft_state *f) {
  ctr_status st = CTR_OK;
  dim3 g((unsigned)((p->nx + 127) / 128), (unsigned)p->ny, (unsigned)p->nz);
  CU(cudaMemset(f->grid, 0, (size_t)f->nr * sizeof(float)));
  pet_fft_embed<<<g, 128>>>(f->grid, f->img, (int)p->nx, (int)p->ny, (int)p->nz, f->n[0], f->n[1],
                            (int)pad, 0);
  CU_LAUNCHED("pet_fft_embed");
  CUFFT(cufftExecR2C(f->fwd, f->grid, f->spec));
  pet_fft_multiply<<<(unsigned)((f->nc + 255) / 256), 256>>>(f->spec, f->kspec, f->nc,
                                                            1.0f / (float)f->nr);
  CU_LAUNCHED("pet_fft_multiply");
  CUFFT(cufftExecC2R(f->inv, f->spec, f->grid));
  pet_fft_embed<<<g, 128>>>(f->grid, f->img, (int)p->nx, (int)p->ny, (int)p->nz, f->n[0], f->n[1],
                            (int)pad, 1);
  CU_LAUNCHED("pet_fft_embed");
cleanup:
  return st;
}

ctr_status ctr__pet_cuda_fft(const ctr_context *ctx, int device, ctr_pet_system *s, int64_t view,
                             int64_t pad, const float *in, float *out) {
  ctr_status st = CTR_OK;
  fft_state f = {};
  const ctr_pet_params *p = &s->p;
  const size_t bytes = (size_t)(p->nx * p->ny * p->nz) * sizeof(float);
  CU_DEVICE(device);
  CTR_CHECK_GOTO(st, fft_setup(ctx, s, view, pad, &f));
  CU(cudaMemcpy(f.img, in, bytes, cudaMemcpyDefault)); /* host or GPU memory */
  CTR_CHECK_GOTO(st, fft_apply(p, pad, &f));
  CU(cudaMemcpy(out, f.img, bytes, cudaMemcpyDefault));
  CU(cudaStreamSynchronize(0)); /* a device-to-device copy returns before it ends */
cleanup:
  fft_free(&f);
  return st;
}

typedef struct fft_time_args {
  const ctr_pet_params *p;
  int64_t pad;
  fft_state *f;
} fft_time_args;

static ctr_status fft_time_work(void *arg) {
  fft_time_args *a = (fft_time_args *)arg;
  return fft_apply(a->p, a->pad, a->f);
}

/* Benchmark hook: median device time (ms) of one view's convolution with
 * the kernel spectrum ready and the image on the GPU (no context: its
 * buffers are allocated and freed). */
extern "C" ctr_status ctr__pet_cuda_fft_time(int device, ctr_pet_system *s, int64_t view,
                                             int64_t pad, const float *in, int reps, double *ms) {
  ctr_status st = CTR_OK;
  fft_state f = {};
  const ctr_pet_params *p = &s->p;
  fft_time_args a = {p, pad, &f};
  CU_DEVICE(device);
  CTR_CHECK_GOTO(st, fft_setup(NULL, s, view, pad, &f));
  CU(cudaMemcpy(f.img, in, (size_t)(p->nx * p->ny * p->nz) * sizeof(float), cudaMemcpyHostToDevice));
  st = ctr__cuda_median_ms(0, reps, fft_time_work, &a, ms);
cleanup:
  fft_free(&f);
  return st;
}
