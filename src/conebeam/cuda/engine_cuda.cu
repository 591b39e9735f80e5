/* The CUDA engine of the streamed FDK pipeline (conebeam/engine.h). Streams:
 * `up` uploads raw or filtered subsets, `comp` filters and backprojects,
 * `down` returns filtered subsets and subvolumes. Raw and staged filtered
 * subsets are double buffered on the device and guarded by events; with
 * CTR_FDK_STORE_DEVICE every filtered view stays resident in the kernels'
 * layout, otherwise views pass through a two-batch ring of slots. */
#include "conebeam/cuda/bp_kernels.cuh"
#include "conebeam/cuda/filter_cuda.cuh"
#include "conebeam/cuda/views_layout.cuh"
#include "conebeam/cuda/engine_cuda_model.h"
#include "gpu/gpu_buffers.h"
#include "gpu/host_transfer.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Held-back batches of a subvolume that goes straight into the caller's
 * volume: the last batches run slab by slab, each slab downloaded while the
 * next is computed. */
#define TAIL_SLABS 8
/* The projection split's tail (tail_hold / tail_queue / tail_sum): the held
 * batches run in SHARED_TAIL_SLABS slabs, each slab's sums and download
 * starting once every engine has finished it. */
#define SHARED_TAIL_SLABS 16
#define EST_GUPS 1.5e12
#define EST_D2H_BYTES_PER_S 45e9
/* The projection split's sums read the peers' copies: the peer-read rate
 * measured on four GPUs of one host (bench/NOTES.md, the multi-GPU runs). */
#define EST_PEER_BYTES_PER_S 110e9

enum { T_UPLOAD, T_FILTER, T_STORE, T_RELOAD, T_BP, T_DOWNLOAD, T_REDUCE, T_COUNT };

/* Slices added per step of add_from when the source's memory is not directly
 * readable (a copy into a scratch buffer first): the model's reduce_bytes. */
#define ADD_CHUNK_BYTES CTR__CUDA_ADD_CHUNK_BYTES

typedef struct ev_pair {
  cudaEvent_t a, b;
  int kind;
} ev_pair;

typedef struct cuda_engine {
  ctr_context *ctx; /* its buffers come from the context's cache (gpu/gpu_buffers.h) */
  size_t raw_bytes, filt_bytes, vol_bytes;
  int device; /* the ordinal every operation makes current first */
  const ctr_geometry *g;     /* the filtered views' detector: the caller's, or an offset
                                detector's extended one (gx) */
  const ctr_geometry *g_raw; /* the caller's: the raw views' detector */
  ctr_geometry *gx;          /* an offset detector's rows extended beyond the narrow edge
                                (ctr__fdk_filter_extend, ctr__geometry_columns), or NULL */
  ctr_fdk_plan plan;
  ctr__bp_config cfg;
  ctr__fdk_filter f;
  int have_filter;
  ctr__gpu_filter gf;
  ctr__dev_views dv;
  cudaStream_t up, comp, down;
  cudaStream_t sum;      /* the projection split's tail: sums of finished slabs */
  cudaEvent_t ev_tail[SHARED_TAIL_SLABS]; /* slab s of the held batches is backprojected */
  int tailing;           /* tail_hold took the held batches for tail_queue / tail_sum */
  void *d_raw[2];
  float *d_filt[2];      /* filtered subsets, unpadded (non-resident stores) */
  cudaEvent_t ev_up[2], ev_raw_free[2], ev_filt_free[2], ev_filt_ready[2];
  float *d_vol;
  float *d_add;          /* add_from's scratch (a source it cannot read in place) */
  unsigned long long *d_bad; /* [0] input values, [1] output voxels replaced by 0 */
  ctr__xfer xf;          /* host transfers of the caller's memory (gpu/host_transfer.h) */
  unsigned int *d_range; /* order-preserving bits of the smallest and largest value */
  int64_t z0, nz, batch_index;
  float *target;
  int64_t first_held, kslices;
  int64_t view_begin, view_end;   /* the views this engine sees */
  int64_t batch_begin, batch_end; /* their batches */
  /* step timings */
  ev_pair *evs;
  int64_t nevs, cap_evs;
} cuda_engine;

static ctr_status ev_begin(cuda_engine *c, int kind, cudaStream_t s, int64_t *slot) {
  ctr_status st = CTR_OK;
  if (c->nevs == c->cap_evs) {
    const int64_t cap = c->cap_evs ? 2 * c->cap_evs : 256;
    ev_pair *p = (ev_pair *)realloc(c->evs, (size_t)cap * sizeof *p);
    if (!p) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "timing events");
    c->evs = p;
    c->cap_evs = cap;
  }
  ev_pair *e = &c->evs[c->nevs];
  e->kind = kind;
  e->a = e->b = NULL;
  CU(cudaEventCreate(&e->a));
  CU(cudaEventCreate(&e->b));
  CU(cudaEventRecord(e->a, s));
  *slot = c->nevs++;
cleanup:
  return st;
}

static ctr_status ev_end(cuda_engine *c, int64_t slot, cudaStream_t s) {
  ctr_status st = CTR_OK;
  CU(cudaEventRecord(c->evs[slot].b, s));
cleanup:
  return st;
}

/* Floats as unsigned ints in the same order (negative values flipped). */
__device__ __forceinline__ unsigned int ordered_bits(float f) {
  const unsigned int u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static float from_ordered_bits(unsigned int o) {
  const unsigned int u = (o & 0x80000000u) ? (o & 0x7fffffffu) : ~o;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Smallest and largest value of v into range[0], range[1], a non-finite value
 * taken as the 0 it is stored as (the data policy, src/core/values.c). */
__global__ void range_kernel(const float *__restrict__ v, long long n, unsigned int *range) {
  unsigned int lo = 0xffffffffu, hi = 0u;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const float x = isfinite(v[i]) ? v[i] : 0.0f;
    const unsigned int o = ordered_bits(x);
    lo = min(lo, o);
    hi = max(hi, o);
  }
  for (int s = 16; s > 0; s >>= 1) {
    lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, s));
    hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, s));
  }
  if ((threadIdx.x & 31) == 0) {
    atomicMin(&range[0], lo);
    atomicMax(&range[1], hi);
  }
}

