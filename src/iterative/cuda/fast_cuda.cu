/* The fast (unmatched) pair's view weighting on the GPU: projections that
 * live on the device are weighted there (itmath.h ctr__it_fast_weight, the
 * host loop's formula and bits) and go to the FDK backprojector as device
 * images (projector.c fast_adjoint). One memory-bound pass: a read and a
 * write of each pixel. */
#include <cuda_runtime.h>
#include <string.h>

#include "gpu/cuda_util.h"
#include "iterative/iterative.h"

#define THREADS 256

/* The views' inverses and scales, passed by value (CTR__IT_FAST_CHUNK x 80
 * bytes, within the kernel argument limit). */
typedef struct fast_views {
  ctr__it_fast_view v[CTR__IT_FAST_CHUNK];
} fast_views;

/* out[k] = y[k] * W_k: view k = blockIdx.y, rows strided over blockIdx.x,
 * columns over the threads. */
__global__ void k_fast_weight(const float *__restrict__ y, float *__restrict__ out, long long nu,
                              long long nv, fast_views w) {
  const ctr__it_fast_view *fw = &w.v[blockIdx.y];
  for (long long v = blockIdx.x; v < nv; v += gridDim.x) {
    const long long row = ((long long)blockIdx.y * nv + v) * nu;
    for (long long u = threadIdx.x; u < nu; u += blockDim.x)
      out[row + u] = CTR__FMUL(y[row + u], ctr__it_fast_weight(fw, (double)u, (double)v));
  }
}

extern "C" ctr_status ctr__it_cuda_fast_weight(ctr_projector *p, const float *y, float *out,
                                               int64_t n, const ctr__it_fast_view *views) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  if (n < 1) return CTR_OK;
  if (n > CTR__IT_FAST_CHUNK)
    CTR_FAIL(CTR_E_INTERNAL, "fast weighting of %lld views: at most %d per launch", (long long)n,
             CTR__IT_FAST_CHUNK);
  {
    fast_views w;
    memset(&w, 0, sizeof w);
    for (int64_t k = 0; k < n; k++) w.v[k] = views[k];
    const long long bx = p->nv < 4096 ? p->nv : 4096;
    const dim3 grid((unsigned)bx, (unsigned)n);
    /* On the default stream, after the producers of y (the vector operations
     * and the projections' blocking stream); then the host waits, since the
     * backprojector reads `out` on its own non-blocking streams. */
    k_fast_weight<<<grid, THREADS, 0, 0>>>(y, out, (long long)p->nu, (long long)p->nv, w);
    CU_LAUNCHED("k_fast_weight");
    CU(cudaStreamSynchronize(0));
  }
cleanup:
  return st;
}

extern "C" ctr_status ctr__it_cuda_fast_sync(ctr_projector *p) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  CU(cudaDeviceSynchronize());
cleanup:
  return st;
}
