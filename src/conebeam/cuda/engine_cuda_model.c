/* The CUDA backend's entry in the backend table (engine.h): its memory model,
 * which the planner calls whether or not CUDA is built (plans for a GPU can
 * be made and tested anywhere), and, in a CUDA build, its engine and
 * incremental backprojector (engine_cuda.cu, backprojector_cuda.cu). */
#include "conebeam/cuda/engine_cuda_model.h"
#include "conebeam/cuda/backprojector_cuda.h"
#include "core/projmath.h"
#include "filter/filter.h"

#include <string.h>

/* Bytes one view occupies in a backprojection layout: texture layouts hold
 * nu x nv elements of 4 bytes (float, or half2 pairs) plus a per-view scale;
 * the exact and precise layouts hold zero-padded images of float4
 * neighbourhoods (single) or float2 pairs; the general kernel's cells of
 * float4 coefficients have up to CTR__BPG_PITCH_SPAN - 1 more cells per row
 * (projmath.h). An upper bound of ctr__views_bytes for every variant the
 * engine may choose for this interpolation. */
uint64_t ctr__cuda_layout_view_bytes(const ctr_geometry *g, ctr_interp interp, int pair) {
  if (interp == CTR_INTERP_PRECISE && !pair)
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

void ctr__cuda_engine_bytes(const ctr_geometry *g, ctr_interp interp, int64_t nb, ctr_store store,
                            int pair, int64_t views, int shared, ctr__cuda_bytes *out) {
  memset(out, 0, sizeof *out);
  const uint64_t view = (uint64_t)g->nu * (uint64_t)g->nv * 4u;
  out->raw = view * (uint64_t)nb; /* float32 or smaller */
  /* staged filtered batches: reloads, and others' views when shared */
  out->filtered = store == CTR_STORE_DEVICE && !shared ? 0 : view * (uint64_t)nb;
  out->layout = ctr__cuda_layout_view_bytes(g, interp, pair) *
                (store == CTR_STORE_DEVICE ? (uint64_t)views : 2u * (uint64_t)nb);
  out->filter = filter_bytes(g, nb);
  out->slice = (uint64_t)g->vol.nx * (uint64_t)g->vol.ny * 4u;
}

static void cuda_cost(const ctr_geometry *g, const ctr__plan_candidate *c, ctr__engine_cost *out) {
  ctr__cuda_bytes b;
  ctr__cuda_engine_bytes(g, c->req->interp, c->views_per_batch, c->store, c->pair, c->views,
                         c->shared, &b);
  memset(out, 0, sizeof *out);
  /* two raw and two staged filtered buffers (double buffering) */
  out->device_fixed = 2u * b.raw + 2u * b.filtered + b.layout + b.filter + CTR__CUDA_MARGIN_BYTES;
  if (c->workers > 1 && c->split == CTR_SPLIT_PROJECTIONS)
    out->device_fixed += CTR__CUDA_ADD_CHUNK_BYTES;
  out->device_per_slice = b.slice;
  /* pinned staging of pageable input arrays (two raw batches) */
  if (c->req->input_in_memory) out->host_fixed = 2u * b.raw;
}

static int64_t cuda_first_batch(const ctr_geometry *g) {
  (void)g;
  return CTR__CUDA_DEFAULT_BATCH;
}

#if CTR_HAVE_CUDA
#define CUDA_OR_NULL(f) f
#else
#define CUDA_OR_NULL(f) NULL
#endif

const ctr__engine_backend ctr__engine_backend_cuda = {
    .name = "cuda",
    .kind = CTR_DEVICE_CUDA,
    .first_batch = cuda_first_batch,
    .device_store = 1,
    .cost = cuda_cost,
    .create = CUDA_OR_NULL(ctr__engine_cuda_create),
    .bpj_create = CUDA_OR_NULL(ctr__cuda_bpj_create),
    .bpj_add = CUDA_OR_NULL(ctr__cuda_bpj_add),
    .bpj_read = CUDA_OR_NULL(ctr__cuda_bpj_read),
    .bpj_reset = CUDA_OR_NULL(ctr__cuda_bpj_reset),
    .bpj_free = CUDA_OR_NULL(ctr__cuda_bpj_free),
    .reference = CUDA_OR_NULL(ctr__cuda_bp_reference),
};