static int is_resident(const cuda_engine *c) { return c->plan.store == CTR_FDK_STORE_DEVICE; }

/* The slot of view v0 in the layout: resident views sit at their index in
 * the engine's share, others in a two-batch ring. */
static int64_t slot_of(const cuda_engine *c, int64_t v0) {
  return is_resident(c) ? v0 - c->view_begin
                        : ((v0 / c->plan.views_per_batch) & 1) * c->plan.views_per_batch;
}

/* Where slab s of nslabs starts in the grid's slices: a multiple of the
 * kernel's slices per thread, so that every thread's run of slices starts
 * where the whole-volume launch starts it (the precise kernels anchor a
 * column's position at a thread's first slice: another anchor gives other
 * bits); slabs may be empty. */
static int64_t slab_edge(const cuda_engine *c, int s, int nslabs) {
  const int64_t zp = c->cfg.slices_per_thread > 0 ? c->cfg.slices_per_thread : 1;
  if (s >= nslabs) return c->kslices;
  return c->kslices * s / nslabs / zp * zp;
}

static ctr_status bp_views(cuda_engine *c, int64_t v0, int64_t n, int64_t k0, int64_t k1) {
  const int64_t slot = slot_of(c, v0);
  for (int64_t k = 0; k < n; k += c->cfg.views_per_launch) {
    const int64_t m = n - k < c->cfg.views_per_launch ? n - k : c->cfg.views_per_launch;
    int64_t list[CTR__BP_MAX_VIEWS];
    for (int64_t i = 0; i < m; i++) list[i] = v0 + k + i;
    CTR_CHECK(ctr__views_backproject(c->g, &c->dv, &c->cfg, list, NULL, slot + k, m, c->d_vol,
                                     c->z0, c->nz, k0, k1, c->comp));
  }
  return CTR_OK;
}

/* Backprojects a batch now, or holds it back for slab_end. */
static ctr_status bp_or_hold(cuda_engine *c, int64_t v0, int64_t n) {
  const int64_t b = v0 / c->plan.views_per_batch;
  if (b >= c->first_held) return CTR_OK;
  int64_t t;
  CTR_CHECK(ev_begin(c, T_BP, c->comp, &t));
  CTR_CHECK(bp_views(c, v0, n, 0, c->kslices));
  return ev_end(c, t, c->comp);
}

static ctr_status cu_slab_begin(ctr__engine *e, int64_t z0, int64_t nz, float *target) {
  cuda_engine *c = (cuda_engine *)e->impl;
  CU_DEVICE(c->device);
  ctr_status st = CTR_OK;
  if (nz > c->plan.slab_slices)
    CTR_FAIL(CTR_E_INTERNAL, "subvolume of %lld slices exceeds the plan's %lld", (long long)nz,
             (long long)c->plan.slab_slices);
  c->z0 = z0;
  c->nz = nz;
  c->target = target;
  c->kslices = ctr__grid_slices(&c->dv, nz);
  c->first_held = c->batch_end;
  if (target && is_resident(c) && ctr__xfer_direct(target)) {
    const double bp_s = (double)c->plan.views_per_batch * (double)(c->g->vol.nx * c->g->vol.ny * nz) / EST_GUPS;
    const double dl_s = (double)(c->g->vol.nx * c->g->vol.ny * nz) * 4.0 / EST_D2H_BYTES_PER_S;
    int64_t held = (int64_t)ceil(dl_s / bp_s);
    if (held > c->batch_end - c->batch_begin) held = c->batch_end - c->batch_begin;
    c->first_held = c->batch_end - held;
  }
  CU(cudaMemsetAsync(c->d_vol, 0, (size_t)(c->g->vol.nx * c->g->vol.ny * nz) * sizeof(float), c->comp));
cleanup:
  return st;
}

