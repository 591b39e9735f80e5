/* Device vectors of the iterative algorithms and their operations: the
 * formulas of itmath.h (never contracted: the _rn intrinsics), so a vector
 * evolves with the bits it has on the host; reductions in double, partial
 * sums per block added on the host in block order (deterministic). Memory
 * bound kernels: grid-stride loops of 256 threads. */
#include <cuda_runtime.h>

#include "gpu/cuda_util.h"
#include "gpu/host_transfer.h"
#include "gpu/gpu_buffers.h"
#include "iterative/cuda/iterative_cuda.h"

#define THREADS 256
#define RED_BLOCKS CTR__IT_RED_BLOCKS

static unsigned blocks_for(int64_t n) {
  const int64_t b = (n + THREADS - 1) / THREADS;
  return (unsigned)(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

/* Vector operations run on the default stream; the projections' stream is
 * a blocking one, so the two wait for each other. */

/* A vector's bytes: its buffer's size in the context's GPU buffer cache
 * (src/gpu/gpu_buffers.h), asked for and given back alike. */
static size_t vec_bytes(int64_t n) { return sizeof(float) * (size_t)(n > 0 ? n : 1); }

ctr_status ctr__it_cuda_alloc(ctr_projector *p, int64_t n, ctr__vec *out) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  out->data = NULL;
  out->n = n;
  out->device = 1;
  GPU_GET(p->ctx, out->data, vec_bytes(n), "iterative vector");
  CU(cudaMemset(out->data, 0, sizeof(float) * (size_t)n)); /* a kept buffer holds old values */
cleanup:
  if (st != CTR_OK && out->data) {
    GPU_PUT(p->ctx, out->data, vec_bytes(n));
    out->data = NULL;
  }
  return st;
}

void ctr__it_cuda_free(ctr_projector *p, ctr__vec *v) {
  if (!v->data) return;
  cudaSetDevice(p->gpu);
  /* the vector operations (default stream) and the projections (a
   * blocking stream) that use it have finished before another run may get
   * it from the cache (cudaFree waited likewise) */
  cudaDeviceSynchronize();
  ctr__gpu_buffer_put(p->ctx, p->gpu, v->data, vec_bytes(v->n));
  v->data = NULL;
}

ctr_status ctr__it_cuda_copy(ctr_projector *p, float *dst, int dst_device, const float *src,
                             int src_device, int64_t n) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  /* flag 0: host memory as far as the backend knows (a caller's array may
   * still be GPU memory: the layer's direct path, UVA tells) */
  /* a host side through the host-transfer layer (staged when pageable) */
  const size_t bytes = sizeof(float) * (size_t)n;
  if (!dst_device != !src_device) {
    ctr__xfer x;
    CTR_CHECK_GOTO(st, ctr__xfer_init(&x, p->ctx));
    st = !src_device ? ctr__xfer_h2d(&x, dst, src, bytes, 0, 1, NULL)
                        : ctr__xfer_d2h(&x, dst, src, bytes, 0, 1, NULL);
    if (st == CTR_OK) CU(cudaStreamSynchronize(0));
    ctr__xfer_free(&x);
    goto cleanup;
  }
  CU(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
cleanup:
  return st;
}

#define GRID_STRIDE(i, n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

__global__ void k_fill(float *y, long long n, float c) {
  GRID_STRIDE(i, n) y[i] = c;
}
__global__ void k_scale(float *z, long long n, float a, const float *x) {
  GRID_STRIDE(i, n) z[i] = CTR__FMUL(a, x[i]);
}
__global__ void k_comb(float *z, long long n, float a, const float *x, float b, const float *y) {
  GRID_STRIDE(i, n) z[i] = ctr__it_comb(a, x[i], b, y[i]);
}
__global__ void k_mul(float *z, long long n, const float *x, const float *y) {
  GRID_STRIDE(i, n) z[i] = CTR__FMUL(x[i], y[i]);
}
__global__ void k_recip(float *y, long long n, const float *x, float t) {
  GRID_STRIDE(i, n) y[i] = ctr__it_recip(x[i], t);
}
__global__ void k_clip(float *y, long long n, float lo, float hi) {
  GRID_STRIDE(i, n) y[i] = ctr__it_clip(y[i], lo, hi);
}

/* Partial sums of x y (dist 0) or (x - y)^2 (dist 1) per block. */
__global__ void k_dot(const float *x, const float *y, long long n, int dist, double *part) {
  __shared__ double sh[THREADS];
  double s = 0.0;
  GRID_STRIDE(i, n) {
    const double a = x[i], b = y[i];
    s += dist ? (a - b) * (a - b) : a * b;
  }
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int h = THREADS / 2; h > 0; h >>= 1) {
    if ((int)threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.x] = sh[0];
}

#define LAUNCH(kernel, n, ...)                                        \
  do {                                                                \
    kernel<<<blocks_for(n), THREADS>>>(__VA_ARGS__);                  \
    CU_LAUNCHED(#kernel);                                             \
  } while (0)

ctr_status ctr__it_cuda_fill(ctr_projector *p, float *y, int64_t n, float c) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  LAUNCH(k_fill, n, y, n, c);
cleanup:
  return st;
}

ctr_status ctr__it_cuda_comb(ctr_projector *p, float *z, int64_t n, float a, const float *x, float b,
                             const float *y) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  if (!y || b == 0.0f)
    LAUNCH(k_scale, n, z, n, a, x);
  else
    LAUNCH(k_comb, n, z, n, a, x, b, y);
cleanup:
  return st;
}

