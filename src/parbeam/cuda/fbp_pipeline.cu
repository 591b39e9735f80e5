/* Parallel-beam FBP on the GPU from projections (or sinograms) to slices:
 * per chunk of
 * detector rows, one strided upload of those rows of every projection, then
 * on the device flat/dark correction, -log and transposition into
 * sinograms, the ramp filter (batched in-place cuFFT with the CPU filter's
 * kernel values) and the angular weights, the backprojection, and the
 * download of the chunk's slices. Two chunks alternate on two streams so
 * the transfers of one overlap the work of the other. */
#include "parbeam/cuda/fbp_cuda.cuh"
#include "core/projmath.h"
#include "gpu/host_transfer.h"
#include "filter/filter.h"

#include <cufft.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Chunks of S slices (CTR__FBP_GPU_CHUNK, fewer in a small budget) handed out to the GPUs of a context (one
 * worker thread each): a GPU that finishes a chunk takes the next, so faster
 * ones take more. The calling thread reports progress and relays a
 * cancellation. One worker runs on the calling thread itself. */
typedef struct chunk_queue {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int64_t next, count;       /* chunks handed out, in all */
  int stop;                  /* a worker failed, or cancelled */
  int running;
} chunk_queue;

/* The next chunk (-1: none left, or stopped); wakes the reporting thread. */
static int64_t take_chunk(chunk_queue *q) {
  pthread_mutex_lock(&q->mu);
  const int64_t k = !q->stop && q->next < q->count ? q->next++ : -1;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  return k;
}

static void queue_stop(chunk_queue *q) {
  pthread_mutex_lock(&q->mu);
  q->stop = 1;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

/* raw: [a][s][b] (rows s of projection a); out: rows of `ld` floats,
 * [(s * na + a)][b], the padding zeroed. */
template <typename T>
__global__ void flatfield_transpose(const T *__restrict__ raw, const float *__restrict__ flat,
                                    const float *__restrict__ dark, int nb, int nrows_chunk,
                                    int na, int ld, float *__restrict__ out,
                                    unsigned long long *bad) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  const int a = blockIdx.y, s = blockIdx.z;
  if (b >= ld) return;
  float v = 0.0f;
  if (b < nb) {
    const float p = (float)raw[((long long)a * nrows_chunk + s) * nb + b];
    const float d = dark ? dark[(long long)s * nb + b] : 0.0f;
    const float f = flat[(long long)s * nb + b];
    const float den = f - d;
    /* No calibration (flat <= dark, non-finite): 0, as on the CPU
     * (src/parbeam/flatfield.c; the host counts these pixels). */
    if (den > 0.0f && isfinite(f) && isfinite(d)) {
      float ratio = (p - d) / den;
      if (!(ratio >= 1e-6f)) ratio = 1e-6f; /* dead or saturated pixels, NaN */
      v = -logf(ratio);
      if (!ctr__value_ok(v)) { /* an infinite projection value: the data policy */
        v = 0.0f;
        atomicAdd(bad, 1ull);
      }
    }
  }
  out[((long long)s * na + a) * ld + b] = v;
}

/* Sinograms [(s * na + a)][b] into rows of `ld` floats, the padding zeroed;
 * bad values (the data policy) become 0 and are counted in *bad. */
__global__ void pad_rows(const float *__restrict__ sino, int nb, int na, int ld,
                         float *__restrict__ out, unsigned long long *bad) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  const long long r = (long long)blockIdx.z * na + blockIdx.y;
  if (b >= ld) return;
  float x = b < nb ? sino[r * nb + b] : 0.0f;
  if (!ctr__value_ok(x)) {
    x = 0.0f;
    atomicAdd(bad, 1ull);
  }
  out[r * ld + b] = x;
}

__global__ void multiply_spectrum(cufftComplex *spec, const float *__restrict__ kern, int nf,
                                  long long rows) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  const long long r = blockIdx.y + (long long)gridDim.y * blockIdx.z;
  if (k >= nf || r >= rows) return;
  cufftComplex c = spec[r * nf + k];
  c.x *= kern[k];
  c.y *= kern[k];
  spec[r * nf + k] = c;
}

/* Filtered rows (ld floats apart) -> sinograms (nb floats apart) times the
 * angle's weight. */
__global__ void extract_weighted(const float *__restrict__ rows, int ld, int nb, int na,
                                 const float *__restrict__ w, float *__restrict__ sino) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  const int a = blockIdx.y, s = blockIdx.z;
  if (b >= nb) return;
  const long long r = (long long)s * na + a;
  sino[r * nb + b] = rows[r * ld + b] * w[a];
}

typedef struct chunk_bufs {
  void *d_raw;
  float *d_rows;   /* in-place FFT rows of ld = padded + 2 floats */
  size_t raw_bytes, rows_bytes; /* as allocated (the cache's keys) */
  cudaStream_t s;
  cufftHandle plan_f, plan_i;
  int have_f, have_i;
  fbp_gpu f;       /* d_sino / d_out of this chunk */
  /* With timings asked for: events before the upload, after it, after the
   * filter, after the backprojection, after the download; `pending`: the
   * chunk last run on these buffers has not been counted yet. */
  cudaEvent_t ev[5];
  int have_ev, pending;
  int64_t out_s0, out_n; /* a download left to the host (pageable slices): out_n > 0 */
} chunk_bufs;

/* Adds the steps of the chunk last run on c to t (waits for it). */
static ctr_status count_chunk(chunk_bufs *c, ctr_fbp_device_times *t) {
  ctr_status st = CTR_OK;
  float ms[4] = {0, 0, 0, 0};
  if (!c->pending) return CTR_OK;
  CU(cudaEventSynchronize(c->ev[4]));
  for (int i = 0; i < 4; i++) CU(cudaEventElapsedTime(&ms[i], c->ev[i], c->ev[i + 1]));
  t->upload += 1e-3 * ms[0];
  t->filter += 1e-3 * ms[1];
  t->backproject += 1e-3 * ms[2];
  t->download += 1e-3 * ms[3];
  t->chunks++;
  c->pending = 0;
cleanup:
  return st;
}

/* Records step boundary i of the chunk on c (timings asked for). */
#define MARK(c, i)                                         \
  do {                                                     \
    if ((c)->have_ev) CU(cudaEventRecord((c)->ev[i], (c)->s)); \
  } while (0)

/* One GPU's pipeline from projections (flat != NULL: rows [row0, row0 +
 * nslices) of nrows-row projections, flat-field corrected) or from
 * sinograms (flat == NULL: nslices float32 sinograms, already -log'ed), in
 * chunks of S slices: what its chunks share and its two buffer sets. Device
 * buffers come from the context's GPU buffer cache (gpu/gpu_buffers.h) and
 * go back to it. */
typedef struct pipeline {
  const ctr_context *ctx;
  int dev;
  chunk_queue *queue;        /* several GPUs; NULL: this GPU takes every chunk */
  const ctr_parallel_geometry *g;
  const ctr_fbp_options *o;
  const void *proj;
  ctr_dtype dtype;
  size_t es;                 /* bytes of an input element */
  int64_t nrows, row0, nslices, S;
  const float *flat, *dark;
  float *slices;
  ctr_fbp_device_times *tm;  /* with timings asked for */
  int in_place;              /* sinograms in this GPU's memory: read where they are */
  int nearest;
  int64_t nb, na, plane, padded, nf, ld;
  fbp_kernel kernel;
  float *d_kern, *d_w, *d_flat, *d_dark;
  unsigned long long *d_bad;
  chunk_bufs cb[2];
  ctr__xfer xf;              /* host transfers (gpu/host_transfer.h) */
  int staged_out;            /* slices in pageable memory: downloaded by the host thread while
                                the next chunk computes */
} pipeline;