static ctr_status cu_filter_bp(ctr__engine *e, int64_t v0, int64_t n, const void *raw,
                               ctr_dtype dtype, float *keep) {
  cuda_engine *c = (cuda_engine *)e->impl;
  CU_DEVICE(c->device);
  ctr_status st = CTR_OK;
  const int i = (int)((v0 / c->plan.views_per_batch) & 1);
  const size_t bytes = (size_t)(n * c->g_raw->nu * c->g_raw->nv) * ctr_dtype_size(dtype);
  const size_t fbytes = (size_t)(n * c->g->nu * c->g->nv) * sizeof(float);
  int64_t t;
  /* pinned host, or the caller's GPU array: the copy is queued and waited
   * for at the end; pageable memory is staged (the call returns when raw
   * may be reused) */
  const ctr__xfer_path path = ctr__xfer_choose(&c->xf, raw, bytes, 1);
  const int pinned = path == CTR__XFER_DIRECT;
  /* Resident views are filtered straight into the layout unless the host
   * wants them too (then through the staging buffer, as for the other
   * stores). */
  const int direct = is_resident(c) && !keep;
  if (keep && !c->d_filt[i])
    CTR_FAIL(CTR_E_INTERNAL, "filtered views wanted on the host, but the plan gave no staging "
             "buffer");
  CU(cudaStreamWaitEvent(c->up, c->ev_raw_free[i], 0));
  CTR_CHECK(ev_begin(c, T_UPLOAD, c->up, &t));
  CTR_CHECK(ctr__xfer_h2d_on(&c->xf, path, c->d_raw[i], raw, bytes, c->up, 0));
  CTR_CHECK(ev_end(c, t, c->up));
  CU(cudaEventRecord(c->ev_up[i], c->up));
  CU(cudaStreamWaitEvent(c->comp, c->ev_up[i], 0));
  CTR_CHECK(ev_begin(c, T_FILTER, c->comp, &t));
  if (direct) {
    const ctr__gpu_store dst = ctr__views_target(&c->dv, slot_of(c, v0));
    CTR_CHECK_GOTO(st, ctr__gpu_filter_run(&c->gf, c->d_raw[i], dtype, v0, n, &dst, c->comp));
  } else {
    ctr__gpu_store dst;
    memset(&dst, 0, sizeof dst);
    dst.kind = CTR__STORE_LINEAR;
    dst.base = c->d_filt[i];
    dst.view_stride = (long long)(c->g->nu * c->g->nv);
    dst.pitch = (int)c->g->nu;
    CTR_CHECK_GOTO(st, ctr__gpu_filter_run(&c->gf, c->d_raw[i], dtype, v0, n, &dst, c->comp));
  }
  CTR_CHECK(ev_end(c, t, c->comp));
  CU(cudaEventRecord(c->ev_raw_free[i], c->comp));
  if (!direct) {
    if (keep) {
      CU(cudaEventRecord(c->ev_filt_ready[i], c->comp));
      CU(cudaStreamWaitEvent(c->down, c->ev_filt_ready[i], 0));
      CTR_CHECK(ev_begin(c, T_STORE, c->down, &t));
      CU(cudaMemcpyAsync(keep, c->d_filt[i], fbytes, cudaMemcpyDeviceToHost, c->down));
      CTR_CHECK(ev_end(c, t, c->down));
    }
    const ctr__gpu_store slots = ctr__views_target(&c->dv, slot_of(c, v0));
    CTR_CHECK_GOTO(st, ctr__gpu_store_views(c->d_filt[i], c->g->nu, c->g->nv, n, &slots, c->comp));
    CU(cudaEventRecord(c->ev_filt_free[i], c->comp));
  }
  CTR_CHECK(bp_or_hold(c, v0, n));
  /* The caller may reuse raw and read keep when this returns. */
  if (pinned) CU(cudaEventSynchronize(c->ev_up[i]));
  if (keep) CU(cudaStreamSynchronize(c->down));
cleanup:
  return st;
}

static ctr_status cu_bp(ctr__engine *e, int64_t v0, int64_t n, const float *filtered) {
  cuda_engine *c = (cuda_engine *)e->impl;
  CU_DEVICE(c->device);
  ctr_status st = CTR_OK;
  if (!filtered) {
    if (!is_resident(c)) CTR_FAIL(CTR_E_INTERNAL, "no resident filtered views");
    return bp_or_hold(c, v0, n);
  }
  if (!c->d_filt[0]) CTR_FAIL(CTR_E_INTERNAL, "filtered views from the host, but the plan gave "
                              "no staging buffer");
  const int i = (int)((v0 / c->plan.views_per_batch) & 1);
  const size_t fbytes = (size_t)(n * c->g->nu * c->g->nv) * sizeof(float);
  int64_t t;
  CU(cudaStreamWaitEvent(c->up, c->ev_filt_free[i], 0));
  CTR_CHECK(ev_begin(c, T_RELOAD, c->up, &t));
  CU(cudaMemcpyAsync(c->d_filt[i], filtered, fbytes, cudaMemcpyHostToDevice, c->up));
  CTR_CHECK(ev_end(c, t, c->up));
  CU(cudaEventRecord(c->ev_filt_ready[i], c->up));
  CU(cudaStreamWaitEvent(c->comp, c->ev_filt_ready[i], 0));
  {
    const ctr__gpu_store slots = ctr__views_target(&c->dv, slot_of(c, v0));
    CTR_CHECK_GOTO(st, ctr__gpu_store_views(c->d_filt[i], c->g->nu, c->g->nv, n, &slots, c->comp));
  }
  CU(cudaEventRecord(c->ev_filt_free[i], c->comp));
  CTR_CHECK(bp_or_hold(c, v0, n));
  CU(cudaEventSynchronize(c->ev_filt_ready[i])); /* `filtered` may be reused */
cleanup:
  return st;
}

/* Copies slices [k0, k1) of the device subvolume to dst on `down` after
 * everything queued on `comp`; staged through pinned memory if dst is not. */
