/* FDK driver: validates the request, then filters and backprojects the views
 * in batches so that memory stays bounded by one batch of padded views. */
#include "conebeam/cpu/backproject.h"
#include "filter/filter.h"
#include "conebeam/fdk_internal.h"
#if CTR_HAVE_CUDA
#include "conebeam/cuda/bp_config.h"
#endif

#include <math.h>
#include <string.h>

#define CTR__DEFAULT_BATCH 32
#define CTR__BATCH_BYTES ((int64_t)256 << 20)

ctr_status ctr__fdk_options_resolve(const ctr_geometry *g, const ctr_fdk_options *opts,
                                   ctr_fdk_options *o) {
  CTR_CHECK(ctr__struct_copy(&ctr__struct_fdk_options, o, opts));
  if (o->nz == 0) {
    if (o->z0 != 0)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "z0 = %lld with nz = 0: give nz for a slab", (long long)o->z0);
    o->nz = g->vol.nz;
  }
  if (o->z0 < 0 || o->nz < 0 || o->z0 + o->nz > g->vol.nz)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "slices [%lld, %lld): expected a range inside [0, %lld)",
             (long long)o->z0, (long long)(o->z0 + o->nz), (long long)g->vol.nz);
  if (o->views_per_batch < 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "views_per_batch = %lld: expected >= 0 (0 = automatic)",
             (long long)o->views_per_batch);
  if (o->interp != CTR_INTERP_DEFAULT && o->interp != CTR_INTERP_EXACT &&
      o->interp != CTR_INTERP_TEXTURE && o->interp != CTR_INTERP_PRECISE)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "interp = %d: expected default, exact, texture or precise",
             (int)o->interp);
  return CTR_OK;
}

static ctr_status check_array(const ctr_array *a, const char *what, int64_t d0, int64_t d1,
                              int64_t d2, int allow_u16) {
  if (!a || !a->data) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: no data", what);
  if (a->dtype != CTR_DTYPE_FLOAT32 && !(allow_u16 && a->dtype == CTR_DTYPE_UINT16))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: dtype %s, expected float32%s", what,
             ctr_dtype_name(a->dtype), allow_u16 ? " or uint16" : "");
  if (a->ndim != 3 || a->dims[0] != d0 || a->dims[1] != d1 || a->dims[2] != d2)
    CTR_FAIL(CTR_E_SIZE_MISMATCH, "%s: dims %lld x %lld x %lld, expected %lld x %lld x %lld", what,
             (long long)(a->ndim > 0 ? a->dims[0] : 0), (long long)(a->ndim > 1 ? a->dims[1] : 0),
             (long long)(a->ndim > 2 ? a->dims[2] : 0), (long long)d0, (long long)d1, (long long)d2);
  return CTR_OK;
}

static int64_t batch_size(const ctr_geometry *g, const ctr_fdk_options *o) {
  int64_t b = o->views_per_batch ? o->views_per_batch : CTR__DEFAULT_BATCH;
  const int64_t per_view = ctr__padded_size(g->nu, g->nv) * (int64_t)sizeof(float);
  if (!o->views_per_batch && b * per_view > CTR__BATCH_BYTES) b = CTR__BATCH_BYTES / per_view;
  if (b < 1) b = 1;
  if (b > g->nviews) b = g->nviews;
  return b;
}

int64_t ctr__fill_padded_scaled(const ctr_geometry *g, const void *src, ctr_dtype dtype, int64_t n,
                                float scale, float *dst) {
  const int64_t nu = g->nu, nv = g->nv, size = ctr__padded_size(nu, nv);
  const int pitch = ctr__padded_pitch(nu);
  int64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
  for (int64_t k = 0; k < n; k++) {
    float *img = dst + k * size;
    memset(img, 0, (size_t)size * sizeof(float));
    float *o = img + ctr__padded_origin(nu);
    for (int64_t v = 0; v < nv; v++) {
      const int64_t s = (k * nv + v) * nu;
      float *row = o + v * pitch;
      if (dtype == CTR_DTYPE_FLOAT32) {
        const float *in = (const float *)src + s;
        for (int64_t u = 0; u < nu; u++) {
          /* The data policy: NaN / Inf / beyond CTR__VALUE_LIMIT would spread
           * over the whole row in the filter. */
          const float x = in[u] * scale;
          const int ok = ctr__value_ok(x);
          bad += !ok;
          row[u] = ok ? x : 0.0f;
        }
      } else {
        const uint16_t *in = (const uint16_t *)src + s;
        for (int64_t u = 0; u < nu; u++) row[u] = (float)in[u] * scale;
      }
    }
  }
  return bad;
}

/* Copies n views (float32 or uint16, unpadded) into the padded batch buffer,
 * borders zeroed (x 1 is exact); returns the bad values replaced by 0. */
int64_t ctr__fill_padded(const ctr_geometry *g, const void *src, ctr_dtype dtype, int64_t n,
                         float *dst) {
  return ctr__fill_padded_scaled(g, src, dtype, n, 1.0f, dst);
}

ctr_status ctr__check_fdk_arrays(const ctr_geometry *g, const ctr_fdk_options *o,
                                 const ctr_array *proj, const ctr_array *vol) {
  CTR_CHECK(check_array(proj, "projections", g->nu, g->nv, g->nviews, 1));
  return check_array(vol, "volume", g->vol.nx, g->vol.ny, o->nz, 0);
}

/* In-core FDK is the streamed pipeline between arrays in memory. */
ctr_status ctr_fdk(ctr_context *ctx, const ctr_geometry *g, const ctr_fdk_options *opts,
                   const ctr_array *proj, ctr_array *vol) {
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fdk: geometry is NULL");
  ctr_stream_options so = CTR_STREAM_OPTIONS_INIT;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_fdk_options, &so.fdk, opts));
  return ctr_fdk_stream_memory(ctx, g, &so, proj, vol, NULL);
}

ctr_status ctr_fdk_backproject(ctr_context *ctx, const ctr_geometry *g,
                               const ctr_fdk_options *opts, int64_t v0, int64_t n,
                               const float *filtered, ctr_array *vol) {
  if (!g || !filtered) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fdk_backproject: NULL geometry or data");
  ctr_fdk_options o;
  CTR_CHECK(ctr__fdk_options_resolve(g, opts, &o));
  CTR_CHECK(check_array(vol, "volume", g->vol.nx, g->vol.ny, o.nz, 0));
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
