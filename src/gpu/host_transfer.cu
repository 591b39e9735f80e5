/* The host-transfer layer (host_transfer.h). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpu/cuda_util.h"
#include "gpu/gpu_buffers.h"
#include "gpu/host_transfer.h"

/* Below this a transfer goes through the driver: a staged or registered
 * one's set-up (slots, events, a fork of the copy threads) costs more than
 * the driver's own copy of it. */
#define DRIVER_MAX ((size_t)1 << 20)

/* The cost model of ctr__xfer_choose, seconds per GB, from bench_pcie on
 * the H200 host (bench/NOTES.md, "Host transfer floor", 2026-12-02): a
 * staged GB costs its DMA (the host copy, 68 GB/s on 16 threads, runs under
 * the DMA's 55 GB/s); a registered one the registration (28 GB/s) and its
 * undoing (72 GB/s) once, then the pinned DMA per use. Staging wins for any
 * number of uses on that machine; registration is kept for hosts whose
 * memory copies slower than their link. */
#define STAGED_S_PER_GB (1.0 / 54.0)
#define REGISTER_S_PER_GB (1.0 / 27.6)
#define UNREGISTER_S_PER_GB (1.0 / 72.0)
#define DMA_S_PER_GB (1.0 / 55.0)

/* Default slot: the fastest of bench_pcie's layer stage on the H200 host
 * (1, 4, 16, 64 MiB: 20, 42, 54, 36 GB/s up; bench/NOTES.md): large enough
 * that a slot's fixed costs (an event wait, a fork of the copy threads, a
 * DMA launch) are small beside its copy, small enough that the ring of four
 * stays in the last-level cache. */
#define SLOT_DEFAULT ((size_t)16 << 20)

const char *ctr__xfer_path_name(ctr__xfer_path p) {
  static const char *const names[] = {"direct", "staged", "registered", "driver"};
  return p >= 0 && p < CTR__XFER_PATHS ? names[p] : "?";
}

/* ---- Pinned host memory kept by the context ---------------------------------- */

extern "C" ctr_status ctr__pinned_get(const ctr_context *ctx, size_t bytes, const char *what,
                                      void **out) {
  if (ctr__gpu_buffer_take(ctx, CTR__PINNED_HOST, bytes, out)) return CTR_OK;
  cudaError_t e = cudaMallocHost(out, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *out = NULL;
    char b[32];
    return ctr__error_set(CTR_E_OUT_OF_MEMORY, "%s: cudaMallocHost of %s: %s",
                          what ? what : "pinned host buffer",
                          ctr__format_bytes((double)bytes, b, sizeof b), cudaGetErrorString(e));
  }
  return CTR_OK;
}

extern "C" void ctr__pinned_put(const ctr_context *ctx, void *p, size_t bytes) {
  if (p && !ctr__gpu_buffer_keep(ctx, CTR__PINNED_HOST, p, bytes)) cudaFreeHost(p);
}

/* ---- The host copy ------------------------------------------------------------ */

/* One piece per thread, at least 256 KiB, in 64 KiB multiples (a single
 * 5 MB view in 4 MiB pieces kept all but two threads idle). */
