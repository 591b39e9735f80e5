/* The fast (unmatched) pair's view weighting on the GPU: projections that
 * live on the device are weighted there (itmath.h ctr__it_fast_weight, the
 * host loop's formula and bits), a chunk at a time into one buffer, and
 * queued on the projector's kept FDK backprojector (projector.c
 * fast_adjoint): events order each chunk's weighting after the previous
 * chunk's store and the backprojector's store after the weighting, so the
 * host waits once a call, not once a chunk. One memory-bound pass: a read
 * and a write of each pixel. */
#include <cuda_runtime.h>
#include <string.h>

#include "gpu/cuda_util.h"
#include "gpu/gpu_buffers.h"
#include "conebeam/backprojector.h"
#include "iterative/cuda/iterative_cuda.h"

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

/* The chunk buffer and its events, kept for the projector's lifetime (the
 * buffer from the context's GPU buffer cache, given back when it grows and
 * when the projector is freed). */
typedef struct fast_state {
  float *d_stage;       /* one chunk of weighted views */
  size_t stage_cap;     /* floats */
  cudaEvent_t weighted; /* the chunk in d_stage is weighted */
  cudaEvent_t consumed; /* the backprojector has stored it out of d_stage */
} fast_state;

extern "C" void ctr__it_cuda_fast_release(ctr_projector *p) {
  fast_state *f = (fast_state *)p->cuda_fast;
  if (!f) return;
  cudaSetDevice(p->gpu);
  cudaDeviceSynchronize(); /* the buffer goes back unused */
  ctr__gpu_buffer_put(p->ctx, p->gpu, f->d_stage, f->stage_cap * sizeof(float));
  if (f->weighted) cudaEventDestroy(f->weighted);
  if (f->consumed) cudaEventDestroy(f->consumed);
  free(f);
  p->cuda_fast = NULL;
}

static ctr_status fast_state_get(ctr_projector *p, size_t floats, fast_state **out) {
  ctr_status st = CTR_OK;
  fast_state *f = (fast_state *)p->cuda_fast;
  if (!f) {
    f = (fast_state *)ctr__calloc(1, sizeof *f, "fast pair state");
    if (!f) return CTR_E_OUT_OF_MEMORY;
    p->cuda_fast = f;
    CU(cudaEventCreateWithFlags(&f->weighted, cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&f->consumed, cudaEventDisableTiming));
  }
  if (f->stage_cap < floats) {
    CU(cudaStreamWaitEvent(0, f->consumed, 0));
    CU(cudaStreamSynchronize(0)); /* the old buffer's last reader */
    ctr__gpu_buffer_put(p->ctx, p->gpu, f->d_stage, f->stage_cap * sizeof(float));
    f->d_stage = NULL;
    f->stage_cap = 0;
    GPU_GET(p->ctx, f->d_stage, floats * sizeof(float), "fast pair's weighted views");
    f->stage_cap = floats;
  }
  *out = f;
cleanup:
  return st;
}

extern "C" ctr_status ctr__it_cuda_fast_queue(ctr_projector *p, ctr_backprojector *bp,
                                              const float *y, int64_t n, const int64_t *views,
                                              const ctr__it_fast_view *fw) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  if (n < 1) return CTR_OK;
  if (n > CTR__IT_FAST_CHUNK)
    CTR_FAIL(CTR_E_INTERNAL, "fast weighting of %lld views: at most %d per launch", (long long)n,
             CTR__IT_FAST_CHUNK);
  {
    fast_state *f;
    CTR_CHECK_GOTO(st, fast_state_get(p, (size_t)(p->nu * p->nv * CTR__IT_FAST_CHUNK), &f));
    fast_views w;
    memset(&w, 0, sizeof w);
    for (int64_t k = 0; k < n; k++) w.v[k] = fw[k];
    const long long bx = p->nv < 4096 ? p->nv : 4096;
    const dim3 grid((unsigned)bx, (unsigned)n);
    /* On the default stream: after the producers of y (the vector
     * operations and the projections' blocking stream) and after the
     * backprojector has stored the previous chunk out of d_stage (its
     * backprojection may still run: it reads its own copy). */
    CU(cudaStreamWaitEvent(0, f->consumed, 0));
    k_fast_weight<<<grid, THREADS, 0, 0>>>(y, f->d_stage, (long long)p->nu, (long long)p->nv, w);
    CU_LAUNCHED("k_fast_weight");
    CU(cudaEventRecord(f->weighted, 0));
    CTR_CHECK_GOTO(st, ctr__backprojector_queue(bp, n, views, f->d_stage, (void *)f->weighted,
                                                (void *)f->consumed));
  }
cleanup:
  return st;
}
