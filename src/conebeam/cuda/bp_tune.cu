/* Autotuning of the cone-beam backprojection's launch shape (core/autotune.h,
 * family "conebeam-bp"; docs/tuning.md, "Autotuning"): Z' (bp_slices) and
 * the block (bp_block) of the kernel a run uses, timed on the run's own slab
 * from N' zero views of its geometry (the real kernel, the real launch, the
 * run's grid; the time of these kernels does not depend on the values). A
 * smaller slab ranked the shapes otherwise (its grid too few blocks deep at
 * Z' 8): its choices ran 2-38 % slower on whole volumes (docs/tuning.md).
 * Exact interpolation gives the same bits for every shape (test_gpu_fdk,
 * test_gpu_tune); texture and precise interpolation round differently
 * across Z' (docs/tuning.md). The buffers come from the context's GPU
 * buffer cache and go back to it before the engine allocates its own. */
#include "conebeam/cuda/bp_kernels.cuh"
#include "conebeam/cuda/filter_cuda.cuh"
#include "conebeam/cuda/views_layout.cuh"
#include "core/autotune.h"
#include "gpu/gpu_buffers.h"

#include <stdio.h>
#include <string.h>

/* Timed launches a candidate: the median of 3, or 1 when its warm-up took more than
 * TUNE_LONG_MS (a launch that long varies by well under the 3 % margin). */
#define TUNE_REPS 3
#define TUNE_LONG_MS 20.0f

typedef struct bp_timer {
  const ctr_geometry *g;
  ctr__dev_views dv;
  ctr__bp_config cfg;
  int64_t idx[CTR__BP_MAX_VIEWS];
  int64_t n, z0, nzs;
  float *d_vol;
  cudaEvent_t e0, e1;
} bp_timer;

static ctr_status time_shape(void *user, const int *v, double *ms) {
  bp_timer *t = (bp_timer *)user;
  ctr_status st = CTR_OK;
  ctr__bp_config cfg = t->cfg;
  cfg.slices_per_thread = v[0];
  cfg.block_x = CTR__TUNE_X(v[1]);
  cfg.block_y = CTR__TUNE_Y(v[1]);
  float times[TUNE_REPS];
  int reps = TUNE_REPS;
  for (int r = -1; r < reps; r++) { /* r = -1 warms up */
    CU(cudaEventRecord(t->e0, 0));
    const int64_t k_end = ctr__grid_slices(&t->dv, t->nzs);
    CTR_CHECK_GOTO(st, ctr__views_backproject(t->g, &t->dv, &cfg, t->idx, NULL, 0, t->n,
                                              t->d_vol, t->z0, t->nzs, 0, k_end, 0));
    CU(cudaEventRecord(t->e1, 0));
    CU(cudaEventSynchronize(t->e1));
    float x;
    CU(cudaEventElapsedTime(&x, t->e0, t->e1));
    if (r >= 0) times[r] = x;
    else if (x > TUNE_LONG_MS) reps = 1;
  }
  for (int i = 1; i < reps; i++)
    for (int j = i; j > 0 && times[j] < times[j - 1]; j--) {
      const float x = times[j];
      times[j] = times[j - 1], times[j - 1] = x;
    }
  *ms = times[reps / 2];
cleanup:
  return st;
}

/* The GPU key of the current device. */
static ctr_status gpu_key(const cudaDeviceProp *prop, ctr__tune_gpu *k) {
  ctr_status st = CTR_OK;
  memset(k, 0, sizeof *k);
  snprintf(k->name, sizeof k->name, "%s", prop->name);
  k->cc_major = prop->major, k->cc_minor = prop->minor;
  CU(cudaDriverGetVersion(&k->driver));
cleanup:
  return st;
}

