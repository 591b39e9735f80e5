/* DIRECT reconstruction on the GPU (the steps of pet_recon.c): histo-images,
 * factors, per-view sensitivities and the image stay on the device; each
 * sub-iteration is forward projection, discrepancy, back projection and
 * update, all on one stream (the counts' upload alone runs on a second one,
 * beside the sensitivities). Per-step device times come from events. The
 * caller's image, host or GPU memory, is copied in and out with
 * cudaMemcpyDefault (device to device for a GPU array); the data check of
 * the histo-images, the uniform start and the data policy on the result run
 * on the device. */
#include "pet/cuda/pet_cuda.cuh"
#include "pet/pet_update.h"
#include "core/projmath.h"
#include "gpu/host_transfer.h"

#include <stdlib.h>
#include <string.h>

/* q (padded) = n h / (n A f) for the back projection. */
__global__ void pet_ratio_kernel(const float *__restrict__ h, const float *__restrict__ n,
                                 const float *__restrict__ af, float *__restrict__ q, int nx,
                                 int ny, int nz, int PX, int PY, int HX, int HY, int HZ) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
  if (x >= nx) return;
  const long long i = ((long long)z * ny + y) * nx + x;
  q[((long long)(z + HZ) * PY + y + HY) * PX + x + HX] =
      ctr__pet_ratio(h[i], n ? n[i] : 1.0f, af[i]);
}

/* The update of the padded image f from the back projection b. mode 0:
 * RAMLA, 1: OSEM (s = s_v), 2: MLEM accumulation into acc, 3: MLEM update
 * from acc and total. */
__global__ void pet_update_kernel(int mode, float *__restrict__ f, const float *__restrict__ b,
                                  const float *__restrict__ sv, const float *__restrict__ total,
                                  float *__restrict__ acc, float scale, int nx, int ny, int nz,
                                  int PX, int PY, int HX, int HY, int HZ) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
  if (x >= nx) return;
  const long long i = ((long long)z * ny + y) * nx + x;
  float *fp = f + ((long long)(z + HZ) * PY + y + HY) * PX + x + HX;
  switch (mode) {
    case 0: *fp = ctr__pet_ramla(*fp, b[i], sv[i], total[i], scale); break;
    case 1: *fp = ctr__pet_osem(*fp, b[i], sv[i]); break;
    case 2: acc[i] += b[i]; break;
    default:
      *fp = ctr__pet_osem(*fp, acc[i], total[i]);
      acc[i] = 0.0f;
      break;
  }
}

/* total += s */
__global__ void pet_add_kernel(float *__restrict__ total, const float *__restrict__ s, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) total[i] += s[i];
}

/* Interior of padded src -> unpadded dst. */
__global__ void pet_unpad_kernel(const float *__restrict__ src, float *__restrict__ dst, int nx,
                                 int ny, int nz, int PX, int PY, int HX, int HY, int HZ) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
  if (x >= nx) return;
  dst[((long long)z * ny + y) * nx + x] = src[((long long)(z + HZ) * PY + y + HY) * PX + x + HX];
}

__global__ void pet_fill_kernel(float *p, float v, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}

/* The data check of the histo-images where they are (the rule of the host's
 * ctr__values_count_nonneg, core/values.c): values NaN, infinite, negative or
 * beyond the limit are replaced by 0 in place and counted, the others summed
 * in double. A fixed grid, each thread in order over its stride and a fixed
 * tree in each block, the blocks' parts summed in order on the host: the
 * same bits on every run and every GPU. part[b], bad[b]: block b's. */
enum { CHECK_BLOCKS = 1024, CHECK_THREADS = 256 };

__global__ void __launch_bounds__(CHECK_THREADS)
    pet_check_kernel(float *__restrict__ v, long long n, double *__restrict__ part,
                     unsigned long long *__restrict__ bad) {
  __shared__ double s[CHECK_THREADS];
  __shared__ unsigned long long k[CHECK_THREADS];
  double sum = 0;
  unsigned long long count = 0;
  const long long stride = (long long)CHECK_BLOCKS * CHECK_THREADS;
  for (long long i = (long long)blockIdx.x * CHECK_THREADS + threadIdx.x; i < n; i += stride) {
    const float x = v[i];
    if (x >= 0.0f && ctr__value_ok(x)) {
      sum += x;
    } else {
      v[i] = 0.0f;
      count++;
    }
  }
  s[threadIdx.x] = sum;
  k[threadIdx.x] = count;
  __syncthreads();
  for (int h = CHECK_THREADS / 2; h > 0; h >>= 1) {
    if (threadIdx.x < h) {
      s[threadIdx.x] += s[threadIdx.x + h];
      k[threadIdx.x] += k[threadIdx.x + h];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.x] = s[0], bad[blockIdx.x] = k[0];
}

/* *nonzero = 1 when some value of p is not 0 (NaN included, as on the host). */
__global__ void pet_nonzero_kernel(const float *__restrict__ p, long long n,
                                   unsigned long long *nonzero) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && p[i] != 0.0f) *nonzero = 1;
}

