/* Ramp filtering (FFTW) and the FDK pre-weights, shared by every backend. */
#ifndef CTR_FILTER_H
#define CTR_FILTER_H

#include "core/internal.h"
#include "filter/fdk_weight_math.h"
#include "geometry/geometry_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Smallest length >= n whose only prime factors are 2, 3, 5, 7. */
int64_t ctr__fft_good_size(int64_t n);

/* The sampled frequency response of the ramp filter for rows of `n` pixels
 * zero-padded to `padded` (>= 2 n): padded/2 + 1 real values, from the
 * spatial Ram-Lak kernel (Kak & Slaney eq. 3.61) so the DC term is not zero,
 * times the window. Caller frees with free(). */
ctr_status ctr__ramp_kernel(int64_t padded, ctr_window w, double cutoff, double **out);
/* The same for rows of n columns of an equiangular fan (a cylindrical
 * detector), fan_step radians apart: the windowed spatial kernel times
 * (m fan_step / sin(m fan_step))^2 at lags |m| < n (Kak & Slaney 1988,
 * Sec. 3.4.2). fan_step 0: ctr__ramp_kernel. */
ctr_status ctr__ramp_kernel_fan(int64_t padded, int64_t n, ctr_window w, double cutoff,
                                double fan_step, double **out);

/* A row filter: FFTW plans for one padded row plus the kernel (scaled by
 * 1/padded so that forward + inverse FFT is the identity). Thread-safe apply. */
typedef struct ctr__ramp ctr__ramp;
/* Held around every FFTW plan creation and destruction of the library (the
 * planner is not thread-safe; executing a plan on new arrays is). */
void ctr__fftw_lock(void);
void ctr__fftw_unlock(void);
ctr_status ctr__ramp_create(int64_t n, ctr_window w, double cutoff, ctr__ramp **out);
/* A row filter with ctr__ramp_kernel_fan's kernel (fan_step 0: ctr__ramp_create). */
ctr_status ctr__ramp_create_fan(int64_t n, ctr_window w, double cutoff, double fan_step,
                                ctr__ramp **out);
void ctr__ramp_free(ctr__ramp *r);
int64_t ctr__ramp_padded(const ctr__ramp *r);
/* The padded row length used for rows of n pixels (even, >= 2 n). */
int64_t ctr__ramp_padded_length(int64_t n);
/* Sum of |h| of the windowed spatial kernel: a bound on the filter's gain. */
double ctr__ramp_kernel_l1(const ctr__ramp *r);
/* The frequency-domain kernel (padded/2 + 1 floats, 1/padded included). */
void ctr__ramp_copy_kernel(const ctr__ramp *r, float *out);
/* Per-thread work buffers. */
typedef struct ctr__ramp_work ctr__ramp_work;
ctr__ramp_work *ctr__ramp_work_create(const ctr__ramp *r);
void ctr__ramp_work_free(ctr__ramp_work *w);
/* Filters `n` values of `row` in place; each input is first multiplied by
 * pre[i] (NULL: 1), each output by `scale`. */
void ctr__ramp_apply(const ctr__ramp *r, ctr__ramp_work *w, float *row, const float *pre,
                     float scale);


/* FDK filter state for one geometry: scan analysis and ramp filter. */
typedef struct ctr__fdk_filter {
  const ctr_geometry *g;
  ctr__scan scan;
  int parker;
  int offset;         /* Wang 2002 weights of an offset (half-fan) detector */
  double offset_half; /* their transition's half-width, columns; 0: each view's whole overlap */
  double beta_shift; /* puts each view in the middle of its angular interval */
  int64_t pad_lo;    /* the filtered rows hold columns [-pad_lo, nu_ext - pad_lo) of the
                        detector's: 0 and nu unless extended (ctr__fdk_filter_extend) */
  int64_t nu_ext;
  ctr__ramp *ramp;   /* for rows of nu_ext */
} ctr__fdk_filter;

ctr_status ctr__fdk_filter_init(const ctr_context *ctx, const ctr_geometry *g,
                                const ctr_fdk_options *o, ctr__fdk_filter *f);
void ctr__fdk_filter_free(ctr__fdk_filter *f);
/* An offset (half-fan) detector's virtual detector (docs/geometry.md,
 * "Offset detectors"): zero columns on the narrow side, pad_lo before column
 * 0 and nu_ext - nu - pad_lo after column nu - 1, so that in every view the
 * filtered row reaches the mirror image about u0 of the wide side's farthest
 * column; the ramp filter is re-made for rows of nu_ext. Nothing changes
 * when f has no offset weights. Callers then filter rows of nu_ext values
 * (the views' data at columns pad_lo .. pad_lo + nu - 1, zeros elsewhere)
 * and backproject them through ctr__geometry_columns(g, pad_lo, nu_ext). */
ctr_status ctr__fdk_filter_extend(const ctr_fdk_options *o, ctr__fdk_filter *f);
/* The filtered rows' columns for g and resolved options o, as an engine's
 * ctr__fdk_filter_extend gives them: pad_lo zero columns before column 0
 * and nu_ext in all (0 and nu without offset weights). For the executor's
 * kept copies, its memory plan and the backends that do not extend. */
ctr_status ctr__fdk_row_width(const ctr_context *ctx, const ctr_geometry *g,
                              const ctr_fdk_options *o, int64_t *pad_lo, int64_t *nu_ext);
/* Pre-weight parameters of view i (shared with the CUDA filter). */
ctr__fdk_view_params ctr__fdk_view_params_of(const ctr__fdk_filter *f, int64_t i);
/* Per-pixel pre-weights (cosine x Parker x offset) of view i into w (nu_ext x nv, column k
 * being the detector's k - pad_lo) and the
 * post-filter scale (angular weight / isocentre pixel pitch). */
void ctr__fdk_view_weights(const ctr__fdk_filter *f, int64_t i, float *w, float *scale);
/* Filters views [v0, v0+n) in place: image k starts at proj + k * view_stride,
 * its rows (f->nu_ext values each) are row_stride apart (so padded buffers can be filtered in place). */
ctr_status ctr__fdk_filter_run(const ctr_context *ctx, const ctr__fdk_filter *f, int64_t v0,
                               int64_t n, float *proj, int64_t view_stride, int64_t row_stride);

#ifdef __cplusplus
}
#endif

#endif
