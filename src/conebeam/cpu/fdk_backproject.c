/* The backprojection half of FDK on the CPU (public API: ctr_fdk_backproject;
 * the filtering half, ctr_fdk_filter, is in src/filter/fdk_weights.c). */
#include "conebeam/cpu/backproject.h"
#include "conebeam/fdk_internal.h"

#define CTR__DEFAULT_BATCH 32
#define CTR__BATCH_BYTES ((int64_t)256 << 20)

static int64_t batch_size(const ctr_geometry *g, const ctr_fdk_options *o) {
  int64_t b = o->views_per_batch ? o->views_per_batch : CTR__DEFAULT_BATCH;
  const int64_t per_view = ctr__padded_size(g->nu, g->nv) * (int64_t)sizeof(float);
  if (!o->views_per_batch && b * per_view > CTR__BATCH_BYTES) b = CTR__BATCH_BYTES / per_view;
  if (b < 1) b = 1;
  if (b > g->nviews) b = g->nviews;
  return b;
}

ctr_status ctr_fdk_backproject(ctr_context *ctx, const ctr_geometry *g,
                               const ctr_fdk_options *opts, int64_t v0, int64_t n,
                               const float *filtered, ctr_array *vol) {
  if (!g || !filtered) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fdk_backproject: NULL geometry or data");
  ctr_fdk_options o;
  CTR_CHECK(ctr__fdk_options_resolve(g, opts, &o));
  CTR_CHECK(ctr__check_fdk_volume(g, &o, vol));
  if (v0 < 0 || n < 0 || v0 + n > g->nviews)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "views [%lld, %lld): expected a range inside [0, %lld)",
             (long long)v0, (long long)(v0 + n), (long long)g->nviews);
  const int64_t nb = batch_size(g, &o), size = ctr__padded_size(g->nu, g->nv);
  float *buf = ctr__aligned_alloc((size_t)(nb * size) * sizeof(float), "padded projection batch");
  if (!buf) return CTR_E_OUT_OF_MEMORY;
  const ctr__padded_views views = {buf + ctr__padded_origin(g->nu), size, ctr__padded_pitch(g->nu)};
  /* The data policy: bad filtered values are used as 0 and reported (strict:
   * an error before anything is added to vol). */
  const int64_t bad = o.strict ? ctr__values_count(filtered, n * g->nu * g->nv) : 0;
  ctr_status st = ctr__values_report(ctx, 1, bad, "ctr_fdk_backproject: filtered views");
  int64_t replaced = 0;
  for (int64_t k = 0; st == CTR_OK && k < n; k += nb) {
    const int64_t m = n - k < nb ? n - k : nb;
    replaced += ctr__fill_padded(g, filtered + k * g->nu * g->nv, CTR_DTYPE_FLOAT32, m, buf);
    ctr__bp_cpu(ctx, g, v0 + k, m, NULL, NULL, &views, vol->data, o.z0, o.nz);
  }
  ctr__aligned_free(buf);
  if (st == CTR_OK) st = ctr__values_report(ctx, 0, replaced, "ctr_fdk_backproject: filtered views");
  return st;
}