enum { PH_FWD, PH_RATIO, PH_BACK, PH_UPDATE, PH_N };

typedef struct recon_bufs {
  float *h, *n, *sens, *total, *acc, *f, *ones;
  unsigned long long *count; /* a flag or a count read back by the host */
  char *check;               /* the data check's parts: 2 x CHECK_BLOCKS doubles, then counts */
  cudaEvent_t *ev;           /* (PH_N + 1) per view */
  cudaStream_t up;           /* the counts' upload, beside the sensitivities */
  cudaEvent_t up0, up1;      /* its start and end */
  ctr__xfer xf;              /* the caller's histogram and image (gpu/host_transfer.h) */
} recon_bufs;

/* The run's buffers against the GPU budget of the one memory rule
 * (core/memory.c: free memory and the buffers the context keeps, less
 * 1 GiB); they come from the context's GPU buffer cache, which gives the
 * kept ones back when the GPU is full. */
static ctr_status check_memory(const ctr__pet_cuda *c, const ctr_pet_histo *h) {
  uint64_t budget = 0;
  CTR_CHECK(ctr__gpu_budget_detect(c->ctx, c->device, &budget));
  const double per_view = (double)c->nvox * sizeof(float) * (h->factors ? 3 : 2);
  const double need = per_view * h->nviews + (double)c->npad * sizeof(float) + 4.0 * c->nvox * 4;
  if (need > (double)budget) {
    char a[32], b[32];
    CTR_FAIL(CTR_E_DEVICE_OUT_OF_MEMORY,
             "DIRECT reconstruction of %lld views of %lld voxels needs %s of GPU memory "
             "(histo-images%s and sensitivities), the GPU's budget is %s (free memory and the "
             "context's kept buffers less 1 GiB): use fewer views or a smaller lattice, or the "
             "CPU (ctr_context_options.device = CTR_DEVICE_CPU)",
             (long long)h->nviews, c->nvox, ctr__format_bytes(need, a, sizeof a),
             h->factors ? ", factors" : "", ctr__format_bytes((double)budget, b, sizeof b));
  }
  return CTR_OK;
}

#define GRID3(c) dim3(((c)->nx + 127) / 128, (c)->ny, (c)->nz)
#define GEOM(c) (c)->nx, (c)->ny, (c)->nz, (c)->PX, (c)->PY, (c)->HX, (c)->HY, (c)->HZ

static ctr_status sensitivities(ctr__pet_cuda *c, const ctr_pet_histo *h, recon_bufs *b) {
  ctr_status st = CTR_OK;
  const long long nv = c->nvox;
  for (int64_t v = 0; v < h->nviews; v++) {
    ctr__pet_pad_device(c, h->factors ? b->n + v * nv : b->ones, c->d_in);
    CU_LAUNCHED("pet_pad_kernel");
    CTR_CHECK_GOTO(st, ctr__pet_project_device(c, CTR_PET_BACK, v, c->d_in, b->sens + v * nv));
    pet_add_kernel<<<(unsigned)((nv + 255) / 256), 256, 0, c->stream>>>(b->total, b->sens + v * nv, nv);
    CU_LAUNCHED("pet_add_kernel");
  }
cleanup:
  return st;
}

static ctr_status sub_iteration(ctr__pet_cuda *c, const ctr_pet_histo *h, recon_bufs *b,
                                int64_t v, int mode, float scale) {
  ctr_status st = CTR_OK;
  const long long nv = c->nvox;
  cudaEvent_t *ev = b->ev + v * (PH_N + 1);
  CU(cudaEventRecord(ev[0], c->stream));
  CTR_CHECK_GOTO(st, ctr__pet_project_device(c, CTR_PET_FORWARD, v, b->f, c->d_out));
  CU(cudaEventRecord(ev[1], c->stream));
  pet_ratio_kernel<<<GRID3(c), 128, 0, c->stream>>>(b->h + v * nv, h->factors ? b->n + v * nv : NULL,
                                                   c->d_out, c->d_in, GEOM(c));
  CU_LAUNCHED("pet_ratio_kernel");
  CU(cudaEventRecord(ev[2], c->stream));
  CTR_CHECK_GOTO(st, ctr__pet_project_device(c, CTR_PET_BACK, v, c->d_in, c->d_out));
  CU(cudaEventRecord(ev[3], c->stream));
  pet_update_kernel<<<GRID3(c), 128, 0, c->stream>>>(mode, b->f, c->d_out, b->sens + v * nv,
                                                    b->total, b->acc, scale, GEOM(c));
  CU_LAUNCHED("pet_update_kernel");
  CU(cudaEventRecord(ev[4], c->stream));
cleanup:
  return st;
}

