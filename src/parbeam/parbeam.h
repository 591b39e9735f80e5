/* Parallel-beam internals shared by the CPU and CUDA backends: the resolved
 * geometry, per-angle constants and the CPU backprojector (the backends are
 * reached through their tables, backend.h; the CUDA entry points are
 * declared in cuda/parbeam_cuda.h). */
#ifndef CTR_PARBEAM_H
#define CTR_PARBEAM_H

#include "core/internal.h"
#include "parbeam/lamino_math.h"

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

/* Laminography (ctr_parallel_params.tilt_deg != 0; docs/geometry.md): 1
 * when the geometry's axis is tilted. */
int ctr__par_tilted(const ctr_parallel_geometry *g);
/* The frame of view angle theta under a tilt (degrees), world mm, unit
 * vectors: eu the detector's columns (x cos + y sin), ev its rows, d the
 * rays (d = ev x eu). tilt 0: ev = z, d = (-sin, cos, 0). The one formula of
 * the phantom's rays, the backprojector and the iterative projector. */
void ctr__lamino_axes(double theta_deg, double tilt_deg, double eu[3], double ev[3], double d[3]);
/* The views' constants (ctr__lamino_view: parbeam/lamino_math.h). */
void ctr__lamino_views(const ctr_parallel_geometry *g, int64_t nz, int64_t a0, int64_t n,
                       ctr__lamino_view *out);
/* CPU backprojection of filtered tilted views (nbins x nangles x nrows)
 * into nz slices (float; positions in double), and its double reference. */
ctr_status ctr__lamino_bp_cpu(const ctr_context *ctx, const ctr_parallel_geometry *g,
                              ctr_fbp_interp interp, int64_t nz, const float *sino,
                              float *slices);
ctr_status ctr__lamino_bp_reference(const ctr_parallel_geometry *g, ctr_fbp_interp interp,
                                    int64_t nz, const float *sino, double *slices);

/* CPU backprojection of nslices filtered sinograms into slices (float). */
void ctr__fbp_bp_cpu(const ctr_context *ctx, const ctr_parallel_geometry *g, ctr_fbp_interp interp,
                     int64_t nslices, const float *sino, float *slices);
/* The same sums continued: the slices hold the sums of the geometry's angles
 * [0, a0), and angles [a0, a0 + na) of sino (nslices x na x nbins) are added,
 * each pixel's additions in the order ctr__fbp_bp_cpu makes them, so that
 * sums continued over consecutive ranges give ctr__fbp_bp_cpu's bits (the
 * live FBP's full volume, fbp_live.c). No sanitising: the caller's, at the end. */
void ctr__fbp_bp_cpu_continue(const ctr_context *ctx, const ctr_parallel_geometry *g,
                              ctr_fbp_interp interp, int64_t nslices, int64_t a0, int64_t na,
                              const float *sino, float *slices);

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
/* The GPU backprojection of filtered sinograms (ctr_fbp_backproject): the
 * device bytes of chunks of `chunk` slices (sinograms and slices of the
 * chunk; weights, angle tables, a texture array and its staging, and
 * CTR__FBP_BP_SMALL for counters), and the slices per chunk within `budget`:
 * all nslices when they fit (one pass, as without a budget), else the most
 * that fit, rounded down to a multiple of CTR__FBP_BP_ALIGN (the slices of
 * each launch of the 2- and 4-slice kernels, hence the bits, as in one
 * pass) when there are that many, at least 1. `what` as
 * ctr__fbp_gpu_chunk's ("ctr_fbp_options.gpu_budget"). */
#define CTR__FBP_BP_SMALL ((uint64_t)8 << 10)
#define CTR__FBP_BP_ALIGN 4
uint64_t ctr__fbp_bp_gpu_bytes(const ctr_parallel_params *p, int64_t chunk);
ctr_status ctr__fbp_bp_gpu_chunk(const ctr_parallel_params *p, int64_t nslices, uint64_t budget,
                                 const char *what, int64_t *chunk);

#ifdef __cplusplus
}
#endif
#endif
