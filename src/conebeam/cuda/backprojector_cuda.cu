/* The incremental backprojector on the GPU (ctr_backprojector with a CUDA
 * context) and the FP64 reference backprojection.
 *
 * Views arrive from host memory in any order. A call runs as chunks (see
 * chunk_schedule): the copy stream uploads a chunk (pinned memory in place,
 * else through pinned staging) and stores it into one of two alternating
 * slot sets of the variant's layout; the compute stream backprojects it, so
 * chunk c+1 uploads and is stored while chunk c is backprojected. A call
 * returns when all its views are in the volume. Views in GPU memory (the
 * fast projector pair's device path, src/iterative/projector.c) take no
 * upload: one chunk per launch, stored from where they are (contiguous on
 * this GPU) or copied over on the device first; read likewise copies into
 * GPU memory on the device. Per-view weights scale the
 * view's matrix (same u, v; weight x 1 / alpha^2 with alpha =
 * 1 / sqrt(weight)).
 *
 * Memory: the device buffers (volume, upload buffers, the layout's) come
 * from the context's GPU buffer cache (src/gpu/gpu_buffers.h) and go back to
 * it when the backprojector is freed (which holds its context: core.h,
 * ctr_context_free); the FP64 reference's for the length of its call. */
#include "conebeam/cuda/views_layout.cuh"
#include "gpu/host_transfer.h"
#include "filter/helix_weight_math.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conebeam/cuda/backprojector_cuda.h"
#include "gpu/gpu_buffers.h"

/* Rates for the chunk schedule (the H100 ceilings of docs/design.md; the update rate
 * is the general kernel's on RabbitCT, runs outside the detector skipped). */
#define EST_H2D_BYTES_PER_S 50e9
#define EST_HBM_BYTES_PER_S 3.0e12
#define EST_UPDATES_PER_S 1.0e12
#define SPLIT_LEVELS 2 /* early launches of a split call, at most */

typedef struct ctr__cuda_bpj {
  const ctr_context *ctx;
  int device;
  const ctr_geometry *g;
  ctr_fdk_options o;
  ctr__bp_config cfg;
  ctr__dev_views dv; /* 2 x N' slots */
  float *d_vol;
  float *d_src[2];
  float *h_stage[2]; /* pinned staging of pageable views */
  cudaStream_t s_copy, s_comp;
  cudaEvent_t ev_up[2], ev_ready[2], ev_done[2];
  cudaEvent_t ev_level[SPLIT_LEVELS]; /* a split's early launches: their views are up */
  size_t vol_bytes;  /* the current slab's volume */
  size_t vol_cap;    /* d_vol's size (o.nz slices at creation) */
  size_t src_bytes;  /* each d_src's size */
  int64_t nz_cap;    /* slices of d_vol (o.nz at creation) */
  int max_layers;    /* the device's layered texture limit */
  int next_set;      /* slot set of the next queued call (ctr__cuda_bpj_queue) */
} ctr__cuda_bpj;

void ctr__cuda_bpj_free(void *self) {
  ctr__cuda_bpj *b = (ctr__cuda_bpj *)self;
  if (!b) return;
  cudaSetDevice(b->device);
  cudaDeviceSynchronize(); /* the buffers go back unused */
  for (int i = 0; i < 2; i++) {
    ctr__gpu_buffer_put(b->ctx, b->device, b->d_src[i], b->src_bytes);
    cudaFreeHost(b->h_stage[i]);
    if (b->ev_up[i]) cudaEventDestroy(b->ev_up[i]);
    if (b->ev_ready[i]) cudaEventDestroy(b->ev_ready[i]);
    if (b->ev_done[i]) cudaEventDestroy(b->ev_done[i]);
  }
  for (int j = 0; j < SPLIT_LEVELS; j++)
    if (b->ev_level[j]) cudaEventDestroy(b->ev_level[j]);
  ctr__gpu_buffer_put(b->ctx, b->device, b->d_vol, b->vol_cap);
  ctr__views_free(&b->dv);
  if (b->s_copy) cudaStreamDestroy(b->s_copy);
  if (b->s_comp) cudaStreamDestroy(b->s_comp);
  free(b);
}

