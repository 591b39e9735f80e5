/* The CUDA backend's entry in the backend table (parbeam/backend.h): in a
 * CUDA build the entry points of fbp_cuda.cu, fbp_pipeline.cu,
 * corrections_cuda.cu and lamino_cuda.cu; without CUDA a known backend with no operations. */
#include "parbeam/backend.h"
#include "parbeam/cuda/parbeam_cuda.h"

#if CTR_HAVE_CUDA
const ctr__par_backend ctr__par_backend_cuda = {
    .head = {"cuda", CTR_DEVICE_CUDA, 1},
    .backproject = ctr__fbp_bp_cuda,
    .sinograms = ctr__fbp_sinograms_cuda,
    .projections = ctr__fbp_projections_cuda,
    .dezinger = ctr__dezinger_cuda,
    .stripes = ctr__stripes_cuda,
    .paganin = ctr__paganin_cuda,
    .lamino_backproject = ctr__lamino_bp_cuda,
    .acc_open = ctr__fbp_acc_open,
    .acc_add = ctr__fbp_acc_add,
    .acc_get = ctr__fbp_acc_get,
    .acc_free = ctr__fbp_acc_free,
};
#else
const ctr__par_backend ctr__par_backend_cuda = {.head = {"cuda", CTR_DEVICE_CUDA, 0}};
#endif