extern "C" void ctr__host_copy(void *dst, const void *src, size_t bytes, int threads) {
  const size_t quantum = (size_t)64 << 10, per = bytes / (size_t)(threads > 1 ? threads : 1);
  size_t chunk = (per + quantum - 1) / quantum * quantum;
  if (chunk < ((size_t)256 << 10)) chunk = (size_t)256 << 10;
  const int64_t n = (int64_t)((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static) num_threads(threads) if (n > 1)
  for (int64_t i = 0; i < n; i++) {
    const size_t off = (size_t)i * chunk, len = bytes - off < chunk ? bytes - off : chunk;
    memcpy((char *)dst + off, (const char *)src + off, len);
  }
}

/* ---- Set-up ------------------------------------------------------------------- */

extern "C" ctr_status ctr__xfer_init(ctr__xfer *x, const ctr_context *ctx) {
  memset(x, 0, sizeof *x);
  x->ctx = ctx;
  if (cudaGetDevice(&x->device) != cudaSuccess) {
    cudaGetLastError();
    x->device = 0;
  }
  const ctr_tuning *t = ctx ? &ctx->tuning : NULL;
  x->threads = t && t->host_threads > 0 ? t->host_threads : ctr__num_threads(ctx);
  x->forced = t && t->host_transfer > 0 ? t->host_transfer : 0;
  x->slot_bytes = t && t->host_stage_kib > 0 ? (size_t)t->host_stage_kib << 10 : SLOT_DEFAULT;
  x->nslots = CTR__XFER_SLOTS;
  return CTR_OK;
}

/* The slots and their events, at first need. */
static ctr_status slots_ready(ctr__xfer *x) {
  ctr_status st = CTR_OK;
  for (int i = 0; i < x->nslots; i++) {
    if (!x->ready[i]) CU(cudaEventCreateWithFlags(&x->ready[i], cudaEventDisableTiming));
    if (!x->slot[i])
      CTR_CHECK_GOTO(st, ctr__pinned_get(x->ctx, x->slot_bytes, "host transfer staging", &x->slot[i]));
  }
cleanup:
  return st;
}

extern "C" void ctr__xfer_free(ctr__xfer *x) {
  if (!x) return;
  for (int i = 0; i < CTR__XFER_SLOTS; i++) {
    if (x->ready[i]) {
      cudaEventSynchronize(x->ready[i]); /* its slot's DMA is done before another run takes it */
      cudaEventDestroy(x->ready[i]);
      x->ready[i] = NULL;
    }
    ctr__pinned_put(x->ctx, x->slot[i], x->slot_bytes);
    x->slot[i] = NULL;
  }
  cudaGetLastError();
}

/* ---- The choice --------------------------------------------------------------- */

extern "C" int ctr__xfer_direct(const void *p) {
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return a.type == cudaMemoryTypeHost || a.type == cudaMemoryTypeDevice ||
         a.type == cudaMemoryTypeManaged;
}

extern "C" ctr__xfer_path ctr__xfer_choose(const ctr__xfer *x, const void *host, size_t bytes,
                                           int uses) {
  if (ctr__xfer_direct(host)) return CTR__XFER_DIRECT;
  if (x->forced) return (ctr__xfer_path)x->forced; /* ctr_tuning.host_transfer: the path's number */
  if (bytes <= DRIVER_MAX) return CTR__XFER_DRIVER;
  const double gb = (double)bytes / 1e9, n = uses > 1 ? uses : 1;
  const double staged = n * gb * STAGED_S_PER_GB;
  const double registered = gb * (REGISTER_S_PER_GB + UNREGISTER_S_PER_GB) + n * gb * DMA_S_PER_GB;
  return registered < staged ? CTR__XFER_REGISTERED : CTR__XFER_STAGED;
}

/* ---- The paths ---------------------------------------------------------------- */

static void account(ctr__xfer *x, int down, ctr__xfer_path p, size_t bytes, double t0) {
  x->stats.bytes[down][p] += (double)bytes;
  x->stats.seconds[down][p] += ctr__now_s() - t0;
}

extern "C" void ctr__xfer_log(const ctr__xfer *x, const char *who) {
  char text[512];
  size_t len = 0;
  for (int d = 0; d < 2; d++)
    for (int p = 0; p < CTR__XFER_PATHS; p++) {
      if (x->stats.bytes[d][p] <= 0 || len >= sizeof text) continue;
      char b[32];
      len += (size_t)snprintf(text + len, sizeof text - len, "%s%s %s %s (%.1f ms in the calls)",
                              len ? "; " : "", d ? "down" : "up",
                              ctr__format_bytes(x->stats.bytes[d][p], b, sizeof b),
                              ctr__xfer_path_name((ctr__xfer_path)p), 1e3 * x->stats.seconds[d][p]);
    }
  if (len) ctr__log(x->ctx, CTR_LOG_DEBUG, "%s: host transfers: %s", who, text);
}

static ctr_status direct(void *dst, const void *src, size_t bytes, cudaStream_t s, int wait) {
  ctr_status st = CTR_OK;
  CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  if (wait) CU(cudaStreamSynchronize(s));
cleanup:
  return st;
}

/* The page-aligned range around [p, p + bytes). */
static void page_range(const void *p, size_t bytes, char **base, size_t *len) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const uintptr_t a = (uintptr_t)p / page * page;
  const uintptr_t b = ((uintptr_t)p + bytes + page - 1) / page * page;
  *base = (char *)a;
  *len = (size_t)(b - a);
}

