/* The backend seam of iterative reconstruction, in the manner of
 * conebeam/engine.h. A backend (CPU, CUDA) is a ctr__it_backend found by
 * device kind (registry backends.c; the table in cuda/ has no operations in
 * a build without CUDA): the projector's forward and adjoint projections,
 * the fast pair's device path, the public device entry points' helpers and
 * the algorithms' vector operations in the backend's memory.
 *
 * Memory: "host" is memory the CPU addresses; "backend memory" is the
 * backend's own: host memory for the CPU, GPU memory of the projector's
 * device (p->gpu) for CUDA. A backend with device memory (alloc not NULL)
 * has every operation; the CPU's device-memory operations are NULL (its
 * vectors are host vectors, allocated by vecops.c).
 *
 * Threading: a projector and its vectors are driven by one thread at a
 * time (the backend keeps per-projector state in it: p->cuda,
 * p->cuda_fast, the slot order); several projectors may run at once on
 * different threads, on one context too (tests/test_threads.c and
 * test_gpu_threads). Every operation returns when its results are
 * complete in host memory or, for results in GPU memory, when they are
 * ordered on the device before any later operation of the same projector
 * (the CUDA backend's default stream); fast_queue alone returns with its
 * work queued. */
#ifndef CTR_ITERATIVE_BACKEND_H
#define CTR_ITERATIVE_BACKEND_H

