/* Kernel-level entry points for tests and benchmarks (bp_config.h): the GPU
 * filter alone (host in, host out) and the backprojection kernels alone on
 * views already resident, timed with events. End-to-end work goes through
 * the engine (engine_cuda.cu), as users' runs do. Device buffers come from
 * the context's GPU buffer cache for the length of a call. */
#include "conebeam/cuda/bp_kernels.cuh"
#include "conebeam/cuda/filter_cuda.cuh"
#include "conebeam/cuda/views_layout.cuh"
#include "gpu/gpu_buffers.h"

#include <stdlib.h>
#include <string.h>

extern "C" ctr_status ctr__cuda_fdk_filter(const ctr_context *ctx, const ctr_geometry *g,
                                           const ctr_fdk_options *o, int64_t v0, int64_t n,
                                           const float *in, float *out) {
  ctr_status st = CTR_OK;
  cudaDeviceProp prop;
  uint64_t budget = 0;
  ctr__fdk_filter f;
  int have_filter = 0;
  ctr__gpu_filter gf;
  memset(&gf, 0, sizeof gf);
  float *d_in = NULL, *d_out = NULL;
  const size_t bytes = (size_t)(n * g->nu * g->nv) * sizeof(float);
  CTR_CHECK_GOTO(st, ctr__device_setup(ctx, ctr__context_gpu(ctx, 0), &prop, &budget));
  CTR_CHECK_GOTO(st, ctr__fdk_filter_init(ctx, g, o, &f));
  have_filter = 1;
  CTR_CHECK_GOTO(st, ctr__gpu_filter_create(ctx, &f, n, 0, &gf));
  GPU_GET(ctx, d_in, bytes, "filter input");
  GPU_GET(ctx, d_out, bytes, "filter output");
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
  cudaDeviceSynchronize(); /* the buffers go back unused */
  GPU_PUT(ctx, d_in, bytes);
  GPU_PUT(ctx, d_out, bytes);
  ctr__gpu_filter_free(&gf);
  if (have_filter) ctr__fdk_filter_free(&f);
  return st;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Every view of `filtered` (host) into dv, through d_src (batch views). */
static ctr_status fill_views(const ctr_geometry *g, const ctr__dev_views *dv, int64_t batch,
                             const float *filtered, float *d_src) {
  ctr_status st = CTR_OK;
  const int64_t nu = g->nu, nv = g->nv;
  for (int64_t v0 = 0; v0 < g->nviews; v0 += batch) {
    const int64_t n = g->nviews - v0 < batch ? g->nviews - v0 : batch;
    CU(cudaMemcpy(d_src, filtered + v0 * nu * nv, (size_t)(n * nu * nv) * sizeof(float),
                  cudaMemcpyHostToDevice));
    const ctr__gpu_store dst = ctr__views_target(dv, v0);
    CTR_CHECK_GOTO(st, ctr__gpu_store_views(d_src, nu, nv, n, &dst, 0));
  }
cleanup:
  return st;
}

/* n timings and the two events that bracket each run. */
static ctr_status timing_setup(size_t n, double **times, cudaEvent_t *e0, cudaEvent_t *e1) {
  ctr_status st = CTR_OK;
  *times = (double *)ctr__calloc(n, sizeof(double), "timings");
  if (!*times) return CTR_E_OUT_OF_MEMORY;
  CU(cudaEventCreate(e0));
  CU(cudaEventCreate(e1));
cleanup:
  return st;
}

static double median_of(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
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
  uint64_t budget = 0;
  ctr__dev_views dv;
  memset(&dv, 0, sizeof dv);
  float *d_src = NULL, *d_vol = NULL;
  double *times = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  if (repeats < 1) repeats = 1;
  const size_t src_bytes = (size_t)(batch * nu * nv) * sizeof(float);
  CTR_CHECK_GOTO(st, ctr__device_setup(ctx, ctr__context_gpu(ctx, 0), &prop, &budget));
  CTR_CHECK_GOTO(st, ctr__check_memory(ctr__views_bytes(g, cfg.variant, g->nviews) + vol_bytes +
                                      src_bytes, budget, "backprojection"));
  CTR_CHECK_GOTO(st, ctr__views_create(ctx, g, cfg.variant, batch, g->nviews,
                                       prop.maxTexture2DLayered[2], &dv));
  GPU_GET(ctx, d_src, src_bytes, "backprojection views");
  GPU_GET(ctx, d_vol, vol_bytes, "backprojection volume");
  CTR_CHECK_GOTO(st, fill_views(g, &dv, batch, filtered, d_src));
  CTR_CHECK_GOTO(st, timing_setup((size_t)repeats, &times, &e0, &e1));
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
  if (median_ms) *median_ms = median_of(times, repeats);
  if (vol) CU(cudaMemcpy(vol, d_vol, vol_bytes, cudaMemcpyDeviceToHost));
cleanup:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  free(times);
  cudaDeviceSynchronize(); /* the buffers go back unused */
  GPU_PUT(ctx, d_src, src_bytes);
  GPU_PUT(ctx, d_vol, vol_bytes);
  ctr__views_free(&dv);
  return st;
}

/* b += a, n floats (the hybrid's two partial sums). */
static __global__ void add_into(float *b, const float *a, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    b[i] += a[i];
}

extern "C" ctr_status ctr__cuda_backproject_hybrid(const ctr_context *ctx, const ctr_geometry *g,
                                                   const ctr_fdk_options *o,
                                                   const ctr__bp_config *req_a,
                                                   const ctr__bp_config *req_b, double share_a,
                                                   const float *filtered, float *vol, int repeats,
                                                   double *median_ms, double parts_ms[2]) {
  ctr_status st = CTR_OK;
  ctr__bp_config cfg[2];
  for (int k = 0; k < 2; k++) {
    const ctr__bp_config tuned = ctr__bp_config_tuned(ctx, k ? req_b : req_a);
    cfg[k] = ctr__bp_config_resolve(g, o, &tuned);
  }
  const int64_t nu = g->nu, nv = g->nv;
  const int64_t batch = cfg[0].views_per_launch > cfg[1].views_per_launch
                            ? cfg[0].views_per_launch : cfg[1].views_per_launch;
  /* views [0, na) to the first kernel, [na, nviews) to the second, in whole launches */
  int64_t na = (int64_t)(share_a * (double)g->nviews + 0.5);
  na = na < 0 ? 0 : na > g->nviews ? g->nviews : na;
  const long long nvox = (long long)(g->vol.nx * g->vol.ny * o->nz);
  const size_t vol_bytes = (size_t)nvox * sizeof(float);
  const size_t src_bytes = (size_t)(batch * nu * nv) * sizeof(float);
  cudaDeviceProp prop;
  uint64_t budget = 0;
  ctr__dev_views dv[2];
  memset(dv, 0, sizeof dv);
  float *d_src = NULL, *d_vol[2] = {NULL, NULL};
  double *times = NULL;
  cudaStream_t s[2] = {NULL, NULL};
  cudaEvent_t e0 = NULL, e1 = NULL, ep[2] = {NULL, NULL};
  if (repeats < 1) repeats = 1;
  CTR_CHECK_GOTO(st, ctr__device_setup(ctx, ctr__context_gpu(ctx, 0), &prop, &budget));
  CTR_CHECK_GOTO(st, ctr__check_memory(ctr__views_bytes(g, cfg[0].variant, g->nviews) +
                                           ctr__views_bytes(g, cfg[1].variant, g->nviews) +
                                           2 * vol_bytes + src_bytes,
                                       budget, "hybrid backprojection"));
  GPU_GET(ctx, d_src, src_bytes, "backprojection views");
  for (int k = 0; k < 2; k++) {
    CTR_CHECK_GOTO(st, ctr__views_create(ctx, g, cfg[k].variant, cfg[k].views_per_launch,
                                         g->nviews, prop.maxTexture2DLayered[2], &dv[k]));
    CTR_CHECK_GOTO(st, fill_views(g, &dv[k], cfg[k].views_per_launch, filtered, d_src));
    GPU_GET(ctx, d_vol[k], vol_bytes, "backprojection volume");
    CU(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
    CU(cudaEventCreate(&ep[k]));
  }
  CTR_CHECK_GOTO(st, timing_setup((size_t)(3 * repeats), &times, &e0, &e1));
  for (int r = -1; r < repeats; r++) { /* r = -1 warms up */
    for (int k = 0; k < 2; k++) CU(cudaMemset(d_vol[k], 0, vol_bytes));
    CU(cudaDeviceSynchronize());
    CU(cudaEventRecord(e0, 0));
    for (int k = 0; k < 2; k++) { /* side by side: each kernel on its own stream */
      CU(cudaStreamWaitEvent(s[k], e0, 0));
      const int64_t v0 = k ? na : 0, n = k ? g->nviews - na : na;
      if (n > 0)
        CTR_CHECK_GOTO(st, ctr__backproject_batch(g, &dv[k], &cfg[k], v0, n, d_vol[k], o->z0,
                                                  o->nz, 0, ctr__grid_slices(&dv[k], o->nz),
                                                  s[k]));
      CU(cudaEventRecord(ep[k], s[k]));
      CU(cudaStreamWaitEvent(0, ep[k], 0));
    }
    add_into<<<(unsigned)(prop.multiProcessorCount * 8), 256>>>(d_vol[0], d_vol[1], nvox);
    CU(cudaGetLastError());
    CU(cudaEventRecord(e1, 0));
    CU(cudaEventSynchronize(e1));
    float ms, pa, pb;
    CU(cudaEventElapsedTime(&ms, e0, e1));
    CU(cudaEventElapsedTime(&pa, e0, ep[0]));
    CU(cudaEventElapsedTime(&pb, e0, ep[1]));
    if (r >= 0) times[r] = ms, times[repeats + r] = pa, times[2 * repeats + r] = pb;
  }
  if (median_ms) *median_ms = median_of(times, repeats);
  if (parts_ms) {
    parts_ms[0] = median_of(times + repeats, repeats);
    parts_ms[1] = median_of(times + 2 * repeats, repeats);
  }
  if (vol) CU(cudaMemcpy(vol, d_vol[0], vol_bytes, cudaMemcpyDeviceToHost));
cleanup:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  free(times);
  cudaDeviceSynchronize(); /* the buffers go back unused */
  for (int k = 0; k < 2; k++) {
    if (ep[k]) cudaEventDestroy(ep[k]);
    if (s[k]) cudaStreamDestroy(s[k]);
    GPU_PUT(ctx, d_vol[k], vol_bytes);
    ctr__views_free(&dv[k]);
  }
  GPU_PUT(ctx, d_src, src_bytes);
  return st;
}
