/* The synchrotron pipeline's internals (include/ctrecon/synchrotron.h):
 * resolved corrections and the CPU kernels (the CPU backend's, backend.h;
 * the GPU's are declared in cuda/parbeam_cuda.h). */
#ifndef CTR_PARBEAM_SYNC_H
#define CTR_PARBEAM_SYNC_H

#include "core/projmath.h"
#include "parbeam/parbeam.h"
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* v with a zero's sign dropped (-0 -> +0), for the medians of the sorting
 * and dezinger filters on the CPU and the GPU. Among equal values the CPU's
 * quickselect and the GPU's count pick different elements; -0 and +0 are the
 * only equal values with different bits (NaN aside), so both return this and
 * agree bit for bit. By the bits, not `v + 0.0f`, which fast math may drop. */
CTR_HD float ctr__zero_unsigned(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return (u << 1) == 0 ? 0.0f : v;
}

/* ctr_corrections with every default filled in and checked; errors name
 * the ctr_corrections member. */
ctr_status ctr__corrections_resolve(const ctr_corrections *in, ctr_corrections *out);
/* 1 if any correction acts on sinograms or projections (not the centre). */
int ctr__corrections_any(const ctr_corrections *c);

/* Daubechies filter of order n (1 .. 10): 2n low-pass analysis taps with
 * sum sqrt(2), by spectral factorisation (Daubechies 1988). */
ctr_status ctr__daubechies(int n, double *h);

/* CPU kernels (OpenMP over slices; cpu/stripes_cpu.c, cpu/paganin_cpu.c). */
int64_t ctr__dezinger_cpu(const ctr_context *ctx, double threshold, int size, int64_t nb,
                          int64_t na, int64_t ns, float *sino);
ctr_status ctr__stripes_cpu(const ctr_context *ctx, const ctr_corrections *c, int64_t nb,
                            int64_t na, int64_t ns, float *sino);
/* margin: ctr_paganin_margin (paganin.c) */
ctr_status ctr__paganin_cpu(const ctr_context *ctx, const ctr_corrections *c, double pixel_mm,
                            int64_t margin, int64_t w, int64_t h, int64_t n, float *img);
/* Keys' cubic interpolation of r (n samples) at x in [0, n - 1]. */
double ctr__cubic(const float *r, int64_t n, double x);
/* The 360-degree stitch of one sinogram row set (CPU; the GPU has its own). */
void ctr__stitch_rows(const ctr_parallel_geometry *g, const ctr_parallel_geometry *out,
                      int64_t nslices, const float *sino, float *out_sino);
/* The blend weight of the direct projection at bin t of the stitched row
 * (1 outside the overlap on its side, 0 on the mirrored side). */
double ctr__stitch_weight(const ctr_parallel_geometry *g, const ctr_parallel_geometry *out,
                          double t_out);

#ifdef __cplusplus
}
#endif
#endif