static ctr_status pl_alloc(pipeline *pl, size_t bytes, const char *what, void **out) {
  return ctr__gpu_buffer_get(pl->ctx, pl->dev, bytes, what, out);
}
static void pl_release(pipeline *pl, void *p, size_t bytes) {
  ctr__gpu_buffer_put(pl->ctx, pl->dev, p, bytes);
}

/* The filter's kernel and the angular weights on the device, the data
 * policy's counters, the flat and dark rows of the whole range. */
static ctr_status pipeline_tables(pipeline *pl, const ctr__ramp *ramp) {
  ctr_status st = CTR_OK;
  const int64_t nb = pl->nb, na = pl->na, ns = pl->nslices;
  float *kern = (float *)malloc(sizeof(float) * (size_t)pl->nf);
  float *w = (float *)malloc(sizeof(float) * (size_t)na);
  if (!kern || !w) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "filter kernel");
  ctr__ramp_copy_kernel(ramp, kern);
  for (int64_t a = 0; a < na; a++) w[a] = (float)pl->g->weight[a];
  CTR_CHECK_GOTO(st, pl_alloc(pl, sizeof(float) * (size_t)pl->nf, "FBP filter kernel", (void **)&pl->d_kern));
  CTR_CHECK_GOTO(st, pl_alloc(pl, sizeof(float) * (size_t)na, "FBP angular weights", (void **)&pl->d_w));
  CU(cudaMemcpy(pl->d_kern, kern, sizeof(float) * (size_t)pl->nf, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(pl->d_w, w, sizeof(float) * (size_t)na, cudaMemcpyHostToDevice));
  CTR_CHECK_GOTO(st, pl_alloc(pl, 2 * sizeof(unsigned long long), "FBP value counters", (void **)&pl->d_bad));
  CU(cudaMemset(pl->d_bad, 0, 2 * sizeof(unsigned long long)));
  if (pl->flat) {
    CTR_CHECK_GOTO(st, pl_alloc(pl, sizeof(float) * (size_t)(nb * ns), "FBP flat rows", (void **)&pl->d_flat));
    CU(cudaMemcpy(pl->d_flat, pl->flat + pl->row0 * nb, sizeof(float) * (size_t)(nb * ns), cudaMemcpyHostToDevice));
  }
  if (pl->dark) {
    CTR_CHECK_GOTO(st, pl_alloc(pl, sizeof(float) * (size_t)(nb * ns), "FBP dark rows", (void **)&pl->d_dark));
    CU(cudaMemcpy(pl->d_dark, pl->dark + pl->row0 * nb, sizeof(float) * (size_t)(nb * ns), cudaMemcpyHostToDevice));
  }
cleanup:
  free(kern);
  free(w);
  return st;
}

/* A buffer set for chunks of S slices: its stream, buffers, cuFFT plans
 * (batched, in place) and, with timings, its events. */
static ctr_status chunk_bufs_create(pipeline *pl, chunk_bufs *c) {
  ctr_status st = CTR_OK;
  const int64_t nb = pl->nb, na = pl->na, S = pl->S, ld = pl->ld, nf = pl->nf;
  const ctr_fbp_options *o = pl->o;
  CU(cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking));
  c->raw_bytes = pl->in_place ? 0 : pl->es * (size_t)(nb * na * S);
  c->rows_bytes = sizeof(float) * (size_t)(ld * na * S);
  c->f.sino_bytes = sizeof(float) * (size_t)(nb * na * S);
  c->f.out_bytes = sizeof(float) * (size_t)(pl->plane * S);
  if (!pl->in_place) CTR_CHECK_GOTO(st, pl_alloc(pl, c->raw_bytes, "FBP input chunk", &c->d_raw));
  CTR_CHECK_GOTO(st, pl_alloc(pl, c->rows_bytes, "FBP filter rows", (void **)&c->d_rows));
  CTR_CHECK_GOTO(st, pl_alloc(pl, c->f.sino_bytes, "FBP filtered sinograms", (void **)&c->f.d_sino));
  CTR_CHECK_GOTO(st, pl_alloc(pl, c->f.out_bytes, "FBP slices", (void **)&c->f.d_out));
  c->f.ctx = pl->ctx;
  c->f.g = pl->g;
  c->f.kernel = pl->kernel;
  c->f.nearest = pl->nearest;
  c->f.auto_kernel = !o || !o->kernel || !*o->kernel || !strcmp(o->kernel, "auto");
  {
    int n[1] = {(int)pl->padded}, inembed[1] = {(int)ld}, onembed[1] = {(int)nf};
    if (ctr__gpu_retry(pl->ctx, CUFFT_SUCCESS, [&] {
          return cufftPlanMany(&c->plan_f, 1, n, inembed, 1, (int)ld, onembed, 1, (int)nf,
                               CUFFT_R2C, (int)(na * S));
        }) != CUFFT_SUCCESS)
      CTR_FAIL_GOTO(st, CTR_E_FFT, "cuFFT plan of %lld rows of %lld", (long long)(na * S), (long long)pl->padded);
    c->have_f = 1;
    if (ctr__gpu_retry(pl->ctx, CUFFT_SUCCESS, [&] {
          return cufftPlanMany(&c->plan_i, 1, n, onembed, 1, (int)nf, inembed, 1, (int)ld,
                               CUFFT_C2R, (int)(na * S));
        }) != CUFFT_SUCCESS)
      CTR_FAIL_GOTO(st, CTR_E_FFT, "cuFFT plan of %lld rows of %lld", (long long)(na * S), (long long)pl->padded);
    c->have_i = 1;
  }
  cufftSetStream(c->plan_f, c->s);
  cufftSetStream(c->plan_i, c->s);
  if (pl->tm) {
    for (int e = 0; e < 5; e++) CU(cudaEventCreate(&c->ev[e]));
    c->have_ev = 1;
  }
cleanup:
  return st;
}

/* Slices [s0, s0 + n) into c->d_rows as zero-padded rows: sinograms (one
 * contiguous copy, none when they are in this GPU's memory; host or another
 * GPU's memory: cudaMemcpyDefault) or rows of every projection (one strided
 * copy, then flat/dark correction, -log and transposition). */
static ctr_status chunk_upload(pipeline *pl, chunk_bufs *c, int64_t s0, int64_t n) {
  ctr_status st = CTR_OK;
  const int64_t nb = pl->nb, na = pl->na;
  const size_t es = pl->es;
  const dim3 gr((unsigned)((pl->ld + 255) / 256), (unsigned)na, (unsigned)n);
  MARK(c, 0);
  if (!pl->flat) {
    const float *src = (const float *)pl->proj + s0 * nb * na;
    if (!pl->in_place) {
      CTR_CHECK_GOTO(st, ctr__xfer_h2d(&pl->xf, c->d_raw, src, sizeof(float) * (size_t)(n * nb * na),
                                       c->s, 0, NULL));
      src = (const float *)c->d_raw;
    }
    MARK(c, 1);
    pad_rows<<<gr, 256, 0, c->s>>>(src, (int)nb, (int)na, (int)pl->ld, c->d_rows, pl->d_bad);
    CU_LAUNCHED("pad_rows");
  } else {
    /* the stream orders the copy after the chunk two back that used the buffers */
    CTR_CHECK_GOTO(st, ctr__xfer_h2d_2d(&pl->xf, c->d_raw, es * (size_t)(nb * n),
                                        (const char *)pl->proj + es * (size_t)((pl->row0 + s0) * nb),
                                        es * (size_t)(nb * pl->nrows), es * (size_t)(nb * n),
                                        (size_t)na, c->s, 0, NULL));
    MARK(c, 1);
    const float *dark = pl->d_dark ? pl->d_dark + s0 * nb : NULL;
    if (pl->dtype == CTR_DTYPE_UINT16)
      flatfield_transpose<uint16_t><<<gr, 256, 0, c->s>>>((const uint16_t *)c->d_raw, pl->d_flat + s0 * nb,
                                                          dark, (int)nb, (int)n, (int)na,
                                                          (int)pl->ld, c->d_rows, pl->d_bad);
    else
      flatfield_transpose<float><<<gr, 256, 0, c->s>>>((const float *)c->d_raw, pl->d_flat + s0 * nb,
                                                       dark, (int)nb, (int)n, (int)na, (int)pl->ld,
                                                       c->d_rows, pl->d_bad);
    CU_LAUNCHED("flatfield_transpose");
  }
cleanup:
  return st;
}