/* The value b->count holds after the work queued on c->stream. */
static ctr_status read_count(ctr__pet_cuda *c, const recon_bufs *b, unsigned long long *out) {
  ctr_status st = CTR_OK;
  CU(cudaMemcpyAsync(out, b->count, sizeof *out, cudaMemcpyDeviceToHost, c->stream));
  CU(cudaStreamSynchronize(c->stream));
cleanup:
  return st;
}

/* The data check of the uploaded histo-images (k = 0) or factors (k = 1),
 * queued on `stream`: bad values become 0 on the device, the parts go to
 * b->check (data NULL: the parts of nothing). */
static ctr_status check_queue(ctr__pet_cuda *c, const ctr_pet_histo *h, recon_bufs *b, int k,
                              float *data, cudaStream_t stream) {
  ctr_status st = CTR_OK;
  double *d_part = (double *)b->check + k * CHECK_BLOCKS;
  unsigned long long *d_bad =
      (unsigned long long *)(b->check + 2 * CHECK_BLOCKS * sizeof(double)) + k * CHECK_BLOCKS;
  if (!data) {
    CU(cudaMemsetAsync(d_part, 0, CHECK_BLOCKS * sizeof(double), stream));
    CU(cudaMemsetAsync(d_bad, 0, CHECK_BLOCKS * sizeof(unsigned long long), stream));
  } else {
    pet_check_kernel<<<CHECK_BLOCKS, CHECK_THREADS, 0, stream>>>(data, c->nvox * h->nviews,
                                                                  d_part, d_bad);
    CU_LAUNCHED("pet_check_kernel");
  }
cleanup:
  return st;
}

/* The policy's word on the data check (backend.h), after both parts are
 * queued on c->stream or joined to it. */
static ctr_status check_finish(ctr__pet_cuda *c, recon_bufs *b, ctr__pet_data_check check,
                               void *user, float *uniform) {
  ctr_status st = CTR_OK;
  double part[2][CHECK_BLOCKS];
  unsigned long long bad[2][CHECK_BLOCKS];
  CU(cudaMemcpyAsync(part, b->check, sizeof part, cudaMemcpyDeviceToHost, c->stream));
  CU(cudaMemcpyAsync(bad, b->check + sizeof part, sizeof bad, cudaMemcpyDeviceToHost, c->stream));
  CU(cudaStreamSynchronize(c->stream));
  {
    double total = 0;
    unsigned long long count = 0;
    for (int i = 0; i < CHECK_BLOCKS; i++) total += part[0][i], count += bad[0][i] + bad[1][i];
    st = check(user, (int64_t)count, total, uniform);
  }
cleanup:
  return st;
}

/* The caller's image (host or GPU memory) in the padded b->f, the uniform
 * start when it is all 0. */
static ctr_status upload_image(ctr__pet_cuda *c, float uniform, recon_bufs *b,
                               const float *image) {
  ctr_status st = CTR_OK;
  const long long nv = c->nvox;
  unsigned long long nonzero = 0;
  CTR_CHECK_GOTO(st, ctr__xfer_h2d(&b->xf, c->d_tmp, image, (size_t)nv * sizeof(float), c->stream,
                                   0, NULL));
  CU(cudaMemsetAsync(b->count, 0, sizeof *b->count, c->stream));
  pet_nonzero_kernel<<<(unsigned)((nv + 255) / 256), 256, 0, c->stream>>>(c->d_tmp, nv, b->count);
  CU_LAUNCHED("pet_nonzero_kernel");
  CTR_CHECK_GOTO(st, read_count(c, b, &nonzero));
  if (!nonzero) {
    pet_fill_kernel<<<(unsigned)((nv + 255) / 256), 256, 0, c->stream>>>(
        c->d_tmp, uniform, nv);
    CU_LAUNCHED("pet_fill_kernel");
  }
  ctr__pet_pad_device(c, c->d_tmp, b->f);
  CU_LAUNCHED("pet_pad_kernel");
cleanup:
  return st;
}

/* The current image into the caller's (host or GPU memory); bad: NULL, or
 * the data policy first, *bad getting the count of voxels stored as 0. */