ctr_status ctr__it_cuda_mul(ctr_projector *p, float *z, int64_t n, const float *x, const float *y) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  LAUNCH(k_mul, n, z, n, x, y);
cleanup:
  return st;
}

ctr_status ctr__it_cuda_recip(ctr_projector *p, float *y, int64_t n, const float *x, float threshold) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  LAUNCH(k_recip, n, y, n, x, threshold);
cleanup:
  return st;
}

ctr_status ctr__it_cuda_clip(ctr_projector *p, float *y, int64_t n, float lo, float hi) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  LAUNCH(k_clip, n, y, n, lo, hi);
cleanup:
  return st;
}

ctr_status ctr__it_cuda_dot(ctr_projector *p, const float *x, const float *y, int64_t n, int dist,
                            double *out) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  double *d_part = NULL, h[RED_BLOCKS];
  unsigned long long *d_count;
  CTR_CHECK(ctr__it_cuda_scratch(p, &d_part, &d_count));
  k_dot<<<RED_BLOCKS, THREADS>>>(x, y, n, dist, d_part);
  CU_LAUNCHED("k_dot");
  CU(cudaMemcpy(h, d_part, sizeof h, cudaMemcpyDeviceToHost));
  {
    double s = 0.0;
    for (int b = 0; b < RED_BLOCKS; b++) s += h[b];
    *out = s;
  }
cleanup:
  return st;
}

ctr_status ctr__it_cuda_sanitize(ctr_projector *p, float *v, int64_t n, int64_t *bad) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  unsigned long long *d_count = NULL, count = 0;
  double *d_part;
  CTR_CHECK(ctr__it_cuda_scratch(p, &d_part, &d_count));
  CU(cudaMemset(d_count, 0, sizeof *d_count));
  CTR_CHECK_GOTO(st, ctr__gpu_sanitize(v, (long long)n, d_count, 0));
  CU(cudaMemcpy(&count, d_count, sizeof count, cudaMemcpyDeviceToHost));
  *bad += (int64_t)count;
cleanup:
  return st;
}

/* TV steps: one thread per voxel, x fastest. */
typedef struct vol_dims {
  long long n[3];
} vol_dims;