/* The ramp filter of the chunk's rows (cuFFT in place) and the angular
 * weights, into the chunk's sinograms. */
static ctr_status chunk_filter(pipeline *pl, chunk_bufs *c, int64_t n) {
  ctr_status st = CTR_OK;
  const int64_t nb = pl->nb, na = pl->na;
  if (cufftExecR2C(c->plan_f, c->d_rows, (cufftComplex *)c->d_rows) != CUFFT_SUCCESS)
    CTR_FAIL_GOTO(st, CTR_E_FFT, "cuFFT forward transform failed");
  {
    const long long rows = (long long)na * n;
    const dim3 gm((unsigned)((pl->nf + 255) / 256), (unsigned)na, (unsigned)n);
    multiply_spectrum<<<gm, 256, 0, c->s>>>((cufftComplex *)c->d_rows, pl->d_kern, (int)pl->nf, rows);
    CU_LAUNCHED("multiply_spectrum");
  }
  if (cufftExecC2R(c->plan_i, (cufftComplex *)c->d_rows, c->d_rows) != CUFFT_SUCCESS)
    CTR_FAIL_GOTO(st, CTR_E_FFT, "cuFFT inverse transform failed");
  {
    const dim3 ge((unsigned)((nb + 255) / 256), (unsigned)na, (unsigned)n);
    extract_weighted<<<ge, 256, 0, c->s>>>(c->d_rows, (int)pl->ld, (int)nb, (int)na, pl->d_w, c->f.d_sino);
    CU_LAUNCHED("extract_weighted");
  }
  MARK(c, 2);
cleanup:
  return st;
}

/* The slices of the chunk last backprojected on c into pl->slices (after its
 * work on c->s; pageable slices: staged, returns when they are there). */
static ctr_status chunk_download(pipeline *pl, chunk_bufs *c) {
  ctr_status st = CTR_OK;
  if (c->out_n <= 0) return CTR_OK;
  CTR_CHECK_GOTO(st, ctr__xfer_d2h(&pl->xf, pl->slices + c->out_s0 * pl->plane, c->f.d_out,
                                   sizeof(float) * (size_t)(pl->plane * c->out_n), c->s, 0, NULL));
  MARK(c, 4);
  c->pending = c->have_ev;
  c->out_n = 0;
cleanup:
  return st;
}

/* The chunk's backprojection (the kernel chosen on the first chunk), the
 * data policy on its slices and their download to host or GPU memory. */
static ctr_status chunk_backproject(pipeline *pl, chunk_bufs *c, int64_t s0, int64_t n) {
  ctr_status st = CTR_OK;
  const int64_t plane = pl->plane;
  if (c->f.auto_kernel) {
    /* First chunk: choose the kernel (cached per GPU and size), then both
     * buffer sets use it. */
    CTR_CHECK_GOTO(st, ctr__fbp_autotune(&c->f, n, c->s));
    pl->kernel = c->f.kernel;
    pl->cb[0].f.kernel = pl->cb[1].f.kernel = pl->kernel;
    pl->cb[0].f.auto_kernel = pl->cb[1].f.auto_kernel = 0;
  }
  CU(cudaMemsetAsync(c->f.d_out, 0, sizeof(float) * (size_t)(plane * n), c->s));
  for (int64_t j = 0; j < n;) {
    /* as many slices per launch as the kernel takes (tex2/alu2: 2, tex4h: 4).
     * Angle constants live in one constant bank: the two streams must not
     * interleave their uploads (ctr__fbp_run_slices uploads when needed;
     * every chunk uses the same angles, loaded once per buffer set). */
    const int group = ctr__fbp_kernel_slices(pl->kernel);
    const int count = n - j < group ? (int)(n - j) : group;
    CTR_CHECK_GOTO(st, ctr__fbp_run_slices(&c->f, j, count, c->s));
    j += count;
  }
  CTR_CHECK_GOTO(st, ctr__gpu_sanitize(c->f.d_out, (long long)(plane * n), pl->d_bad + 1, c->s));
  MARK(c, 3);
  c->out_s0 = s0, c->out_n = n;
  /* pinned host or GPU memory (any GPU's): queued now; pageable: by the
   * host thread once the next chunk is queued (pipeline_chunks) */
  if (!pl->staged_out) CTR_CHECK_GOTO(st, chunk_download(pl, c));
cleanup:
  return st;
}

/* Waits for the device and gives everything back (buffers to the cache). */
static void pipeline_free(pipeline *pl) {
  cudaDeviceSynchronize();
  char who[32];
  snprintf(who, sizeof who, "fbp (GPU %d)", pl->dev);
  ctr__xfer_log(&pl->xf, who);
  ctr__xfer_free(&pl->xf);
  for (int i = 0; i < 2; i++) {
    chunk_bufs *c = &pl->cb[i];
    if (c->have_f) cufftDestroy(c->plan_f);
    if (c->have_i) cufftDestroy(c->plan_i);
    pl_release(pl, c->d_raw, c->raw_bytes);
    pl_release(pl, c->d_rows, c->rows_bytes);
    ctr__fbp_gpu_free(&c->f); /* its sinograms, slices, textures and tables */
    if (c->have_ev)
      for (int e = 0; e < 5; e++) cudaEventDestroy(c->ev[e]);
    if (c->s) cudaStreamDestroy(c->s);
  }
  pl_release(pl, pl->d_kern, sizeof(float) * (size_t)pl->nf);
  pl_release(pl, pl->d_w, sizeof(float) * (size_t)pl->na);
  pl_release(pl, pl->d_bad, 2 * sizeof(unsigned long long));
  pl_release(pl, pl->d_flat, sizeof(float) * (size_t)(pl->nb * pl->nslices));
  pl_release(pl, pl->d_dark, sizeof(float) * (size_t)(pl->nb * pl->nslices));
}

/* Every chunk this GPU takes (the queue's, or all of them), two in flight on
 * the two buffer sets; then the data policy's counts into bad[]. */
