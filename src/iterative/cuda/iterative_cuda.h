/* The CUDA backend's entry points of iterative reconstruction (its .cu
 * files define them; backend_cuda.c puts them in the backend table of
 * iterative/backend.h, through which the rest of the library reaches them). */
#ifndef CTR_ITERATIVE_CUDA_H
#define CTR_ITERATIVE_CUDA_H

#include "iterative/iterative.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The projector's operations on the GPU for any placement of x and y (host
 * or device vectors): slab by slab as p's plan says. */
ctr_status ctr__it_cuda_forward(ctr_projector *p, const ctr__vec *x, ctr__vec *y, int64_t w0,
                                int64_t w1);
ctr_status ctr__it_cuda_adjoint(ctr_projector *p, const ctr__vec *y, ctr__vec *x, int64_t w0,
                                int64_t w1, int64_t za, int64_t zb);
/* The fast pair's chunk of n <= CTR__IT_FAST_CHUNK views of y (n x nu x nv
 * floats in the projector's GPU memory, geometry views `views`), queued:
 * weighted (out[k] = y[k] * W, ctr__it_fast_weight of fw[k]) into the
 * backend's chunk buffer on the default stream, after y's producers and
 * once bp has stored the previous chunk out of the buffer, then queued on
 * bp (ctr__backprojector_queue); returns without waiting. */
ctr_status ctr__it_cuda_fast_queue(ctr_projector *p, ctr_backprojector *bp, const float *y,
                                   int64_t n, const int64_t *views, const ctr__it_fast_view *fw);
/* Waits for every queued operation on the projector's GPU (the producers
 * of device vectors), before the backprojector's non-blocking streams read
 * or write them. */
ctr_status ctr__it_cuda_sync(ctr_projector *p);
/* Frees the fast pair's chunk buffer and events; accepts NULL state. */
void ctr__it_cuda_fast_release(ctr_projector *p);
/* Frees the backend's buffers; accepts NULL. */
void ctr__it_cuda_release(ctr_projector *p);
/* The public device entry points' arguments: a and b must be GPU memory
 * (device or managed) of the projector's GPU (CTR_E_INVALID_ARGUMENT naming
 * fn and the argument otherwise); then the device is synchronised, so that
 * the arrays' producers on any stream have finished. */
ctr_status ctr__it_cuda_device_args(ctr_projector *p, const char *fn, const void *a,
                                    const char *a_name, const void *b, const char *b_name);
/* Between the API's parallel-beam layout and the slots (ctr__proj_to_slots
 * and ctr__proj_from_slots): user in GPU memory, slots in GPU or host memory
 * (cudaMemcpyDefault). */
ctr_status ctr__it_cuda_slots_device(ctr_projector *p, float *user, float *slots, int to_slots);
/* Pins the caller's host memory for the run (1) unless it is pinned
 * already or cannot be (0: it is used as it is); unpin what pin pinned. */
int ctr__it_cuda_pin(ctr_projector *p, void *ptr, size_t bytes);
void ctr__it_cuda_unpin(ctr_projector *p, void *ptr);
/* Blocks of the device reductions: partial sums in double, one per block,
 * added on the host in block order (deterministic). */
#define CTR__IT_RED_BLOCKS 1024
/* The backend's reduction scratch: CTR__IT_RED_BLOCKS doubles and a counter. */
ctr_status ctr__it_cuda_scratch(ctr_projector *p, double **part, unsigned long long **count);
/* Device vectors and their operations (the host ones' semantics and bits). */
ctr_status ctr__it_cuda_alloc(ctr_projector *p, int64_t n, ctr__vec *out);
void ctr__it_cuda_free(ctr_projector *p, ctr__vec *v);
ctr_status ctr__it_cuda_copy(ctr_projector *p, float *dst, int dst_device, const float *src,
                             int src_device, int64_t n);
ctr_status ctr__it_cuda_fill(ctr_projector *p, float *y, int64_t n, float c);
ctr_status ctr__it_cuda_comb(ctr_projector *p, float *z, int64_t n, float a, const float *x, float b,
                             const float *y);
ctr_status ctr__it_cuda_mul(ctr_projector *p, float *z, int64_t n, const float *x, const float *y);
ctr_status ctr__it_cuda_recip(ctr_projector *p, float *y, int64_t n, const float *x, float threshold);
ctr_status ctr__it_cuda_clip(ctr_projector *p, float *y, int64_t n, float lo, float hi);
ctr_status ctr__it_cuda_dot(ctr_projector *p, const float *x, const float *y, int64_t n, int dist,
                            double *out);
ctr_status ctr__it_cuda_sanitize(ctr_projector *p, float *v, int64_t n, int64_t *bad);
ctr_status ctr__it_cuda_tv_primal(ctr_projector *p, float *z, const float *g, const float *P,
                                  float mu, float lo, float hi);
ctr_status ctr__it_cuda_tv_dual(ctr_projector *p, float *P, const float *z, float tau);
ctr_status ctr__it_cuda_penalty(ctr_projector *p, float *out, const float *x, const float *v,
                                float delta, int64_t z0, int64_t z1);
ctr_status ctr__it_cuda_count_weights(ctr_projector *p, float *y, int64_t n, const float *x,
                                      double i0);

#ifdef __cplusplus
}
#endif
#endif