/* The kernels of a backprojector of slab o (create and ctr__cuda_bpj_slab). */
static ctr__bp_config configure(const ctr_context *ctx, const ctr_geometry *g,
                                const ctr_fdk_options *o) {
  const ctr_tuning *t = ctr__tuning(ctx);
  const ctr__bp_config tuned = ctr__bp_config_tuned(ctx, NULL);
  ctr__bp_config cfg = ctr__bp_config_resolve(g, o, &tuned);
  if (!ctr__is_tex(cfg.variant) && cfg.variant != CTR__BP_PRECISE_GENERAL &&
      t->bp_slices <= 0 && t->bp_block_x <= 0) {
    /* Software interpolation on the RabbitCT module's views (non-circular, a
     * subset per call): 16 slices per thread in 32 x 4 blocks measured best
     * (bench/NOTES.md, issue 7). */
    ctr__bp_config req = cfg;
    req.slices_per_thread = 16, req.block_x = 32, req.block_y = 4;
    cfg = ctr__bp_config_resolve(g, o, &req);
  }
  return cfg;
}

ctr_status ctr__cuda_bpj_create(ctr_context *ctx, int device, const ctr_geometry *g,
                                const ctr_fdk_options *o, void **out) {
  ctr_status st = CTR_OK;
  *out = NULL;
  cudaDeviceProp prop;
  uint64_t budget = 0;
  CTR_CHECK(ctr__device_setup(ctx, device, &prop, &budget));
  ctr__cuda_bpj *b = (ctr__cuda_bpj *)ctr__calloc(1, sizeof *b, "backprojector");
  if (!b) return CTR_E_OUT_OF_MEMORY;
  b->ctx = ctx;
  b->device = device;
  b->g = g;
  b->o = *o;
  b->cfg = configure(ctx, g, o);
  b->nz_cap = o->nz;
  b->max_layers = prop.maxTexture2DLayered[2];
  const int64_t np = b->cfg.views_per_launch;
  const size_t view_bytes = (size_t)(g->nu * g->nv) * sizeof(float);
  b->vol_bytes = (size_t)(g->vol.nx * g->vol.ny * o->nz) * sizeof(float);
  b->vol_cap = b->vol_bytes;
  b->src_bytes = np * view_bytes;
  CTR_CHECK_GOTO(st, ctr__check_memory(ctr__views_bytes(g, b->cfg.variant, 2 * np) + b->vol_bytes +
                                           2 * np * view_bytes,
                                       budget, "the backprojector"));
  CU(cudaStreamCreateWithFlags(&b->s_copy, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&b->s_comp, cudaStreamNonBlocking));
  for (int j = 0; j < SPLIT_LEVELS; j++)
    CU(cudaEventCreateWithFlags(&b->ev_level[j], cudaEventDisableTiming));
  for (int i = 0; i < 2; i++) {
    CU(cudaEventCreateWithFlags(&b->ev_up[i], cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&b->ev_ready[i], cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&b->ev_done[i], cudaEventDisableTiming));
    GPU_GET(ctx, b->d_src[i], b->src_bytes, "backprojector views");
    /* pinned staging of pageable views, made here rather than at the first
     * add: RabbitCT times the adds, not the creation */
    CU(cudaMallocHost(&b->h_stage[i], np * view_bytes));
  }
  CTR_CHECK_GOTO(st, ctr__views_create(ctx, g, b->cfg.variant, np, 2 * np,
                                       prop.maxTexture2DLayered[2], &b->dv));
  GPU_GET(ctx, b->d_vol, b->vol_cap, "backprojector volume");
  CU(cudaMemset(b->d_vol, 0, b->vol_bytes));
  *out = b;
cleanup:
  if (st != CTR_OK) ctr__cuda_bpj_free(b);
  return st;
}