static ctr_status pipeline_chunks(pipeline *pl, int64_t bad[2]) {
  ctr_status st = CTR_OK;
  unsigned long long h_bad[2] = {0, 0};
  const int64_t S = pl->S, ns = pl->nslices;
  for (int64_t k = 0, chunk;; k++) {
    /* With several GPUs, a chunk is taken only when its buffer set is free
     * (the chunk two back has finished): the host enqueues asynchronously, so
     * taking first would let one GPU claim every chunk before the others
     * have set up. */
    if (pl->queue && k >= 2) CU(cudaStreamSynchronize(pl->cb[k & 1].s));
    chunk = pl->queue ? take_chunk(pl->queue) : k;
    if (chunk < 0 || chunk * S >= ns) break;
    chunk_bufs *c = &pl->cb[k & 1];
    if (pl->tm) CTR_CHECK_GOTO(st, count_chunk(c, pl->tm)); /* the chunk two back */
    const int64_t s0 = chunk * S;
    const int64_t n = ns - s0 < S ? ns - s0 : S;
    /* several GPUs: the caller reports progress as chunks finish */
    if (!pl->queue) CTR_CHECK_GOTO(st, ctr__progress(pl->ctx, "fbp (cuda)", (double)s0 / (double)ns));
    CTR_CHECK_GOTO(st, chunk_upload(pl, c, s0, n));
    CTR_CHECK_GOTO(st, chunk_filter(pl, c, n));
    CTR_CHECK_GOTO(st, chunk_backproject(pl, c, s0, n));
    /* pageable slices: the previous chunk's, while this one computes */
    if (pl->staged_out) CTR_CHECK_GOTO(st, chunk_download(pl, &pl->cb[(k + 1) & 1]));
  }
  for (int64_t k = 0; k < 2; k++) CTR_CHECK_GOTO(st, chunk_download(pl, &pl->cb[k]));
  CU(cudaDeviceSynchronize());
  if (pl->tm)
    for (int i = 0; i < 2; i++) CTR_CHECK_GOTO(st, count_chunk(&pl->cb[i], pl->tm));
  CU(cudaMemcpy(h_bad, pl->d_bad, sizeof h_bad, cudaMemcpyDeviceToHost));
  bad[0] = (int64_t)h_bad[0];
  bad[1] = (int64_t)h_bad[1];
  if (!pl->queue) CTR_CHECK_GOTO(st, ctr__progress(pl->ctx, "fbp (cuda)", 1.0));
cleanup:
  return st;
}

/* The pipeline on GPU dev (pipeline above) in chunks of S slices. The data
 * policy on the device: bad input values (sinogram values, or -log values of
 * infinite projections) become 0 before the filter, bad slice values 0
 * before the download; bad[0] and bad[1] get their counts. */
static ctr_status run_pipeline(const ctr_context *ctx, int dev, chunk_queue *queue,
                               const ctr_parallel_geometry *g, const ctr_fbp_options *o,
                               const void *proj, ctr_dtype dtype, int64_t nrows, const float *flat,
                               const float *dark, int64_t row0, int64_t nslices, int64_t S,
                               float *slices, int64_t bad[2], ctr_fbp_device_times *tm) {
  ctr_status st = CTR_OK;
  ctr__ramp *ramp = NULL;
  pipeline pl;
  memset(&pl, 0, sizeof pl);
  pl.ctx = ctx, pl.dev = dev, pl.queue = queue, pl.g = g, pl.o = o, pl.proj = proj;
  pl.dtype = dtype, pl.es = ctr_dtype_size(dtype), pl.nrows = nrows, pl.row0 = row0;
  pl.nslices = nslices, pl.S = nslices < S ? nslices : S, pl.flat = flat, pl.dark = dark;
  pl.slices = slices, pl.tm = tm;
  pl.nb = g->p.nbins, pl.na = g->p.nangles, pl.plane = g->p.nx * g->p.ny;
  pl.in_place = !flat && ctr__gpu_memory_device(proj) == dev;
  pl.nearest = o && o->interp == CTR_FBP_NEAREST;
  CTR_CHECK(ctr__fbp_parse_kernel(o ? o->kernel : NULL, pl.nearest, &pl.kernel));
  CU(cudaSetDevice(dev));
  CTR_CHECK_GOTO(st, ctr__xfer_init(&pl.xf, ctx));
  pl.staged_out = !ctr__xfer_direct(slices);
  CTR_CHECK_GOTO(st, ctr__ramp_create(pl.nb, o ? o->window : CTR_WINDOW_RAM_LAK, o ? o->cutoff : 1.0, &ramp));
  pl.padded = ctr__ramp_padded(ramp);
  pl.nf = pl.padded / 2 + 1;
  pl.ld = 2 * pl.nf;
  CTR_CHECK_GOTO(st, pipeline_tables(&pl, ramp));
  for (int i = 0; i < 2; i++) CTR_CHECK_GOTO(st, chunk_bufs_create(&pl, &pl.cb[i]));
  if (tm) tm->device = dev;
  CTR_CHECK_GOTO(st, pipeline_chunks(&pl, bad));
cleanup:
  pipeline_free(&pl);
  ctr__ramp_free(ramp);
  return st;
}

/* Slices per chunk on the context's first ndev GPUs: CTR__FBP_GPU_CHUNK, or
 * fewer within ctr_fbp_options.gpu_budget (given: refused when chunks of one
 * slice do not fit) or the smallest detected budget of those GPUs. */
static ctr_status chunk_slices(const ctr_context *ctx, const ctr_parallel_geometry *g,
                               const ctr_fbp_options *o, int ndev, size_t raw_elem,
                               int64_t calib_rows, int64_t nslices, int64_t *S) {
  uint64_t budget = o ? o->gpu_budget : 0;
  if (!budget) {
    budget = UINT64_MAX;
    for (int i = 0; i < (ndev < 1 ? 1 : ndev); i++) {
      uint64_t b = 0;
      CTR_CHECK(ctr__gpu_budget_detect(ctx, ctr__context_gpu(ctx, i), &b));
      if (b < budget) budget = b;
    }
  }
  return ctr__fbp_gpu_chunk(&g->p, raw_elem, calib_rows, nslices, budget,
                            o && o->gpu_budget ? "ctr_fbp_options.gpu_budget" : NULL, S);
}

typedef struct fbp_worker {
  const ctr_context *ctx;
  int dev;
  chunk_queue *q;
  const ctr_parallel_geometry *g;
  const ctr_fbp_options *o;
  const void *proj;
  ctr_dtype dtype;
  int64_t nrows, row0, nslices, S;
  const float *flat, *dark;
  float *slices;
  int64_t bad[2];
  ctr_fbp_device_times tm; /* with timings asked for */
  ctr_status st;
  char detail[1024];
} fbp_worker;

/* Adds one GPU's times (position i in the context) to the caller's. */
static void add_times(const ctr_fbp_options *o, int i, const ctr_fbp_device_times *t) {
  if (!o || !o->timings || i >= CTR_FBP_MAX_DEVICES) return;
  ctr_fbp_device_times *d = &o->timings->device[i];
  d->device = t->device;
  d->chunks += t->chunks;
  d->upload += t->upload;
  d->filter += t->filter;
  d->backproject += t->backproject;
  d->download += t->download;
  if (o->timings->ndevices < i + 1) o->timings->ndevices = i + 1;
}

static void *fbp_worker_main(void *arg) {
  fbp_worker *w = (fbp_worker *)arg;
  w->st = run_pipeline(w->ctx, w->dev, w->q, w->g, w->o, w->proj, w->dtype, w->nrows, w->flat,
                       w->dark, w->row0, w->nslices, w->S, w->slices, w->bad,
                       w->o && w->o->timings ? &w->tm : NULL);
  if (w->st != CTR_OK) {
    snprintf(w->detail, sizeof w->detail, "%s", ctr_error_detail());
    queue_stop(w->q);
  }
  pthread_mutex_lock(&w->q->mu);
  w->q->running--;
  pthread_cond_broadcast(&w->q->cv);
  pthread_mutex_unlock(&w->q->mu);
  return NULL;
}

/* On the context's GPUs: one of them on this thread's pipeline, several
 * through the chunk queue. */