static ctr_status copy_out_on(cuda_engine *c, cudaStream_t on, int64_t k0, int64_t k1, float *dst,
                              int wait) {
  ctr_status st = CTR_OK;
  const size_t slice = (size_t)(c->g->vol.nx * c->g->vol.ny) * sizeof(float);
  const size_t off = (size_t)k0 * slice, len = (size_t)(k1 - k0) * slice;
  cudaEvent_t done = NULL;
  int64_t t;
  CU(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  /* The data policy: no bad voxel leaves the device. */
  CTR_CHECK_GOTO(st, ctr__gpu_sanitize((float *)((char *)c->d_vol + off),
                                       (long long)(len / sizeof(float)), c->d_bad + 1, on));
  /* the range of what is delivered (bad voxels are 0 by now) */
  range_kernel<<<1024, 256, 0, on>>>((const float *)((char *)c->d_vol + off),
                                     (long long)(len / sizeof(float)), c->d_range);
  CU_LAUNCHED("range_kernel");
  CU(cudaEventRecord(done, on));
  CU(cudaStreamWaitEvent(c->down, done, 0));
  CTR_CHECK_GOTO(st, ev_begin(c, T_DOWNLOAD, c->down, &t));
  /* pinned host or the caller's GPU array: queued; pageable: staged */
  CTR_CHECK_GOTO(st, ctr__xfer_d2h(&c->xf, dst, (char *)c->d_vol + off, len, c->down, 0, NULL));
  CTR_CHECK_GOTO(st, ev_end(c, t, c->down));
  if (wait) CU(cudaStreamSynchronize(c->down));
cleanup:
  if (done) cudaEventDestroy(done);
  return st;
}

/* Copies slices [k0, k1) after everything queued on `comp`. */
static ctr_status copy_out(cuda_engine *c, int64_t k0, int64_t k1, float *dst, int wait) {
  return copy_out_on(c, c->comp, k0, k1, dst, wait);
}

static ctr_status cu_slab_end(ctr__engine *e) {
  cuda_engine *c = (cuda_engine *)e->impl;
  CU_DEVICE(c->device);
  ctr_status st = CTR_OK;
  const int64_t slice = c->g->vol.nx * c->g->vol.ny;
  if (c->first_held < c->batch_end) {
    /* Held-back batches slab by slab; each slab's slices go home while the
     * next slab is computed. */
    for (int s = 0; s < TAIL_SLABS; s++) {
      const int64_t k0 = slab_edge(c, s, TAIL_SLABS), k1 = slab_edge(c, s + 1, TAIL_SLABS);
      if (k1 <= k0) continue;
      int64_t t;
      CTR_CHECK(ev_begin(c, T_BP, c->comp, &t));
      for (int64_t b = c->first_held; b < c->batch_end; b++) {
        const int64_t v0 = b * c->plan.views_per_batch;
        const int64_t n = c->g->nviews - v0 < c->plan.views_per_batch ? c->g->nviews - v0 : c->plan.views_per_batch;
        CTR_CHECK(bp_views(c, v0, n, k0, k1));
      }
      CTR_CHECK(ev_end(c, t, c->comp));
      CTR_CHECK(copy_out(c, k0, k1, c->target + k0 * slice, 0));
      if (c->dv.pair) {
        const int64_t m0 = c->nz - k1, m1 = c->nz - k0;
        CTR_CHECK(copy_out(c, m0, m1, c->target + m0 * slice, 0));
      }
    }
    CU(cudaStreamSynchronize(c->down));
  } else if (c->target) {
    CTR_CHECK(copy_out(c, 0, c->nz, c->target, 1));
  } else {
    CU(cudaStreamSynchronize(c->comp));
  }
cleanup:
  return st;
}

__global__ void add_kernel(float *__restrict__ dst, const float *__restrict__ src, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    dst[i] += src[i];
}

/* Whether `device` (current) reads `peer`'s memory in place: peer access
 * enabled once per ordered pair in the process (it lasts as long as the
 * process; enabling it again is an API error that compute-sanitizer counts,
 * one per reduction before this table). */
static int peer_access(int device, int peer) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static signed char state[CTR__MAX_DEVICES][CTR__MAX_DEVICES]; /* 0 unknown, 1 yes, -1 no */
  if (device < 0 || peer < 0 || device >= CTR__MAX_DEVICES || peer >= CTR__MAX_DEVICES) return 0;
  pthread_mutex_lock(&mu);
  if (!state[device][peer]) {
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, device, peer) != cudaSuccess) can = 0;
    cudaError_t pe = can ? cudaDeviceEnablePeerAccess(peer, 0) : cudaErrorPeerAccessUnsupported;
    if (can && pe != cudaSuccess) cudaGetLastError(); /* enabled elsewhere (the caller's), or refused */
    state[device][peer] = can && (pe == cudaSuccess || pe == cudaErrorPeerAccessAlreadyEnabled) ? 1 : -1;
  }
  const int ok = state[device][peer] > 0;
  pthread_mutex_unlock(&mu);
  return ok;
}

/* Queues dst's slices [k0, k1) += src's on dst's compute stream: read in
 * place where this device can (the same device, or peer access), else copied
 * over in chunks first. The caller has made dst's device current. */
static ctr_status queue_add(cuda_engine *c, cudaStream_t on, const cuda_engine *s, int64_t k0,
                            int64_t k1) {
  ctr_status st = CTR_OK;
  const size_t slice = (size_t)(c->g->vol.nx * c->g->vol.ny) * sizeof(float);
  const size_t off = (size_t)k0 * slice, len = (size_t)(k1 - k0) * slice;
  const int direct = s->device == c->device || peer_access(c->device, s->device);
  int64_t t = 0;
  if (k1 <= k0) return CTR_OK;
  CTR_CHECK_GOTO(st, ev_begin(c, T_REDUCE, on, &t));
  if (direct) {
    add_kernel<<<2048, 256, 0, on>>>((float *)((char *)c->d_vol + off),
                                          (const float *)((const char *)s->d_vol + off),
                                          (long long)(len / sizeof(float)));
    CU_LAUNCHED("add_kernel");
  } else {
    if (!c->d_add)
      CTR_CHECK_GOTO(st, ctr__gpu_buffer_get(c->ctx, c->device, ADD_CHUNK_BYTES,
                                             "FDK subvolume merge chunk", (void **)&c->d_add));
    for (size_t o = 0; o < len; o += ADD_CHUNK_BYTES) {
      const size_t l = len - o < ADD_CHUNK_BYTES ? len - o : ADD_CHUNK_BYTES;
      CU(cudaMemcpyPeerAsync(c->d_add, c->device, (const char *)s->d_vol + off + o, s->device, l,
                             on));
      add_kernel<<<2048, 256, 0, on>>>((float *)((char *)c->d_vol + off + o), c->d_add,
                                       (long long)(l / sizeof(float)));
      CU_LAUNCHED("add_kernel");
    }
  }
  CTR_CHECK_GOTO(st, ev_end(c, t, on));
cleanup:
  return st;
}

static ctr_status cu_add_from(ctr__engine *e, ctr__engine *src, int64_t k0, int64_t k1) {
  cuda_engine *c = (cuda_engine *)e->impl;
  CU_DEVICE(c->device);
  ctr_status st = CTR_OK;
  CTR_CHECK_GOTO(st, queue_add(c, c->comp, (const cuda_engine *)src->impl, k0, k1));
  CU(cudaStreamSynchronize(c->comp));
cleanup:
  return st;
}

