/* The CUDA backend's memory model (engine_cuda_model.c), shared by the
 * planner's view of the backend and the engine that allocates by it. */
#ifndef CTR_ENGINE_CUDA_MODEL_H
#define CTR_ENGINE_CUDA_MODEL_H

#include "conebeam/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GPU memory kept free beyond the model (driver, cuFFT plans' own state). */
#define CTR__CUDA_MARGIN_BYTES ((uint64_t)256 << 20)
/* The scratch buffer of add_from (projection split) on a device that cannot
 * read the other device's memory in place. */
#define CTR__CUDA_ADD_CHUNK_BYTES ((uint64_t)64 << 20)
/* N': views per batch (also the kernels' views per launch). */
#define CTR__CUDA_DEFAULT_BATCH 64

/* The engine's device buffers for a plan: each raw and each staged filtered
 * batch buffer (two of each; no staged buffers with CTR_FDK_STORE_DEVICE unless
 * filtered views also come from other engines), the views' layout (`views`
 * resident views, or two batches), the filter's working set and one
 * subvolume slice. */
typedef struct ctr__cuda_bytes {
  uint64_t raw, filtered, layout, filter, slice;
} ctr__cuda_bytes;

void ctr__cuda_engine_bytes(const ctr_geometry *g, ctr_interp interp, int64_t nb, ctr_fdk_store store,
                            int pair, int64_t views, int shared, ctr__cuda_bytes *out);
/* Upper bound of one view's bytes in the layout an interpolation uses. */
uint64_t ctr__cuda_layout_view_bytes(const ctr_geometry *g, ctr_interp interp, int pair);

/* The engine (engine_cuda.cu): the backend's `create`. */
ctr_status ctr__engine_cuda_create(ctr_context *ctx, int device, const ctr_geometry *g,
                                   const ctr_fdk_options *o, const ctr_fdk_plan *plan,
                                   double input_scale, int64_t view_begin, int64_t view_end,
                                   ctr__engine **out);
/* Its `tune` (engine.h). */
ctr_status ctr__engine_cuda_tune(ctr_context *ctx, int device, const ctr_geometry *g,
                                 const ctr_fdk_options *o, int force, ctr_tune_report *r);

#ifdef __cplusplus
}
#endif
#endif