typedef struct est_rates {
  double up, upd, pass; /* seconds: one view's upload, one view's updates, one volume pass */
} est_rates;
static est_rates rates(const ctr__cuda_bpj *b) {
  const ctr_geometry *g = b->g;
  est_rates r = {(double)(g->nu * g->nv) * sizeof(float) / EST_H2D_BYTES_PER_S,
                 (double)(g->vol.nx * g->vol.ny * b->o.nz) / EST_UPDATES_PER_S,
                 2.0 * (double)b->vol_bytes / EST_HBM_BYTES_PER_S};
  return r;
}

/* The chunk schedule of a call of n views: a first chunk of `first` views,
 * then chunks of `rest`. Each call must finish its own views, so nothing
 * hides the first chunk's upload nor the last chunk's backprojection; small
 * chunks shorten both but cost a read-modify-write pass over the volume
 * each. The choice simulates the two streams (uploads back to back; a
 * launch starts when its views are up and the previous launch is done, and
 * lasts its volume pass plus its updates: measured additive, bench/NOTES.md
 * issue 7) with the EST_ rates, over
 * powers of two. ctr_tuning.bp_chunk_first, bp_chunk_rest override it
 * (experiments, bench/NOTES.md). */
static void chunk_schedule(const ctr__cuda_bpj *b, int64_t n, int64_t *first, int64_t *rest) {
  const int64_t cap = b->cfg.views_per_launch;
  const ctr_tuning *t = ctr__tuning(b->ctx);
  const int64_t f = t->bp_chunk_first, r = t->bp_chunk_rest;
  if (f > 0 && r > 0) {
    *first = f < cap ? f : cap;
    *rest = r < cap ? r : cap;
    return;
  }
  const est_rates e = rates(b);
  const double up = e.up, upd = e.upd, pass = e.pass;
  double best = INFINITY;
  *first = *rest = n < cap ? n : cap;
  for (int64_t cf = 1; cf <= cap; cf *= 2)
    for (int64_t cr = cf; cr <= cap; cr *= 2) {
      double t_up = 0, t_end = 0;
      for (int64_t c0 = 0; c0 < n;) {
        const int64_t m = c0 == 0 ? (cf < n ? cf : n) : (cr < n - c0 ? cr : n - c0);
        t_up += (double)m * up;
        t_end = fmax(t_end, t_up) + pass + (double)m * upd;
        c0 += m;
      }
      if (t_end < best * 0.999) best = t_end, *first = cf, *rest = cr;
    }
}

/* The split schedule of a call of n <= N' views (one slot set). The slab's
 * slices are cut into levels: early launch j backprojects the first a[j]
 * views into slices [z[j-1], z[j]) (z[-1] = 0) as soon as they are up; then
 * one launch backprojects all views into the slices above the last level,
 * and one per level the views it has not seen. The early launches keep the
 * GPU busy during the upload at the cost of one more read-modify-write of
 * their slices only (the chunk schedule's first chunk costs a pass over the
 * whole volume). Worth it where a view's updates take several times its
 * upload (RabbitCT L = 1024; at L = 512, where they take about as long,
 * every split measured slower than the chunk schedule: bench/NOTES.md):
 * there two levels, the first n/16 views into the lowest eighth of the
 * slab, the first n/4 into the next quarter (measured best among one and
 * two levels, bench/NOTES.md). Returns the number of levels (0: none).
 * ctr_tuning.bp_split = 1 or 2 forces a plan (bp_split_views/slices), -1
 * turns it off (experiments). */