/* The projection split's reduction and download in pieces of SUM_PIECE_BYTES:
 * the download of one piece (host link, ~50 GB/s) runs on `down` while the
 * next piece is summed over the peer links on `comp`. */
#define SUM_PIECE_BYTES ((size_t)128 << 20)
static ctr_status cu_sum_download(ctr__engine *e, ctr__engine *const *srcs, int n, int64_t k0,
                                  int64_t k1, float *dst) {
  cuda_engine *c = (cuda_engine *)e->impl;
  if (k0 < 0 || k1 > c->nz || k0 > k1)
    CTR_FAIL(CTR_E_INTERNAL, "sum of slices [%lld, %lld) of a %lld-slice subvolume",
             (long long)k0, (long long)k1, (long long)c->nz);
  CU_DEVICE(c->device);
  ctr_status st = CTR_OK;
  const int64_t slice = c->g->vol.nx * c->g->vol.ny;
  int64_t piece = (int64_t)(SUM_PIECE_BYTES / ((size_t)slice * sizeof(float)));
  if (piece < 1) piece = 1;
  for (int64_t p0 = k0; p0 < k1; p0 += piece) {
    const int64_t p1 = p0 + piece < k1 ? p0 + piece : k1;
    for (int i = 0; i < n; i++)
      CTR_CHECK_GOTO(st, queue_add(c, c->comp, (const cuda_engine *)srcs[i]->impl, p0, p1));
    CTR_CHECK_GOTO(st, copy_out(c, p0, p1, dst + (p0 - k0) * slice, 0));
  }
  CU(cudaStreamSynchronize(c->comp));
  CU(cudaStreamSynchronize(c->down));
cleanup:
  return st;
}

/* ---- The projection split's tail -------------------------------------------- */

/* Slab s of the tail: grid slices [k0, k1) of kslices. */
static void tail_slab(const cuda_engine *c, int s, int64_t *k0, int64_t *k1) {
  *k0 = slab_edge(c, s, SHARED_TAIL_SLABS);
  *k1 = slab_edge(c, s + 1, SHARED_TAIL_SLABS);
}

/* The order the slabs run in, the same on every engine: round robin over the
 * workers whose share holds the slab's first slice, so that every share's
 * sums start early rather than the first share's first. */
static void tail_order(const cuda_engine *c, int nw, int order[SHARED_TAIL_SLABS]) {
  int owner[SHARED_TAIL_SLABS], taken[SHARED_TAIL_SLABS] = {0}, n = 0;
  for (int s = 0; s < SHARED_TAIL_SLABS; s++) {
    int64_t k0, k1;
    tail_slab(c, s, &k0, &k1);
    owner[s] = (int)(k0 * nw / c->nz); /* share w: slices [nz w / nw, nz (w + 1) / nw) */
    if (owner[s] >= nw) owner[s] = nw - 1;
  }
  while (n < SHARED_TAIL_SLABS)
    for (int w = 0; w < nw; w++)
      for (int s = 0; s < SHARED_TAIL_SLABS; s++)
        if (!taken[s] && owner[s] == w) {
          taken[s] = 1;
          order[n++] = s;
          break;
        }
}

static int cu_tail_hold(ctr__engine *e, int64_t share_slices, int nw) {
  cuda_engine *c = (cuda_engine *)e->impl;
  c->tailing = 0;
  /* the same answer on every engine of a plan (the caller has checked that
   * each has two batches or more) */
  const int64_t nb = c->batch_end - c->batch_begin;
  if (!is_resident(c) || c->kslices < SHARED_TAIL_SLABS || nb < 2) return 0;
  const double slice = (double)(c->g->vol.nx * c->g->vol.ny);
  const double bp_s = (double)c->plan.views_per_batch * slice * (double)c->nz / EST_GUPS;
  /* what the held batches must hide: the share's download and its sums,
   * reads of the other nw - 1 engines' copies of the share */
  const double share_bytes = (double)share_slices * slice * 4.0;
  const double dl_s = share_bytes / EST_D2H_BYTES_PER_S + (nw - 1) * share_bytes / EST_PEER_BYTES_PER_S;
  int64_t held = (int64_t)ceil(dl_s / bp_s);
  if (held < 1) held = 1;
  if (held > nb - 1) held = nb - 1;
  c->first_held = c->batch_end - held;
  c->tailing = 1;
  return 1;
}

static ctr_status cu_tail_queue(ctr__engine *e, int nw) {
  cuda_engine *c = (cuda_engine *)e->impl;
  if (!c->tailing) CTR_FAIL(CTR_E_INTERNAL, "tail_queue without tail_hold");
  CU_DEVICE(c->device);
  ctr_status st = CTR_OK;
  int order[SHARED_TAIL_SLABS];
  tail_order(c, nw, order);
  for (int i = 0; i < SHARED_TAIL_SLABS; i++) {
    int64_t k0, k1, t;
    tail_slab(c, order[i], &k0, &k1);
    CTR_CHECK(ev_begin(c, T_BP, c->comp, &t));
    for (int64_t b = c->first_held; b < c->batch_end; b++) {
      const int64_t v0 = b * c->plan.views_per_batch;
      const int64_t n = c->g->nviews - v0 < c->plan.views_per_batch ? c->g->nviews - v0 : c->plan.views_per_batch;
      if (k1 > k0) CTR_CHECK(bp_views(c, v0, n, k0, k1));
    }
    CTR_CHECK(ev_end(c, t, c->comp));
    CU(cudaEventRecord(c->ev_tail[order[i]], c->comp));
  }
cleanup:
  return st;
}

