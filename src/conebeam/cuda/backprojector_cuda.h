/* The CUDA backend's incremental backprojector and FP64 reference
 * (backprojector_cuda.cu): the backend table's bpj_* and reference entries
 * (engine.h, engine_cuda_model.c). */
#ifndef CTR_BACKPROJECTOR_CUDA_H
#define CTR_BACKPROJECTOR_CUDA_H

#include "core/internal.h"
#include "geometry/geometry_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* g and ctx must outlive the backprojector; o is resolved (nz set). */
ctr_status ctr__cuda_bpj_create(ctr_context *ctx, int device, const ctr_geometry *g,
                                const ctr_fdk_options *o, void **out);
ctr_status ctr__cuda_bpj_add(void *b, int64_t n, const int64_t *views, const float *const *images,
                             const float *weights);
ctr_status ctr__cuda_bpj_read(void *b, float *vol);
ctr_status ctr__cuda_bpj_reset(void *b);
void ctr__cuda_bpj_free(void *b);
/* A kept backprojector's queued operations (engine.h: bpj_slab, bpj_queue,
 * bpj_read_queued, bpj_wait; ready and consumed are cudaEvent_t). */
ctr_status ctr__cuda_bpj_slab(void *b, int64_t z0, int64_t nz);
ctr_status ctr__cuda_bpj_queue(void *b, int64_t n, const int64_t *views, const float *images,
                               void *ready, void *consumed);
ctr_status ctr__cuda_bpj_read_queued(void *b, float *vol);
ctr_status ctr__cuda_bpj_wait(void *b);
/* vol (host, nx * ny * nzs doubles) += the FP64 sum, computed on the GPU. */
ctr_status ctr__cuda_bp_reference(ctr_context *ctx, int device, const ctr_geometry *g, int64_t n,
                                  const int64_t *views, const float *const *images,
                                  const double *weights, double *vol, int64_t z0, int64_t nzs);

#ifdef __cplusplus
}
#endif
#endif