/* Pins the caller's pages for one copy and unpins them, whatever happens.
 * Returns CTR_E_UNSUPPORTED (error state clear) when the pages cannot be
 * registered (read-only or special mappings): the caller stages instead. */
static ctr_status registered(void *dst, const void *src, size_t bytes, cudaStream_t s,
                             int to_device, const void *host) {
  char *base;
  size_t len;
  page_range(host, bytes, &base, &len);
  cudaError_t e = cudaHostRegister(base, len, cudaHostRegisterDefault);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return CTR_E_UNSUPPORTED;
  }
  ctr_status st = CTR_OK;
  CU(cudaMemcpyAsync(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s));
  CU(cudaStreamSynchronize(s));
cleanup:
  e = cudaHostUnregister(base);
  if (e != cudaSuccess && st == CTR_OK) st = ctr__cuda_status(e, "cudaHostUnregister");
  cudaGetLastError();
  return st;
}

static ctr_status staged_h2d(ctr__xfer *x, char *dst, const char *src, size_t bytes,
                             cudaStream_t s) {
  ctr_status st = CTR_OK;
  CTR_CHECK(slots_ready(x));
  for (size_t o = 0; o < bytes; o += x->slot_bytes) {
    const size_t l = bytes - o < x->slot_bytes ? bytes - o : x->slot_bytes;
    const int k = x->next;
    x->next = (x->next + 1) % x->nslots;
    CU(cudaEventSynchronize(x->ready[k])); /* the slot's previous DMA is done */
    ctr__host_copy(x->slot[k], src + o, l, x->threads);
    CU(cudaMemcpyAsync(dst + o, x->slot[k], l, cudaMemcpyHostToDevice, s));
    CU(cudaEventRecord(x->ready[k], s));
  }
cleanup:
  return st;
}

/* DMAs run nslots - 1 chunks ahead of the host copy. */
static ctr_status staged_d2h(ctr__xfer *x, char *dst, const char *src, size_t bytes,
                             cudaStream_t s) {
  ctr_status st = CTR_OK;
  CTR_CHECK(slots_ready(x));
  const size_t S = x->slot_bytes;
  const int64_t n = (int64_t)((bytes + S - 1) / S);
  int64_t issued = 0;
  for (int64_t k = 0; k < n; k++) {
    for (; issued < n && issued < k + x->nslots; issued++) {
      const int j = (int)(issued % x->nslots);
      const size_t o = (size_t)issued * S, l = bytes - o < S ? bytes - o : S;
      CU(cudaEventSynchronize(x->ready[j])); /* a slot's DMA of an earlier call */
      CU(cudaMemcpyAsync(x->slot[j], src + o, l, cudaMemcpyDeviceToHost, s));
      CU(cudaEventRecord(x->ready[j], s));
    }
    const int j = (int)(k % x->nslots);
    const size_t o = (size_t)k * S, l = bytes - o < S ? bytes - o : S;
    CU(cudaEventSynchronize(x->ready[j]));
    ctr__host_copy(dst + o, x->slot[j], l, x->threads);
  }
  x->next = 0;
cleanup:
  return st;
}

/* One transfer on `path` in direction `down` (0: host to device); a
 * registration the pages refuse falls back to staging. *path gets the path
 * that ran. */
static ctr_status transfer(ctr__xfer *x, int down, ctr__xfer_path *path, void *dst,
                           const void *src, size_t bytes, cudaStream_t stream, int wait) {
  if (bytes == 0) return CTR_OK;
  const double t0 = ctr__now_s();
  ctr_status st = CTR_OK;
  if (*path == CTR__XFER_REGISTERED) {
    st = registered(dst, src, bytes, stream, !down, down ? dst : src);
    if (st == CTR_E_UNSUPPORTED) *path = CTR__XFER_STAGED;
  }
  if (*path == CTR__XFER_STAGED)
    st = down ? staged_d2h(x, (char *)dst, (const char *)src, bytes, stream)
              : staged_h2d(x, (char *)dst, (const char *)src, bytes, stream);
  else if (*path == CTR__XFER_DIRECT || *path == CTR__XFER_DRIVER)
    st = direct(dst, src, bytes, stream, wait || *path == CTR__XFER_DRIVER);
  if (st == CTR_OK) account(x, down, *path, bytes, t0);
  return st;
}

