/* The backend seam of cone-beam reconstruction. A backend (CPU, CUDA) is a
 * ctr__engine_backend found by device kind (ctr__engine_backend_find): it
 * answers what a candidate plan costs in its memory (a pure function the
 * planner calls), creates engines on one device each, and provides the
 * incremental backprojector. An engine owns its device (the ordinal given at
 * creation; every operation makes it current first) and the memory it
 * allocated; several engines may run at once, on one device or on several,
 * each driven by one thread.
 *
 * The streamed executor (stream.c) drives an engine in the order of Lu et
 * al. 2016, Alg. 2: for each subvolume, slab_begin, then every projection
 * subset (filter_bp on the first pass, bp afterwards), then slab_end. */
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
   * backend kept (CTR_FDK_STORE_DEVICE). Returns when `filtered` may be reused. */
  ctr_status (*bp)(ctr__engine *e, int64_t v0, int64_t n, const float *filtered);
  /* Finishes the subvolume (into `target` if one was given, overlapping the
   * transfer with the last backprojections); returns when it is complete. */
  ctr_status (*slab_end)(ctr__engine *e);
  /* Copies slices [k0, k1) of the finished subvolume (relative to its first
   * slice) into dst (host); returns when dst holds them. Bad voxels are
   * replaced (out_nonfinite) and the slices enter `range` here when the
   * subvolume had no target. */
  ctr_status (*download)(ctr__engine *e, int64_t k0, int64_t k1, float *dst);
  /* Adds slices [k0, k1) of `src`'s finished subvolume (an engine of the same
   * backend and plan, on any device; its slab_end has returned) into this
   * engine's finished subvolume (projection split: the partial sums of the
   * workers); returns when done. Only this engine's slices [k0, k1) change,
   * so several engines may add from each other's other slices at once. */
  ctr_status (*add_from)(ctr__engine *e, ctr__engine *src, int64_t k0, int64_t k1);
  /* Optional (NULL: the executor calls add_from for each source in order,
   * then download). Slices [k0, k1) of this engine's finished subvolume plus
   * those of srcs[0..n) in that order (as add_from would add them), copied
   * into dst (host) as download does; the sums and the copies pipelined in
   * pieces, so that the copy of one piece overlaps the sums of the next.
   * Returns when dst holds them; the sources' slices are no longer read. */
  ctr_status (*sum_download)(ctr__engine *e, ctr__engine *const *srcs, int n, int64_t k0,
                             int64_t k1, float *dst);
  /* Optional, all three or none: the projection split's end of a subvolume in
   * memory on several engines, the sums and the download of each slab of the
   * last batches overlapping the backprojection of the next (Okitsu et al.
   * 2010 overlap the reduction likewise). tail_hold, right after slab_begin:
   * 1 when the engine holds its last batches back for the tail (their views
   * filtered and kept, not yet backprojected), 0 when it cannot (then the
   * caller uses slab_end and the sums as usual); share_slices is the size of
   * this engine's share of the sums, nw the engines summed. tail_queue, after the last subset
   * (instead of slab_end): queues the held batches slab by slab and returns
   * without waiting; every engine calls it before any calls tail_sum (the
   * engines wait on each other's queued work). tail_sum: slices [k0, k1) of
   * this engine's subvolume plus those of every other engine of all[0..nw)
   * in worker order (self is this engine's index), into dst (host) as
   * download does; returns when dst holds them and every queued step of this
   * engine is done. */
  int (*tail_hold)(ctr__engine *e, int64_t share_slices, int nw);
  ctr_status (*tail_queue)(ctr__engine *e, int nw);
  ctr_status (*tail_sum)(ctr__engine *e, ctr__engine *const *all, int nw, int self, int64_t k0,
                         int64_t k1, float *dst);
  /* Adds the backend's step times (upload, filter, store, reload,
   * backproject, download) to t. */
  void (*timings)(ctr__engine *e, ctr_fdk_stream_timings *t);
  /* Input values (raw views) counted and set to 0 so far. */
  int64_t (*nonfinite)(ctr__engine *e);
  /* Output voxels replaced by 0 so far (the data policy: NaN, infinite or
   * beyond CTR__VALUE_LIMIT): what slab_end writes to its target and what
   * download delivers holds none. */
  int64_t (*out_nonfinite)(ctr__engine *e);
  /* Smallest and largest value of every subvolume finished so far (bad
   * values taken as the 0 they are stored as; +inf / -inf if none). */
  void (*range)(ctr__engine *e, float *min, float *max);
  /* Waits for the engine's work and frees it; its large device buffers go
   * back to the context, which keeps them for its next run (internal.h).
   * Engines of different devices may be destroyed on different threads at
   * once. */
  void (*destroy)(ctr__engine *e);
} ctr__engine_ops;

