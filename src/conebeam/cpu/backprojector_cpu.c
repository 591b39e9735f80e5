/* The CPU backend's incremental backprojector (the backend table's bpj_*
 * entries, engine.h): views accumulate into a volume in host memory, in
 * batches of padded views, with the fast backprojector; and its
 * double-precision reference. */
#include "conebeam/cpu/backproject.h"
#include "conebeam/cpu/engine_cpu.h"

#include <math.h>
#include <string.h>

#define CTR__CPU_BATCH 32

typedef struct cpu_bpj {
  ctr_context *ctx;
  const ctr_geometry *g;
  ctr_fdk_options o;
  float *vol; /* nx x ny x o.nz */
  int64_t nz_cap; /* its slices (o.nz at creation) */
  float *pad; /* one batch of padded views */
} cpu_bpj;

void ctr__cpu_bpj_free(void *self) {
  cpu_bpj *b = self;
  if (!b) return;
  ctr__aligned_free(b->vol);
  ctr__aligned_free(b->pad);
  free(b);
}

ctr_status ctr__cpu_bpj_create(ctr_context *ctx, int device, const ctr_geometry *g,
                               const ctr_fdk_options *o, void **out) {
  (void)device;
  *out = NULL;
  cpu_bpj *b = ctr__calloc(1, sizeof *b, "backprojector");
  if (!b) return CTR_E_OUT_OF_MEMORY;
  b->ctx = ctx;
  b->g = g;
  b->o = *o;
  b->nz_cap = o->nz;
  if (o->interp == CTR_INTERP_TEXTURE)
    ctr__log(ctx, CTR_LOG_WARNING, "texture interpolation needs a GPU; the CPU uses exact interpolation");
  const size_t nvox = (size_t)(g->vol.nx * g->vol.ny * o->nz);
  b->vol = ctr__aligned_alloc(nvox * sizeof(float), "backprojector volume");
  b->pad = ctr__aligned_alloc((size_t)(CTR__CPU_BATCH * ctr__padded_size(g->nu, g->nv)) * sizeof(float),
                              "padded views");
  if (!b->vol || !b->pad) {
    ctr__cpu_bpj_free(b);
    return CTR_E_OUT_OF_MEMORY;
  }
  memset(b->vol, 0, nvox * sizeof(float));
  *out = b;
  return CTR_OK;
}

ctr_status ctr__cpu_bpj_add(void *self, int64_t n, const int64_t *views, const float *const *images,
                            const float *weights) {
  cpu_bpj *b = self;
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

ctr_status ctr__cpu_bpj_read(void *self, float *vol) {
  cpu_bpj *b = self;
  memcpy(vol, b->vol, (size_t)(b->g->vol.nx * b->g->vol.ny * b->o.nz) * sizeof(float));
  return CTR_OK;
}

ctr_status ctr__cpu_bpj_reset(void *self) {
  cpu_bpj *b = self;
  memset(b->vol, 0, (size_t)(b->g->vol.nx * b->g->vol.ny * b->o.nz) * sizeof(float));
  return CTR_OK;
}

ctr_status ctr__cpu_bpj_slab(void *self, int64_t z0, int64_t nz) {
  cpu_bpj *b = self;
  if (nz < 1 || nz > b->nz_cap || z0 < 0 || z0 + nz > b->g->vol.nz)
    CTR_FAIL(CTR_E_INTERNAL, "backprojector slab [%lld, %lld): expected within 0 .. %lld and at "
             "most %lld slices", (long long)z0, (long long)(z0 + nz), (long long)b->g->vol.nz,
             (long long)b->nz_cap);
  b->o.z0 = z0;
  b->o.nz = nz;
  return ctr__cpu_bpj_reset(b);
}

ctr_status ctr__cpu_reference(ctr_context *ctx, int device, const ctr_geometry *g, int64_t n,
                              const int64_t *views, const float *const *images,
                              const double *weights, double *vol, int64_t z0, int64_t nzs) {
  (void)ctx;
  (void)device;
  ctr__bp_reference_views(g, n, views, images, weights, vol, z0, nzs);
  return CTR_OK;
}