#include "iterative/iterative.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctr__it_backend {
  ctr__backend_head head; /* name, device kind, built (core/internal.h) */

  /* ---- The projector (projector.c) ---- */
  /* y[w0, w1) = A x (forward) and slices [z0, z1) of x = A^T y over slots
   * [w0, w1) (adjoint, the matched pair), slab by slab as the plan in force
   * says (ctr__proj_use); x and y are host or backend vectors (the CPU takes
   * host vectors only; a backend vector may be on another GPU of the same
   * backend only through copy). The forward projection leaves the other
   * slots of y untouched, the adjoint the other slices of x; a voxel's value
   * does not depend on [z0, z1) (each voxel adds its views in slot order),
   * nor a ray's on [w0, w1). Called on any thread, one call per projector
   * at a time (the workers of a split are separate projectors). */
  ctr_status (*forward)(ctr_projector *p, const ctr__vec *x, ctr__vec *y, int64_t w0, int64_t w1);
  ctr_status (*adjoint)(ctr_projector *p, const ctr__vec *y, ctr__vec *x, int64_t w0, int64_t w1,
                        int64_t z0, int64_t z1);
  /* Frees the backend's per-projector state (buffers, the fast pair's chunk
   * buffer and events) once the fast pair's backprojector has been freed;
   * accepts a projector without any. NULL: the backend keeps none. */
  void (*release)(ctr_projector *p);
  /* Returns when every operation queued on the projector's device (vector
   * operations included) has finished: before the fast pair's
   * backprojector's own streams use the vectors, and before a projection
   * starts its clock, so that the time of queued vector work is not counted
   * as the projection's. Called on the run's thread. NULL: the backend's
   * operations are synchronous (the CPU). */
  ctr_status (*sync)(ctr_projector *p);

  /* ---- The fast pair's device path (NULL on the CPU) ---- */
  /* Queues the weighting and backprojection of a chunk of n <=
   * CTR__IT_FAST_CHUNK views held in backend memory (y: n x nu x nv floats,
   * geometry views `views`, weights fw) on bp (ctr__backprojector_queue),
   * after y's producers; returns without waiting. y may be reused once
   * ctr__backprojector_wait(bp) has returned. */
  ctr_status (*fast_queue)(ctr_projector *p, ctr_backprojector *bp, const float *y, int64_t n,
                           const int64_t *views, const ctr__it_fast_view *fw);

  /* ---- The public device entry points and the caller's arrays (NULL on the CPU) ---- */
  /* a and b must be backend memory of the projector's device
   * (CTR_E_INVALID_ARGUMENT naming fn and the argument otherwise); returns
   * once the arrays' producers on any stream have finished. */
  ctr_status (*device_args)(ctr_projector *p, const char *fn, const void *a, const char *a_name,
                            const void *b, const char *b_name);
  /* Between the API's parallel-beam layout (`user`, backend memory) and
   * the slots (host or backend memory): to_slots 1 fills slots, 0 user. */
  ctr_status (*slots_device)(ctr_projector *p, float *user, float *slots, int to_slots);
  /* Pins `bytes` of the caller's host memory at ptr for the run: 1 if it
   * did (unpin undoes it before the call returns to the caller), 0 if the
   * memory is pinned already or cannot be (then it is used as it is). */
  int (*pin)(ctr_projector *p, void *ptr, size_t bytes);
  void (*unpin)(ctr_projector *p, void *ptr);

  /* ---- Vectors (vecops.c) ---- */
  /* A zeroed vector of n floats in backend memory (out->device = 1) and its
   * release (NULL on the CPU). */
  ctr_status (*alloc)(ctr_projector *p, int64_t n, ctr__vec *out);
  void (*free)(ctr_projector *p, ctr__vec *v);
  /* n floats from src to dst; the flags say which of them is backend memory
   * (1) or host memory (0): the CPU takes 0 and 0 only. */
  ctr_status (*copy)(ctr_projector *p, float *dst, int dst_device, const float *src,
                     int src_device, int64_t n);
  /* The elementwise operations and reductions of vecops.c on arrays of n
   * floats in backend memory, with the host's bits (iterative.h,
   * "Host vector operations"): y = c; z = a x + b y (y NULL when b is 0);
   * z = x y; y = 1 / x where x > threshold, else 0; y = clip(y, lo, hi);
   * <x, y> (dist 0) or ||x - y||^2 (dist 1) in double; bad values of v
   * replaced by 0, their count added to *bad; the TV prox steps on the
   * projector's volume (P: three volumes). */
  ctr_status (*fill)(ctr_projector *p, float *y, int64_t n, float c);
  ctr_status (*comb)(ctr_projector *p, float *z, int64_t n, float a, const float *x, float b,
                     const float *y);
  ctr_status (*mul)(ctr_projector *p, float *z, int64_t n, const float *x, const float *y);
  ctr_status (*recip)(ctr_projector *p, float *y, int64_t n, const float *x, float threshold);
  ctr_status (*clip)(ctr_projector *p, float *y, int64_t n, float lo, float hi);
  ctr_status (*dot)(ctr_projector *p, const float *x, const float *y, int64_t n, int dist,
                    double *out);
  ctr_status (*sanitize)(ctr_projector *p, float *v, int64_t n, int64_t *bad);
  ctr_status (*tv_primal)(ctr_projector *p, float *z, const float *g, const float *P, float mu,
                          float lo, float hi);
  ctr_status (*tv_dual)(ctr_projector *p, float *P, const float *z, float tau);
  /* PWLS: the roughness penalty's operation on slices [z0, z1) of the
   * projector's volume (itmath.h ctr__it_penalty_at: out = sum over the
   * 6-neighbours of w(x_c - x_m) (v_c - v_m), w = 1 when x is NULL, the
   * diagonal when v is NULL; delta Huber's, INFINITY for the quadratic).
   * out, x and v point at slice 0 of whole volumes in backend memory; x and
   * v are read on slices [z0 - 1, z1 + 1) within the volume (one-plane
   * halos), out written on [z0, z1) only and never one of them. The
   * algorithms call it on the whole volume where its vectors are (GPU
   * memory, or host memory with the slab-wise placements, whose volume
   * vectors are whole in host memory); the slab form gives the same bits
   * for any split (tested). y = i0 exp(-x) elementwise
   * (ctr__it_count_weight): the count weights of log data. */
  ctr_status (*penalty)(ctr_projector *p, float *out, const float *x, const float *v, float delta,
                        int64_t z0, int64_t z1);
  ctr_status (*count_weights)(ctr_projector *p, float *y, int64_t n, const float *x, double i0);
} ctr__it_backend;

/* The backends of this library, defined by each backend's folder. */
extern const ctr__it_backend ctr__it_backend_cpu;
extern const ctr__it_backend ctr__it_backend_cuda;

/* The backend of a context's resolved device kind; CTR_E_UNSUPPORTED when
 * the build lacks it. */
ctr_status ctr__it_backend_of(const ctr_context *ctx, const ctr__it_backend **out);

#ifdef __cplusplus
}
#endif
#endif
