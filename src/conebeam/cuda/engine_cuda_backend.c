/* The CUDA backend's entry in the backend table (engine.h): the memory model
 * (engine_cuda_model.c), which the planner calls whether or not CUDA is
 * built, and, in a CUDA build, the engine and the incremental backprojector
 * (engine_cuda.cu, backprojector_cuda.cu). */
#include "conebeam/cuda/backprojector_cuda.h"
#include "conebeam/cuda/engine_cuda_model.h"

#include <string.h>

static void cuda_cost(const ctr_geometry *g, const ctr__plan_candidate *c, ctr__engine_cost *out) {
  ctr__cuda_bytes b;
  ctr__cuda_engine_bytes(g, c->req->interp, c->views_per_batch, c->store, c->pair, c->views,
                         c->shared, &b);
  memset(out, 0, sizeof *out);
  /* two raw and two staged filtered buffers (double buffering) */
  out->device_fixed = 2u * b.raw + 2u * b.filtered + b.layout + b.filter + CTR__CUDA_MARGIN_BYTES;
  if (c->workers > 1 && c->split == CTR_FDK_SPLIT_PROJECTIONS)
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
#define CUDA_BUILT 1
#else
#define CUDA_OR_NULL(f) NULL
#define CUDA_BUILT 0
#endif

const ctr__engine_backend ctr__engine_backend_cuda = {
    .head = {"cuda", CTR_DEVICE_CUDA, CUDA_BUILT},
    .first_batch = cuda_first_batch,
    .device_store = 1,
    .extends_rows = 1,
    .cost = cuda_cost,
    .create = CUDA_OR_NULL(ctr__engine_cuda_create),
    .tune = CUDA_OR_NULL(ctr__engine_cuda_tune),
    .bpj_create = CUDA_OR_NULL(ctr__cuda_bpj_create),
    .bpj_add = CUDA_OR_NULL(ctr__cuda_bpj_add),
    .bpj_read = CUDA_OR_NULL(ctr__cuda_bpj_read),
    .bpj_reset = CUDA_OR_NULL(ctr__cuda_bpj_reset),
    .bpj_free = CUDA_OR_NULL(ctr__cuda_bpj_free),
    .bpj_slab = CUDA_OR_NULL(ctr__cuda_bpj_slab),
    .bpj_queue = CUDA_OR_NULL(ctr__cuda_bpj_queue),
    .bpj_read_queued = CUDA_OR_NULL(ctr__cuda_bpj_read_queued),
    .bpj_wait = CUDA_OR_NULL(ctr__cuda_bpj_wait),
    .reference = CUDA_OR_NULL(ctr__cuda_bp_reference),
};
