/* The CUDA backend's entry in the backend table (iterative/backend.h): in
 * a CUDA build the entry points of project_cuda.cu, fast_cuda.cu and
 * vecops_cuda.cu; without CUDA a known backend with no operations. */
#include "iterative/backend.h"
#include "iterative/cuda/iterative_cuda.h"

#if CTR_HAVE_CUDA
/* The fast pair's chunk buffer and events, then the backend's buffers. */
static void cuda_release(ctr_projector *p) {
  ctr__it_cuda_fast_release(p);
  ctr__it_cuda_release(p);
}

const ctr__it_backend ctr__it_backend_cuda = {
    .head = {"cuda", CTR_DEVICE_CUDA, 1},
    .forward = ctr__it_cuda_forward,
    .adjoint = ctr__it_cuda_adjoint,
    .release = cuda_release,
    .fast_queue = ctr__it_cuda_fast_queue,
    .sync = ctr__it_cuda_sync,
    .device_args = ctr__it_cuda_device_args,
    .slots_device = ctr__it_cuda_slots_device,
    .pin = ctr__it_cuda_pin,
    .unpin = ctr__it_cuda_unpin,
    .alloc = ctr__it_cuda_alloc,
    .free = ctr__it_cuda_free,
    .copy = ctr__it_cuda_copy,
    .fill = ctr__it_cuda_fill,
    .comb = ctr__it_cuda_comb,
    .mul = ctr__it_cuda_mul,
    .recip = ctr__it_cuda_recip,
    .clip = ctr__it_cuda_clip,
    .dot = ctr__it_cuda_dot,
    .sanitize = ctr__it_cuda_sanitize,
    .tv_primal = ctr__it_cuda_tv_primal,
    .tv_dual = ctr__it_cuda_tv_dual,
    .penalty = ctr__it_cuda_penalty,
    .count_weights = ctr__it_cuda_count_weights,
};
#else
const ctr__it_backend ctr__it_backend_cuda = {.head = {"cuda", CTR_DEVICE_CUDA, 0}};
#endif