static ctr_status cu_tail_sum(ctr__engine *e, ctr__engine *const *all, int nw, int self, int64_t k0,
                              int64_t k1, float *dst) {
  cuda_engine *c = (cuda_engine *)e->impl;
  if (!c->tailing) CTR_FAIL(CTR_E_INTERNAL, "tail_sum without tail_hold");
  CU_DEVICE(c->device);
  ctr_status st = CTR_OK;
  const int64_t slice = c->g->vol.nx * c->g->vol.ny;
  int order[SHARED_TAIL_SLABS];
  tail_order(c, nw, order);
  for (int i = 0; i < SHARED_TAIL_SLABS; i++) {
    const int s = order[i];
    int64_t a, b;
    tail_slab(c, s, &a, &b);
    /* the slab's slices: [a, b), and with mirrored pairs [nz - b, nz - a)
     * (its middle slice, for odd nz, counted once) */
    int64_t r[2][2] = {{a, b}, {0, 0}};
    if (c->dv.pair) r[1][0] = c->nz - b > b ? c->nz - b : b, r[1][1] = c->nz - a;
    int waited = 0;
    for (int j = 0; j < 2; j++) {
      const int64_t p0 = r[j][0] > k0 ? r[j][0] : k0, p1 = r[j][1] < k1 ? r[j][1] : k1;
      if (p1 <= p0) continue;
      if (!waited) { /* every engine has finished slab s */
        for (int u = 0; u < nw; u++)
          CU(cudaStreamWaitEvent(c->sum, ((const cuda_engine *)all[u]->impl)->ev_tail[s], 0));
        waited = 1;
      }
      for (int u = 0; u < nw; u++) /* the sum in worker order, as add_from's */
        if (u != self)
          CTR_CHECK_GOTO(st, queue_add(c, c->sum, (const cuda_engine *)all[u]->impl, p0, p1));
      CTR_CHECK_GOTO(st, copy_out_on(c, c->sum, p0, p1, dst + (p0 - k0) * slice, 0));
    }
  }
  CU(cudaStreamSynchronize(c->comp));
  CU(cudaStreamSynchronize(c->sum));
  CU(cudaStreamSynchronize(c->down));
  c->first_held = c->batch_end;
  c->tailing = 0;
cleanup:
  return st;
}

static void cu_range(ctr__engine *e, float *mn, float *mx) {
  cuda_engine *c = (cuda_engine *)e->impl;
  unsigned int r[2] = {0xffffffffu, 0u};
  if (cudaSetDevice(c->device) != cudaSuccess) return;
  if (cudaMemcpy(r, c->d_range, sizeof r, cudaMemcpyDeviceToHost) != cudaSuccess) return;
  *mn = r[0] == 0xffffffffu ? INFINITY : from_ordered_bits(r[0]);
  *mx = r[1] == 0u ? -INFINITY : from_ordered_bits(r[1]);
}

static ctr_status cu_download(ctr__engine *e, int64_t k0, int64_t k1, float *dst) {
  cuda_engine *c = (cuda_engine *)e->impl;
  if (k0 < 0 || k1 > c->nz || k0 > k1)
    CTR_FAIL(CTR_E_INTERNAL, "download of slices [%lld, %lld) of a %lld-slice subvolume",
             (long long)k0, (long long)k1, (long long)c->nz);
  CU_DEVICE(c->device);
  return copy_out(c, k0, k1, dst, 1);
}

static void cu_timings(ctr__engine *e, ctr_fdk_stream_timings *t) {
  cuda_engine *c = (cuda_engine *)e->impl;
  double sum[T_COUNT] = {0};
  cudaSetDevice(c->device);
  cudaDeviceSynchronize();
  for (int64_t i = 0; i < c->nevs; i++) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, c->evs[i].a, c->evs[i].b) == cudaSuccess)
      sum[c->evs[i].kind] += ms * 1e-3;
  }
  t->upload += sum[T_UPLOAD];
  t->filter += sum[T_FILTER];
  t->store += sum[T_STORE];
  t->reload += sum[T_RELOAD];
  t->backproject += sum[T_BP];
  t->download += sum[T_DOWNLOAD];
  t->reduce += sum[T_REDUCE];
}

static int64_t bad_count(const cuda_engine *c, int which) {
  unsigned long long n = 0;
  cudaSetDevice(c->device);
  if (c->d_bad && cudaMemcpy(&n, c->d_bad + which, sizeof n, cudaMemcpyDeviceToHost) != cudaSuccess)
    n = 0;
  return (int64_t)n;
}
static int64_t cu_nonfinite(ctr__engine *e) { return bad_count((cuda_engine *)e->impl, 0); }
static int64_t cu_out_nonfinite(ctr__engine *e) { return bad_count((cuda_engine *)e->impl, 1); }