static ctr_status download_image(ctr__pet_cuda *c, recon_bufs *b, float *image,
                                 int64_t *bad) {
  ctr_status st = CTR_OK;
  pet_unpad_kernel<<<GRID3(c), 128, 0, c->stream>>>(b->f, c->d_tmp, GEOM(c));
  CU_LAUNCHED("pet_unpad_kernel");
  if (bad) {
    unsigned long long n = 0;
    CU(cudaMemsetAsync(b->count, 0, sizeof *b->count, c->stream));
    CTR_CHECK_GOTO(st, ctr__gpu_sanitize(c->d_tmp, c->nvox, b->count, c->stream));
    CTR_CHECK_GOTO(st, read_count(c, b, &n));
    *bad = (int64_t)n;
  }
  CTR_CHECK_GOTO(st, ctr__xfer_d2h(&b->xf, image, c->d_tmp, (size_t)c->nvox * sizeof(float),
                                   c->stream, 1, NULL));
cleanup:
  return st;
}

ctr_status ctr__pet_cuda_reconstruct(ctr__pet_cuda *c, const ctr_pet_histo *h,
                                     const ctr_pet_recon_options *o, ctr__pet_data_check check,
                                     void *user, float *image, ctr_pet_recon_timings *t,
                                     int64_t *bad) {
  ctr_status st = CTR_OK;
  recon_bufs b;
  memset(&b, 0, sizeof b);
  const long long nv = c->nvox;
  const size_t vb = (size_t)nv * sizeof(float), hb = vb * (size_t)h->nviews;
  const int mode = o->algorithm == CTR_PET_RAMLA ? 0 : (o->algorithm == CTR_PET_OSEM ? 1 : 2);
  cudaEvent_t t0 = NULL, t1 = NULL, t2 = NULL;
  float ms = 0, uniform = 1;
  const size_t check_bytes = 2 * CHECK_BLOCKS * (sizeof(double) + sizeof(unsigned long long));
  double start = ctr__now_s();
  memset(t, 0, sizeof *t);
  CU(cudaSetDevice(c->device));
  CTR_CHECK_GOTO(st, ctr__xfer_init(&b.xf, c->ctx));
  CTR_CHECK_GOTO(st, check_memory(c, h));
  CU(cudaEventCreate(&t0));
  CU(cudaEventCreate(&t1));
  CU(cudaEventCreate(&t2));
  CU(cudaEventCreate(&b.up0));
  CU(cudaEventCreate(&b.up1));
  CU(cudaStreamCreateWithFlags(&b.up, cudaStreamNonBlocking));
  GPU_GET(c->ctx, b.h, hb, "PET histo-images");
  if (h->factors) GPU_GET(c->ctx, b.n, hb, "PET factors");
  GPU_GET(c->ctx, b.sens, hb, "PET sensitivities");
  GPU_GET(c->ctx, b.total, vb, "PET total sensitivity");
  GPU_GET(c->ctx, b.acc, vb, "PET update accumulator");
  GPU_GET(c->ctx, b.ones, vb, "PET unit image");
  GPU_GET(c->ctx, b.f, (size_t)c->npad * sizeof(float), "PET image");
  GPU_GET(c->ctx, b.count, sizeof *b.count, "PET counter");
  GPU_GET(c->ctx, b.check, check_bytes, "PET data check");
  CU(cudaMemsetAsync(b.f, 0, (size_t)c->npad * sizeof(float), c->stream));
  CU(cudaMemsetAsync(b.total, 0, vb, c->stream));
  CU(cudaMemsetAsync(b.acc, 0, vb, c->stream));
  CU(cudaMemsetAsync(c->d_in, 0, (size_t)c->npad * sizeof(float), c->stream));
  pet_fill_kernel<<<(unsigned)((nv + 255) / 256), 256, 0, c->stream>>>(b.ones, 1.0f, nv);
  CU_LAUNCHED("pet_fill_kernel");
  b.ev = (cudaEvent_t *)ctr__calloc((size_t)h->nviews * (PH_N + 1), sizeof(cudaEvent_t), "events");
  if (!b.ev) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "%s", ctr_error_detail());
  for (int64_t i = 0; i < h->nviews * (PH_N + 1); i++) CU(cudaEventCreate(&b.ev[i]));
  /* The data: the factors first (checked; the sensitivities need them),
   * then the sensitivities on c->stream while the counts go up on b.up
   * beside them (copy and compute engines at once: the first iteration
   * costs the larger of the two, not their sum); the policy's word once
   * both checks are in, before the start image and any iteration. The
   * tables of every view are uploaded in the sensitivities, on first use. */
  CU(cudaEventRecord(t0, c->stream));
  if (h->factors) CTR_CHECK_GOTO(st, ctr__xfer_h2d(&b.xf, b.n, h->factors, hb, c->stream, 0, NULL));
  CTR_CHECK_GOTO(st, check_queue(c, h, &b, 1, h->factors ? b.n : NULL, c->stream));
  CU(cudaEventRecord(t1, c->stream));
  CTR_CHECK_GOTO(st, sensitivities(c, h, &b));
  CU(cudaEventRecord(t2, c->stream));
  CU(cudaEventRecord(b.up0, b.up));
  CTR_CHECK_GOTO(st, ctr__xfer_h2d(&b.xf, b.h, h->counts, hb, b.up, 0, NULL));
  CTR_CHECK_GOTO(st, check_queue(c, h, &b, 0, b.h, b.up));
  CU(cudaEventRecord(b.up1, b.up));
  CU(cudaStreamWaitEvent(c->stream, b.up1, 0));
  CTR_CHECK_GOTO(st, check_finish(c, &b, check, user, &uniform));
  CTR_CHECK_GOTO(st, upload_image(c, uniform, &b, image));
  CU(cudaStreamSynchronize(c->stream));
  /* upload: the factors' and the counts' (overlapping the sensitivities,
   * counted in back) */
  CU(cudaEventElapsedTime(&ms, t0, t1));
  t->upload = ms * 1e-3;
  CU(cudaEventElapsedTime(&ms, b.up0, b.up1));
  t->upload += ms * 1e-3;
  CU(cudaEventElapsedTime(&ms, t1, t2));
  t->back += ms * 1e-3;
  for (int it = 0; it < o->iterations; it++) {
    const float scale = (float)(o->relax0 / (1.0 + o->relax_decay * it) * h->nviews);
    for (int64_t v = 0; v < h->nviews; v++)
      CTR_CHECK_GOTO(st, sub_iteration(c, h, &b, v, mode, scale));
    if (mode == 2) {
      pet_update_kernel<<<GRID3(c), 128, 0, c->stream>>>(3, b.f, c->d_out, NULL, b.total, b.acc,
                                                        0.0f, GEOM(c));
      CU_LAUNCHED("pet_update_kernel");
    }
    CU(cudaStreamSynchronize(c->stream));
    for (int64_t v = 0; v < h->nviews; v++) {
      cudaEvent_t *ev = b.ev + v * (PH_N + 1);
      double *dst[PH_N] = {&t->forward, &t->discrepancy, &t->back, &t->update};
      for (int ph = 0; ph < PH_N; ph++) {
        CU(cudaEventElapsedTime(&ms, ev[ph], ev[ph + 1]));
        *dst[ph] += ms * 1e-3;
      }
    }
    CTR_CHECK_GOTO(st, ctr__progress(c->ctx, "reconstruct", (it + 1.0) / o->iterations));
    if (o->on_iteration) {
      CTR_CHECK_GOTO(st, download_image(c, &b, image, NULL));
      if (o->on_iteration(o->user, it + 1, image)) break;
    }
  }
  {
    double d0 = ctr__now_s();
    CTR_CHECK_GOTO(st, download_image(c, &b, image, bad));
    t->download = ctr__now_s() - d0;
  }