extern "C" ctr_status ctr__xfer_h2d_on(ctr__xfer *x, ctr__xfer_path path, void *dst,
                                       const void *src, size_t bytes, cudaStream_t stream,
                                       int wait) {
  return transfer(x, 0, &path, dst, src, bytes, stream, wait);
}

extern "C" ctr_status ctr__xfer_h2d(ctr__xfer *x, void *dst, const void *src, size_t bytes,
                                    cudaStream_t stream, int wait, ctr__xfer_path *path) {
  ctr__xfer_path p = ctr__xfer_choose(x, src, bytes, 1);
  const ctr_status st = transfer(x, 0, &p, dst, src, bytes, stream, wait);
  if (path) *path = p;
  return st;
}

/* Rows gathered into the slots, as many whole rows as a slot holds (at
 * least one: a slot smaller than a row is grown to it). */
static ctr_status staged_h2d_2d(ctr__xfer *x, char *dst, size_t dpitch, const char *src,
                                size_t spitch, size_t width, size_t height, cudaStream_t s) {
  ctr_status st = CTR_OK;
  if (width > x->slot_bytes) {
    for (int i = 0; i < x->nslots; i++) {
      if (x->ready[i]) CU(cudaEventSynchronize(x->ready[i]));
      ctr__pinned_put(x->ctx, x->slot[i], x->slot_bytes);
      x->slot[i] = NULL;
    }
    x->slot_bytes = width;
  }
  CTR_CHECK(slots_ready(x));
  {
    const size_t rows = x->slot_bytes / width;
    for (size_t r0 = 0; r0 < height; r0 += rows) {
      const int64_t m = (int64_t)(height - r0 < rows ? height - r0 : rows);
      const int k = x->next;
      x->next = (x->next + 1) % x->nslots;
      CU(cudaEventSynchronize(x->ready[k]));
      char *slot = (char *)x->slot[k];
      const char *from = src + r0 * spitch;
      if (m >= x->threads || width * (size_t)m < ((size_t)1 << 20)) {
#pragma omp parallel for schedule(static) num_threads(x->threads) if (m > 1)
        for (int64_t r = 0; r < m; r++) memcpy(slot + (size_t)r * width, from + (size_t)r * spitch, width);
      } else {
        for (int64_t r = 0; r < m; r++)
          ctr__host_copy(slot + (size_t)r * width, from + (size_t)r * spitch, width, x->threads);
      }
      CU(cudaMemcpy2DAsync(dst + r0 * dpitch, dpitch, slot, width, width, (size_t)m,
                           cudaMemcpyHostToDevice, s));
      CU(cudaEventRecord(x->ready[k], s));
    }
  }
cleanup:
  return st;
}

extern "C" ctr_status ctr__xfer_h2d_2d(ctr__xfer *x, void *dst, size_t dpitch, const void *src,
                                       size_t spitch, size_t width, size_t height,
                                       cudaStream_t stream, int wait, ctr__xfer_path *path) {
  ctr__xfer_path p = ctr__xfer_choose(x, src, width * height, 1);
  if (p == CTR__XFER_REGISTERED) p = CTR__XFER_STAGED; /* the rows' span may be far larger */
  if (path) *path = p;
  if (width == 0 || height == 0) return CTR_OK;
  const double t0 = ctr__now_s();
  ctr_status st = CTR_OK;
  if (p == CTR__XFER_STAGED) {
    CTR_CHECK(staged_h2d_2d(x, (char *)dst, dpitch, (const char *)src, spitch, width, height, stream));
  } else {
    CU(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyHostToDevice, stream));
    if (wait || p == CTR__XFER_DRIVER) CU(cudaStreamSynchronize(stream));
  }
  account(x, 0, p, width * height, t0);
cleanup:
  return st;
}

extern "C" ctr_status ctr__xfer_d2h(ctr__xfer *x, void *dst, const void *src, size_t bytes,
                                    cudaStream_t stream, int wait, ctr__xfer_path *path) {
  ctr__xfer_path p = ctr__xfer_choose(x, dst, bytes, 1);
  const ctr_status st = transfer(x, 1, &p, dst, src, bytes, stream, wait);
  if (path) *path = p;
  return st;
}