#define SPLIT_MIN_RATIO 4.0
static int split_schedule(const ctr__cuda_bpj *b, int64_t n, int64_t *a, int64_t *z) {
  const int64_t nz = b->o.nz, zp = b->cfg.slices_per_thread;
  const ctr_tuning *t = ctr__tuning(b->ctx);
  if (n < 2 || n > b->cfg.views_per_launch || ctr__is_pair(b->cfg.variant) ||
      t->bp_chunk_first > 0 || t->bp_split < 0)
    return 0;
  if (t->bp_split > 0) {
    for (int j = 0; j < t->bp_split; j++) {
      const int64_t pa = j ? t->bp_split_views[j - 1] : 0, pz = j ? t->bp_split_slices[j - 1] : 0;
      const int64_t fa = t->bp_split_views[j], fz = t->bp_split_slices[j];
      if (!(fa > pa && fa < n && fz > pz && fz < nz)) return 0;
      a[j] = fa, z[j] = fz;
    }
    return t->bp_split;
  }
  const est_rates e = rates(b);
  if (e.upd < SPLIT_MIN_RATIO * e.up || n < 8 || nz < 8 * zp) return 0;
  a[0] = n / 16 > 1 ? n / 16 : 1;
  a[1] = n / 4;
  z[0] = (nz / 8 + zp / 2) / zp * zp;
  z[1] = (3 * nz / 8 + zp / 2) / zp * zp;
  return 2;
}

/* 1 if every image is device memory (any GPU; *here: all on `device`, one
 * after the other, so the layout's store reads them in place). */
static int device_images(const float *const *images, int64_t n, int64_t view_floats, int device,
                         int *here) {
  /* *here only when every image is on the GPU: host images (this function
   * returning 0) are never read in place (a host pointer handed to a kernel:
   * test_gpu_fdk under compute-sanitizer, 2026-11-27) */
  *here = 0;
  int same = 1;
  for (int64_t k = 0; k < n; k++) {
    cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, images[k]) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    if (attr.type != cudaMemoryTypeDevice) return 0;
    if (attr.device != device || images[k] != images[0] + k * view_floats) same = 0;
  }
  *here = n > 0 && same;
  return n > 0;
}

