/* GPU FDK filter: pre-weights, batched cuFFT ramp filter and the store into
 * the backprojector's layout, all on one stream. Same kernel values and
 * weights as the CPU filter (filter/filter.h). */
#ifndef CTR_FILTER_CUDA_CUH
#define CTR_FILTER_CUDA_CUH

#include "gpu/cuda_util.h"
#include "conebeam/cuda/bp_config.h"

/* Where filtered views go. LINEAR: element (u, v) of batch view k lands at
 * base[k * view_stride + v * pitch + u]. QUAD: a padded float4 image whose
 * element (u, v) holds the bilinear neighbourhood (Q[v][u], Q[v][u+1],
 * Q[v+1][u], Q[v+1][u+1]): each pixel is written into the four elements that
 * contain it (the border stays 0 from the initial clear). COEF: the
 * general kernel's cells of bilinear coefficients (bp_general.cuh), base at
 * cell (0, 0), every cell of the padded image written. SURFACE: at (u, v) of layer
 * layer0 + k of a layered array. With `pair`, elements hold
 * (Q[v][u], Q[mirror - v][u]) (0 outside the detector); with `half` (surface
 * only) they are half2 scaled by 2^-e, e chosen per batch from a bound on
 * the largest magnitude (d_max x gain) so nothing exceeds 2^14, and
 * wscale[k] receives 2^e. */
enum { CTR__STORE_LINEAR = 0, CTR__STORE_SURFACE = 1, CTR__STORE_QUAD = 2, CTR__STORE_COEF = 3 };
struct ctr__gpu_store {
  int kind;
  void *base;
  long long view_stride;
  int pitch;
  cudaSurfaceObject_t surf;
  int layer0;
  int pair;
  int mirror;
  int half;
  float *wscale;
  unsigned int *d_max; /* bits of the largest |input| (half), set before the store */
  float gain;          /* bound on |stored| / |input|: the filter kernel's l1 norm, or 1 */
};

/* Its device buffers come from ctx's GPU buffer cache (src/gpu/gpu_buffers.h)
 * and go back to it in ctr__gpu_filter_free; the cuFFT plans are made after
 * the kept buffers when the GPU is full (ctr__gpu_retry). */
struct ctr__gpu_filter {
  const ctr_context *ctx;
  int device;
  int64_t nu, nv, padded, batch; /* nu: the filtered rows' columns (nu_ext of the filter) */
  int64_t nu_raw, pad_lo;         /* the raw rows' columns, and where they start in a filtered row */
  size_t rows_bytes, spec_bytes, kernel_bytes, params_bytes; /* the buffers' sizes */
  cufftHandle fwd, inv;
  int have_fwd, have_inv;
  float *d_rows;           /* batch * nv rows of `padded` floats */
  cufftComplex *d_spec;    /* batch * nv rows of padded/2 + 1 */
  float *d_kernel;         /* padded/2 + 1 values including 1/padded */
  float l1;                /* the kernel's gain bound (ctr__ramp_kernel_l1) */
  ctr__fdk_view_params *d_params; /* every view */
  float in_scale;                  /* raw values are multiplied by this (1 after create) */
  unsigned long long *d_nonfinite; /* optional device counter of NaN / Inf raw values */
};

/* Bytes of device memory a filter for `batch` views needs. */
size_t ctr__gpu_filter_bytes(int64_t nu, int64_t nv, int64_t nviews, int64_t batch);
/* A filter for batches of `batch` views on the current device, its buffers
 * from ctx's cache (ctx outlives it). */
ctr_status ctr__gpu_filter_create(const ctr_context *ctx, const ctr__fdk_filter *f, int64_t batch,
                                  cudaStream_t s, ctr__gpu_filter *out);
/* Gives its memory back once the work that used it has finished; zeroes gf. */
void ctr__gpu_filter_free(ctr__gpu_filter *gf);
/* Filters views [v0, v0 + n) (n <= batch) from d_raw (device, n unpadded
 * images of `dtype`) into `dst`. */
ctr_status ctr__gpu_filter_run(ctr__gpu_filter *gf, const void *d_raw, ctr_dtype dtype,
                               int64_t v0, int64_t n, const ctr__gpu_store *dst, cudaStream_t s);

/* Copies n unpadded device views (no filtering, no scale) into dst. */
ctr_status ctr__gpu_store_views(const float *d_src, int64_t nu, int64_t nv, int64_t n,
                                const ctr__gpu_store *dst, cudaStream_t s);

#endif