static ctr_status run_devices(const ctr_context *ctx, const ctr_parallel_geometry *g,
                              const ctr_fbp_options *o, const void *proj, ctr_dtype dtype,
                              int64_t nrows, const float *flat, const float *dark, int64_t row0,
                              int64_t nslices, float *slices, int64_t bad[2]) {
  int ndev = ctr_context_get_device_count(ctx);
  int64_t S = CTR__FBP_GPU_CHUNK;
  /* sinograms in the memory of the one GPU that runs: read in place */
  const int raw = flat || ndev > 1 || ctr__gpu_memory_device(proj) != ctr__context_gpu(ctx, 0);
  CTR_CHECK(chunk_slices(ctx, g, o, ndev, raw ? ctr_dtype_size(dtype) : 0, flat ? nslices : 0,
                         nslices, &S));
  const int64_t chunks = (nslices + S - 1) / S;
  if (ndev > chunks) ndev = (int)chunks;
  if (ndev <= 1) {
    ctr_fbp_device_times t;
    memset(&t, 0, sizeof t);
    CTR_CHECK(run_pipeline(ctx, ctr__context_gpu(ctx, 0), NULL, g, o, proj, dtype, nrows, flat,
                           dark, row0, nslices, S, slices, bad, o && o->timings ? &t : NULL));
    add_times(o, 0, &t);
    return CTR_OK;
  }
  chunk_queue q;
  memset(&q, 0, sizeof q);
  pthread_mutex_init(&q.mu, NULL);
  pthread_cond_init(&q.cv, NULL);
  q.count = chunks;
  fbp_worker w[CTR_MAX_WORKERS];
  pthread_t th[CTR_MAX_WORKERS];
  int started = 0;
  ctr_status st = CTR_OK;
  if (ndev > CTR_MAX_WORKERS) ndev = CTR_MAX_WORKERS;
  for (int i = 0; i < ndev; i++) {
    fbp_worker *x = &w[i];
    memset(x, 0, sizeof *x);
    *x = (fbp_worker){ctx, ctr__context_gpu(ctx, i), &q, g, o, proj, dtype, nrows, row0, nslices,
                      S, flat, dark, slices, {0, 0}, {0, 0, 0.0, 0.0, 0.0, 0.0}, CTR_OK, {0}};
    pthread_mutex_lock(&q.mu);
    q.running++;
    pthread_mutex_unlock(&q.mu);
    if (pthread_create(&th[i], NULL, fbp_worker_main, x) != 0) {
      pthread_mutex_lock(&q.mu);
      q.running--;
      pthread_mutex_unlock(&q.mu);
      queue_stop(&q);
      st = ctr__error_set(CTR_E_INTERNAL, "cannot start the worker thread of GPU %d", x->dev);
      break;
    }
    started++;
  }
  /* progress as chunks are taken (each GPU has at most two in flight); a
   * cancellation stops the queue */
  int64_t reported = -1;
  pthread_mutex_lock(&q.mu);
  while (q.running > 0) {
    if (q.next != reported && st == CTR_OK && !q.stop) {
      reported = q.next;
      const double f = (double)reported / (double)chunks;
      pthread_mutex_unlock(&q.mu);
      if (ctr__progress(ctx, "fbp (cuda)", f) != CTR_OK) {
        st = CTR_E_CANCELLED;
        char detail[1024];
        snprintf(detail, sizeof detail, "%s", ctr_error_detail());
        queue_stop(&q);
        ctr__error_set(st, "%s", detail);
      }
      pthread_mutex_lock(&q.mu);
      continue;
    }
    pthread_cond_wait(&q.cv, &q.mu);
  }
  pthread_mutex_unlock(&q.mu);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&q.mu);
  pthread_cond_destroy(&q.cv);
  if (st != CTR_OK) return st;
  bad[0] = bad[1] = 0;
  for (int i = 0; i < started; i++) {
    if (w[i].st != CTR_OK && w[i].st != CTR_E_CANCELLED)
      return ctr__error_set(w[i].st, "GPU %d: %s", w[i].dev, w[i].detail);
    bad[0] += w[i].bad[0];
    bad[1] += w[i].bad[1];
    add_times(o, i, &w[i].tm);
  }
  for (int i = 0; i < started; i++)
    if (w[i].st != CTR_OK) return ctr__error_set(w[i].st, "GPU %d: %s", w[i].dev, w[i].detail);
  return ctr__progress(ctx, "fbp (cuda)", 1.0);
}

extern "C" ctr_status ctr__fbp_projections_cuda(const ctr_context *ctx,
                                                const ctr_parallel_geometry *g,
                                                const ctr_fbp_options *o, const void *proj,
                                                ctr_dtype dtype, int64_t nrows, const float *flat,
                                                const float *dark, int64_t row0,
                                                int64_t nslices, float *slices, int64_t bad[2]) {
  return run_devices(ctx, g, o, proj, dtype, nrows, flat, dark, row0, nslices, slices, bad);
}

extern "C" ctr_status ctr__fbp_sinograms_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                              const ctr_fbp_options *o, const float *sino,
                                              int64_t nslices, float *slices, int64_t bad[2]) {
  return run_devices(ctx, g, o, sino, CTR_DTYPE_FLOAT32, nslices, NULL, NULL, 0, nslices, slices,
                     bad);
}

/* ---- The live FBP's full volume, summed as the projections arrive ------------------- */

/* docs/synchrotron.md, "The full volume during the acquisition": the bytes
 * of the pipeline above on the finished scan, built from chunks of
 * projections in angle order. What decides those bytes, and how each is
 * kept:
 *  - the sinogram values: flatfield_transpose, the cuFFT plans (the
 *    pipeline's, of the same batch: a slice is filtered by a plan of na x S
 *    rows, S the chunk size of its band, chunk_slices as run_devices makes
 *    it), multiply_spectrum and extract_weighted with the scan's weights;
 *  - the sums: the kernel the pipeline picks for the scan (the automatic
 *    choice made here for its key, cached for the offline run), the slices
 *    of each launch as the pipeline pairs them (bands, chunks, groups), and
 *    each launch group of MAX_TEX_LAYERS angles summed from 0 then added to
 *    the slices: group 0 is continued in the volume itself (0 + s = s: a
 *    sum that starts at +0 is never -0), later ones in a second volume added
 *    to it when the group is complete. */
struct ctr__fbp_acc {
  const ctr_context *ctx;
  int dev;
  const ctr_parallel_geometry *g;
  ctr_dtype dtype;
  size_t es;
  int64_t W, H, row0, ns, band_rows, nb, na, plane, padded, nf, ld, maxk, next;
  fbp_gpu f;                  /* the kernel and the angle tables */
  float *d_vol, *d_part;      /* the sums; the current launch group's (after the first) */
  void *d_raw;                /* a chunk's rows [row0, row0 + ns) of up to maxk projections */
  float *d_rows, *d_sino, *d_kern, *d_w, *d_flat, *d_dark;
  unsigned long long *d_bad;  /* -log values replaced by 0 */
  size_t vol_bytes, raw_bytes, rows_bytes, sino_bytes;
  struct { int64_t len, S; cufftHandle f, i; int have; } plan[2]; /* by band length */
  int nplans;
  cudaStream_t s;
  ctr__xfer xf;               /* the host transfers (gpu/host_transfer.h) */
  int have_xf;
  cudaEvent_t ev[3];          /* the last batch's upload start, kernels start, end */
  int have_ev, timed;         /* events made; a batch recorded and not reported yet */
};

/* The plan of the band of length len. */
static int acc_plan_of(const ctr__fbp_acc *a, int64_t len) {
  return a->nplans > 1 && a->plan[1].len == len;
}