ctr_status ctr__cuda_bpj_add(void *self, int64_t n, const int64_t *views,
                             const float *const *images, const float *weights) {
  ctr__cuda_bpj *b = (ctr__cuda_bpj *)self;
  CU_DEVICE(b->device);
  ctr_status st = CTR_OK;
  const ctr_geometry *g = b->g;
  const size_t view_bytes = (size_t)(g->nu * g->nv) * sizeof(float);
  int64_t first, rest, sa[SPLIT_LEVELS], sz[SPLIT_LEVELS];
  int in_place = 0;
  const int on_gpu = device_images(images, n, g->nu * g->nv, b->device, &in_place);
  /* Views on the GPU: no upload to hide, so neither early launches nor
   * small chunks (each costs a pass over the volume). */
  const int levels = on_gpu ? 0 : split_schedule(b, n, sa, sz);
  if (on_gpu) first = rest = n < b->cfg.views_per_launch ? n : b->cfg.views_per_launch;
  else if (levels > 0) first = rest = n; /* one chunk, split */
  else chunk_schedule(b, n, &first, &rest);
  const int64_t nzs = ctr__grid_slices(&b->dv, b->o.nz);
  const int threads = ctr__num_threads(b->ctx);
  /* Chunk c uses staging buffer and slot set i = c % 2. The copy stream
   * uploads it and stores it into the slots (after chunk c-2's
   * backprojection has finished with them), so the store overlaps chunk
   * c-1's backprojection on the compute stream. A split chunk (the only
   * one of its call) stores the views of its early launches on the
   * compute stream as soon as they are up (split_schedule). */
  for (int64_t c0 = 0, chunk = 0; c0 < n; chunk++) {
    const int i = (int)(chunk & 1);
    const int64_t want = chunk == 0 ? first : rest;
    const int64_t m = n - c0 < want ? n - c0 : want;
    const int64_t a = levels ? sa[levels - 1] : 0, ztop = levels ? sz[levels - 1] : 0;
    const int64_t slot0 = i * b->cfg.views_per_launch;
    double alpha[CTR__BP_MAX_VIEWS];
    for (int64_t k = 0; k < m; k++) alpha[k] = weights ? 1.0 / sqrt((double)weights[c0 + k]) : 1.0;
    /* Pinned images (ctr_host_register) go up directly; others through the
     * pinned staging buffer, view by view, so that each view's upload
     * overlaps the next one's host copy. */
    int pinned = 1;
    for (int64_t k = 0; k < m && pinned && !on_gpu; k++) pinned = ctr__xfer_direct(images[c0 + k]);
    if (!pinned) CU(cudaEventSynchronize(b->ev_up[i])); /* the upload out of h_stage[i] two chunks ago */
    /* The chunk's views, contiguous on this GPU: the layout's store reads
     * them in place (they stay valid until the call returns); else they go
     * to d_src[i] (on the device when they are GPU memory). */
    const float *src_views = in_place ? images[c0] : b->d_src[i];
    for (int64_t k = 0; k < m && !in_place; k++) {
      const void *src = images[c0 + k];
      if (!pinned) {
        char *stage = (char *)b->h_stage[i] + k * view_bytes;
        ctr__host_copy(stage, src, view_bytes, threads);
        src = stage;
      }
      CU(cudaMemcpyAsync((char *)b->d_src[i] + k * view_bytes, src, view_bytes,
                         on_gpu ? cudaMemcpyDefault : cudaMemcpyHostToDevice, b->s_copy));
      for (int j = 0; j < levels; j++) {
        if (k + 1 != sa[j]) continue;
        /* early launch j: views [0, sa[j]) into its slices once they are up */
        const int64_t pa = j ? sa[j - 1] : 0, pz = j ? sz[j - 1] : 0;
        const ctr__gpu_store dst = ctr__views_target(&b->dv, slot0 + pa);
        CU(cudaEventRecord(b->ev_level[j], b->s_copy));
        CU(cudaStreamWaitEvent(b->s_comp, b->ev_level[j], 0));
        CTR_CHECK_GOTO(st, ctr__gpu_store_views(b->d_src[i] + pa * g->nu * g->nv, g->nu, g->nv,
                                                sa[j] - pa, &dst, b->s_comp));
        CTR_CHECK_GOTO(st, ctr__views_backproject(g, &b->dv, &b->cfg, views + c0, alpha, slot0,
                                                  sa[j], b->d_vol, b->o.z0, b->o.nz, pz, sz[j],
                                                  b->s_comp));
      }
    }
    CU(cudaEventRecord(b->ev_up[i], b->s_copy));
    CU(cudaStreamWaitEvent(b->s_copy, b->ev_done[i], 0)); /* chunk c-2 is out of slot set i */
    const ctr__gpu_store dst = ctr__views_target(&b->dv, slot0 + a);
    CTR_CHECK_GOTO(st, ctr__gpu_store_views(src_views + a * g->nu * g->nv, g->nu, g->nv, m - a,
                                            &dst, b->s_copy));
    CU(cudaEventRecord(b->ev_ready[i], b->s_copy));
    CU(cudaStreamWaitEvent(b->s_comp, b->ev_ready[i], 0));
    /* all views into the slices above the levels (no split: all slices),
     * then each level's remaining views, the last level first */
    CTR_CHECK_GOTO(st, ctr__views_backproject(g, &b->dv, &b->cfg, views + c0, alpha, slot0, m,
                                              b->d_vol, b->o.z0, b->o.nz, ztop, nzs, b->s_comp));
    for (int j = levels - 1; j >= 0; j--)
      CTR_CHECK_GOTO(st, ctr__views_backproject(g, &b->dv, &b->cfg, views + c0 + sa[j],
                                                alpha + sa[j], slot0 + sa[j], m - sa[j], b->d_vol,
                                                b->o.z0, b->o.nz, j ? sz[j - 1] : 0, sz[j],
                                                b->s_comp));
    CU(cudaEventRecord(b->ev_done[i], b->s_comp));
    c0 += m;
  }
  CU(cudaStreamSynchronize(b->s_comp)); /* every view of this call is in the volume */
cleanup:
  return st;
}

ctr_status ctr__cuda_bpj_read(void *self, float *vol) {
  ctr__cuda_bpj *b = (ctr__cuda_bpj *)self;
  CU_DEVICE(b->device);
  ctr_status st = CTR_OK;
  /* vol: host memory, or GPU memory (a device-to-device copy) */
  CU(cudaMemcpyAsync(vol, b->d_vol, b->vol_bytes, cudaMemcpyDefault, b->s_comp));
  CU(cudaStreamSynchronize(b->s_comp));
cleanup:
  return st;
}

