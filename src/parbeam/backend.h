/* The backend seam of parallel-beam reconstruction and the synchrotron
 * corrections, in the manner of conebeam/engine.h. A backend (CPU, CUDA) is
 * a ctr__par_backend found by device kind (registry backends.c; the table
 * in cuda/ has no operations in a build without CUDA); the array functions
 * (fbp.c, corrections.c) check their arguments, resolve the options and
 * call the context's backend.
 *
 * Memory: arrays are host memory on the CPU; the CUDA backend takes host
 * or GPU memory where an operation says so (copied with cudaMemcpyDefault
 * or read in place), runs on the context's GPUs and returns when its
 * results are complete in the caller's arrays. Threading: the operations
 * keep no state between calls (a GPU run owns its buffers and angle
 * tables; FFTW plans are made under the library's plan lock): any thread
 * may call them, several at once on one context (tests/test_threads.c and
 * test_gpu_threads: ctr_fbp from four threads), on different contexts too
 * (tests/test_gpu_fbp_angles.c). */
#ifndef CTR_PARBEAM_BACKEND_H
#define CTR_PARBEAM_BACKEND_H

#include "parbeam/sync.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device's sum of the live FBP's full volume (the acc_* operations). */
typedef struct ctr__fbp_acc ctr__fbp_acc;

typedef struct ctr__par_backend {
  ctr__backend_head head; /* name, device kind, built (core/internal.h) */
  /* ctr_fbp_backproject after its checks (o resolved): nslices filtered
   * sinograms (nbins x nangles each) into slices (nx x ny each); on CUDA
   * host or GPU memory. Bad slice values are replaced by 0, *bad gets their
   * count. */
  ctr_status (*backproject)(const ctr_context *ctx, const ctr_parallel_geometry *g,
                            const ctr_fbp_options *o, int64_t nslices, const float *sino,
                            float *slices, int64_t *bad);
  /* Optional (NULL: fbp.c's host driver, filtering chunks on the host and
   * backprojecting them with `backproject`): ctr_fbp after its checks, the
   * data policy on the backend: bad[0] gets the sinogram values replaced
   * by 0, bad[1] the slice values. sino and slices as ctr_fbp takes them
   * (the caller has waited for their producers). */
  ctr_status (*sinograms)(const ctr_context *ctx, const ctr_parallel_geometry *g,
                          const ctr_fbp_options *o, const float *sino, int64_t nslices,
                          float *slices, int64_t bad[2]);
  /* Optional (NULL: fbp.c's host driver, flat-fielding chunks of rows on the
   * host and reconstructing them with ctr_fbp): ctr_fbp_projections after
   * its checks and the calibration's data policy; bad[0] gets the input
   * values replaced by 0 (-log values of infinite projections), bad[1] the
   * slice values. */
  ctr_status (*projections)(const ctr_context *ctx, const ctr_parallel_geometry *g,
                            const ctr_fbp_options *o, const void *proj, ctr_dtype dtype,
                            int64_t nrows, const float *flat, const float *dark, int64_t row0,
                            int64_t nslices, float *slices, int64_t bad[2]);
  /* The corrections' array functions after their checks (c resolved;
   * sinograms nb x na x ns, images w x h x n, host memory, in place):
   * dezinger (*replaced gets the values replaced), stripe removal and
   * Paganin's filter (margin: ctr_paganin_margin of c and pixel_mm). */
  ctr_status (*dezinger)(const ctr_context *ctx, double threshold, int size, int64_t nb,
                         int64_t na, int64_t ns, float *sino, int64_t *replaced);
  ctr_status (*stripes)(const ctr_context *ctx, const ctr_corrections *c, int64_t nb, int64_t na,
                        int64_t ns, float *sino);
  ctr_status (*paganin)(const ctr_context *ctx, const ctr_corrections *c, double pixel_mm,
                        int64_t margin, int64_t w, int64_t h, int64_t n, float *img);
  /* Optional (NULL: a tilted geometry is CTR_E_UNSUPPORTED on this backend,
   * naming ctr_parallel_params.tilt_deg): ctr_fbp_backproject of a tilted
   * geometry (laminography) after its checks: filtered views nbins x
   * nangles x nrows (host memory) into nz slices (host memory), bad slice
   * values replaced by 0 and counted in *bad. */
  ctr_status (*lamino_backproject)(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                   const ctr_fbp_options *o, int64_t nz, const float *sino,
                                   float *slices, int64_t *bad);
  /* Optional (NULL: the live FBP sums its full volume on the host, with the
   * CPU's backprojector, or after the scan): the full volume of the live FBP
   * (fbp_live.c) summed on the device as the projections arrive, with the
   * bytes ctr_fbp_projections gives for the finished scan as the streamed
   * run calls it (docs/synchrotron.md, "The full volume during the
   * acquisition"). acc_open: g the run's output geometry (every angle of the
   * scan), o its resolved options, rows [row0, row0 + nslices) of W x H
   * projections of dtype in the streamed run's bands of band_rows rows,
   * flat (W x H) and dark (may be NULL), up to maxk projections a call;
   * CTR_E_UNSUPPORTED or CTR_E_DEVICE_OUT_OF_MEMORY (naming the budget) when
   * it cannot. acc_add: the next k projections in angle order (host memory,
   * whole frames one after the other; read on return, the work may go on);
   * device_s (may be NULL) gets the device's seconds on the last batch whose
   * work has completed since the previous call, its upload and its kernels
   * (timed with events, no wait; 0 and 0 when none has).
   * acc_get: waits for the sum; slices [s0, s0 + ns) of the volume (each ny x nx)
   * into dst (host memory, pageable or not; ns 0: none, dst may be NULL) and, when
   * bad_input is not NULL, the input values the data policy replaced. The final run
   * calls it band by band from its compute thread while its writer writes the band
   * before (one thread at a time). acc_free: waits and frees. */
  ctr_status (*acc_open)(const ctr_context *ctx, const ctr_parallel_geometry *g,
                         const ctr_fbp_options *o, ctr_dtype dtype, int64_t W, int64_t H,
                         int64_t row0, int64_t nslices, int64_t band_rows, const float *flat,
                         const float *dark, int64_t maxk, ctr__fbp_acc **out);
  ctr_status (*acc_add)(ctr__fbp_acc *a, const void *proj, int64_t k, double device_s[2]);
  ctr_status (*acc_get)(ctr__fbp_acc *a, int64_t s0, int64_t ns, float *dst,
                        int64_t *bad_input);
  void (*acc_free)(ctr__fbp_acc *a);
} ctr__par_backend;

/* The backends of this library, defined by each backend's folder. */
extern const ctr__par_backend ctr__par_backend_cpu;
extern const ctr__par_backend ctr__par_backend_cuda;

/* The backend of a context's resolved device kind (a NULL context: the
 * CPU); CTR_E_UNSUPPORTED when the build lacks it. */
ctr_status ctr__par_backend_of(const ctr_context *ctx, const ctr__par_backend **out);

#ifdef __cplusplus
}
#endif
#endif