struct ctr__engine {
  const ctr__engine_ops *ops;
  void *impl;
};

/* What a candidate plan asks of a backend: the run's request (device kind,
 * dtypes, interpolation, slices) and the candidate's N', store and mirrored
 * pairs. */
typedef struct ctr__plan_candidate {
  const ctr_fdk_plan_request *req;
  int64_t views_per_batch;
  ctr_fdk_store store;
  int pair;
  int workers;     /* engines sharing the run */
  ctr_fdk_split split; /* how (VOLUME for one) */
  int64_t views;   /* views one engine sees (all, or a projection split's share) */
  int shared;      /* filtered views also arrive from other engines (multi-worker volume
                      split): a device-resident store needs staging buffers too */
} ctr__plan_candidate;

/* A backend's memory for a candidate: fixed bytes plus bytes per subvolume
 * slice, on the device and on the host (the executor adds its own buffers). */
typedef struct ctr__engine_cost {
  uint64_t device_fixed, device_per_slice;
  uint64_t host_fixed, host_per_slice;
} ctr__engine_cost;

typedef struct ctr__engine_backend {
  ctr__backend_head head; /* name, kind, built (core/internal.h): first, as in every
                             modality's table (ctr__backend_pick) */
  /* N' the planner tries first for g (halved while memory is short). */
  int64_t (*first_batch)(const ctr_geometry *g);
  /* 1 if the backend can keep every filtered view resident (CTR_FDK_STORE_DEVICE)
   * and backproject mirrored pairs. */
  int device_store;
  /* 1 if its engines take a geometry that sees a window of the detector's
   * rows (ctr__geometry_rows: views hold those rows only); else a
   * distributed rank gives them whole views, zero outside its rows. */
  int row_window;
  /* 1 if its engines filter an offset (half-fan) detector's rows extended
   * beyond the narrow edge (ctr__fdk_filter_extend: zero columns, the ramp
   * of nu_ext) and backproject them through the extended detector, and
   * filter_bp's filtered_out / bp's filtered then hold ctr__fdk_row_width's
   * nu_ext columns per row; 0: the executor refuses such runs (the rows
   * filtered at the detector's width lose the narrow side's tails:
   * docs/geometry.md, "Offset detectors"). */
  int extends_rows;
  /* The memory model: what an engine created for this candidate allocates
   * (a pure function, available whether or not the backend is built). */
  void (*cost)(const ctr_geometry *g, const ctr__plan_candidate *c, ctr__engine_cost *out);
  /* Creates an engine on device ordinal `device` (ignored by the CPU) for a
   * plan; `o` is resolved (ctr__fdk_options_resolve). The engine sees only
   * views [view_begin, view_end) (projection split: its share; else all).
   * NULL when this build lacks the backend. */
  ctr_status (*create)(ctr_context *ctx, int device, const ctr_geometry *g,
                       const ctr_fdk_options *o, const ctr_fdk_plan *plan, double input_scale,
                       int64_t view_begin, int64_t view_end, ctr__engine **out);
  /* Autotuning of the backprojection's launch shape for a run of (g, o) on
   * device `device` (ctr_tune_fdk; o resolved): what the backend's engine
   * for such a run would choose, found now (force: timed again) and
   * reported in r. NULL for a backend without launch parameters (the CPU)
   * or not built. */
  ctr_status (*tune)(ctr_context *ctx, int device, const ctr_geometry *g,
                     const ctr_fdk_options *o, int force, ctr_tune_report *r);
  /* The incremental backprojector of ctr_backprojector_* (the backend's
   * state behind a void pointer): create (o resolved; g and ctx outlive it),
   * add n views (checked by the caller), read the volume (nx x ny x o->nz
   * floats), reset to zero, free (accepts NULL). Images and the volume read
   * are host memory; the CUDA backend also takes GPU memory for both (no
   * host round trip: the fast projector pair's device path) and returns
   * when add has finished reading the images and read's copy is complete. */
  ctr_status (*bpj_create)(ctr_context *ctx, int device, const ctr_geometry *g,
                           const ctr_fdk_options *o, void **out);
  ctr_status (*bpj_add)(void *b, int64_t n, const int64_t *views, const float *const *images,
                        const float *weights);
  ctr_status (*bpj_read)(void *b, float *vol);
  ctr_status (*bpj_reset)(void *b);
  void (*bpj_free)(void *b);
  /* For a backprojector kept across slabs and calls (the fast projector
   * pair, src/iterative/projector.c), through backprojector.h:
   * bpj_slab moves it to slices [z0, z0 + nz) of g's volume, nz at most the
   * o->nz it was created with, and zeroes its volume; its kernels are then
   * those bpj_create chooses for that slab (the CUDA backend rebuilds its
   * views' layout when they need another), so what follows gives the bits a
   * fresh backprojector of that slab would. The CUDA backend queues the
   * zeroing and returns without waiting.
   * bpj_queue (CUDA; NULL on the CPU) queues the backprojection of n views,
   * weights 1, held one after the other from `images` in GPU memory of its
   * device (n at most the views of one launch): its streams first wait for
   * event `ready` (a cudaEvent_t the caller recorded after the images'
   * producers), then record `consumed` (a cudaEvent_t) once they no longer
   * read the images; returns without waiting. Consecutive calls alternate
   * its two slot sets, so one call's backprojection overlaps the next
   * call's store; each is one launch, as bpj_add with the same views.
   * bpj_read_queued (CUDA) queues the copy of the volume into `vol` (GPU
   * memory of its device), after every view queued before; the caller
   * orders vol's other users before those views' `ready` events.
   * bpj_wait (CUDA) returns when everything queued has finished. */
  ctr_status (*bpj_slab)(void *b, int64_t z0, int64_t nz);
  ctr_status (*bpj_queue)(void *b, int64_t n, const int64_t *views, const float *images,
                          void *ready, void *consumed);
  ctr_status (*bpj_read_queued)(void *b, float *vol);
  ctr_status (*bpj_wait)(void *b);
  /* vol (host, nx x ny x nzs doubles) += the double-precision backprojection
   * of slices [z0, z0 + nzs) (ctr_fdk_backproject_reference). */
  ctr_status (*reference)(ctr_context *ctx, int device, const ctr_geometry *g, int64_t n,
                          const int64_t *views, const float *const *images,
                          const double *weights, double *vol, int64_t z0, int64_t nzs);
} ctr__engine_backend;

/* The backends of this library, defined by each backend's folder. */
extern const ctr__engine_backend ctr__engine_backend_cpu;
extern const ctr__engine_backend ctr__engine_backend_cuda;

/* The backend of a device kind (CPU or CUDA); NULL for an unknown kind. A
 * backend whose `create` is NULL is known (its memory model answers) but not
 * built. */
const ctr__engine_backend *ctr__engine_backend_find(ctr_device_kind kind);
/* The backend of a context's resolved device kind; CTR_E_UNSUPPORTED when
 * the build lacks it. */
ctr_status ctr__engine_backend_of(const ctr_context *ctx, const ctr__engine_backend **out);

void ctr__engine_free(ctr__engine *e);

#ifdef __cplusplus
}
#endif
#endif