ctr_status ctr__cuda_bpj_reset(void *self) {
  ctr__cuda_bpj *b = (ctr__cuda_bpj *)self;
  CU_DEVICE(b->device);
  ctr_status st = CTR_OK;
  CU(cudaMemsetAsync(b->d_vol, 0, b->vol_bytes, b->s_comp));
  CU(cudaStreamSynchronize(b->s_comp));
cleanup:
  return st;
}

/* The queued operations of a kept backprojector (engine.h: bpj_slab,
 * bpj_queue, bpj_read_queued, bpj_wait). */
ctr_status ctr__cuda_bpj_slab(void *self, int64_t z0, int64_t nz) {
  ctr__cuda_bpj *b = (ctr__cuda_bpj *)self;
  CU_DEVICE(b->device);
  ctr_status st = CTR_OK;
  const ctr_geometry *g = b->g;
  if (nz < 1 || nz > b->nz_cap || z0 < 0 || z0 + nz > g->vol.nz)
    CTR_FAIL(CTR_E_INTERNAL, "backprojector slab [%lld, %lld): expected within 0 .. %lld and at "
             "most %lld slices", (long long)z0, (long long)(z0 + nz), (long long)g->vol.nz,
             (long long)b->nz_cap);
  {
    ctr_fdk_options o = b->o;
    o.z0 = z0;
    o.nz = nz;
    const ctr__bp_config cfg = configure(b->ctx, g, &o);
    if (cfg.views_per_launch != b->cfg.views_per_launch)
      CTR_FAIL(CTR_E_INTERNAL, "backprojector slab: %d views a launch, created with %d",
               cfg.views_per_launch, b->cfg.views_per_launch);
    if (cfg.variant != b->cfg.variant) {
      /* another layout (a slab symmetric about the source plane or not):
       * rebuilt once the work queued on the old one has finished */
      const int64_t np = cfg.views_per_launch;
      uint64_t budget = 0;
      CU(cudaStreamSynchronize(b->s_copy));
      CU(cudaStreamSynchronize(b->s_comp));
      ctr__views_free(&b->dv); /* its buffers count as free below: kept by the cache */
      CTR_CHECK_GOTO(st, ctr__gpu_budget_detect(b->ctx, b->device, &budget));
      CTR_CHECK_GOTO(st, ctr__check_memory(ctr__views_bytes(g, cfg.variant, 2 * np), budget,
                                           "the backprojector"));
      CTR_CHECK_GOTO(st, ctr__views_create(b->ctx, g, cfg.variant, np, 2 * np, b->max_layers,
                                           &b->dv));
    }
    b->cfg = cfg;
    b->o = o;
    b->vol_bytes = (size_t)(g->vol.nx * g->vol.ny * nz) * sizeof(float);
    CU(cudaMemsetAsync(b->d_vol, 0, b->vol_bytes, b->s_comp));
  }
cleanup:
  return st;
}