/* The launches of slices [c0, c0 + cn) (one of the pipeline's chunks), as
 * chunk_backproject groups them, continuing angles [p0, p0 + pn) of the
 * chunk of projections whose sinograms (k angles each) start at slice s0 of
 * a->d_sino. */
static ctr_status acc_chunk_bp(ctr__fbp_acc *a, int64_t s0, int64_t k, int64_t a0, int64_t c0,
                               int64_t cn, int64_t p0, int64_t pn, float *target) {
  const int group = ctr__fbp_kernel_slices(a->f.kernel);
  for (int64_t j = 0; j < cn;) {
    const int count = cn - j < group ? (int)(cn - j) : group;
    CTR_CHECK(ctr__fbp_run_continue(&a->f, a->d_sino + ((c0 + j - s0) * k + (p0 - a0)) * a->nb,
                                     (long long)(k * a->nb), count, p0, pn,
                                     target + (c0 + j) * a->plane, a->s));
    j += count;
  }
  return CTR_OK;
}

/* vol += part, part = 0 (a launch group complete: the pipeline's out += acc). */
__global__ void acc_merge(float *__restrict__ vol, float *__restrict__ part, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    vol[i] += part[i];
    part[i] = 0.0f;
  }
}

/* Slices [s0, s0 + m) (whole chunks of the pipeline's, of one plan) of the
 * k projections uploaded: flat-field, filter, weights, then the sums of
 * angles [a0, a0 + k) continued launch group by launch group. */
static ctr_status acc_slices(ctr__fbp_acc *a, int p, int64_t s0, int64_t m, int64_t k, int64_t a0) {
  ctr_status st = CTR_OK;
  const int64_t nb = a->nb;
  const dim3 gr((unsigned)((a->ld + 255) / 256), (unsigned)k, (unsigned)m);
  const float *dark = a->d_dark ? a->d_dark + s0 * nb : NULL;
  if (a->dtype == CTR_DTYPE_UINT16)
    flatfield_transpose<uint16_t><<<gr, 256, 0, a->s>>>((const uint16_t *)a->d_raw + s0 * nb,
                                                        a->d_flat + s0 * nb, dark, (int)nb,
                                                        (int)a->ns, (int)k, (int)a->ld, a->d_rows,
                                                        a->d_bad);
  else
    flatfield_transpose<float><<<gr, 256, 0, a->s>>>((const float *)a->d_raw + s0 * nb,
                                                     a->d_flat + s0 * nb, dark, (int)nb, (int)a->ns,
                                                     (int)k, (int)a->ld, a->d_rows, a->d_bad);
  CU_LAUNCHED("flatfield_transpose");
  if (cufftExecR2C(a->plan[p].f, a->d_rows, (cufftComplex *)a->d_rows) != CUFFT_SUCCESS)
    CTR_FAIL_GOTO(st, CTR_E_FFT, "cuFFT forward transform failed");
  {
    const dim3 gm((unsigned)((a->nf + 255) / 256), (unsigned)k, (unsigned)m);
    multiply_spectrum<<<gm, 256, 0, a->s>>>((cufftComplex *)a->d_rows, a->d_kern, (int)a->nf,
                                            (long long)(k * m));
    CU_LAUNCHED("multiply_spectrum");
  }
  if (cufftExecC2R(a->plan[p].i, (cufftComplex *)a->d_rows, a->d_rows) != CUFFT_SUCCESS)
    CTR_FAIL_GOTO(st, CTR_E_FFT, "cuFFT inverse transform failed");
  {
    const dim3 ge((unsigned)((nb + 255) / 256), (unsigned)k, (unsigned)m);
    extract_weighted<<<ge, 256, 0, a->s>>>(a->d_rows, (int)a->ld, (int)nb, (int)k, a->d_w + a0,
                                           a->d_sino);
    CU_LAUNCHED("extract_weighted");
  }
  for (int64_t p0 = a0; p0 < a0 + k;) {
    const int64_t gend = (p0 / MAX_TEX_LAYERS + 1) * MAX_TEX_LAYERS;
    const int64_t pe = a0 + k < gend ? a0 + k : gend, pn = pe - p0;
    float *target = p0 < MAX_TEX_LAYERS ? a->d_vol : a->d_part;
    /* the pipeline's chunks of the slices, band by band */
    for (int64_t c0 = s0; c0 < s0 + m;) {
      const int64_t band0 = c0 / a->band_rows * a->band_rows;
      const int64_t blen = a->ns - band0 < a->band_rows ? a->ns - band0 : a->band_rows;
      const int64_t S = a->plan[acc_plan_of(a, blen)].S;
      const int64_t cs = band0 + (c0 - band0) / S * S;
      const int64_t cn = (band0 + blen) - cs < S ? (band0 + blen) - cs : S;
      CTR_CHECK_GOTO(st, acc_chunk_bp(a, s0, k, a0, cs, cn, p0, pn, target));
      c0 = cs + cn;
    }
    if (target == a->d_part && (pe == gend || pe == a->na)) {
      const long long n = (long long)(m * a->plane);
      acc_merge<<<(unsigned)(n / 256 + 1 < 4096 ? n / 256 + 1 : 4096), 256, 0, a->s>>>(a->d_vol + s0 * a->plane,
                                                       a->d_part + s0 * a->plane, n);
      CU_LAUNCHED("acc_merge");
    }
    p0 = pe;
  }
cleanup:
  return st;
}

extern "C" ctr_status ctr__fbp_acc_add(ctr__fbp_acc *a, const void *proj, int64_t k,
                                       double device_s[2]) {
  ctr_status st = CTR_OK;
  const size_t row_bytes = a->es * (size_t)a->W, frame = row_bytes * (size_t)a->H;
  if (k < 1 || k > a->maxk || a->next + k > a->na)
    CTR_FAIL(CTR_E_INTERNAL, "the live sum takes %lld more projections (%lld of %lld summed, "
             "up to %lld at once)", (long long)k, (long long)a->next, (long long)a->na,
             (long long)a->maxk);
  int timing = 0;
  CU(cudaSetDevice(a->dev));
  if (device_s) device_s[0] = device_s[1] = 0;
  /* the previous batch's device seconds, if it is done (no wait) */
  if (a->timed && cudaEventQuery(a->ev[2]) == cudaSuccess) {
    float up = 0, kern = 0;
    if (device_s && cudaEventElapsedTime(&up, a->ev[0], a->ev[1]) == cudaSuccess &&
        cudaEventElapsedTime(&kern, a->ev[1], a->ev[2]) == cudaSuccess)
      device_s[0] = 1e-3 * up, device_s[1] = 1e-3 * kern;
    a->timed = 0;
  }
  (void)cudaGetLastError(); /* a query of work not done is not an error */
  timing = a->have_ev && !a->timed;
  if (timing) CU(cudaEventRecord(a->ev[0], a->s));
  /* the rows of each projection, read on return: the caller's batch is free again (from
   * pinned memory, the live FBP's, a DMA waited for, after the earlier batch's kernels
   * that read d_raw; from pageable memory, copied into the staging slots) */
  CTR_CHECK_GOTO(st, ctr__xfer_h2d_2d(&a->xf, a->d_raw, row_bytes * (size_t)a->ns,
                                      (const char *)proj + row_bytes * (size_t)a->row0, frame,
                                      row_bytes * (size_t)a->ns, (size_t)k, a->s, 1, NULL));
  if (timing) CU(cudaEventRecord(a->ev[1], a->s));
  /* runs of whole chunks of one plan, as many slices as its batch holds rows of k angles */
  for (int64_t s0 = 0; s0 < a->ns;) {
    const int64_t band0 = s0 / a->band_rows * a->band_rows;
    const int64_t blen = a->ns - band0 < a->band_rows ? a->ns - band0 : a->band_rows;
    const int p = acc_plan_of(a, blen);
    const int64_t fit = a->na * a->plan[p].S / k; /* >= S: na >= k */
    int64_t m = band0 + blen - s0; /* to the band's end, then whole bands of the same plan */
    while (s0 + m < a->ns && m + a->band_rows <= fit &&
           acc_plan_of(a, a->ns - (s0 + m) < a->band_rows ? a->ns - (s0 + m) : a->band_rows) == p)
      m += a->ns - (s0 + m) < a->band_rows ? a->ns - (s0 + m) : a->band_rows;
    if (m > fit) m = fit / a->plan[p].S * a->plan[p].S; /* whole chunks of a long band */
    CTR_CHECK_GOTO(st, acc_slices(a, p, s0, m, k, a->next));
    s0 += m;
  }
  if (timing) {
    CU(cudaEventRecord(a->ev[2], a->s));
    a->timed = 1;
  }
  a->next += k;
cleanup:
  return st;
}

