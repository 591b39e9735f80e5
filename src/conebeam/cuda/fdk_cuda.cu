/* CUDA FDK pipeline. Every filtered view stays resident on the device in the
 * backprojection variant's layout (layered textures, or zero-padded global
 * memory), so later volume slabs could reuse them. Two streams overlap the
 * work: `copy` uploads batch b+1 while `comp` filters and backprojects batch
 * b; raw batches are double buffered and guarded by events. */
#include "conebeam/cuda/bp_kernels.cuh"
#include "conebeam/cuda/filter_cuda.cuh"

#include <math.h>
#include <string.h>
#include <time.h>

#include "conebeam/cuda/views_layout.cuh"

static double wall_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

/* ------------------------------------------------------------------------- */
/* End-to-end FDK                                                            */
/* ------------------------------------------------------------------------- */

/* Events of one batch: upload start/end (copy stream), filter start/end
 * (filter stream), backprojection start/end (backprojection stream). */
enum { EV_UP0, EV_UP1, EV_F0, EV_F1, EV_BP0, EV_BP1, EV_PER_BATCH };
/* The last batches are backprojected slab by slab, each slab downloaded
 * while the next is computed; enough batches are held back that their work
 * outlasts the download (estimated from these rates). */
#define TAIL_SLABS 8
#define EST_GUPS 1.5e12
#define EST_D2H_BYTES_PER_S 45e9