static void cu_destroy(ctr__engine *e) {
  cuda_engine *c = (cuda_engine *)e->impl;
  if (!c) return;
  cudaSetDevice(c->device);
  cudaDeviceSynchronize();
  for (int64_t i = 0; i < c->nevs; i++) {
    if (c->evs[i].a) cudaEventDestroy(c->evs[i].a);
    if (c->evs[i].b) cudaEventDestroy(c->evs[i].b);
  }
  free(c->evs);
  for (int i = 0; i < 2; i++) {
    ctr__gpu_buffer_put(c->ctx, c->device, c->d_raw[i], c->raw_bytes);
    ctr__gpu_buffer_put(c->ctx, c->device, c->d_filt[i], c->filt_bytes);
    cudaEvent_t *evs[4] = {&c->ev_up[i], &c->ev_raw_free[i], &c->ev_filt_free[i], &c->ev_filt_ready[i]};
    for (int k = 0; k < 4; k++)
      if (*evs[k]) cudaEventDestroy(*evs[k]);
  }
  char who[32];
  snprintf(who, sizeof who, "fdk (GPU %d)", c->device);
  ctr__xfer_log(&c->xf, who);
  ctr__xfer_free(&c->xf);
  ctr__gpu_buffer_put(c->ctx, c->device, c->d_vol, c->vol_bytes);
  ctr__gpu_buffer_put(c->ctx, c->device, c->d_add, ADD_CHUNK_BYTES);
  ctr__gpu_buffer_put(c->ctx, c->device, c->d_bad, 2 * sizeof(unsigned long long));
  ctr__gpu_buffer_put(c->ctx, c->device, c->d_range, 2 * sizeof(unsigned int));
  ctr__gpu_filter_free(&c->gf);
  ctr__views_free(&c->dv);
  if (c->have_filter) ctr__fdk_filter_free(&c->f);
  ctr_geometry_free(c->gx);
  if (c->up) cudaStreamDestroy(c->up);
  if (c->comp) cudaStreamDestroy(c->comp);
  if (c->down) cudaStreamDestroy(c->down);
  if (c->sum) cudaStreamDestroy(c->sum);
  for (int i = 0; i < SHARED_TAIL_SLABS; i++)
    if (c->ev_tail[i]) cudaEventDestroy(c->ev_tail[i]);
  free(c);
}

static const ctr__engine_ops cuda_ops = {
    .slab_begin = cu_slab_begin, .filter_bp = cu_filter_bp, .bp = cu_bp,
    .slab_end = cu_slab_end,     .download = cu_download,   .add_from = cu_add_from,
    .sum_download = cu_sum_download, .tail_hold = cu_tail_hold, .tail_queue = cu_tail_queue,
    .tail_sum = cu_tail_sum,
    .timings = cu_timings,       .nonfinite = cu_nonfinite, .out_nonfinite = cu_out_nonfinite,
    .range = cu_range,           .destroy = cu_destroy};

static ctr__bp_variant unpaired(ctr__bp_variant v) {
  switch (v) {
    case CTR__BP_EXACT_PAIR: return CTR__BP_EXACT;
    case CTR__BP_PRECISE_PAIR: return CTR__BP_PRECISE;
    case CTR__BP_TEX_PAIR:
    case CTR__BP_TEX_PAIR_HALF: return CTR__BP_TEX;
    default: return v;
  }
}

extern "C" ctr_status ctr__engine_cuda_create(ctr_context *ctx, int device, const ctr_geometry *g,
                                              const ctr_fdk_options *o, const ctr_fdk_plan *plan,
                                              double input_scale, int64_t view_begin,
                                              int64_t view_end, ctr__engine **out) {
  ctr_status st = CTR_OK;
  cudaDeviceProp prop;
  uint64_t budget = 0;
  ctr__engine *e = (ctr__engine *)ctr__calloc(1, sizeof *e, "CUDA backend");
  cuda_engine *c = (cuda_engine *)ctr__calloc(1, sizeof *c, "CUDA backend");
  if (!e || !c) {
    free(e);
    free(c);
    return CTR_E_OUT_OF_MEMORY;
  }
  e->ops = &cuda_ops;
  e->impl = c;
  c->ctx = ctx;
  c->device = device;
  c->g = c->g_raw = g;
  c->plan = *plan;
  const int64_t nb = plan->views_per_batch;
  c->view_begin = view_begin;
  c->view_end = view_end;
  c->batch_begin = view_begin / nb;
  c->batch_end = (view_end + nb - 1) / nb;
  /* The buffers are those of the backend's memory model, which the planner
   * used (engine_cuda_model.c). */
  ctr__cuda_bytes model;
  const int shared = plan->workers > 1 && plan->split == CTR_FDK_SPLIT_VOLUME;
  /* An offset detector's weighted rows are filtered extended beyond the
   * narrow edge (docs/geometry.md, "Offset detectors"): the filtered views,
   * their layout and the backprojection use the extended detector; the raw
   * views keep the caller's. */
  CTR_CHECK_GOTO(st, ctr__fdk_filter_init(ctx, g, o, &c->f));
  c->have_filter = 1;
  CTR_CHECK_GOTO(st, ctr__fdk_filter_extend(o, &c->f));
  if (c->f.nu_ext != g->nu) {
    CTR_CHECK_GOTO(st, ctr__geometry_columns(g, c->f.pad_lo, c->f.nu_ext, &c->gx));
    c->g = g = c->gx;
  }
  ctr__cuda_engine_bytes(g, o->interp, nb, plan->store, plan->pair, view_end - view_begin, shared,
                         &model);
  CTR_CHECK_GOTO(st, ctr__device_setup(ctx, device, &prop, &budget));
  CTR_CHECK_GOTO(st, ctr__xfer_init(&c->xf, ctx));
  {
    ctr__bp_config req;
    memset(&req, 0, sizeof req);
    req.views_per_launch = (int)(nb < CTR__BP_MAX_VIEWS ? nb : CTR__BP_MAX_VIEWS);
    req = ctr__bp_config_tuned(ctx, &req); /* ctr_tuning's launch shape */
    c->cfg = ctr__bp_config_resolve(g, o, &req);
    if (!plan->pair) c->cfg.variant = unpaired(c->cfg.variant);
    /* the shape left to the defaults: tuned on first use (bp_tune.cu) */
    CTR_CHECK_GOTO(st, ctr__bp_tune(ctx, device, g, o, &c->cfg, plan->slab_slices,
                                    plan->gpu_bytes, 0, NULL));
  }
  CU(cudaStreamCreateWithFlags(&c->up, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&c->comp, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&c->down, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&c->sum, cudaStreamNonBlocking));
  for (int i = 0; i < SHARED_TAIL_SLABS; i++)
    CU(cudaEventCreateWithFlags(&c->ev_tail[i], cudaEventDisableTiming));
  for (int i = 0; i < 2; i++) {
    CU(cudaEventCreateWithFlags(&c->ev_up[i], cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&c->ev_raw_free[i], cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&c->ev_filt_free[i], cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&c->ev_filt_ready[i], cudaEventDisableTiming));
    c->raw_bytes = model.raw;
    c->filt_bytes = model.filtered;
    CTR_CHECK_GOTO(st, ctr__gpu_buffer_get(ctx, device, model.raw, "FDK projection batch", &c->d_raw[i]));
    if (model.filtered)
      CTR_CHECK_GOTO(st, ctr__gpu_buffer_get(ctx, device, model.filtered, "FDK filtered batch",
                                                  (void **)&c->d_filt[i]));
  }
  {
    const int64_t slots = plan->store == CTR_FDK_STORE_DEVICE ? view_end - view_begin : 2 * nb;
    if (ctr__views_bytes(g, c->cfg.variant, slots) > model.layout)
      CTR_FAIL_GOTO(st, CTR_E_INTERNAL, "the %s layout of %lld views takes %zu bytes, more than "
                    "the memory model's %llu (engine_cuda_model.c)",
                    ctr__bp_variant_name(c->cfg.variant), (long long)slots,
                    ctr__views_bytes(g, c->cfg.variant, slots), (unsigned long long)model.layout);
  }
  CTR_CHECK_GOTO(st, ctr__views_create(ctx, g, c->cfg.variant, nb,
                                       plan->store == CTR_FDK_STORE_DEVICE ? view_end - view_begin : 2 * nb,
                                       prop.maxTexture2DLayered[2], &c->dv));
  CTR_CHECK_GOTO(st, ctr__gpu_filter_create(ctx, &c->f, nb, c->comp, &c->gf));
  CTR_CHECK_GOTO(st, ctr__gpu_buffer_get(ctx, device, 2 * sizeof(unsigned int), "FDK value range",
                                         (void **)&c->d_range));
  {
    const unsigned int init[2] = {0xffffffffu, 0u};
    CU(cudaMemcpy(c->d_range, init, sizeof init, cudaMemcpyHostToDevice));
  }
  CTR_CHECK_GOTO(st, ctr__gpu_buffer_get(ctx, device, 2 * sizeof(unsigned long long),
                                         "FDK value counters", (void **)&c->d_bad));
  CU(cudaMemset(c->d_bad, 0, 2 * sizeof(unsigned long long)));
  c->gf.in_scale = (float)(1.0 / input_scale);
  c->gf.d_nonfinite = c->d_bad;
  c->vol_bytes = model.slice * (size_t)plan->slab_slices;
  CTR_CHECK_GOTO(st, ctr__gpu_buffer_get(ctx, device, c->vol_bytes, "FDK subvolume", (void **)&c->d_vol));
  CU(cudaDeviceSynchronize());
  *out = e;
  return CTR_OK;
cleanup:
  if (st == CTR_E_DEVICE_OUT_OF_MEMORY) {
    char detail[1024], planned[32], avail[32];
    snprintf(detail, sizeof detail, "%s", ctr_error_detail());
    st = ctr__error_set(st, "%s (the plan expected %s of GPU memory on GPU %d, whose budget "
                        "was %s: free memory and the context's kept buffers less 1 GiB; "
                        "lower gpu_budget to plan for less)", detail,
                        ctr__format_bytes((double)plan->gpu_bytes, planned, sizeof planned),
                        device, ctr__format_bytes((double)budget, avail, sizeof avail));
  }
  cu_destroy(e);
  free(e);
  return st;
}

