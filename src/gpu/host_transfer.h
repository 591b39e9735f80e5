/* Host <-> GPU transfers of memory the library did not allocate: the one
 * host-transfer layer of every modality (docs/design.md, "Host transfers").
 *
 * A caller's host buffer is pageable unless proven otherwise (a numpy array,
 * a malloc'ed buffer, a file read into memory). The CUDA driver copies
 * pageable memory through its own small pinned buffers on one thread, at a
 * fraction of the link's rate (bench_pcie, bench/NOTES.md: "Host transfer
 * floor"). This layer moves it on one of four paths, chosen per call:
 *
 *   direct      the buffer is pinned (ctr_host_alloc, registered by its owner)
 *               or is device memory: one cudaMemcpyAsync;
 *   staged      the buffer is cut into chunks of the slot size; the host
 *               threads copy chunk k into one of a ring of pinned slots while
 *               the DMA engine moves chunk k - 1 (host to device) or k + 1
 *               (device to host). Slots are small enough to stay in the CPU's
 *               last-level cache, so the host copy writes cache lines the DMA
 *               then reads, not DRAM. The slots are the context's, kept
 *               between runs (gpu_buffers.h);
 *   registered  the buffer's pages are pinned in place (cudaHostRegister)
 *               for the transfer and unpinned before the call returns: worth
 *               it when the same bytes cross several times (the cost model in
 *               ctr__xfer_choose);
 *   driver      the CUDA driver's own pageable copy (cudaMemcpyAsync as is):
 *               small transfers, where setting up the others costs more.
 *
 * ctr_tuning.host_transfer forces a path (tests run every path and compare
 * bytes); every path gives the same bytes. No path leaves a caller's buffer
 * registered, error paths included: a buffer registered by this layer is
 * unregistered before the call returns.
 *
 * Threads: a ctr__xfer is used by one thread at a time (its slots and
 * events are its own); the host copy runs on ctr_tuning.host_threads threads
 * (0: the context's) through OpenMP, forked from the calling thread.
 * Several ctr__xfer of one context (one per GPU worker) may run at once. */
#ifndef CTR_HOST_TRANSFER_H
#define CTR_HOST_TRANSFER_H

#include <cuda_runtime.h>

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ctr__xfer_path {
  CTR__XFER_DIRECT = 0,
  CTR__XFER_STAGED = 1,
  CTR__XFER_REGISTERED = 2,
  CTR__XFER_DRIVER = 3,
  CTR__XFER_PATHS = 4
} ctr__xfer_path;

/* "direct", "staged", "registered", "driver". */
const char *ctr__xfer_path_name(ctr__xfer_path p);

/* What the transfers of one ctr__xfer moved, per direction (0: host to
 * device, 1: device to host) and path (ctr__xfer_log). */
typedef struct ctr__xfer_stats {
  double bytes[2][CTR__XFER_PATHS];
  double seconds[2][CTR__XFER_PATHS]; /* host time inside the calls (a direct copy's: its
                                         enqueue, or its wait when asked to) */
} ctr__xfer_stats;

#define CTR__XFER_SLOTS 4

typedef struct ctr__xfer {
  const ctr_context *ctx;
  int device;               /* the GPU current at init */
  int threads;              /* host copy threads */
  int forced;               /* ctr_tuning.host_transfer: 0 = per call, else the ctr__xfer_path
                               (1 staged, 2 registered, 3 driver) */
  size_t slot_bytes;        /* staging chunk */
  int nslots, next;
  void *slot[CTR__XFER_SLOTS];     /* pinned, the context's (allocated at first need) */
  cudaEvent_t ready[CTR__XFER_SLOTS]; /* the slot's last DMA done */
  ctr__xfer_stats stats;
} ctr__xfer;

/* Sets x up for the current GPU and ctx's tuning; allocates nothing yet.
 * ctx may be NULL (defaults; slots then freed at ctr__xfer_free). */
ctr_status ctr__xfer_init(ctr__xfer *x, const ctr_context *ctx);
/* Waits for x's DMAs in flight, gives the slots back to the context, frees
 * the events. x may be zeroed or half set up. */
void ctr__xfer_free(ctr__xfer *x);

/* 1 when p needs no staging: pinned host memory (ours, or registered by
 * its owner) or GPU memory (device or managed: a caller's GPU array). */
int ctr__xfer_direct(const void *p);

/* The path a transfer of `bytes` from or to host memory `host` takes when it
 * crosses `uses` times before the caller changes it (1: once): direct when
 * host is pinned or device memory; else the cheapest by the cost model (its
 * rates in docs/design.md), unless ctr_tuning.host_transfer forces one. */
ctr__xfer_path ctr__xfer_choose(const ctr__xfer *x, const void *host, size_t bytes, int uses);

/* Host to device: `bytes` from host `src` into device `dst`, in the order of
 * `stream` (after the work queued on it before). Returns when `src` may be
 * changed or freed: its bytes are in device memory or in x's slots (the DMAs
 * of the last slots may still run: later work on `stream` sees them done).
 * A direct copy from pinned memory returns at once unless `wait`: the caller
 * then keeps `src` unchanged until `stream` reaches this point. *path (may
 * be NULL) gets the path that ran. */
ctr_status ctr__xfer_h2d(ctr__xfer *x, void *dst, const void *src, size_t bytes,
                         cudaStream_t stream, int wait, ctr__xfer_path *path);
/* The same with the path given (ctr__xfer_choose's answer for several uses). */
ctr_status ctr__xfer_h2d_on(ctr__xfer *x, ctr__xfer_path path, void *dst, const void *src,
                            size_t bytes, cudaStream_t stream, int wait);

/* A strided host source: `height` rows of `width` bytes, `spitch` bytes
 * apart from `src`, into device `dst` rows `dpitch` apart; otherwise as
 * ctr__xfer_h2d (the staged path gathers whole rows into its slots; a row
 * longer than a slot goes alone). */
ctr_status ctr__xfer_h2d_2d(ctr__xfer *x, void *dst, size_t dpitch, const void *src, size_t spitch,
                            size_t width, size_t height, cudaStream_t stream, int wait,
                            ctr__xfer_path *path);

/* Device to host: `bytes` from device `src` into host `dst`, after the work
 * queued on `stream`. Returns when `dst` holds them, except a direct copy
 * into pinned memory without `wait` (then when `stream` reaches it). */
ctr_status ctr__xfer_d2h(ctr__xfer *x, void *dst, const void *src, size_t bytes,
                         cudaStream_t stream, int wait, ctr__xfer_path *path);

/* Logs (ctr_log, debug level: the CLI shows it with --timings) what x moved
 * on which path: "WHO: host transfers: up 2.48 GB staged (45.0 ms in the
 * calls); down 0.54 GB staged (14.1 ms)". Nothing when x moved nothing. */
void ctr__xfer_log(const ctr__xfer *x, const char *who);

/* The host copy of the staged path: `bytes` from src to dst on `threads`
 * threads, one piece each (64 KiB multiples, at least 256 KiB). */
void ctr__host_copy(void *dst, const void *src, size_t bytes, int threads);

/* Pinned host memory kept by the context between runs (the staging slots
 * and the engines' own host buffers): at least `bytes`, from the context's
 * cache or cudaMallocHost. ctx NULL: not kept. CTR_E_OUT_OF_MEMORY naming
 * `what` when it cannot be had. */
ctr_status ctr__pinned_get(const ctr_context *ctx, size_t bytes, const char *what, void **out);
/* Gives it back (kept for the next run, or freed). */
void ctr__pinned_put(const ctr_context *ctx, void *p, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