__global__ void k_tv_primal(float *z, const float *g, const float *P, vol_dims d, float mu, float lo,
                            float hi) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y, k = blockIdx.z;
  if (i >= d.n[0]) return;
  const int64_t n[3] = {d.n[0], d.n[1], d.n[2]};
  const long long c = (k * d.n[1] + j) * d.n[0] + i;
  z[c] = ctr__it_tv_primal_at(g, P, c, d.n[0] * d.n[1] * d.n[2], i, j, k, n, mu, lo, hi);
}

__global__ void k_tv_dual(float *P, const float *z, vol_dims d, float tau) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y, k = blockIdx.z;
  if (i >= d.n[0]) return;
  const int64_t n[3] = {d.n[0], d.n[1], d.n[2]};
  ctr__it_tv_dual_at(P, z, (k * d.n[1] + j) * d.n[0] + i, d.n[0] * d.n[1] * d.n[2], i, j, k, n, tau);
}

static dim3 vol_blocks(const ctr_projector *p) {
  return dim3((unsigned)((p->n[0] + 127) / 128), (unsigned)p->n[1], (unsigned)p->n[2]);
}

ctr_status ctr__it_cuda_tv_primal(ctr_projector *p, float *z, const float *g, const float *P,
                                  float mu, float lo, float hi) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  const vol_dims d = {{p->n[0], p->n[1], p->n[2]}};
  if (p->n[1] > 65535 || p->n[2] > 65535)
    CTR_FAIL(CTR_E_UNSUPPORTED, "TV on the GPU: ny, nz at most 65535");
  k_tv_primal<<<vol_blocks(p), 128>>>(z, g, P, d, mu, lo, hi);
  CU_LAUNCHED("k_tv_primal");
cleanup:
  return st;
}

ctr_status ctr__it_cuda_tv_dual(ctr_projector *p, float *P, const float *z, float tau) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  const vol_dims d = {{p->n[0], p->n[1], p->n[2]}};
  if (p->n[1] > 65535 || p->n[2] > 65535)
    CTR_FAIL(CTR_E_UNSUPPORTED, "TV on the GPU: ny, nz at most 65535");
  k_tv_dual<<<vol_blocks(p), 128>>>(P, z, d, tau);
  CU_LAUNCHED("k_tv_dual");
cleanup:
  return st;
}

/* The PWLS penalty on slices [z0, z1): one thread per voxel, x fastest. */
__global__ void k_penalty(float *out, const float *x, const float *v, vol_dims d, float delta,
                          long long z0) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y,
                  k = z0 + blockIdx.z;
  if (i >= d.n[0]) return;
  const int64_t n[3] = {d.n[0], d.n[1], d.n[2]};
  const long long c = (k * d.n[1] + j) * d.n[0] + i;
  out[c] = ctr__it_penalty_at(x, v, c, i, j, k, n, delta);
}

ctr_status ctr__it_cuda_penalty(ctr_projector *p, float *out, const float *x, const float *v,
                                float delta, int64_t z0, int64_t z1) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  const vol_dims d = {{p->n[0], p->n[1], p->n[2]}};
  if (p->n[1] > 65535 || z1 - z0 > 65535)
    CTR_FAIL(CTR_E_UNSUPPORTED, "the PWLS penalty on the GPU: ny and the slab's slices at most "
             "65535");
  if (z1 > z0) {
    const dim3 grid((unsigned)((p->n[0] + 127) / 128), (unsigned)p->n[1], (unsigned)(z1 - z0));
    k_penalty<<<grid, 128>>>(out, x, v, d, delta, (long long)z0);
    CU_LAUNCHED("k_penalty");
  }
cleanup:
  return st;
}

__global__ void k_count_weights(float *y, long long n, const float *x, double i0) {
  GRID_STRIDE(i, n) y[i] = ctr__it_count_weight(x[i], i0);
}

ctr_status ctr__it_cuda_count_weights(ctr_projector *p, float *y, int64_t n, const float *x,
                                      double i0) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  LAUNCH(k_count_weights, n, y, n, x, i0);
cleanup:
  return st;
}
