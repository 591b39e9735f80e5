/* The memory model of the streamed FDK pipeline: bytes of every buffer the
 * executor and the backends allocate, shared by the planner (which must
 * predict them) and the backends (which allocate them). */
#ifndef CTR_PLAN_COSTS_H
#define CTR_PLAN_COSTS_H

#include "core/projmath.h"
#include "geometry/geometry_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GPU memory kept free beyond the model (driver, cuFFT plans' own state). */
#define CTR__GPU_MARGIN_BYTES ((uint64_t)256 << 20)
/* Host buffers between the reader thread and the backend. */
#define CTR__READ_BUFFERS 3
/* Host buffers between the backend and the writer thread, each holding a
 * chunk of a subvolume of about CTR__CHUNK_BYTES. */
#define CTR__HOST_SLAB_BUFFERS 2
#define CTR__CHUNK_BYTES ((uint64_t)1 << 30)
/* Filtered views staged on the device per batch when they are not resident
 * (filter output and reloads; double buffered). */
#define CTR__STAGE_BUFFERS 2
/* Largest padded batch of the CPU backend (its working set). */
#define CTR__CPU_BATCH_BYTES ((uint64_t)256 << 20)
/* Default N': views per batch on the GPU (also the kernels' views per launch)
 * and on the CPU. */
#define CTR__GPU_DEFAULT_BATCH 64
#define CTR__CPU_DEFAULT_BATCH 32

/* Bytes of one projection of nu x nv pixels of element size e. */
static inline uint64_t ctr__view_bytes(const ctr_geometry *g, uint64_t e) {
  return (uint64_t)g->nu * (uint64_t)g->nv * e;
}

/* Bytes one view occupies in a CUDA backprojection layout: texture layouts
 * hold nu x nv elements of 4 bytes (float, or half2 pairs); the exact and
 * precise layouts hold zero-padded images of float4 neighbourhoods (single)
 * or float2 pairs; the general kernel's cells of float4 coefficients have up
 * to 63 more cells per row (bp_general.cuh). */
static inline uint64_t ctr__gpu_layout_view_bytes(const ctr_geometry *g, ctr_interp interp,
                                                  int pair) {
  if (interp == CTR_INTERP_PRECISE && !pair)
    return (uint64_t)(CTR__BPG_MIN_PITCH(g->nu) + CTR__BPG_PITCH_SPAN - 1) *
           (uint64_t)CTR__BPG_ROWS(g->nv) * 16u;
  if (interp == CTR_INTERP_EXACT || interp == CTR_INTERP_PRECISE)
    return (uint64_t)ctr__padded_size(g->nu, g->nv) * (pair ? 8u : 16u);
  return ctr__view_bytes(g, 4) + 4;
}

/* cuFFT working set of a batch of n views: padded rows, their spectra and
 * cuFFT's own workspace (about one spectrum), the per-view parameters. */
static inline uint64_t ctr__gpu_filter_ws_bytes(const ctr_geometry *g, int64_t padded, int64_t n) {
  const uint64_t rows = (uint64_t)n * (uint64_t)g->nv;
  return rows * (uint64_t)padded * 4u + 2u * rows * (uint64_t)(padded / 2 + 1) * 8u +
         (uint64_t)g->nviews * 128u + (uint64_t)padded * 4u;
}

#ifdef __cplusplus
}
#endif
#endif
