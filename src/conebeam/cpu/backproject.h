/* The CPU backend's kernels: the fast float backprojector (OpenMP,
 * vectorised across x), the double-precision reference used as the test
 * oracle, and the padded copies of views they read (padded_views.c). */
#ifndef CTR_CPU_BACKPROJECT_H
#define CTR_CPU_BACKPROJECT_H

#include "core/projmath.h"
#include "geometry/geometry_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A batch of filtered views in padded form (CTR_PAD_LO / CTR_PAD_HI zero
 * borders, projmath.h): view k's pixel (0, g->row0) - the first row of the
 * geometry's detector, or of its window of rows (ctr__geometry_rows) - is at
 * base + k * view_stride, rows are `pitch` floats apart. */
typedef struct ctr__padded_views {
  const float *base;
  int64_t view_stride;
  int pitch;
} ctr__padded_views;

/* vol += backprojection of n views into slices [z0, z0+nzs) of the
 * geometry's volume; vol holds nx * ny * nzs floats. View k of the batch is
 * idx[k] (idx NULL: v0 + k); alpha[k] (NULL: 1) scales its matrix, which
 * leaves u and v alone and multiplies its weight by 1 / alpha[k]^2. */
void ctr__bp_cpu(const ctr_context *ctx, const ctr_geometry *g, int64_t v0, int64_t n,
                 const int64_t *idx, const double *alpha, const ctr__padded_views *views,
                 float *vol, int64_t z0, int64_t nzs);

/* Same maths in double with bounds-checked interpolation: vol (nx * ny * nzs
 * doubles) += sum_k weights[k] * Q_k(u, v) / c^2 for views idx[k] with
 * unpadded nu x nv images[k]; weights NULL: 1. OpenMP over the volume. */
void ctr__bp_reference_views(const ctr_geometry *g, int64_t n, const int64_t *idx,
                             const float *const *images, const double *weights, double *vol,
                             int64_t z0, int64_t nzs);
/* Views [v0, v0+n) with images packed in `filtered`, weights 1. */
void ctr__bp_reference(const ctr_geometry *g, int64_t v0, int64_t n, const float *filtered,
                       double *vol, int64_t z0, int64_t nzs);

/* Copies n contiguous views (float32 or uint16) into zero-bordered padded
 * images (projmath.h layout), bad values (the data policy, values.c) replaced
 * by 0; returns how many were replaced. */
int64_t ctr__fill_padded(const ctr_geometry *g, const void *src, ctr_dtype dtype, int64_t n,
                         float *dst);
/* Same, multiplying by `scale` first (a scaled value beyond CTR__VALUE_LIMIT
 * is bad). */
int64_t ctr__fill_padded_scaled(const ctr_geometry *g, const void *src, ctr_dtype dtype, int64_t n,
                                float scale, float *dst);
/* Same, into padded images of nu_out >= g->nu + col0 columns, the views'
 * column 0 at column col0 (the rest zero): an offset detector's extended
 * rows (ctr__fdk_filter_extend). */
int64_t ctr__fill_padded_columns(const ctr_geometry *g, const void *src, ctr_dtype dtype,
                                 int64_t n, float scale, int64_t nu_out, int64_t col0,
                                 float *dst);


#ifdef __cplusplus
}
#endif

#endif
