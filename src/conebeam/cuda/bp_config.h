/* CUDA FDK backend: C interface of the CUDA sources (src/cuda), used by the
 * FDK driver, the GPU tests and the benchmarks. */
#ifndef CTR_FDK_CUDA_H
#define CTR_FDK_CUDA_H

#include "filter/filter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Backprojection kernel variants (docs/cuda.md):
 *  TEX        Lu et al. 2016, Alg. 1: layered float texture, hardware bilinear
 *  TEX_PAIR   float2 layered texture holding each view and its mirror about
 *             the central row: one fetch updates a voxel and its mirror about
 *             the source plane (circular orbits, symmetric detector/volume)
 *  TEX_PAIR_HALF  TEX_PAIR stored as half2 (half the cache footprint), each
 *             batch scaled by a power of two so that half cannot overflow
 *  EXACT      fp32 software bilinear from zero-padded global memory
 *  EXACT_PAIR EXACT with the mirrored pair interleaved as float2 */
typedef enum ctr__bp_variant {
  CTR__BP_AUTO = 0,
  CTR__BP_TEX = 1,
  CTR__BP_TEX_PAIR = 2,
  CTR__BP_EXACT = 3,
  CTR__BP_EXACT_PAIR = 4,
  CTR__BP_TEX_PAIR_HALF = 5,
  CTR__BP_PRECISE = 6,     /* EXACT at double-precision positions */
  CTR__BP_PRECISE_PAIR = 7, /* EXACT_PAIR at double-precision positions */
  CTR__BP_PRECISE_GENERAL = 8 /* PRECISE for any orbit: cells of bilinear
                                 coefficients, runs outside the detector
                                 skipped (bp_general.cuh) */
} ctr__bp_variant;

typedef struct ctr__bp_config {
  ctr__bp_variant variant;
  int views_per_launch; /* N' (<= CTR__BP_MAX_VIEWS) */
  int slices_per_thread; /* Z': 1, 2, 4, 8 or 16 (PRECISE_GENERAL: also 32) */
  int block_x, block_y;  /* threads per block in x and y */
  int pipeline;          /* CTR__PIPE_*: how filtering and backprojection share the GPU */
  int default_shape;     /* PRECISE_GENERAL with Z' and block left to the defaults: each
                            launch picks its registers from its views (bp_general.cu) */
} ctr__bp_config;

enum {
  CTR__PIPE_DEFAULT = 0,
  CTR__PIPE_FILTER_PRIORITY = 1, /* filter on its own high-priority stream */
  CTR__PIPE_FILTER_STREAM = 2,   /* filter on its own stream, same priority */
  CTR__PIPE_SERIAL = 3           /* filter and backprojection in turn on one stream */
};

#define CTR__BP_MAX_VIEWS 64

/* Time spent per stage (milliseconds, CUDA events; stages overlap in the
 * pipeline, so they do not add up to the total). */
typedef struct ctr__cuda_timings {
  double upload_ms, filter_ms, copy_to_texture_ms, backproject_ms, download_ms;
  double total_ms; /* first upload to the volume in host memory */
  double setup_ms; /* allocations, cuFFT plans, before the first upload (host clock) */
  ctr__bp_variant variant;
  int views_per_launch, slices_per_thread, pipeline;
} ctr__cuda_timings;

const char *ctr__bp_variant_name(ctr__bp_variant v);


/* Resolves AUTO and zero fields to the tuned defaults for the geometry. */
ctr__bp_config ctr__bp_config_resolve(const ctr_geometry *g, const ctr_fdk_options *o,
                                      const ctr__bp_config *req);

/* End to end: host projections (float32 or uint16, nu x nv x nviews) ->
 * device (upload, filter, backproject overlapped on two streams) -> host
 * volume (nx x ny x o->nz floats). Pinned host memory is used in place;
 * pageable memory is staged through pinned buffers. cfg may be NULL. */
ctr_status ctr__cuda_fdk(const ctr_context *ctx, const ctr_geometry *g, const ctr_fdk_options *o,
                         const ctr__bp_config *cfg, const void *proj, ctr_dtype dtype, float *vol,
                         ctr__cuda_timings *timings);

/* Filters n views on the GPU exactly as ctr_fdk_filter does on the CPU
 * (host in, host out, unpadded float32). For tests. */
ctr_status ctr__cuda_fdk_filter(const ctr_context *ctx, const ctr_geometry *g,
                                const ctr_fdk_options *o, int64_t v0, int64_t n,
                                const float *in, float *out);

/* Backprojection only, for tests and benchmarks: uploads already filtered
 * views (host, unpadded) into the variant's device layout, then runs the
 * backprojection `repeats` times into a zeroed device volume, reporting the
 * median kernel time; copies the last volume to vol (may be NULL). */
ctr_status ctr__cuda_backproject(const ctr_context *ctx, const ctr_geometry *g,
                                 const ctr_fdk_options *o, const ctr__bp_config *cfg,
                                 const float *filtered, float *vol, int repeats,
                                 double *median_ms);

/* Pinned host memory (for callers that want full-speed transfers). */
void *ctr__cuda_host_alloc(size_t bytes);
void ctr__cuda_host_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
