/* The GPU buffer cache of a context: the one device allocator of the
 * library, keyed by device. Every modality's device buffers come from it
 * (cone beam's engines, filter, layouts, incremental backprojector and FP64
 * reference; the parallel-beam pipeline and backprojector; the iterative
 * projectors' buffers and vectors; PET's projectors, view tables,
 * reconstruction and FFT reference); cudaMalloc is called here only
 * (tests/layering.sh, check 4). Allocating a volume-sized buffer costs
 * milliseconds, more once peer access maps every allocation on the other
 * GPUs, and freeing it as much again; a context keeps the buffers its runs
 * give back (at least CTR__GPU_KEEP_MIN bytes, CTR__GPU_CACHE_SLOTS of them)
 * for its next run. Objects that live across calls (the projectors, the
 * incremental backprojector) hold theirs until they are freed, then give
 * them back with the sizes they asked for; they hold their context
 * meanwhile (ctr__context_hold, core/internal.h), so that it outlives them
 * even when its owner frees it first (ctr_context_free,
 * include/ctrecon/core.h).
 *
 * Release: ctr_context_release_memory (public; ctr_context_free and
 * ctr_context_get_memory_budgets, whose caller's own allocations are not the
 * cache's, call it) frees every kept buffer; no entry point of the library
 * needs it first. An allocation that finds the GPU full frees the kept
 * buffers of its device and tries again, through the cache or (cuFFT plans,
 * texture arrays) ctr__gpu_retry. Budgets count kept bytes as free: the one
 * rule of core/memory.c, free memory and kept buffers less 1 GiB
 * (ctr__gpu_budget_detect, ctr__budgets_resolve).
 *
 * Threads: every function is thread-safe (one mutex per context, held only
 * around the list, never across a CUDA call but the frees); buffers in use
 * are never in the list, so a release while runs go on frees only what no
 * run holds. A buffer is given back only when the work that used it has
 * finished (its stream synchronised). */
#ifndef CTR_GPU_BUFFERS_H
#define CTR_GPU_BUFFERS_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Buffers smaller than this are freed when given back, not kept. */
#define CTR__GPU_KEEP_MIN ((size_t)1 << 20)

/* A device buffer of at least `bytes` on `device` (the current device; -1:
 * whichever is current): one
 * the context kept, within 1/8 of the size, else cudaMalloc'ed (after giving
 * the kept ones of this device back when the GPU is full). ctx NULL: plain
 * cudaMalloc. *out is NULL on failure: CTR_E_DEVICE_OUT_OF_MEMORY (or
 * CTR_E_DEVICE) whose detail names `what`, the size and the GPU. */
ctr_status ctr__gpu_buffer_get(const ctr_context *ctx, int device, size_t bytes, const char *what,
                               void **out);
/* Gives back a buffer of ctr__gpu_buffer_get (the `bytes` asked for; p NULL:
 * nothing): kept for the context's next run, or freed (small, slots full,
 * ctx NULL). */
void ctr__gpu_buffer_put(const ctr_context *ctx, int device, void *p, size_t bytes);

/* The cache's list itself, for the pinned host buffers of host_transfer.h
 * too (key CTR__PINNED_HOST): take gives a kept buffer of at least `bytes`
 * (within 1/8) and returns 1, else 0; keep files one (1) or says it cannot
 * (0: ctx NULL, small, slots full): the caller frees it. */
#define CTR__PINNED_HOST (-2)
int ctr__gpu_buffer_take(const ctr_context *ctx, int device, size_t bytes, void **out);
int ctr__gpu_buffer_keep(const ctr_context *ctx, int device, void *p, size_t bytes);

/* Frees the kept buffers of `device` (-1: the current one); 1 when there
 * were any: an allocation outside the cache that found the GPU full (a cuFFT
 * plan's work area, a texture array) may then be tried again
 * (ctr__gpu_retry). */
int ctr__gpu_buffer_trim(const ctr_context *ctx, int device);

/* The two in functions with a `ctr_status st` and a `cleanup:` label (as
 * cuda_util.h's CU), on the current device: `ptr` gets a buffer of `bytes`
 * (an allocation error names `what`); GPU_PUT gives it back (NULL: nothing),
 * the same `bytes`. */
#define GPU_GET(ctx, ptr, bytes, what) \
  CTR_CHECK_GOTO(st, ctr__gpu_buffer_get((ctx), -1, (bytes), (what), (void **)&(ptr)))
#define GPU_PUT(ctx, ptr, bytes) ctr__gpu_buffer_put((ctx), -1, (ptr), (bytes))

#ifdef __cplusplus
}

/* call() (an allocation outside the cache: a cuFFT plan, a texture array);
 * when it does not return ok and ctx kept buffers on the current device,
 * they are freed and call() runs once more. Its result. */
template <typename R, typename F>
static inline R ctr__gpu_retry(const ctr_context *ctx, R ok, F call) {
  R r = call();
  if (r != ok && ctr__gpu_buffer_trim(ctx, -1)) {
    cudaGetLastError();
    r = call();
  }
  return r;
}
#endif
#endif
