/* The incremental backprojector (public API): dispatch to the CUDA
 * implementation, or accumulate on the CPU with the fast backprojector in
 * batches of padded views. Also the double-precision reference. */
#include <math.h>
#include <string.h>

#include "conebeam/cpu/backproject.h"
#include "conebeam/fdk_internal.h"
#if CTR_HAVE_CUDA
#include "conebeam/cuda/backprojector_cuda.h"
#endif

#define CTR__CPU_BATCH 32

struct ctr_backprojector {
  ctr_context *ctx;
  ctr_geometry *g; /* own copy */
  ctr_fdk_options o;
#if CTR_HAVE_CUDA
  ctr__cuda_bpj *gpu;
#endif
  float *vol; /* CPU */
  float *pad; /* CPU: one batch of padded views */
};

static int on_gpu(const ctr_context *ctx) {
  return ctx && ctr_context_get_device(ctx) == CTR_DEVICE_CUDA;
}

void ctr_backprojector_free(ctr_backprojector *b) {
  if (!b) return;
#if CTR_HAVE_CUDA
  ctr__cuda_bpj_free(b->gpu);
#endif
  ctr__aligned_free(b->vol);
  ctr__aligned_free(b->pad);
  ctr_geometry_free(b->g);
  free(b);
}

ctr_status ctr_backprojector_create(ctr_context *ctx, const ctr_geometry *g,
                                    const ctr_fdk_options *opts, ctr_backprojector **out) {
  if (!out || !g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_backprojector_create: NULL argument");
  *out = NULL;
  ctr_fdk_options o;
  CTR_CHECK(ctr__fdk_options_resolve(g, opts, &o));
  ctr_backprojector *b = ctr__calloc(1, sizeof *b, "backprojector");
  if (!b) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = CTR_OK;
  b->ctx = ctx;
  b->o = o;
  CTR_CHECK_GOTO(st, ctr_geometry_clone(g, &b->g));
  if (on_gpu(ctx)) {
#if CTR_HAVE_CUDA
    CTR_CHECK_GOTO(st, ctr__cuda_bpj_create(ctx, b->g, &b->o, &b->gpu));
#endif
  } else {
    if (o.interp == CTR_INTERP_TEXTURE)
      ctr__log(ctx, CTR_LOG_WARNING, "texture interpolation needs a GPU; the CPU uses exact interpolation");
    const size_t nvox = (size_t)(g->vol.nx * g->vol.ny * o.nz);
    b->vol = ctr__aligned_alloc(nvox * sizeof(float), "backprojector volume");
    b->pad = ctr__aligned_alloc((size_t)(CTR__CPU_BATCH * ctr__padded_size(g->nu, g->nv)) * sizeof(float),
                                "padded views");
    if (!b->vol || !b->pad) {
      st = CTR_E_OUT_OF_MEMORY;
      goto cleanup;
    }
    memset(b->vol, 0, nvox * sizeof(float));
  }
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
#if CTR_HAVE_CUDA
  if (b->gpu) return ctr__cuda_bpj_add(b->gpu, n, views, images, weights);
#endif
  const ctr_geometry *g = b->g;
  const int64_t size = ctr__padded_size(g->nu, g->nv);
  const ctr__padded_views pv = {b->pad + ctr__padded_origin(g->nu), size, ctr__padded_pitch(g->nu)};
  for (int64_t k = 0; k < n; k += CTR__CPU_BATCH) {
    const int64_t m = n - k < CTR__CPU_BATCH ? n - k : CTR__CPU_BATCH;
    double alpha[CTR__CPU_BATCH];
    for (int64_t j = 0; j < m; j++) {
      ctr__fill_padded(g, images[k + j], CTR_DTYPE_FLOAT32, 1, b->pad + j * size);
      alpha[j] = weights ? 1.0 / sqrt((double)weights[k + j]) : 1.0;
    }
    ctr__bp_cpu(b->ctx, g, 0, m, views + k, alpha, &pv, b->vol, b->o.z0, b->o.nz);
  }
  return CTR_OK;
}

ctr_status ctr_backprojector_read(ctr_backprojector *b, float *vol) {
  if (!b || !vol) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_backprojector_read: NULL argument");
#if CTR_HAVE_CUDA
  if (b->gpu) return ctr__cuda_bpj_read(b->gpu, vol);
#endif
  memcpy(vol, b->vol, (size_t)(b->g->vol.nx * b->g->vol.ny * b->o.nz) * sizeof(float));
  return CTR_OK;
}

ctr_status ctr_backprojector_reset(ctr_backprojector *b) {
  if (!b) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_backprojector_reset: backprojector is NULL");
#if CTR_HAVE_CUDA
  if (b->gpu) return ctr__cuda_bpj_reset(b->gpu);
#endif
  memset(b->vol, 0, (size_t)(b->g->vol.nx * b->g->vol.ny * b->o.nz) * sizeof(float));
  return CTR_OK;
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
#if CTR_HAVE_CUDA
  if (on_gpu(ctx)) return ctr__cuda_bp_reference(ctx, g, n, views, images, weights, vol, 0, g->vol.nz);
#endif
  ctr__bp_reference_views(g, n, views, images, weights, vol, 0, g->vol.nz);
  return CTR_OK;
}
