/* The incremental backprojector (public API) and the double-precision
 * reference: argument checks here, the work on the context's backend
 * (engine.h). */
#include <math.h>
#include <string.h>

#include "conebeam/backprojector.h"
#include "conebeam/engine.h"
#include "conebeam/fdk_internal.h"

struct ctr_backprojector {
  const ctr__engine_backend *be;
  ctr_context *ctx;
  ctr_geometry *g; /* own copy */
  ctr_fdk_options o;
  void *impl;      /* the backend's state */
};

void ctr_backprojector_free(ctr_backprojector *b) {
  if (!b) return;
  if (b->impl) b->be->bpj_free(b->impl);
  ctr_geometry_free(b->g);
  ctr__context_drop(b->ctx);
  free(b);
}

ctr_status ctr_backprojector_create(ctr_context *ctx, const ctr_geometry *g,
                                    const ctr_fdk_options *opts, ctr_backprojector **out) {
  if (!out || !g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_backprojector_create: NULL argument");
  *out = NULL;
  ctr_fdk_options o;
  CTR_CHECK(ctr__fdk_options_resolve(g, opts, &o));
  const ctr__engine_backend *be;
  CTR_CHECK(ctr__engine_backend_of(ctx, &be));
  ctr_backprojector *b = ctr__calloc(1, sizeof *b, "backprojector");
  if (!b) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = CTR_OK;
  b->be = be;
  b->ctx = ctx;
  ctr__context_hold(ctx); /* its buffers go back to ctx's cache when it is freed */
  b->o = o;
  CTR_CHECK_GOTO(st, ctr_geometry_clone(g, &b->g));
  CTR_CHECK_GOTO(st, be->bpj_create(ctx, ctr__context_gpu(ctx, 0), b->g, &b->o, &b->impl));
  *out = b;
  return CTR_OK;
cleanup:
  ctr_backprojector_free(b);
  return st;
}

static ctr_status check_views(const ctr_geometry *g, int64_t n, const int64_t *views,
                              const float *const *images, const float *weights) {
  if (n < 0) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "view count %lld: expected >= 0", (long long)n);
  if (n > 0 && (!views || !images)) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "views or images is NULL");
  for (int64_t k = 0; k < n; k++) {
    if (views[k] < 0 || views[k] >= g->nviews)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "views[%lld] = %lld: expected 0 .. %lld", (long long)k,
               (long long)views[k], (long long)(g->nviews - 1));
    if (!images[k]) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "images[%lld] is NULL", (long long)k);
    if (weights && !(isfinite(weights[k]) && weights[k] > 0))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "weights[%lld] = %g: expected a finite value > 0",
               (long long)k, (double)weights[k]);
  }
  return CTR_OK;
}

ctr_status ctr_backprojector_add(ctr_backprojector *b, int64_t n, const int64_t *views,
                                 const float *const *images, const float *weights) {
  if (!b) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_backprojector_add: backprojector is NULL");
  CTR_CHECK(check_views(b->g, n, views, images, weights));
  return b->be->bpj_add(b->impl, n, views, images, weights);
}

ctr_status ctr_backprojector_read(ctr_backprojector *b, float *vol) {
  if (!b || !vol) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_backprojector_read: NULL argument");
  return b->be->bpj_read(b->impl, vol);
}

ctr_status ctr_backprojector_reset(ctr_backprojector *b) {
  if (!b) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_backprojector_reset: backprojector is NULL");
  return b->be->bpj_reset(b->impl);
}

/* ---- Kept across slabs and calls (backprojector.h) ---------------------------- */

ctr_status ctr__backprojector_slab(ctr_backprojector *b, int64_t z0, int64_t nz) {
  CTR_CHECK(b->be->bpj_slab(b->impl, z0, nz));
  b->o.z0 = z0;
  b->o.nz = nz;
  return CTR_OK;
}

static ctr_status queued(const ctr_backprojector *b, int have) {
  if (have) return CTR_OK;
  CTR_FAIL(CTR_E_UNSUPPORTED, "queued backprojection needs the CUDA backend (this one is %s)",
           b->be->head.name);
}

ctr_status ctr__backprojector_queue(ctr_backprojector *b, int64_t n, const int64_t *views,
                                    const float *images, void *ready, void *consumed) {
  CTR_CHECK(queued(b, b->be->bpj_queue != NULL));
  for (int64_t k = 0; k < n; k++)
    if (views[k] < 0 || views[k] >= b->g->nviews)
      CTR_FAIL(CTR_E_INTERNAL, "views[%lld] = %lld: expected 0 .. %lld", (long long)k,
               (long long)views[k], (long long)(b->g->nviews - 1));
  return b->be->bpj_queue(b->impl, n, views, images, ready, consumed);
}

ctr_status ctr__backprojector_read_queued(ctr_backprojector *b, float *vol) {
  CTR_CHECK(queued(b, b->be->bpj_read_queued != NULL));
  return b->be->bpj_read_queued(b->impl, vol);
}

ctr_status ctr__backprojector_wait(ctr_backprojector *b) {
  CTR_CHECK(queued(b, b->be->bpj_wait != NULL));
  return b->be->bpj_wait(b->impl);
}

ctr_status ctr_fdk_backproject_reference(ctr_context *ctx, const ctr_geometry *g, int64_t n,
                                     const int64_t *views, const float *const *images,
                                     const double *weights, double *vol) {
  if (!g || !vol) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fdk_backproject_reference: NULL argument");
  for (int64_t k = 0; weights && k < n; k++)
    if (!(isfinite(weights[k]) && weights[k] > 0))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "weights[%lld] = %g: expected a finite value > 0",
               (long long)k, weights[k]);
  CTR_CHECK(check_views(g, n, views, images, NULL));
  const ctr__engine_backend *be;
  CTR_CHECK(ctr__engine_backend_of(ctx, &be));
  return be->reference(ctx, ctr__context_gpu(ctx, 0), g, n, views, images, weights, vol, 0,
                       g->vol.nz);
}
