/* The incremental backprojector (ctr_backprojector) kept across slabs and
 * calls: internal operations for other modules (the iterative projector's
 * fast pair, src/iterative/projector.c). Contracts in engine.h (bpj_slab,
 * bpj_queue, bpj_read_queued, bpj_wait); the queued ones need the CUDA
 * backend (CTR_E_UNSUPPORTED on the CPU). */
#ifndef CTR_BACKPROJECTOR_H
#define CTR_BACKPROJECTOR_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Moves b to slices [z0, z0 + nz) (nz at most the slices it was created
 * with) and zeroes its volume: the bits of a backprojector created for that
 * slab (CUDA: queued, no wait). */
ctr_status ctr__backprojector_slab(ctr_backprojector *b, int64_t z0, int64_t nz);
/* Queues n views (n at most one launch's; images one after the other in
 * GPU memory of b's device, weights 1): b waits for cudaEvent_t `ready`
 * (NULL: none) and records cudaEvent_t `consumed` (NULL: none) once the
 * images may be overwritten; returns without waiting. The bits of
 * ctr_backprojector_add with the same views. */
ctr_status ctr__backprojector_queue(ctr_backprojector *b, int64_t n, const int64_t *views,
                                    const float *images, void *ready, void *consumed);
/* Queues the copy of the volume into GPU memory `vol`, after the views
 * queued before. */
ctr_status ctr__backprojector_read_queued(ctr_backprojector *b, float *vol);
/* Returns when everything queued on b has finished. */
ctr_status ctr__backprojector_wait(ctr_backprojector *b);

#ifdef __cplusplus
}
#endif
#endif
