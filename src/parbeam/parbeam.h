/* Parallel-beam internals shared by the CPU and CUDA backends: the resolved
 * geometry, per-angle constants, and the backends' entry points. */
#ifndef CTR_PARBEAM_H
#define CTR_PARBEAM_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ctr_parallel_geometry {
  ctr_parallel_params p; /* resolved: axis, nx, ny, voxel, pixel_size set; arrays below */
  double *angles_deg;    /* nangles */
  double *axis_shift;    /* nangles (zeros if none given) */
  double *weight;        /* nangles: angular weight (radians) / pixel_size */
};

/* Per angle: t = x * c + y * s + t0 with x, y the pixel's position relative
 * to pixel (0, 0) in bins: c = cos * voxel, s = sin * voxel and t0 the bin of
 * pixel (0, 0). The CPU backprojector and the reference use them in double,
 * the GPU kernels in float (positions relative to a block origin taken in
 * double). */
typedef struct ctr__par_angle {
  double c, s, t0, w;
} ctr__par_angle;

/* Fills n entries for angles [a0, a0 + n). */
void ctr__par_angles(const ctr_parallel_geometry *g, int64_t a0, int64_t n, ctr__par_angle *out);

/* CPU backprojection of nslices filtered sinograms into slices (float). */
void ctr__fbp_bp_cpu(const ctr_context *ctx, const ctr_parallel_geometry *g, ctr_fbp_interp interp,
                     int64_t nslices, const float *sino, float *slices);

/* Flat / dark pixels that do not calibrate (non-finite, flat <= dark) among
 * n; dark may be NULL (0). Their sinogram values are 0 on every backend. */
int64_t ctr__flat_bad_pixels(const float *flat, const float *dark, int64_t n);

/* The GPU FBP pipeline's memory model (fbp_gpu_memory.c), a pure function of
 * sizes. Slices a chunk holds at most (two chunks' buffer sets alternate on
 * two streams per GPU) and angles a texture launch holds at most. */
#define CTR__FBP_GPU_CHUNK 16
#define CTR__FBP_TEX_LAYERS 2048
/* Device bytes the pipeline allocates on one GPU for params p (resolved: nx,
 * ny set), input elements of raw_elem bytes (0: sinograms read in place),
 * calib_rows rows of flat and dark (0: sinograms), chunks of `chunk` slices. */
uint64_t ctr__fbp_gpu_bytes(const ctr_parallel_params *p, size_t raw_elem, int64_t calib_rows,
                            int64_t chunk);
/* Slices per chunk within `budget` bytes per GPU: CTR__FBP_GPU_CHUNK, or fewer
 * (at least 1; never more than nslices). `what` names a budget the caller
 * gave ("ctr_fbp_stream_options.gpu_budget"): one that cannot hold chunks of
 * one slice is CTR_E_DEVICE_OUT_OF_MEMORY naming it, the size and what the
 * smallest working set needs. what NULL (a detected budget): never refused,
 * the allocation has the last word. */
ctr_status ctr__fbp_gpu_chunk(const ctr_parallel_params *p, size_t raw_elem, int64_t calib_rows,
                              int64_t nslices, uint64_t budget, const char *what,
                              int64_t *chunk);

#if defined(CTR_HAVE_CUDA) && CTR_HAVE_CUDA
/* GPU backprojection with the named kernel (NULL: default); sino and
 * slices in host or GPU memory (cudaMemcpyDefault). bad not NULL: the data
 * policy on the device, bad slice values replaced by 0 and counted there. */
ctr_status ctr__fbp_bp_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                            const ctr_fbp_options *o, int64_t nslices, const float *sino,
                            float *slices, int64_t *bad);
/* ctr_fbp_projections on the GPU (arguments checked by the caller). The
 * data policy runs on the device: bad[0] counts input values replaced by 0
 * (-log values of infinite projections), bad[1] slice values replaced by 0. */
ctr_status ctr__fbp_projections_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                     const ctr_fbp_options *o, const void *proj, ctr_dtype dtype,
                                     int64_t nrows, const float *flat, const float *dark,
                                     int64_t row0, int64_t nslices, float *slices, int64_t bad[2]);
/* ctr_fbp on the GPU: sinograms filtered with cuFFT and backprojected on
 * the device, chunk by chunk on two streams; bad[0] counts the sinogram
 * values replaced by 0, bad[1] the slice values. sino and slices may be
 * host or GPU memory (read in place on the GPU that runs a chunk, else
 * copied with cudaMemcpyDefault); the caller has waited for their
 * producers. */
ctr_status ctr__fbp_sinograms_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                   const ctr_fbp_options *o, const float *sino, int64_t nslices,
                                   float *slices, int64_t bad[2]);
/* Benchmark: the same with the sinograms resident on the device, `repeats`
 * timed passes after a warm-up; the median pass in *median_ms; slices (may
 * be NULL) get the result. */
ctr_status ctr__fbp_bench_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                               const ctr_fbp_options *o, int64_t nslices, const float *sino,
                               float *slices, int repeats, double *median_ms);
#endif

#ifdef __cplusplus
}
#endif
#endif