extern "C" void ctr__fbp_acc_free(ctr__fbp_acc *a) {
  if (!a) return;
  cudaSetDevice(a->dev);
  cudaDeviceSynchronize(); /* the buffers go back unused */
  for (int p = 0; p < a->nplans; p++)
    if (a->plan[p].have) {
      cufftDestroy(a->plan[p].f);
      cufftDestroy(a->plan[p].i);
    }
  const ctr_context *ctx = a->ctx;
  if (a->have_xf) {
    ctr__xfer_log(&a->xf, "fbp live sum");
    ctr__xfer_free(&a->xf);
  }
  GPU_PUT(ctx, a->d_vol, a->vol_bytes);
  GPU_PUT(ctx, a->d_part, a->vol_bytes);
  GPU_PUT(ctx, a->d_raw, a->raw_bytes);
  GPU_PUT(ctx, a->d_rows, a->rows_bytes);
  GPU_PUT(ctx, a->d_sino, a->sino_bytes);
  GPU_PUT(ctx, a->d_kern, sizeof(float) * (size_t)a->nf);
  GPU_PUT(ctx, a->d_w, sizeof(float) * (size_t)a->na);
  GPU_PUT(ctx, a->d_flat, sizeof(float) * (size_t)(a->ns * a->nb));
  GPU_PUT(ctx, a->d_dark, sizeof(float) * (size_t)(a->ns * a->nb));
  GPU_PUT(ctx, a->d_bad, sizeof(unsigned long long));
  if (a->f.g) ctr__fbp_gpu_free(&a->f);
  if (a->have_ev)
    for (int e = 0; e < 3; e++) cudaEventDestroy(a->ev[e]);
  if (a->s) cudaStreamDestroy(a->s);
  free(a);
}

extern "C" ctr_status ctr__fbp_acc_get(ctr__fbp_acc *a, int64_t s0, int64_t ns, float *dst,
                                       int64_t *bad_input) {
  ctr_status st = CTR_OK;
  unsigned long long bad = 0;
  const size_t slice = sizeof(float) * (size_t)a->plane;
  CU(cudaSetDevice(a->dev));
  if (s0 < 0 || ns < 0 || (size_t)(s0 + ns) * slice > a->vol_bytes || (ns && !dst))
    CTR_FAIL_GOTO(st, CTR_E_INTERNAL, "ctr__fbp_acc_get: slices %lld + %lld outside the sum's "
                  "%zu", (long long)s0, (long long)ns, a->vol_bytes / slice);
  if (ns) /* after the sum's kernels, on its stream */
    CTR_CHECK_GOTO(st, ctr__xfer_d2h(&a->xf, dst, (const char *)a->d_vol + (size_t)s0 * slice,
                                     (size_t)ns * slice, a->s, 1, NULL));
  else
    CU(cudaStreamSynchronize(a->s));
  if (bad_input) {
    CU(cudaMemcpy(&bad, a->d_bad, sizeof bad, cudaMemcpyDeviceToHost));
    *bad_input = (int64_t)bad;
  }
cleanup:
  return st;
}

/* The kernel the pipeline runs for the scan: the caller's, or the automatic
 * choice for the key of its first chunk (n slices), timed on zeros here when
 * not cached (the offline run then finds it cached). */
static ctr_status acc_kernel(ctr__fbp_acc *a, const ctr_fbp_options *o, int64_t n) {
  ctr_status st = CTR_OK;
  fbp_gpu t;
  memset(&t, 0, sizeof t);
  t.ctx = a->ctx;
  t.g = a->g;
  t.nearest = o->interp == CTR_FBP_NEAREST;
  CTR_CHECK(ctr__fbp_parse_kernel(o->kernel, t.nearest, &t.kernel));
  t.auto_kernel = !o->kernel || !*o->kernel || !strcmp(o->kernel, "auto");
  if (t.auto_kernel) {
    const int64_t two = n < 2 ? n : 2;
    t.sino_bytes = sizeof(float) * (size_t)(a->nb * a->na * two);
    t.out_bytes = sizeof(float) * (size_t)(a->plane * two);
    GPU_GET(a->ctx, t.d_sino, t.sino_bytes, "FBP kernel choice's sinograms");
    GPU_GET(a->ctx, t.d_out, t.out_bytes, "FBP kernel choice's slices");
    CU(cudaMemsetAsync(t.d_sino, 0, t.sino_bytes, a->s));
    CTR_CHECK_GOTO(st, ctr__fbp_autotune(&t, n, a->s));
  }
  a->f.ctx = a->ctx;
  a->f.g = a->g;
  a->f.kernel = t.kernel;
  a->f.nearest = t.nearest;
  if (!ctr__fbp_kernel_continues(t.kernel))
    CTR_FAIL_GOTO(st, CTR_E_UNSUPPORTED, "the backprojection kernel of the run, %s%s, does not "
                  "continue a sum (alu, alu2, alu-os and alu2-os do: ctr_fbp_options.kernel)",
                  kernel_names[t.kernel], t.auto_kernel ? " (the automatic choice)" : "");
cleanup:
  ctr__fbp_gpu_free(&t);
  return st;
}

/* The plans of the bands' lengths (at most two: the bands', the last one's)
 * with the pipeline's chunk size for each, and the bytes the sum needs. */
static ctr_status acc_plans(ctr__fbp_acc *a, const ctr_fbp_options *o) {
  const int64_t nbands = (a->ns + a->band_rows - 1) / a->band_rows;
  const int64_t lens[2] = {a->band_rows < a->ns ? a->band_rows : a->ns,
                           a->ns - (nbands - 1) * a->band_rows};
  for (int i = 0; i < 2; i++) {
    if (i && lens[1] == lens[0]) break;
    int64_t S = 0;
    CTR_CHECK(chunk_slices(a->ctx, a->g, o, ctr_context_get_device_count(a->ctx), a->es, lens[i],
                           lens[i], &S));
    a->plan[i].len = lens[i];
    a->plan[i].S = lens[i] < S ? lens[i] : S;
    a->nplans = i + 1;
  }
  return CTR_OK;
}

