/* C interface of the GPU incremental backprojector and FP64 reference
 * (src/conebeam/cuda/backprojector_cuda.cu), used by src/conebeam/backprojector.c. */
#ifndef CTR_BACKPROJECTOR_CUDA_H
#define CTR_BACKPROJECTOR_CUDA_H

#include "core/internal.h"
#include "geometry/geometry_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctr__cuda_bpj ctr__cuda_bpj;

/* g and ctx must outlive the backprojector; o is resolved (nz set). */
ctr_status ctr__cuda_bpj_create(const ctr_context *ctx, const ctr_geometry *g,
                                const ctr_fdk_options *o, ctr__cuda_bpj **out);
ctr_status ctr__cuda_bpj_add(ctr__cuda_bpj *b, int64_t n, const int64_t *views,
                             const float *const *images, const float *weights);
ctr_status ctr__cuda_bpj_read(ctr__cuda_bpj *b, float *vol);
ctr_status ctr__cuda_bpj_reset(ctr__cuda_bpj *b);
void ctr__cuda_bpj_free(ctr__cuda_bpj *b);
/* vol (host, nx * ny * nzs doubles) += the FP64 sum, computed on the GPU. */
ctr_status ctr__cuda_bp_reference(const ctr_context *ctx, const ctr_geometry *g, int64_t n,
                                  const int64_t *views, const float *const *images,
                                  const double *weights, double *vol, int64_t z0, int64_t nzs);

#ifdef __cplusplus
}
#endif
#endif
