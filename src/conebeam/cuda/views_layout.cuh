/* Filtered views resident on the device in a backprojection variant's layout
 * (layered textures written through surfaces, or zero-padded global memory),
 * their backprojection, and setup helpers; shared by the FDK pipeline and the
 * incremental backprojector. */
#ifndef CTR_VIEWS_LAYOUT_CUH
#define CTR_VIEWS_LAYOUT_CUH

#include "conebeam/cuda/bp_kernels.cuh"
#include "conebeam/cuda/filter_cuda.cuh"

/* Layered textures of one layout: each holds at most the device's layer limit
 * (2048) of views, so resident views in texture variants number at most
 * MAX_ARRAYS x 2048 (2M; 64 arrays, 131072 views, refused FDK of longer
 * scans with texture interpolation). */
#define MAX_ARRAYS 1024

/* The device memory comes from the GPU buffer cache of ctx (the padded
 * layouts' buffer, the half variant's scales; src/gpu/gpu_buffers.h) and
 * goes back to it in ctr__views_free; texture arrays are allocated after
 * the kept buffers when the GPU is full (ctr__gpu_retry). */
typedef struct ctr__dev_views {
  const ctr_context *ctx;
  int device;
  ctr__bp_variant variant;
  int pair, mirror, half, nu, nv;
  int64_t nviews, batch;
  /* texture variants: layered arrays written through surfaces */
  int narrays;
  int64_t layers_per_array;
  cudaArray_t arr[MAX_ARRAYS];
  cudaTextureObject_t tex[MAX_ARRAYS];
  cudaSurfaceObject_t surf[MAX_ARRAYS];
  float *d_wscale;       /* TEX_PAIR_HALF: 2^e per view */
  unsigned int *d_max;   /* TEX_PAIR_HALF: batch maximum scratch */
  /* exact variants */
  void *d_pad;
  size_t pad_bytes;
  long long view_stride;
  int pitch;
} ctr__dev_views;

int ctr__is_pair(ctr__bp_variant v);
int ctr__is_tex(ctr__bp_variant v);
/* Views stored as float4 bilinear neighbourhoods (the non-pair exact variants). */
int ctr__is_quad(ctr__bp_variant v);
/* Bytes per stored element of a variant's layout. */
size_t ctr__element_bytes(ctr__bp_variant v);
/* Device bytes for `slots` views in a variant's layout. */
size_t ctr__views_bytes(const ctr_geometry *g, ctr__bp_variant v, int64_t slots);
/* Room for `slots` views on the current device, from ctx's GPU buffer
 * cache (ctx outlives dv); batches of `batch` never straddle two arrays. */
ctr_status ctr__views_create(const ctr_context *ctx, const ctr_geometry *g, ctr__bp_variant variant,
                             int64_t batch, int64_t slots, int max_layers, ctr__dev_views *dv);
/* Gives dv's memory back (its buffers to the cache) once the work that
 * used it has finished; zeroes dv. */
void ctr__views_free(ctr__dev_views *dv);
/* Where the filter (or a plain copy) writes the views of slots [slot0, ...). */
ctr__gpu_store ctr__views_target(const ctr__dev_views *dv, int64_t slot0);
ctr_status ctr__views_backproject(const ctr_geometry *g, const ctr__dev_views *dv,
                                  const ctr__bp_config *cfg, const int64_t *idx,
                                  const double *alpha, int64_t slot0, int64_t n, float *d_vol,
                                  int64_t z0, int64_t nzs, int64_t k_begin, int64_t k_end,
                                  cudaStream_t s);
/* Slices the grid covers: all, or the lower half (with mirrors) for pairs. */
int64_t ctr__grid_slices(const ctr__dev_views *dv, int64_t nzs);
ctr_status ctr__backproject_batch(const ctr_geometry *g, const ctr__dev_views *dv,
                                  const ctr__bp_config *cfg, int64_t v0, int64_t n, float *d_vol,
                                  int64_t z0, int64_t nzs, int64_t k_begin, int64_t k_end,
                                  cudaStream_t s);

/* Makes device ordinal `device` current and reads its properties and its
 * GPU budget by the one memory rule (core/memory.c, ctr__gpu_budget_detect:
 * free memory and the buffers ctx keeps there, less 1 GiB). */
ctr_status ctr__device_setup(const ctr_context *ctx, int device, cudaDeviceProp *prop,
                             uint64_t *budget);
/* need within the budget of ctr__device_setup, else CTR_E_DEVICE_OUT_OF_MEMORY
 * naming `what`, the bytes needed and the budget. */
ctr_status ctr__check_memory(size_t need, uint64_t budget, const char *what);

#endif