ctr_status ctr__cuda_bpj_queue(void *self, int64_t n, const int64_t *views, const float *images,
                               void *ready, void *consumed) {
  ctr__cuda_bpj *b = (ctr__cuda_bpj *)self;
  CU_DEVICE(b->device);
  ctr_status st = CTR_OK;
  const ctr_geometry *g = b->g;
  if (n < 0 || n > b->cfg.views_per_launch)
    CTR_FAIL(CTR_E_INTERNAL, "backprojector queue of %lld views: at most %d", (long long)n,
             b->cfg.views_per_launch);
  {
    /* bpj_add's path for one chunk of views contiguous on this GPU (stored
     * from where they are, all slices, weights 1), without its wait */
    const int i = b->next_set;
    const int64_t slot0 = i * b->cfg.views_per_launch;
    double alpha[CTR__BP_MAX_VIEWS];
    for (int64_t k = 0; k < n; k++) alpha[k] = 1.0;
    if (ready) CU(cudaStreamWaitEvent(b->s_copy, (cudaEvent_t)ready, 0));
    if (n > 0) {
      b->next_set ^= 1;
      CU(cudaStreamWaitEvent(b->s_copy, b->ev_done[i], 0)); /* the call before last is out of set i */
      const ctr__gpu_store dst = ctr__views_target(&b->dv, slot0);
      CTR_CHECK_GOTO(st, ctr__gpu_store_views(images, g->nu, g->nv, n, &dst, b->s_copy));
    }
    if (consumed) CU(cudaEventRecord((cudaEvent_t)consumed, b->s_copy));
    if (n > 0) {
      CU(cudaEventRecord(b->ev_ready[i], b->s_copy));
      CU(cudaStreamWaitEvent(b->s_comp, b->ev_ready[i], 0));
      CTR_CHECK_GOTO(st, ctr__views_backproject(g, &b->dv, &b->cfg, views, alpha, slot0, n,
                                                b->d_vol, b->o.z0, b->o.nz, 0,
                                                ctr__grid_slices(&b->dv, b->o.nz), b->s_comp));
      CU(cudaEventRecord(b->ev_done[i], b->s_comp));
    }
  }
cleanup:
  return st;
}

ctr_status ctr__cuda_bpj_read_queued(void *self, float *vol) {
  ctr__cuda_bpj *b = (ctr__cuda_bpj *)self;
  CU_DEVICE(b->device);
  ctr_status st = CTR_OK;
  CU(cudaMemcpyAsync(vol, b->d_vol, b->vol_bytes, cudaMemcpyDeviceToDevice, b->s_comp));
cleanup:
  return st;
}

ctr_status ctr__cuda_bpj_wait(void *self) {
  ctr__cuda_bpj *b = (ctr__cuda_bpj *)self;
  CU_DEVICE(b->device);
  ctr_status st = CTR_OK;
  CU(cudaStreamSynchronize(b->s_copy));
  CU(cudaStreamSynchronize(b->s_comp));
cleanup:
  return st;
}

/* ------------------------------------------------------------------------- */
/* FP64 reference                                                            */
/* ------------------------------------------------------------------------- */

struct ref_grid {
  int nx, ny, nzs, nu, nv, n;
  double x0, y0, z0, sx, sy, sz; /* coordinates of voxel (0, 0, slab start), spacing */
  int helix;                     /* helical FDK's window and edge rows (ctr__bp_reference_views) */
  double kz, s;
};

/* One thread per voxel; the same formulas as ctr__bp_reference_views. */
__global__ void reference_kernel(const float *__restrict__ images, const double *__restrict__ P,
                                 const double *__restrict__ w, const double *__restrict__ srcz,
                                 ref_grid r, double *vol) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z;
  if (x >= r.nx || y >= r.ny) return;
  const double p0 = r.x0 + x * r.sx, p1 = r.y0 + y * r.sy, p2 = r.z0 + z * r.sz;
  double sum = 0.0;
  for (int k = 0; k < r.n; k++) {
    const double *m = P + 12 * k;
    const double c = m[8] * p0 + m[9] * p1 + m[10] * p2 + m[11];
    const double u = (m[0] * p0 + m[1] * p1 + m[2] * p2 + m[3]) / c;
    double v = (m[4] * p0 + m[5] * p1 + m[6] * p2 + m[7]) / c, wk = w[k];
    if (r.helix) {
      wk *= ctr__helix_window(ctr__helix_arg(srcz[k], p2, r.kz), r.s);
      v = fmin(fmax(v, 0.0), (double)(r.nv - 1));
    }
    sum += wk * ctr__bilinear_zero_f64(images + (long long)k * r.nu * r.nv, r.nu, r.nv, u, v) /
           (c * c);
  }
  vol[((long long)z * r.ny + y) * r.nx + x] += sum;
}