extern "C" ctr_status ctr__fbp_acc_open(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                        const ctr_fbp_options *o, ctr_dtype dtype, int64_t W,
                                        int64_t H, int64_t row0, int64_t nslices,
                                        int64_t band_rows, const float *flat, const float *dark,
                                        int64_t maxk, ctr__fbp_acc **out) {
  ctr_status st = CTR_OK;
  ctr__ramp *ramp = NULL;
  float *kern = NULL, *w = NULL;
  *out = NULL;
  ctr__fbp_acc *a = (ctr__fbp_acc *)calloc(1, sizeof *a);
  if (!a) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (the live sum)");
  a->ctx = ctx, a->g = g, a->dtype = dtype, a->es = ctr_dtype_size(dtype);
  a->W = W, a->H = H, a->row0 = row0, a->ns = nslices, a->band_rows = band_rows, a->maxk = maxk;
  a->nb = g->p.nbins, a->na = g->p.nangles, a->plane = g->p.nx * g->p.ny;
  a->dev = ctr__context_gpu(ctx, 0);
  CU(cudaSetDevice(a->dev));
  CU(cudaStreamCreateWithFlags(&a->s, cudaStreamNonBlocking));
  CTR_CHECK_GOTO(st, ctr__xfer_init(&a->xf, ctx));
  a->have_xf = 1;
  for (int e = 0; e < 3; e++) CU(cudaEventCreate(&a->ev[e]));
  a->have_ev = 1;
  CTR_CHECK_GOTO(st, acc_plans(a, o));
  CTR_CHECK_GOTO(st, acc_kernel(a, o, a->plan[0].S));
  CTR_CHECK_GOTO(st, ctr__ramp_create(a->nb, o->window, o->cutoff, &ramp));
  a->padded = ctr__ramp_padded(ramp);
  a->nf = a->padded / 2 + 1;
  a->ld = 2 * a->nf;
  {
    int64_t rows = 0;
    for (int p = 0; p < a->nplans; p++)
      if (a->na * a->plan[p].S > rows) rows = a->na * a->plan[p].S;
    a->vol_bytes = sizeof(float) * (size_t)(a->ns * a->plane);
    a->raw_bytes = a->es * (size_t)(maxk * a->ns * W);
    a->rows_bytes = sizeof(float) * (size_t)(rows * a->ld);
    a->sino_bytes = sizeof(float) * (size_t)((rows < maxk * a->ns ? rows : maxk * a->ns) * a->nb);
    const uint64_t need = (uint64_t)a->vol_bytes * (a->na > MAX_TEX_LAYERS ? 2u : 1u) +
                          a->raw_bytes + a->rows_bytes + a->sino_bytes +
                          sizeof(float) * (uint64_t)(2 * a->ns * a->nb + a->nf + 8 * a->na) + (1u << 20);
    uint64_t budget = o->gpu_budget;
    if (!budget) CTR_CHECK_GOTO(st, ctr__gpu_budget_detect(ctx, a->dev, &budget));
    if (need > budget) {
      char b1[32], b2[32], vb[24];
      CTR_FAIL_FIELD_VALUE_GOTO(st, CTR_E_DEVICE_OUT_OF_MEMORY, "ctr_fbp_stream_options.gpu_budget",
                                ctr__value_uint(vb, (unsigned long long)budget),
                                "the volume summed on the GPU (%lld x %lld x %lld float32%s, with "
                                "its working buffers) needs %s of GPU memory; the GPU budget "
                                "(ctr_fbp_stream_options.gpu_budget%s) is %s",
                                (long long)g->p.nx, (long long)g->p.ny, (long long)a->ns,
                                a->na > MAX_TEX_LAYERS ? ", twice: more than 2048 angles" : "",
                                ctr__format_bytes((double)need, b1, sizeof b1),
                                o->gpu_budget ? "" : ", detected",
                                ctr__format_bytes((double)budget, b2, sizeof b2));
    }
  }
  GPU_GET(ctx, a->d_vol, a->vol_bytes, "the live FBP's volume");
  if (a->na > MAX_TEX_LAYERS) GPU_GET(ctx, a->d_part, a->vol_bytes, "the live FBP's launch group");
  GPU_GET(ctx, a->d_raw, a->raw_bytes, "the live FBP's projections");
  GPU_GET(ctx, a->d_rows, a->rows_bytes, "the live FBP's filter rows");
  GPU_GET(ctx, a->d_sino, a->sino_bytes, "the live FBP's sinograms");
  GPU_GET(ctx, a->d_kern, sizeof(float) * (size_t)a->nf, "FBP filter kernel");
  GPU_GET(ctx, a->d_w, sizeof(float) * (size_t)a->na, "FBP angular weights");
  GPU_GET(ctx, a->d_flat, sizeof(float) * (size_t)(a->ns * a->nb), "FBP flat rows");
  if (dark) GPU_GET(ctx, a->d_dark, sizeof(float) * (size_t)(a->ns * a->nb), "FBP dark rows");
  GPU_GET(ctx, a->d_bad, sizeof(unsigned long long), "FBP value counter");
  CU(cudaMemsetAsync(a->d_vol, 0, a->vol_bytes, a->s));
  if (a->d_part) CU(cudaMemsetAsync(a->d_part, 0, a->vol_bytes, a->s));
  CU(cudaMemsetAsync(a->d_bad, 0, sizeof(unsigned long long), a->s));
  kern = (float *)malloc(sizeof(float) * (size_t)a->nf);
  w = (float *)malloc(sizeof(float) * (size_t)a->na);
  if (!kern || !w) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "filter kernel");
  ctr__ramp_copy_kernel(ramp, kern);
  for (int64_t i = 0; i < a->na; i++) w[i] = (float)g->weight[i];
  CU(cudaMemcpy(a->d_kern, kern, sizeof(float) * (size_t)a->nf, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(a->d_w, w, sizeof(float) * (size_t)a->na, cudaMemcpyHostToDevice));
  CU(cudaMemcpy(a->d_flat, flat + row0 * W, sizeof(float) * (size_t)(a->ns * a->nb), cudaMemcpyHostToDevice));
  if (dark)
    CU(cudaMemcpy(a->d_dark, dark + row0 * W, sizeof(float) * (size_t)(a->ns * a->nb), cudaMemcpyHostToDevice));
  for (int p = 0; p < a->nplans; p++) {
    /* chunk_bufs_create's plans: the same batch, the same layout */
    int n[1] = {(int)a->padded}, inembed[1] = {(int)a->ld}, onembed[1] = {(int)a->nf};
    const int batch = (int)(a->na * a->plan[p].S);
    if (ctr__gpu_retry(ctx, CUFFT_SUCCESS, [&] {
          return cufftPlanMany(&a->plan[p].f, 1, n, inembed, 1, (int)a->ld, onembed, 1, (int)a->nf,
                               CUFFT_R2C, batch);
        }) != CUFFT_SUCCESS)
      CTR_FAIL_GOTO(st, CTR_E_FFT, "cuFFT plan of %d rows of %lld", batch, (long long)a->padded);
    if (ctr__gpu_retry(ctx, CUFFT_SUCCESS, [&] {
          return cufftPlanMany(&a->plan[p].i, 1, n, onembed, 1, (int)a->nf, inembed, 1, (int)a->ld,
                               CUFFT_C2R, batch);
        }) != CUFFT_SUCCESS) {
      cufftDestroy(a->plan[p].f);
      CTR_FAIL_GOTO(st, CTR_E_FFT, "cuFFT plan of %d rows of %lld", batch, (long long)a->padded);
    }
    a->plan[p].have = 1;
    cufftSetStream(a->plan[p].f, a->s);
    cufftSetStream(a->plan[p].i, a->s);
  }
cleanup:
  free(kern);
  free(w);
  ctr__ramp_free(ramp);
  if (st != CTR_OK) ctr__fbp_acc_free(a);
  else *out = a;
  return st;
}