cleanup:
  cudaStreamSynchronize(c->stream);
  if (b.up) {
    cudaStreamSynchronize(b.up);
    cudaStreamDestroy(b.up);
  }
  if (b.up0) cudaEventDestroy(b.up0);
  if (b.up1) cudaEventDestroy(b.up1);
  if (b.ev)
    for (int64_t i = 0; i < h->nviews * (PH_N + 1); i++)
      if (b.ev[i]) cudaEventDestroy(b.ev[i]);
  free(b.ev);
  ctr__xfer_log(&b.xf, "pet-recon");
  ctr__xfer_free(&b.xf);
  /* after the stream's work (synchronised above): kept for the next run, on
   * the projector's GPU (a callback may have made another one current) */
  {
    void *const bufs[9] = {b.h, b.n, b.sens, b.total, b.acc, b.ones, b.f, b.count, b.check};
    const size_t sizes[9] = {hb, hb, hb, vb, vb, vb, (size_t)c->npad * sizeof(float),
                             sizeof *b.count, check_bytes};
    for (int i = 0; i < 9; i++) ctr__gpu_buffer_put(c->ctx, c->device, bufs[i], sizes[i]);
  }
  if (t0) cudaEventDestroy(t0);
  if (t1) cudaEventDestroy(t1);
  if (t2) cudaEventDestroy(t2);
  t->total = ctr__now_s() - start;
  return st;
}