ctr_status ctr__cuda_bp_reference(ctr_context *ctx, int device, const ctr_geometry *g, int64_t n,
                                  const int64_t *views, const float *const *images,
                                  const double *weights, double *vol, int64_t z0, int64_t nzs) {
  /* reference_kernel maps through the matrices (the CPU's reference,
   * ctr__bp_reference_views, has the cylindrical maps) */
  CTR_CHECK(ctr__geometry_require_flat(g, "the GPU's FP64 reference backprojection",
                                       "ctr_circular_params.detector"));
  ctr_status st = CTR_OK;
  cudaDeviceProp prop;
  uint64_t budget = 0;
  const int64_t chunk = 64;
  const size_t view_bytes = (size_t)(g->nu * g->nv) * sizeof(float);
  const size_t vol_bytes = (size_t)(g->vol.nx * g->vol.ny * nzs) * sizeof(double);
  float *d_img = NULL;
  double *d_P = NULL, *d_w = NULL, *d_vol = NULL;
  double P[12 * 64], w[2 * 64]; /* weights, then the sources' heights */
  const ctr_volume_geometry *vg = &g->vol;
  ref_grid r;
  CTR_CHECK(ctr__device_setup(ctx, device, &prop, &budget));
  CTR_CHECK(ctr__check_memory(vol_bytes + chunk * view_bytes, budget, "the FP64 reference"));
  GPU_GET(ctx, d_img, chunk * view_bytes, "reference views");
  GPU_GET(ctx, d_P, sizeof P, "reference matrices");
  GPU_GET(ctx, d_w, sizeof w, "reference weights");
  GPU_GET(ctx, d_vol, vol_bytes, "reference volume");
  CU(cudaMemcpy(d_vol, vol, vol_bytes, cudaMemcpyHostToDevice));
  r.nx = (int)vg->nx;
  r.ny = (int)vg->ny;
  r.nzs = (int)nzs;
  r.nu = (int)g->nu;
  r.nv = (int)g->nv;
  r.x0 = ctr__voxel_coord(0, vg->nx, vg->voxel_x, vg->offset_x);
  r.y0 = ctr__voxel_coord(0, vg->ny, vg->voxel_y, vg->offset_y);
  r.z0 = ctr__voxel_coord(z0, vg->nz, vg->voxel_z, vg->offset_z);
  r.sx = vg->voxel_x;
  r.sy = vg->voxel_y;
  r.sz = vg->voxel_z;
  {
    ctr__helix_fdk hx;
    r.helix = ctr__geometry_helix(g, &hx);
    r.kz = r.helix ? hx.kz : 0.0;
    r.s = r.helix ? hx.s : 0.0;
  }
  for (int64_t c0 = 0; c0 < n; c0 += chunk) {
    const int64_t m = n - c0 < chunk ? n - c0 : chunk;
    for (int64_t k = 0; k < m; k++) {
      memcpy(P + 12 * k, g->views[views[c0 + k]].P, 12 * sizeof(double));
      w[k] = weights ? weights[c0 + k] : 1.0;
      w[chunk + k] = g->views[views[c0 + k]].src[2];
      CU(cudaMemcpy(d_img + k * (view_bytes / sizeof(float)), images[c0 + k], view_bytes,
                    cudaMemcpyHostToDevice));
    }
    CU(cudaMemcpy(d_P, P, (size_t)m * 12 * sizeof(double), cudaMemcpyHostToDevice));
    CU(cudaMemcpy(d_w, w, sizeof w, cudaMemcpyHostToDevice));
    r.n = (int)m;
    const dim3 block(32, 8), grid((r.nx + 31) / 32, (r.ny + 7) / 8, (unsigned)nzs);
    reference_kernel<<<grid, block>>>(d_img, d_P, d_w, d_w + chunk, r, d_vol);
    CU_LAUNCHED("reference_kernel");
  }
  CU(cudaMemcpy(vol, d_vol, vol_bytes, cudaMemcpyDeviceToHost));
cleanup:
  cudaDeviceSynchronize(); /* the buffers go back unused */
  GPU_PUT(ctx, d_img, chunk * view_bytes);
  GPU_PUT(ctx, d_P, sizeof P);
  GPU_PUT(ctx, d_w, sizeof w);
  GPU_PUT(ctx, d_vol, vol_bytes);
  return st;
}
