/* The ctrecon RabbitCT module: a shared library the RabbitCT runner loads
 * with dlopen. Backprojection runs on the GPU when one is usable (CPU
 * otherwise), with exact fp32 interpolation by default.
 *
 * Timing is honest: a view's backprojection is complete when the call that
 * covers it returns. On the first call of a buffered subset the module
 * backprojects every view of the subset (adv_pProjBuffers,
 * adv_numAvailProjs) and the subset's later calls find their view done;
 * a call outside that pattern backprojects its own view (A_n, I_n). Nothing
 * is deferred to RCTFinishAlgorithm, which only copies the volume out.
 *
 * Environment: CTRECON_DEVICE = auto | cpu | cuda (default auto),
 * CTRECON_INTERP = precise | exact | texture (default precise: RabbitCT
 * scores rounded HU, which float positions near pixel 1000 perturb). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrecon.h"
#include "rabbitct.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct module_state {
  ctr_context *ctx;
  ctr_geometry *g;
  ctr_backprojector *bp;
  unsigned int n_buffers;
  int64_t *idx;
  const float **images;
  float *weights;
  int64_t done_first, done_n; /* the subset already backprojected */
  float **pinned;              /* runner buffers pinned in place */
  unsigned int n_pinned;
} module_state;

static module_state M;

static bool fail(const char *what) {
  fprintf(stderr, "ctrecon RabbitCT module: %s: %s\n", what, ctr_error_detail());
  return false;
}

/* Pins the runner's projection buffers once (they are reused for every
 * subset), so uploads run at full speed without a staging copy. */
static void pin_buffers(const RabbitCtGlobalData *r) {
  if (!r->adv_pProjBuffers || M.pinned) return;
  M.pinned = calloc(r->adv_numProjBuffers, sizeof *M.pinned);
  if (!M.pinned) return;
  for (unsigned int k = 0; k < r->adv_numProjBuffers; k++)
    if (r->adv_pProjBuffers[k] &&
        ctr_host_register(r->adv_pProjBuffers[k], (size_t)r->S_x * r->S_y * sizeof(float)) == CTR_OK)
      M.pinned[M.n_pinned++] = r->adv_pProjBuffers[k];
}

static void release(void) {
  for (unsigned int k = 0; k < M.n_pinned; k++) ctr_host_unregister(M.pinned[k]);
  free(M.pinned);
  ctr_backprojector_free(M.bp);
  ctr_geometry_free(M.g);
  ctr_context_free(M.ctx);
  free(M.idx);
  free(M.images);
  free(M.weights);
  memset(&M, 0, sizeof M);
}

static bool make_context(void) {
  if (M.ctx) return true;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  const char *dev = getenv("CTRECON_DEVICE");
  if (dev && !strcmp(dev, "cpu")) co.device = CTR_DEVICE_CPU;
  else if (dev && !strncmp(dev, "cuda", 4)) co.device = CTR_DEVICE_CUDA;
  return ctr_context_create(&co, &M.ctx) == CTR_OK || fail("cannot create a context");
}

/* Geometry and backprojector from the runner's data (needs all matrices). */
static bool setup(const RabbitCtGlobalData *r) {
  if (M.bp) return true;
  if (!make_context()) return false;
  if (!r->adv_ppProjMatrixBuffers || r->adv_N == 0) {
    fprintf(stderr, "ctrecon RabbitCT module: the runner gave no projection matrices\n");
    return false;
  }
  if (ctr_geometry_from_rabbitct(r->S_x, r->S_y, r->adv_N,
                                 (const double *const *)r->adv_ppProjMatrixBuffers, r->L, r->R_L,
                                 r->O_L, &M.g) != CTR_OK)
    return fail("invalid geometry");
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  const char *interp = getenv("CTRECON_INTERP");
  o.interp = !interp || !strcmp(interp, "precise") ? CTR_INTERP_PRECISE
             : !strcmp(interp, "texture")          ? CTR_INTERP_TEXTURE
                                                   : CTR_INTERP_EXACT;
  if (ctr_backprojector_create(M.ctx, M.g, &o, &M.bp) != CTR_OK)
    return fail("cannot create the backprojector");
  M.n_buffers = r->adv_numProjBuffers > 0 ? r->adv_numProjBuffers : 1;
  M.idx = malloc(M.n_buffers * sizeof *M.idx);
  M.images = malloc(M.n_buffers * sizeof *M.images);
  M.weights = malloc(M.n_buffers * sizeof *M.weights);
  M.done_first = M.done_n = -1;
  if (!M.idx || !M.images || !M.weights) {
    fprintf(stderr, "ctrecon RabbitCT module: out of memory\n");
    return false;
  }
  return true;
}

EXPORT bool RCTPrepareAlgorithm(RabbitCtGlobalData *r) {
  (void)r;
  return make_context(); /* GPU start-up happens here, outside the timed calls */
}

EXPORT bool RCTLoadAlgorithm(RabbitCtGlobalData *r) {
  if (!make_context()) return false;
  pin_buffers(r);
  /* The matrices may arrive only with the first backprojection call. */
  return r->adv_ppProjMatrixBuffers ? setup(r) : true;
}

EXPORT bool RCTAlgorithmBackprojection(RabbitCtGlobalData *r) {
  if (!setup(r)) return false;
  const int64_t p = r->adv_projNumber, first = r->adv_firstProjOfSubset;
  const int64_t avail = r->adv_numAvailProjs;
  const int subset = r->adv_pProjBuffers && avail > 0 && avail <= (int64_t)M.n_buffers &&
                     p >= first && p < first + avail;
  if (subset && M.done_first == first && p < first + M.done_n) return true; /* done */
  if (subset && p == first) {
    pin_buffers(r); /* buffers that appeared only now */
    for (int64_t k = 0; k < avail; k++) {
      M.idx[k] = first + k;
      M.images[k] = r->adv_pProjBuffers[k];
      M.weights[k] = (float)ctr_rabbitct_weight(r->adv_ppProjMatrixBuffers[first + k]);
    }
    if (ctr_backprojector_add(M.bp, avail, M.idx, M.images, M.weights) != CTR_OK)
      return fail("backprojection failed");
    M.done_first = first;
    M.done_n = avail;
    return true;
  }
  /* One view on its own. */
  if (!r->A_n || !r->I_n || p < 0 || p >= (int64_t)r->adv_N) {
    fprintf(stderr, "ctrecon RabbitCT module: view %lld has no matrix or image\n", (long long)p);
    return false;
  }
  const int64_t view = p;
  const float *img = r->I_n;
  const float w = (float)ctr_rabbitct_weight(r->A_n);
  if (ctr_backprojector_add(M.bp, 1, &view, &img, &w) != CTR_OK)
    return fail("backprojection failed");
  return true;
}

EXPORT bool RCTFinishAlgorithm(RabbitCtGlobalData *r) {
  if (!M.bp) {
    fprintf(stderr, "ctrecon RabbitCT module: finish before any backprojection\n");
    return false;
  }
  if (!r->f_L) {
    fprintf(stderr, "ctrecon RabbitCT module: no output volume (f_L is NULL)\n");
    return false;
  }
  return ctr_backprojector_read(M.bp, r->f_L) == CTR_OK || fail("cannot read the volume");
}

EXPORT bool RCTUnloadAlgorithm(RabbitCtGlobalData *r) {
  (void)r;
  release();
  return true;
}