extern "C" ctr_status ctr__cuda_fdk(const ctr_context *ctx, const ctr_geometry *g,
                                    const ctr_fdk_options *o, const ctr__bp_config *req,
                                    const void *proj, ctr_dtype dtype, float *vol,
                                    ctr__cuda_timings *tm) {
  ctr_status st = CTR_OK;
  const double t_start = wall_ms();
  const ctr__bp_config tuned = ctr__bp_config_tuned(ctx, req);
  const ctr__bp_config cfg = ctr__bp_config_resolve(g, o, &tuned);
  const int64_t batch = cfg.views_per_launch, nu = g->nu, nv = g->nv, nviews = g->nviews;
  const int64_t nzs = o->nz, nbatches = (nviews + batch - 1) / batch;
  const size_t esize = ctr_dtype_size(dtype), view_bytes = (size_t)(nu * nv) * esize;
  const size_t slice_bytes = (size_t)(g->vol.nx * g->vol.ny) * sizeof(float);
  const size_t vol_bytes = slice_bytes * (size_t)nzs;
  const int threads = ctr__num_threads(ctx);
  cudaDeviceProp prop;
  size_t free_bytes = 0;
  ctr__fdk_filter f;
  int have_filter = 0;
  ctr__gpu_filter gf;
  memset(&gf, 0, sizeof gf);
  ctr__dev_views dv;
  memset(&dv, 0, sizeof dv);
  void *d_raw[2] = {NULL, NULL}, *h_stage[2] = {NULL, NULL};
  float *d_vol = NULL, *h_vol_stage = NULL;
  cudaStream_t s_copy = NULL, s_filt = NULL, s_bp = NULL;
  cudaEvent_t ev_up[2] = {NULL, NULL}, ev_used[2] = {NULL, NULL};
  cudaEvent_t *ev = NULL; /* EV_PER_BATCH per batch, 4 per tail slab, then done, t0, t1 */
  const int64_t nev = EV_PER_BATCH * nbatches + 4 * TAIL_SLABS + 3;
  const int proj_pinned = ctr__host_pinned(proj), vol_pinned = ctr__host_pinned(vol);
  double t_setup = 0;

  CTR_CHECK_GOTO(st, ctr__device_setup(ctx, &prop, &free_bytes));
  {
    const size_t need = ctr__views_bytes(g, cfg.variant, g->nviews) + vol_bytes + 2 * batch * view_bytes +
                        ctr__gpu_filter_bytes(nu, nv, nviews, batch);
    CTR_CHECK_GOTO(st, ctr__check_memory(need, free_bytes, "FDK"));
  }
  CTR_CHECK_GOTO(st, ctr__fdk_filter_init(ctx, g, o, &f));
  have_filter = 1;
  {
    int lo = 0, hi = 0;
    CU(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    CU(cudaStreamCreateWithFlags(&s_copy, cudaStreamNonBlocking));
    CU(cudaStreamCreateWithPriority(&s_bp, cudaStreamNonBlocking, lo));
    if (cfg.pipeline == CTR__PIPE_SERIAL) s_filt = s_bp;
    else
      CU(cudaStreamCreateWithPriority(&s_filt, cudaStreamNonBlocking,
                                      cfg.pipeline == CTR__PIPE_FILTER_PRIORITY ? hi : lo));
  }
  for (int i = 0; i < 2; i++) {
    CU(cudaEventCreateWithFlags(&ev_up[i], cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&ev_used[i], cudaEventDisableTiming));
    CU(cudaMalloc(&d_raw[i], batch * view_bytes));
    if (!proj_pinned) CU(cudaMallocHost(&h_stage[i], batch * view_bytes));
  }
  ev = (cudaEvent_t *)ctr__calloc((size_t)nev, sizeof(cudaEvent_t), "timing events");
  if (!ev) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  for (int64_t i = 0; i < nev; i++) CU(cudaEventCreate(&ev[i]));
  CTR_CHECK_GOTO(st, ctr__views_create(g, cfg.variant, batch, g->nviews, prop.maxTexture2DLayered[2], &dv));
  CTR_CHECK_GOTO(st, ctr__gpu_filter_create(&f, batch, s_filt, &gf));
  CU(cudaMalloc(&d_vol, vol_bytes));
  CU(cudaDeviceSynchronize());
  t_setup = wall_ms() - t_start;
  {
    cudaEvent_t t0 = ev[nev - 2], t1 = ev[nev - 1], *tail = ev + EV_PER_BATCH * nbatches;
    const int64_t kslices = ctr__grid_slices(&dv, nzs);
    const int overlap_tail = vol_pinned;
    const double bp_s = (double)batch * (double)(g->vol.nx * g->vol.ny * nzs) / EST_GUPS;
    const double dl_s = (double)vol_bytes / EST_D2H_BYTES_PER_S;
    int64_t held = overlap_tail ? (int64_t)ceil(dl_s / bp_s) : 0;
    if (held > nbatches) held = nbatches;
    const int64_t first_held = nbatches - held;
    CU(cudaEventRecord(t0, s_copy));
    CU(cudaStreamWaitEvent(s_bp, t0, 0));
    CU(cudaMemsetAsync(d_vol, 0, vol_bytes, s_bp));
    for (int64_t b = 0; b < nbatches; b++) {
      const int i = (int)(b & 1);
      cudaEvent_t *e = ev + EV_PER_BATCH * b;
      const int64_t v0 = b * batch, n = nviews - v0 < batch ? nviews - v0 : batch;
      const char *src = (const char *)proj + (size_t)v0 * view_bytes;
      CTR_CHECK_GOTO(st, ctr__progress(ctx, "fdk (cuda)", (double)v0 / (double)nviews));
      if (!proj_pinned) {
        CU(cudaEventSynchronize(ev_up[i])); /* the previous upload out of h_stage[i] is done */
        ctr__host_copy(h_stage[i], src, (size_t)n * view_bytes, threads);
        src = (const char *)h_stage[i];
      }
      CU(cudaStreamWaitEvent(s_copy, ev_used[i], 0)); /* batch b-2's filter has read d_raw[i] */
      CU(cudaEventRecord(e[EV_UP0], s_copy));
      CU(cudaMemcpyAsync(d_raw[i], src, (size_t)n * view_bytes, cudaMemcpyHostToDevice, s_copy));
      CU(cudaEventRecord(e[EV_UP1], s_copy));
      CU(cudaEventRecord(ev_up[i], s_copy));
      CU(cudaStreamWaitEvent(s_filt, ev_up[i], 0));
      CU(cudaEventRecord(e[EV_F0], s_filt));
      const ctr__gpu_store dst = ctr__views_target(&dv, v0);
      CTR_CHECK_GOTO(st, ctr__gpu_filter_run(&gf, d_raw[i], dtype, v0, n, &dst, s_filt));
      CU(cudaEventRecord(e[EV_F1], s_filt));
      CU(cudaEventRecord(ev_used[i], s_filt));
      CU(cudaStreamWaitEvent(s_bp, e[EV_F1], 0));
      CU(cudaEventRecord(e[EV_BP0], s_bp));
      if (b < first_held) {
        CTR_CHECK_GOTO(st, ctr__backproject_batch(g, &dv, &cfg, v0, n, d_vol, o->z0, nzs, 0, kslices, s_bp));
      }
      CU(cudaEventRecord(e[EV_BP1], s_bp));
    }
    if (held > 0) {
      /* The held-back batches slab by slab; each slab's slices go home while
       * the next slab is computed. */
      for (int64_t b = first_held; b < nbatches; b++)
        CU(cudaStreamWaitEvent(s_bp, ev[EV_PER_BATCH * b + EV_F1], 0));
      for (int c = 0; c < TAIL_SLABS; c++) {
        const int64_t k0 = kslices * c / TAIL_SLABS, k1 = kslices * (c + 1) / TAIL_SLABS;
        if (k1 <= k0) continue;
        CU(cudaEventRecord(tail[4 * c + 0], s_bp));
        for (int64_t b = first_held; b < nbatches; b++) {
          const int64_t v0 = b * batch, n = nviews - v0 < batch ? nviews - v0 : batch;
          CTR_CHECK_GOTO(st, ctr__backproject_batch(g, &dv, &cfg, v0, n, d_vol, o->z0, nzs, k0, k1, s_bp));
        }
        CU(cudaEventRecord(tail[4 * c + 1], s_bp));
        CU(cudaStreamWaitEvent(s_copy, tail[4 * c + 1], 0));
        CU(cudaEventRecord(tail[4 * c + 2], s_copy));
        CU(cudaMemcpyAsync((char *)vol + k0 * slice_bytes, (char *)d_vol + k0 * slice_bytes,
                           (size_t)(k1 - k0) * slice_bytes, cudaMemcpyDeviceToHost, s_copy));
        if (dv.pair) {
          const int64_t m0 = nzs - k1, m1 = nzs - k0;
          CU(cudaMemcpyAsync((char *)vol + m0 * slice_bytes, (char *)d_vol + m0 * slice_bytes,
                             (size_t)(m1 - m0) * slice_bytes, cudaMemcpyDeviceToHost, s_copy));
        }
        CU(cudaEventRecord(tail[4 * c + 3], s_copy));
      }
    }
    if (!overlap_tail) {
      /* Pageable volume: staged through a pinned buffer, chunk by chunk. */
      const size_t chunk = (size_t)64 << 20;
      CU(cudaStreamSynchronize(s_bp));
      CU(cudaMallocHost(&h_vol_stage, chunk));
      CU(cudaEventRecord(tail[2], s_copy));
      for (size_t off = 0; off < vol_bytes; off += chunk) {
        const size_t len = vol_bytes - off < chunk ? vol_bytes - off : chunk;
        CU(cudaMemcpyAsync(h_vol_stage, (char *)d_vol + off, len, cudaMemcpyDeviceToHost, s_copy));
        CU(cudaStreamSynchronize(s_copy));
        ctr__host_copy((char *)vol + off, h_vol_stage, len, threads);
      }
      CU(cudaEventRecord(tail[3], s_copy));
    }
    CU(cudaEventRecord(ev[nev - 3], s_bp)); /* everything on the compute side */
    CU(cudaStreamWaitEvent(s_copy, ev[nev - 3], 0));
    CU(cudaEventRecord(t1, s_copy));
    CU(cudaEventSynchronize(t1));
    if (tm) {
      memset(tm, 0, sizeof *tm);
      float ms;
      for (int64_t b = 0; b < nbatches; b++) {
        const cudaEvent_t *e = ev + EV_PER_BATCH * b;
        CU(cudaEventElapsedTime(&ms, e[EV_UP0], e[EV_UP1]));
        tm->upload_ms += ms;
        CU(cudaEventElapsedTime(&ms, e[EV_F0], e[EV_F1]));
        tm->filter_ms += ms;
        if (b < first_held) {
          CU(cudaEventElapsedTime(&ms, e[EV_BP0], e[EV_BP1]));
          tm->backproject_ms += ms;
        }
      }
      if (held > 0) {
        for (int c = 0; c < TAIL_SLABS; c++) {
          const int64_t k0 = kslices * c / TAIL_SLABS, k1 = kslices * (c + 1) / TAIL_SLABS;
          if (k1 <= k0) continue;
          CU(cudaEventElapsedTime(&ms, tail[4 * c + 0], tail[4 * c + 1]));
          tm->backproject_ms += ms;
          CU(cudaEventElapsedTime(&ms, tail[4 * c + 2], tail[4 * c + 3]));
          tm->download_ms += ms;
        }
      } else {
        CU(cudaEventElapsedTime(&ms, tail[2], tail[3]));
        tm->download_ms = ms;
      }
      CU(cudaEventElapsedTime(&ms, t0, t1));
      tm->total_ms = ms;
      tm->setup_ms = t_setup;
      tm->variant = cfg.variant;
      tm->views_per_launch = cfg.views_per_launch;
      tm->slices_per_thread = cfg.slices_per_thread;
      tm->pipeline = cfg.pipeline;
    }
  }
  CTR_CHECK_GOTO(st, ctr__progress(ctx, "fdk (cuda)", 1.0));
cleanup:
  cudaDeviceSynchronize();
  if (ev) {
    for (int64_t i = 0; i < nev; i++)
      if (ev[i]) cudaEventDestroy(ev[i]);
    free(ev);
  }
  for (int i = 0; i < 2; i++) {
    if (ev_up[i]) cudaEventDestroy(ev_up[i]);
    if (ev_used[i]) cudaEventDestroy(ev_used[i]);
    cudaFree(d_raw[i]);
    cudaFreeHost(h_stage[i]);
  }
  cudaFreeHost(h_vol_stage);
  cudaFree(d_vol);
  ctr__gpu_filter_free(&gf);
  ctr__views_free(&dv);
  if (have_filter) ctr__fdk_filter_free(&f);
  if (s_copy) cudaStreamDestroy(s_copy);
  if (s_filt && s_filt != s_bp) cudaStreamDestroy(s_filt);
  if (s_bp) cudaStreamDestroy(s_bp);
  return st;
}

/* ------------------------------------------------------------------------- */
/* Pieces for tests and benchmarks                                           */
/* ------------------------------------------------------------------------- */

extern "C" ctr_status ctr__cuda_fdk_filter(const ctr_context *ctx, const ctr_geometry *g,
                                           const ctr_fdk_options *o, int64_t v0, int64_t n,
                                           const float *in, float *out) {
  ctr_status st = CTR_OK;
  cudaDeviceProp prop;
  size_t free_bytes;
  ctr__fdk_filter f;
  int have_filter = 0;
  ctr__gpu_filter gf;
  memset(&gf, 0, sizeof gf);
  float *d_in = NULL, *d_out = NULL;
  const size_t bytes = (size_t)(n * g->nu * g->nv) * sizeof(float);
  CTR_CHECK_GOTO(st, ctr__device_setup(ctx, &prop, &free_bytes));
  CTR_CHECK_GOTO(st, ctr__fdk_filter_init(ctx, g, o, &f));
  have_filter = 1;
  CTR_CHECK_GOTO(st, ctr__gpu_filter_create(&f, n, 0, &gf));
  CU(cudaMalloc(&d_in, bytes));
  CU(cudaMalloc(&d_out, bytes));
  CU(cudaMemcpy(d_in, in, bytes, cudaMemcpyHostToDevice));
  {
    ctr__gpu_store dst;
    memset(&dst, 0, sizeof dst);
    dst.kind = CTR__STORE_LINEAR;
    dst.base = d_out;
    dst.view_stride = (long long)(g->nu * g->nv);
    dst.pitch = (int)g->nu;
    CTR_CHECK_GOTO(st, ctr__gpu_filter_run(&gf, d_in, CTR_DTYPE_FLOAT32, v0, n, &dst, 0));
  }
  CU(cudaMemcpy(out, d_out, bytes, cudaMemcpyDeviceToHost));
cleanup:
  cudaFree(d_in);
  cudaFree(d_out);
  ctr__gpu_filter_free(&gf);
  if (have_filter) ctr__fdk_filter_free(&f);
  return st;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

extern "C" ctr_status ctr__cuda_backproject(const ctr_context *ctx, const ctr_geometry *g,
                                            const ctr_fdk_options *o, const ctr__bp_config *req,
                                            const float *filtered, float *vol, int repeats,
                                            double *median_ms) {
  ctr_status st = CTR_OK;
  const ctr__bp_config tuned = ctr__bp_config_tuned(ctx, req);
  const ctr__bp_config cfg = ctr__bp_config_resolve(g, o, &tuned);
  const int64_t batch = cfg.views_per_launch, nu = g->nu, nv = g->nv;
  const size_t vol_bytes = (size_t)(g->vol.nx * g->vol.ny * o->nz) * sizeof(float);
  cudaDeviceProp prop;
  size_t free_bytes;
  ctr__dev_views dv;
  memset(&dv, 0, sizeof dv);
  float *d_src = NULL, *d_vol = NULL;
  double *times = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  if (repeats < 1) repeats = 1;
  CTR_CHECK_GOTO(st, ctr__device_setup(ctx, &prop, &free_bytes));
  CTR_CHECK_GOTO(st, ctr__check_memory(ctr__views_bytes(g, cfg.variant, g->nviews) + vol_bytes +
                                      (size_t)(batch * nu * nv) * sizeof(float),
                                  free_bytes, "backprojection"));
  CTR_CHECK_GOTO(st, ctr__views_create(g, cfg.variant, batch, g->nviews, prop.maxTexture2DLayered[2], &dv));
  CU(cudaMalloc(&d_src, (size_t)(batch * nu * nv) * sizeof(float)));
  CU(cudaMalloc(&d_vol, vol_bytes));
  for (int64_t v0 = 0; v0 < g->nviews; v0 += batch) {
    const int64_t n = g->nviews - v0 < batch ? g->nviews - v0 : batch;
    CU(cudaMemcpy(d_src, filtered + v0 * nu * nv, (size_t)(n * nu * nv) * sizeof(float),
                  cudaMemcpyHostToDevice));
    const ctr__gpu_store dst = ctr__views_target(&dv, v0);
    CTR_CHECK_GOTO(st, ctr__gpu_store_views(d_src, nu, nv, n, &dst, 0));
  }
  times = (double *)ctr__calloc((size_t)repeats, sizeof(double), "timings");
  if (!times) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  CU(cudaEventCreate(&e0));
  CU(cudaEventCreate(&e1));
  for (int r = -1; r < repeats; r++) { /* r = -1 warms up */
    CU(cudaMemset(d_vol, 0, vol_bytes));
    CU(cudaEventRecord(e0, 0));
    CTR_CHECK_GOTO(st, ctr__backproject_batch(g, &dv, &cfg, 0, g->nviews, d_vol, o->z0, o->nz, 0,
                                         ctr__grid_slices(&dv, o->nz), 0));
    CU(cudaEventRecord(e1, 0));
    CU(cudaEventSynchronize(e1));
    float ms;
    CU(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 0) times[r] = ms;
  }
  qsort(times, (size_t)repeats, sizeof *times, cmp_double);
  if (median_ms) *median_ms = repeats % 2 ? times[repeats / 2] : 0.5 * (times[repeats / 2 - 1] + times[repeats / 2]);
  if (vol) CU(cudaMemcpy(vol, d_vol, vol_bytes, cudaMemcpyDeviceToHost));
cleanup:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  free(times);
  cudaFree(d_src);
  cudaFree(d_vol);
  ctr__views_free(&dv);
  return st;
}