/* The engine backend's tune (engine.h): the configuration ctr__engine_cuda_create
 * would resolve for a run of (g, o) in batches of the default N' (at most the views)
 * over the whole volume in one slab, an offset
 * detector's extended columns included, tuned by ctr__bp_tune. */
extern "C" ctr_status ctr__engine_cuda_tune(ctr_context *ctx, int device, const ctr_geometry *g,
                                            const ctr_fdk_options *o, int force,
                                            ctr_tune_report *r) {
  ctr_status st = CTR_OK;
  ctr__fdk_filter f;
  ctr_geometry *gx = NULL;
  CTR_CHECK(ctr__fdk_filter_init(ctx, g, o, &f));
  CTR_CHECK_GOTO(st, ctr__fdk_filter_extend(o, &f));
  if (f.nu_ext != g->nu) CTR_CHECK_GOTO(st, ctr__geometry_columns(g, f.pad_lo, f.nu_ext, &gx));
  {
    const ctr_geometry *gb = gx ? gx : g;
    ctr__bp_config req;
    memset(&req, 0, sizeof req);
    /* the run's N': its first batch (plan.c: the default, at most the views) */
    int64_t nb = CTR__CUDA_DEFAULT_BATCH < CTR__BP_MAX_VIEWS ? CTR__CUDA_DEFAULT_BATCH
                                                             : CTR__BP_MAX_VIEWS;
    if (nb > g->nviews) nb = g->nviews;
    req.views_per_launch = (int)nb;
    req = ctr__bp_config_tuned(ctx, &req);
    ctr__bp_config cfg = ctr__bp_config_resolve(gb, o, &req);
    CTR_CHECK_GOTO(st, ctr__bp_tune(ctx, device, gb, o, &cfg, 0, 0, force, r));
    if (r && !r->params[0] && !r->note[0])
      snprintf(r->note, sizeof r->note, "not tuned: %s", ctr__tuning(ctx)->tune < 0
                   ? "ctr_tuning.tune is off"
                   : cfg.variant == CTR__BP_PRECISE_GENERAL
                   ? "the general kernel chooses its shape per launch"
                   : "bp_slices and bp_block are set by hand, or the trial run does not fit "
                     "in the GPU budget");
  }
cleanup:
  ctr_geometry_free(gx);
  ctr__fdk_filter_free(&f);
  return st;
}