extern "C" ctr_status ctr__bp_tune(ctr_context *ctx, int device, const ctr_geometry *g,
                                   const ctr_fdk_options *o, ctr__bp_config *cfg, int64_t slab,
                                   uint64_t cap, int force, ctr_tune_report *r) {
  ctr_status st = CTR_OK;
  const ctr_tuning *tu = ctr__tuning(ctx);
  const ctr__tune_space *s = ctr__tune_space_find("conebeam-bp");
  if (r) memset(r, 0, sizeof *r);
  /* off, every parameter set by hand, or the general kernel (it picks its
   * registers per launch from the shape it is left: bp_general.cu) */
  if (tu->tune < 0 || (tu->bp_slices > 0 && tu->bp_block_x > 0) ||
      cfg->variant == CTR__BP_PRECISE_GENERAL || !s)
    return CTR_OK;
  bp_timer t;
  memset(&t, 0, sizeof t);
  t.g = g;
  t.cfg = *cfg;
  cudaDeviceProp prop;
  uint64_t budget = 0;
  ctr__tune_gpu gk;
  CTR_CHECK(ctr__device_setup(ctx, device, &prop, &budget));
  CTR_CHECK(gpu_key(&prop, &gk));
  /* the slab timed: the run's (its grid's depth ranks the shapes), centred so that pairs
   * stay pairs */
  int64_t nzs = slab > 0 && slab < o->nz ? slab : o->nz;
  if ((o->nz - nzs) % 2) nzs--;
  if (nzs < 1) nzs = o->nz;
  /* the class: the variant, the launch's views and the sizes, bucketed, the slab's
   * slices included */
  char cls[256];
  snprintf(cls, sizeof cls, "%s views=%d vol=%lldx%lld slab=%lld det=%lldx%lld",
           ctr__bp_variant_name(cfg->variant), cfg->views_per_launch,
           (long long)ctr__tune_bucket(g->vol.nx), (long long)ctr__tune_bucket(g->vol.ny),
           (long long)ctr__tune_bucket(nzs), (long long)ctr__tune_bucket(g->nu),
           (long long)ctr__tune_bucket(g->nv));
  const int def[2] = {cfg->slices_per_thread, CTR__TUNE_XY(cfg->block_x, cfg->block_y)};
  const int fixed[2] = {tu->bp_slices > 0 ? tu->bp_slices : 0,
                        tu->bp_block_x > 0 ? CTR__TUNE_XY(tu->bp_block_x, tu->bp_block_y) : 0};
  const int general = 0;
  ctr__tune_request q;
  memset(&q, 0, sizeof q);
  q.space = s, q.gpu = &gk, q.problem_class = cls, q.def = def, q.fixed = fixed;
  q.problem = &general, q.time = time_shape, q.user = &t, q.force = force;
  int best[2] = {def[0], def[1]};
  if (ctr__tune_known(ctx, &q, best, r)) { /* a known result needs no trial run */
    cfg->slices_per_thread = best[0];
    cfg->block_x = CTR__TUNE_X(best[1]);
    cfg->block_y = CTR__TUNE_Y(best[1]);
    return CTR_OK;
  }
  /* the trial: the centred slab, N' views spread over the scan */
  const int64_t nxy = g->vol.nx * g->vol.ny;
  t.nzs = nzs;
  t.z0 = o->z0 + (o->nz - nzs) / 2;
  ctr_geometry *gslab = NULL; /* the pair kernels' trial volume */
  if (ctr__is_pair(cfg->variant)) {
    /* A pair kernel sums mirrored slices of the whole volume (ctr__bp_pair_possible:
     * z0 0, every slice): its trial is a volume of the slab's slices about the same
     * centre (offset_z 0, the same views), whose slices are the run's centred slab. */
    CTR_CHECK(ctr_geometry_clone(g, &gslab));
    gslab->vol.nz = nzs;
    t.g = gslab;
    t.z0 = 0;
    if (!ctr__bp_pair_possible(gslab, 0, nzs)) {
      ctr_geometry_free(gslab);
      return CTR_OK;
    }
  }
  int64_t n = cfg->views_per_launch; /* the run's N' */
  if (n > g->nviews) n = g->nviews;
  t.n = n;
  for (int64_t i = 0; i < n; i++) t.idx[i] = i * g->nviews / n;
  const size_t vol_bytes = (size_t)(nxy * nzs) * sizeof(float);
  const size_t src_bytes = (size_t)(8 * g->nu * g->nv) * sizeof(float);
  float *d_src = NULL;
  if (cap && cap < budget) budget = cap;
  if ((uint64_t)(ctr__views_bytes(t.g, cfg->variant, n) + vol_bytes + src_bytes) > budget) {
    ctr__log(ctx, CTR_LOG_DEBUG, "cone-beam backprojection not tuned: its trial run does not fit "
             "in the GPU budget");
    ctr_geometry_free(gslab);
    return CTR_OK;
  }
  CTR_CHECK_GOTO(st, ctr__views_create(ctx, t.g, cfg->variant, n, n, prop.maxTexture2DLayered[2],
                                       &t.dv));
  GPU_GET(ctx, d_src, src_bytes, "tuning views");
  GPU_GET(ctx, t.d_vol, vol_bytes, "tuning volume");
  CU(cudaMemset(d_src, 0, src_bytes));
  CU(cudaMemset(t.d_vol, 0, vol_bytes));
  for (int64_t v0 = 0; v0 < n; v0 += 8) {
    const ctr__gpu_store dst = ctr__views_target(&t.dv, v0);
    const int64_t m = n - v0 < 8 ? n - v0 : 8;
    CTR_CHECK_GOTO(st, ctr__gpu_store_views(d_src, g->nu, g->nv, m, &dst, 0));
  }
  CU(cudaEventCreate(&t.e0));
  CU(cudaEventCreate(&t.e1));
  CTR_CHECK_GOTO(st, ctr__tune_get(ctx, &q, best, r));
  cfg->slices_per_thread = best[0];
  cfg->block_x = CTR__TUNE_X(best[1]);
  cfg->block_y = CTR__TUNE_Y(best[1]);
cleanup:
  if (t.e0) cudaEventDestroy(t.e0);
  if (t.e1) cudaEventDestroy(t.e1);
  cudaDeviceSynchronize(); /* the buffers go back unused */
  GPU_PUT(ctx, d_src, src_bytes);
  GPU_PUT(ctx, t.d_vol, vol_bytes);
  ctr__views_free(&t.dv);
  ctr_geometry_free(gslab);
  return st;
}
