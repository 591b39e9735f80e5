/* A backend of the streamed FDK pipeline (CPU or CUDA), driven by the
 * executor (stream.c) in the order of Lu et al. 2016, Alg. 2: for each subvolume,
 * slab_begin, then every projection subset (filter_bp on the first pass,
 * bp afterwards), then slab_end. */
#ifndef CTR_ENGINE_H
#define CTR_ENGINE_H

#include "geometry/geometry_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctr__engine ctr__engine;

typedef struct ctr__engine_ops {
  /* Starts subvolume [z0, z0 + nz) (slices of the geometry's volume), zeroed.
   * `target` (may be NULL) is where slab_end leaves the finished subvolume
   * (host, nx x ny x nz floats): the caller's volume when it is in memory. */
  ctr_status (*slab_begin)(ctr__engine *e, int64_t z0, int64_t nz, float *target);
  /* Weights and filters raw views [v0, v0 + n) (host, unpadded, `dtype`;
   * divided by the input scale, non-finite values counted and set to 0) and
   * backprojects them into the subvolume. With `filtered_out`, the filtered
   * views (unpadded float32) are written there too. Returns when `raw` may
   * be reused and `filtered_out` is complete. */
  ctr_status (*filter_bp)(ctr__engine *e, int64_t v0, int64_t n, const void *raw, ctr_dtype dtype,
                          float *filtered_out);
  /* Backprojects filtered views [v0, v0 + n) into the subvolume: from
   * `filtered` (host, unpadded float32), or, when NULL, from the copy the
   * backend kept (CTR_STORE_DEVICE). Returns when `filtered` may be reused. */
  ctr_status (*bp)(ctr__engine *e, int64_t v0, int64_t n, const float *filtered);
  /* Finishes the subvolume (into `target` if one was given, overlapping the
   * transfer with the last backprojections); returns when it is complete. */
  ctr_status (*slab_end)(ctr__engine *e);
  /* Copies slices [k0, k1) of the finished subvolume (relative to its first
   * slice) into dst (host); returns when dst holds them. */
  ctr_status (*download)(ctr__engine *e, int64_t k0, int64_t k1, float *dst);
  /* Adds the backend's step times (upload, filter, store, reload,
   * backproject, download) to t. */
  void (*timings)(ctr__engine *e, ctr_stream_timings *t);
  /* Input values (raw views) counted and set to 0 so far. */
  int64_t (*nonfinite)(ctr__engine *e);
  /* Output voxels replaced by 0 so far (the data policy: NaN, infinite or
   * beyond CTR__VALUE_LIMIT): what slab_end writes to its target and what
   * download delivers holds none. */
  int64_t (*out_nonfinite)(ctr__engine *e);
  /* Smallest and largest value of every subvolume finished so far (bad
   * values taken as the 0 they are stored as; +inf / -inf if none). */
  void (*range)(ctr__engine *e, float *min, float *max);
  void (*destroy)(ctr__engine *e);
} ctr__engine_ops;

struct ctr__engine {
  const ctr__engine_ops *ops;
  void *impl;
};

/* `o` is resolved (ctr__fdk_options_resolve); the plan decides N', the store
 * and the subvolume size. */
ctr_status ctr__engine_cpu_create(ctr_context *ctx, const ctr_geometry *g, const ctr_fdk_options *o,
                                  const ctr_plan *plan, double input_scale, ctr__engine **out);
ctr_status ctr__engine_cuda_create(ctr_context *ctx, const ctr_geometry *g,
                                   const ctr_fdk_options *o, const ctr_plan *plan,
                                   double input_scale, ctr__engine **out);
void ctr__engine_free(ctr__engine *e);

#ifdef __cplusplus
}
#endif
#endif
