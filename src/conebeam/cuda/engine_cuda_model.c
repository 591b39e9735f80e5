/* The CUDA backend's memory model (engine_cuda_model.h): what its engine
 * allocates for a plan, computed without a GPU, so that plans for a GPU can
 * be made and tested anywhere. The engine allocates by it. */
#include "conebeam/cuda/engine_cuda_model.h"
#include "core/projmath.h"
#include "filter/filter.h"

#include <string.h>

/* Bytes one view occupies in a backprojection layout: texture layouts hold
 * nu x nv elements of 4 bytes (float, or half2 pairs) plus a per-view scale;
 * the exact and precise layouts hold zero-padded images of float4
 * neighbourhoods (single) or float2 pairs; the general kernel's cells of
 * float4 coefficients have up to CTR__BPG_PITCH_SPAN - 1 more cells per row
 * (projmath.h). An upper bound of ctr__views_bytes for every variant the
 * engine may choose for this interpolation (a helical geometry: the general
 * kernel's, ctr__bp_config_resolve). */
uint64_t ctr__cuda_layout_view_bytes(const ctr_geometry *g, ctr_interp interp, int pair) {
  /* a helix takes the general kernel whatever the interpolation (its window); over
     a cylindrical detector the exact kernel (bp_kernel's CYL helix instances) */
  if (g->helical && g->curved) return (uint64_t)ctr__padded_size(g->nu, g->nv) * 16u;
  if ((interp == CTR_INTERP_PRECISE && !pair) || g->helical)
    return (uint64_t)(CTR__BPG_MIN_PITCH(g->nu) + CTR__BPG_PITCH_SPAN - 1) *
           (uint64_t)CTR__BPG_ROWS(g->nv) * 16u;
  if (interp == CTR_INTERP_EXACT || interp == CTR_INTERP_PRECISE)
    return (uint64_t)ctr__padded_size(g->nu, g->nv) * (pair ? 8u : 16u);
  return (uint64_t)g->nu * (uint64_t)g->nv * 4u + 4u;
}

/* cuFFT working set of a batch of n views: padded rows, their spectra and
 * cuFFT's own workspace (about one spectrum), the per-view parameters, the
 * filter's response. */
static uint64_t filter_bytes(const ctr_geometry *g, int64_t n) {
  const int64_t padded = ctr__ramp_padded_length(g->nu);
  const uint64_t rows = (uint64_t)n * (uint64_t)g->nv;
  return rows * (uint64_t)padded * 4u + 2u * rows * (uint64_t)(padded / 2 + 1) * 8u +
         (uint64_t)g->nviews * 128u + (uint64_t)padded * 4u;
}

void ctr__cuda_engine_bytes(const ctr_geometry *g, ctr_interp interp, int64_t nb, ctr_fdk_store store,
                            int pair, int64_t views, int shared, ctr__cuda_bytes *out) {
  memset(out, 0, sizeof *out);
  const uint64_t view = (uint64_t)g->nu * (uint64_t)g->nv * 4u;
  out->raw = view * (uint64_t)nb; /* float32 or smaller */
  /* staged filtered batches: reloads, and others' views when shared */
  out->filtered = store == CTR_FDK_STORE_DEVICE && !shared ? 0 : view * (uint64_t)nb;
  out->layout = ctr__cuda_layout_view_bytes(g, interp, pair) *
                (store == CTR_FDK_STORE_DEVICE ? (uint64_t)views : 2u * (uint64_t)nb);
  out->filter = filter_bytes(g, nb);
  out->slice = (uint64_t)g->vol.nx * (uint64_t)g->vol.ny * 4u;
}

