/* Parallel-beam internals shared by the CPU and CUDA backends: the resolved
 * geometry, per-angle constants and the CPU backprojector (the backends are
 * reached through their tables, backend.h; the CUDA entry points are
 * declared in cuda/parbeam_cuda.h). */
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

#ifdef __cplusplus
}
#endif
#endif
