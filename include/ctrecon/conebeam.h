/* ctrecon/conebeam.h — cone-beam FDK: in memory, incremental backprojection, memory planning and the streamed (out-of-core) pipeline. Include <ctrecon.h> (all of the API) or this header. */
#ifndef CTRECON_CONEBEAM_H
#define CTRECON_CONEBEAM_H

#include "ctrecon/geometry.h"
#include "ctrecon/io.h"
#include "ctrecon/tuning.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ctr_short_scan {
  CTR_SHORT_SCAN_AUTO = 0, /* Parker weights when the orbit covers < 360 deg */
  CTR_SHORT_SCAN_OFF = 1,
  CTR_SHORT_SCAN_PARKER = 2
} ctr_short_scan;

/* Redundancy weights of an offset (half-fan) detector on a full turn (Wang
 * 2002; docs/geometry.md, "Offset detectors"). */
typedef enum ctr_offset_weight {
  CTR_OFFSET_WEIGHT_AUTO = 0, /* Wang weights when ctr_geometry_offset_detector says so */
  CTR_OFFSET_WEIGHT_OFF = 1,  /* none: a half-fan scan reconstructs wrongly (with a warning) */
  CTR_OFFSET_WEIGHT_WANG = 2  /* always (needs a full turn and a detector that reaches the
                                 rotation axis) */
} ctr_offset_weight;

typedef enum ctr_interp {
  CTR_INTERP_DEFAULT = 0, /* backend's default (exact on CPU, texture on GPU) */
  CTR_INTERP_EXACT = 1,   /* fp32 software bilinear, ~1e-6 relative */
  CTR_INTERP_TEXTURE = 2, /* hardware texture bilinear (8-bit weights), ~1e-3; GPU only */
  CTR_INTERP_PRECISE = 3  /* software bilinear at double-precision positions, ~1e-7 on the
                             GPU (slower); the CPU treats it as exact */
} ctr_interp;

#define CTR_FDK_OPTIONS_VERSION 4u /* 2: strict; 3: geometry_checked; 4: offset_weight,
                                      offset_overlap */
typedef struct ctr_fdk_options {
  unsigned version;
  ctr_window window;
  double cutoff;           /* (0, 1], fraction of Nyquist */
  ctr_short_scan short_scan;
  ctr_interp interp;
  int64_t z0, nz;          /* reconstruct slices [z0, z0+nz) only; nz = 0: all */
  int64_t views_per_batch; /* views filtered per batch (memory); 0 = automatic */
  int strict;              /* data policy (docs/architecture.md, "Bad values"): 0 = projection
                              values that are NaN, infinite or beyond +-1e24 and non-finite
                              voxels are replaced by 0 and counted (ctr_fdk_stream_report, a
                              warning through the context's log); 1 = any such value is a
                              CTR_E_FORMAT error, and so is a geometry FDK cannot reconstruct
                              (ctr_geometry_fdk_check: CTR_E_GEOMETRY; else a warning) */
  int geometry_checked;    /* 1: the caller has run ctr_geometry_fdk_check and told the user
                              what it found (or refused): FDK neither checks nor warns again;
                              0 (default): FDK checks the geometry itself (ctr_fdk,
                              ctr_fdk_stream, ctr_fdk_stream_memory) */
  ctr_offset_weight offset_weight; /* offset (half-fan) detector weights (default auto) */
  double offset_overlap;   /* width of the offset weights' transition, detector columns,
                              centred on the principal point; 0 (default): the whole overlap
                              the geometry gives (twice the distance from the principal point
                              to the centre of the farthest column on the detector's narrow
                              side); more than that is CTR_E_INVALID_ARGUMENT */
} ctr_fdk_options;

#define CTR_FDK_OPTIONS_INIT                                                                \
  { CTR_FDK_OPTIONS_VERSION, CTR_WINDOW_RAM_LAK, 1.0, CTR_SHORT_SCAN_AUTO, CTR_INTERP_DEFAULT, \
    0, 0, 0, 0, 0, CTR_OFFSET_WEIGHT_AUTO, 0.0 }
/* The defaults in the layout of `version`, 1 .. CTR_FDK_OPTIONS_VERSION (core.h). */
CTR_API ctr_status ctr_fdk_options_init(ctr_fdk_options *s, unsigned version);

/* FDK reconstruction. proj: float32 nu x nv x nviews line integrals (uint16
 * is accepted and converted). vol: float32 nx x ny x nz_out where nz_out is
 * opts->nz (or the volume's nz), overwritten. The result is in the units of
 * the line integrals per mm (a Shepp-Logan phantom gives its own values).
 * With a CUDA context either array may be in GPU memory (cudaMalloc, managed,
 * CuPy or PyTorch buffers): it is read or written in place on the GPU, with
 * no copy through the host; the library waits for that GPU's streams before
 * it starts and has written the volume when it returns. A CPU context refuses
 * GPU arrays (CTR_E_INVALID_ARGUMENT). */
CTR_API ctr_status ctr_fdk(ctr_context *ctx, const ctr_geometry *g, const ctr_fdk_options *opts,
                           const ctr_array *proj, ctr_array *vol);

/* ctr_geometry_fdk_check for FDK run with opts (NULL: the defaults): an
 * offset (half-fan) detector is accepted with offset_weight auto or wang,
 * not with off (the rays its overlap sees twice would count twice). What
 * ctr_fdk and ctr_fdk_stream* check unless opts->geometry_checked. A helix
 * whose pitch exceeds helical FDK's limit, which FDK refuses whatever the
 * options, is that error (CTR_E_GEOMETRY, field ctr_helical_params.pitch_mm:
 * docs/geometry.md, "Helical orbits"), not *ok = 0. */
CTR_API ctr_status ctr_fdk_check_geometry(const ctr_geometry *g, const ctr_fdk_options *opts,
                                          int *ok, char *why, size_t cap);

/* The two halves of FDK on the CPU backend, for callers that pipeline them
 * (ctr_backprojector is the incremental backprojection on either backend).
 * They do not check the geometry (each call would): such callers ask
 * ctr_geometry_fdk_check once.
 * Filters views
 * [v0, v0+n) of proj (float32, contiguous, n views) in place: Parker and cosine
 * weights, ramp filter, angular weight. Bad values (NaN, infinite, beyond
 * +-1e24) follow opts->strict: replaced by 0 first with a warning, or an
 * error before anything changes; ctr_fdk_backproject reports bad filtered
 * values the same way. */
CTR_API ctr_status ctr_fdk_filter(ctr_context *ctx, const ctr_geometry *g,
                                  const ctr_fdk_options *opts, int64_t v0, int64_t n, float *proj);
/* Adds the backprojection of filtered views [v0, v0+n) (n images in `filtered`)
 * into vol (float32, slices [opts->z0, opts->z0 + nz)). */
CTR_API ctr_status ctr_fdk_backproject(ctr_context *ctx, const ctr_geometry *g,
                                       const ctr_fdk_options *opts, int64_t v0, int64_t n,
                                       const float *filtered, ctr_array *vol);

/* ------------------------------------------------------------------------- */
/* Incremental backprojection of filtered views                              */
/* ------------------------------------------------------------------------- */

/* Accumulates vol += sum_n weight_n * Q_n(u, v) / c^2 over already filtered
 * views, with g's canonical matrices (c = depth / depth of the origin), into
 * a volume the backend keeps (GPU memory for CUDA). Views may come in any
 * order and any number of calls; each call returns when its views are
 * backprojected. opts: interp, z0 / nz (may be NULL). */
/* Threads: a backprojector serves one thread at a time (it accumulates);
 * several on one context work at once. */
typedef struct ctr_backprojector ctr_backprojector;

CTR_API ctr_status ctr_backprojector_create(ctr_context *ctx, const ctr_geometry *g,
                                            const ctr_fdk_options *opts, ctr_backprojector **out);
/* Adds n views: view indices (into g), images (nu x nv float32 each, u
 * fastest) and per-view weights (NULL: all 1). */
CTR_API ctr_status ctr_backprojector_add(ctr_backprojector *b, int64_t n, const int64_t *views,
                                         const float *const *images, const float *weights);
/* Copies the volume out (nx x ny x nz floats). */
CTR_API ctr_status ctr_backprojector_read(ctr_backprojector *b, float *vol);
/* Double-precision reference of the same sum (bounds-checked bilinear,
 * double arithmetic throughout), into vol (nx x ny x nz doubles, added to).
 * Runs on the GPU in FP64 when ctx is CUDA, else on the CPU (OpenMP). The
 * oracle for tests and for RabbitCT reference volumes. */
CTR_API ctr_status ctr_fdk_backproject_reference(ctr_context *ctx, const ctr_geometry *g, int64_t n,
                                             const int64_t *views, const float *const *images,
                                             const double *weights, double *vol);
/* Zeroes the volume. */
CTR_API ctr_status ctr_backprojector_reset(ctr_backprojector *b);
CTR_API void ctr_backprojector_free(ctr_backprojector *b);

/* ------------------------------------------------------------------------- */
/* Memory planning and streamed (out-of-core) FDK                            */
/* ------------------------------------------------------------------------- */

/* Where filtered projections wait between subvolumes (each projection is
 * filtered once; later subvolumes reuse the filtered copy). */
typedef enum ctr_fdk_store {
  CTR_FDK_STORE_AUTO = 0,
  CTR_FDK_STORE_DEVICE = 1,  /* resident in GPU memory (CUDA only) */
  CTR_FDK_STORE_HOST = 2,    /* host memory, uploaded again for each later subvolume */
  CTR_FDK_STORE_SCRATCH = 3, /* a scratch file, read back for each later subvolume */
  CTR_FDK_STORE_NONE = 4     /* not kept: one subvolume needs each filtered view once */
} ctr_fdk_store;

CTR_API const char *ctr_fdk_store_name(ctr_fdk_store s);

/* How several workers (GPUs, or CPU engines) share one FDK run (Okitsu et
 * al. 2010; docs/multi-gpu.md). */
typedef enum ctr_fdk_split {
  CTR_FDK_SPLIT_AUTO = 0,       /* the planner's cost model chooses */
  CTR_FDK_SPLIT_VOLUME = 1,     /* voxel parallelism: each worker reconstructs whole subvolumes from
                               every view; the result does not depend on the worker count */
  CTR_FDK_SPLIT_PROJECTIONS = 2 /* projection parallelism: each worker backprojects a share of the
                               views into every subvolume; the partial sums are added */
} ctr_fdk_split;

CTR_API const char *ctr_fdk_split_name(ctr_fdk_split s);
/* "auto", "volume", "projections". */
CTR_API ctr_status ctr_fdk_split_parse(const char *name, ctr_fdk_split *out);

/* Rates the cost model of the split uses (per worker; 0 = the built-in H100 figures,
 * docs/multi-gpu.md). */
typedef struct ctr_fdk_split_rates {
  double upload, download;    /* host <-> device, bytes/s */
  double peer;                /* device <-> device (the reduction), bytes/s */
  double host_add;            /* the host's reduction of partial sums (CPU workers), bytes/s */
  double updates, pair_updates; /* backprojection, voxel updates/s (single, mirrored pairs) */
  double filter;              /* ramp filter, detector pixels/s */
} ctr_fdk_split_rates;

#define CTR_FDK_PLAN_REQUEST_VERSION 2u
typedef struct ctr_fdk_plan_request {
  unsigned version;
  ctr_device_kind device;  /* CTR_DEVICE_CPU or CTR_DEVICE_CUDA */
  uint64_t gpu_budget;     /* bytes of GPU memory the run may use (CUDA) */
  uint64_t host_budget;    /* bytes of host memory the run may use */
  ctr_dtype proj_dtype;    /* projections as read */
  ctr_dtype vol_dtype;     /* volume as written */
  ctr_interp interp;
  int64_t z0, nz;          /* slices to reconstruct; nz = 0: all */
  int64_t views_per_batch; /* N'; 0 = automatic */
  int64_t max_slab_slices; /* upper bound on Z' (e.g. to force many subvolumes); 0 = none */
  ctr_fdk_store store;         /* CTR_FDK_STORE_AUTO: the cheapest that fits */
  int input_in_memory;     /* projections come from the caller's array (no read buffers) */
  int output_in_memory;    /* the volume goes to the caller's array (no write buffers) */
  int workers;             /* engines sharing the run (GPUs, or CPU engines); 0 = 1. Each gets
                              gpu_budget of its own device; host_budget is shared */
  ctr_fdk_split split;         /* how they share it; AUTO = the cheaper by the cost model */
  ctr_fdk_split_rates rates;   /* the cost model's rates; zeros = the built-in figures */
  /* version 2: */
  ctr_file_format out_format;  /* the volume's file format: host memory its writer holds of its
                                  own (an OME-Zarr writer's rows of chunks) is counted in
                                  host_bytes; CTR_FORMAT_AUTO = none (ctr_fdk_reconstruct_stream
                                  fills it) */
} ctr_fdk_plan_request;

#define CTR_FDK_PLAN_REQUEST_INIT                                                                \
  { CTR_FDK_PLAN_REQUEST_VERSION, CTR_DEVICE_CPU, 0, 0, CTR_DTYPE_FLOAT32, CTR_DTYPE_FLOAT32,   \
    CTR_INTERP_DEFAULT, 0, 0, 0, 0, CTR_FDK_STORE_AUTO, 0, 0, 0, CTR_FDK_SPLIT_AUTO,                 \
    { 0, 0, 0, 0, 0, 0, 0 }, CTR_FORMAT_AUTO }
/* The defaults in the layout of `version`, 1 .. CTR_FDK_PLAN_REQUEST_VERSION (core.h). */
CTR_API ctr_status ctr_fdk_plan_request_init(ctr_fdk_plan_request *s, unsigned version);

/* A decomposition of one FDK run (Lu et al. 2016, Alg. 2): the volume slices
 * [z0, z0+nz) in nslabs subvolumes of slab_slices slices (the last may be
 * shorter), the views in batches of views_per_batch, the filtered views kept
 * in `store`, and the buffers the executor allocates. */
#define CTR_FDK_PLAN_VERSION 1u
typedef struct ctr_fdk_plan {
  unsigned version;
  ctr_device_kind device;
  int64_t z0, nz;
  int64_t slab_slices, nslabs;    /* Z' and the number of subvolumes */
  int64_t views_per_batch, nbatches; /* N' and the number of projection subsets */
  ctr_fdk_store store;
  int pair;                /* CUDA: mirrored-pair kernels (one symmetric subvolume) */
  int read_buffers;        /* host buffers of N' views between the reader and the GPU */
  int host_slab_buffers;   /* host buffers between the backend and the writer thread */
  int64_t chunk_slices;    /* slices per such buffer (a subvolume is written in chunks) */
  uint64_t gpu_bytes;      /* peak GPU memory of the plan */
  uint64_t host_bytes;     /* peak host memory of the plan */
  uint64_t scratch_bytes;  /* scratch file size (CTR_FDK_STORE_SCRATCH) */
  int workers;             /* engines sharing the run (gpu_bytes is each one's) */
  ctr_fdk_split split;         /* VOLUME with one worker */
  double seconds[3];       /* the cost model's estimate per split ([CTR_FDK_SPLIT_VOLUME],
                              [CTR_FDK_SPLIT_PROJECTIONS]; 0 where not considered) */
} ctr_fdk_plan;
#define CTR_FDK_PLAN_INIT                                                                        \
  { CTR_FDK_PLAN_VERSION, CTR_DEVICE_CPU, 0, 0, 0, 0, 0, 0, CTR_FDK_STORE_AUTO, 0, 0, 0, 0, 0, 0, 0, 0, \
    CTR_FDK_SPLIT_AUTO, { 0, 0, 0 } }
/* The defaults in the layout of `version`, 1 .. CTR_FDK_PLAN_VERSION (core.h). */
CTR_API ctr_status ctr_fdk_plan_init(ctr_fdk_plan *s, unsigned version);

/* Chooses the decomposition for geometry g within the request's budgets (a
 * pure function: no GPU, no allocation). Prefers, in order: the whole volume
 * in one subvolume, filtered views resident on the device, then in host
 * memory, then in a scratch file; subvolumes as large as the budgets allow.
 * A budget too small for any plan is CTR_E_OUT_OF_MEMORY (GPU budget:
 * CTR_E_DEVICE_OUT_OF_MEMORY) whose detail gives the smallest budget that
 * works. */
CTR_API ctr_status ctr_fdk_plan_compute(const ctr_geometry *g, const ctr_fdk_plan_request *req, ctr_fdk_plan *out);
/* One line describing the plan ("4 subvolumes of 512 slices, ..."). Returns
 * the length snprintf would have written; -1 (detail set) for a plan whose
 * version this library does not accept. */
CTR_API int ctr_fdk_plan_describe(const ctr_fdk_plan *p, char *buf, size_t n);

/* Busy time of each step of the streamed pipeline (Lu et al. 2016, Fig. 3,
 * Table 4), in seconds. The steps overlap, so they add up to more than total. */
#define CTR_FDK_STREAM_TIMINGS_VERSION 1u
typedef struct ctr_fdk_stream_timings {
  unsigned version;
  double read;        /* (1) storage -> host: reader thread busy */
  double upload;      /* (2) host -> device: raw projections */
  double filter;      /* (3) weighting and ramp filter */
  double store;       /* (4) filtered projections device -> host / scratch file */
  double reload;      /* (5) filtered projections host / scratch -> device */
  double backproject; /* (6) */
  double download;    /* (7) subvolume device -> host */
  double write;       /* (8) host -> storage: writer thread busy (incl. flushes) */
  double total;       /* wall time of the whole call: set-up, the last byte
                         flushed, and freeing the buffers */
  double setup;       /* allocations and plans before the first read */
  double reduce;      /* (9) projection split: adding the workers' partial sums */
  double wait;        /* a worker's time waiting for filtered views of other workers */
} ctr_fdk_stream_timings;
#define CTR_FDK_STREAM_TIMINGS_INIT { CTR_FDK_STREAM_TIMINGS_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_FDK_STREAM_TIMINGS_VERSION (core.h). */
CTR_API ctr_status ctr_fdk_stream_timings_init(ctr_fdk_stream_timings *s, unsigned version);

/* Called with each finished piece of subvolume (float32, nx x ny x nz slices
 * from slice z0 of the run) before it is written. With several workers it is
 * called from their threads, for different slices at once. */
typedef void (*ctr_slab_fn)(void *user, int64_t z0, int64_t nz, const float *slab);

/* Version 1 held ctr_fdk_options version 1 (without strict); version 2 holds
 * version 2, and workers and split; version 3 adds cluster; version 4 holds ctr_fdk_options
 * version 3; version 5 adds overwrite; version 6 holds ctr_fdk_options version 4 (offset
 * weights). The embedded fdk options keep their own version field: any version up to the one the stream options' version holds. */
#define CTR_FDK_STREAM_OPTIONS_VERSION 6u /* 5: overwrite; 6: ctr_fdk_options 4 inside */
typedef struct ctr_fdk_stream_options {
  unsigned version;
  ctr_fdk_options fdk;   /* filter, interpolation, slices (z0, nz) */
  uint64_t gpu_budget;   /* 0 = detected (ctr_context_get_memory_budgets) */
  uint64_t host_budget;  /* 0 = detected */
  int64_t max_slab_slices; /* force smaller subvolumes; 0 = as the budgets allow */
  ctr_fdk_store store;       /* force where filtered views wait; AUTO = planner's choice */
  const char *scratch_dir; /* for CTR_FDK_STORE_SCRATCH; NULL = beside the output */
  double input_scale;    /* projections are divided by this (0 = 1) */
  ctr_dtype out_dtype;   /* volume file dtype (0 = float32) */
  double out_scale;      /* uint16 stores value x out_scale, rounded, clamped (0 = 1) */
  int resume;            /* continue an interrupted run from <out>.partial */
  ctr_slab_fn on_slab;   /* optional */
  void *user;
  int workers;           /* engines: 0 = one per device of a CUDA context (ctr_context_get_device_count),
                            1 on the CPU; N > 0: N engines, on a CUDA context spread over its
                            devices in turn (several on one GPU when N exceeds them), on the
                            CPU sharing its cores (at most CTR_MAX_WORKERS) */
  ctr_fdk_split split;       /* AUTO = the planner's cost model chooses (one worker: VOLUME) */
  const ctr_cluster *cluster; /* NULL: this process alone; else every rank of the cluster calls
                                 ctr_fdk_stream with the same arguments and reconstructs a share
                                 of the slices into the one output (docs/distributed.md) */
  int overwrite;         /* 1: replace an existing output (ctr_stack_create); 0 (default): an
                            output that exists is refused before anything is read
                            (CTR_E_INVALID_ARGUMENT naming it, field "overwrite"), and one that
                            appears while the run writes is kept (the run fails at its end) */
} ctr_fdk_stream_options;

#define CTR_FDK_STREAM_OPTIONS_INIT                                                           \
  { CTR_FDK_STREAM_OPTIONS_VERSION, CTR_FDK_OPTIONS_INIT, 0, 0, 0, CTR_FDK_STORE_AUTO, NULL, 1.0,   \
    CTR_DTYPE_FLOAT32, 1.0, 0, NULL, NULL, 0, CTR_FDK_SPLIT_AUTO, NULL, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_FDK_STREAM_OPTIONS_VERSION (core.h). */
CTR_API ctr_status ctr_fdk_stream_options_init(ctr_fdk_stream_options *s, unsigned version);

/* Engines one run can use (ctr_fdk_stream_options.workers). */
#define CTR_MAX_WORKERS 16

/* What a streamed run did. Filled by the library in the version the caller
 * set (ctr_fdk_stream_report_init or CTR_FDK_STREAM_REPORT_INIT), with the plan and
 * timings in the versions that version holds. Version 2 adds the helical
 * window the run used. */
#define CTR_FDK_STREAM_REPORT_VERSION 2u
typedef struct ctr_fdk_stream_report {
  unsigned version;
  ctr_fdk_plan plan;
  ctr_fdk_stream_timings timings;
  int64_t nonfinite;        /* projection values NaN, infinite or beyond +-1e24, replaced by 0 */
  int64_t out_nonfinite;    /* voxels NaN, infinite or beyond +-1e24, replaced by 0 before writing */
  int64_t below, above;     /* uint16 output: voxels clamped to 0 / 65535 */
  int64_t slabs_resumed;    /* subvolumes found complete in the journal (and unchanged on
                               disk: their CRC-32 matched) */
  float min, max;           /* range of the reconstructed values: the whole output, resumed
                               subvolumes included (below, above too) */
  int64_t slices_resumed;   /* slices of those subvolumes; timings cover the others only */
  /* 1 when this call left a partial output and journal on disk that a call
   * with resume (and the same inputs and options) continues: the ones it
   * kept after failing, or an interrupted run's that it refused to
   * overwrite, or to resume with other inputs or options. 0 after success,
   * when none is left, and when the call found the journal or the partial
   * output damaged, truncated or gone (delete both to start over). The same
   * in ctr_fdk_stream_report and ctr_fbp_stream_report. */
  int resumable;
  char journal[4096];       /* ctr_fdk_stream that fails: the journal left on disk, usable or
                               not ("" when none is, and after success) */
  int workers;              /* engines that ran (plan.workers) */
  int worker_device[CTR_MAX_WORKERS];     /* the GPU ordinal of each (-1: CPU) */
  ctr_fdk_stream_timings worker_timings[CTR_MAX_WORKERS]; /* each one's busy times (upload, filter,
                                                         store, reload, backproject, download,
                                                         reduce, wait); `timings` sums them */
  double helix_window_deg;  /* version 2: on a helix, the window smoothing width helical FDK
                               used (degrees: window_deg, or the automatic choice,
                               ctr_geometry_get_helix_window); -1 for other orbits */
  int helix_window_auto;    /* version 2: 1 when the library chose that window */
} ctr_fdk_stream_report;
#define CTR_FDK_STREAM_REPORT_INIT                                                                 \
  { CTR_FDK_STREAM_REPORT_VERSION, CTR_FDK_PLAN_INIT, CTR_FDK_STREAM_TIMINGS_INIT, 0, 0, 0, 0, 0, 0, 0, 0, \
    0, "", 0, { 0 }, { CTR_FDK_STREAM_TIMINGS_INIT }, -1.0, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_FDK_STREAM_REPORT_VERSION (core.h). */
CTR_API ctr_status ctr_fdk_stream_report_init(ctr_fdk_stream_report *s, unsigned version);

/* Streamed FDK from a projection file to a volume file (Lu et al. 2016, Alg. 2):
 * a reader thread loads projection subsets, the backend filters each
 * projection once and backprojects subvolume after subvolume, a writer
 * thread stores each finished subvolume at its offset. Nothing needs the
 * whole projection set or volume in memory. Output goes to "<out>.partial"
 * with a journal "<out>.partial.journal" of finished subvolumes, renamed
 * onto `out` only when every slice is written and flushed; on error or
 * cancellation the partial output and journal stay for opts->resume, which
 * skips the journalled subvolumes and gives a result bit-identical to an
 * uninterrupted run. Each journal line holds the CRC-32 of its subvolume's
 * bytes; a resume reads the journalled subvolumes back and computes again
 * (logging a warning that names it) any whose bytes changed on disk. The
 * volume has the geometry's nx x ny and the slices of opts->fdk (uint16 input
 * is converted; bad values follow opts->fdk.strict). An `out` that exists is
 * refused before anything is read, and one that appears meanwhile kept,
 * unless opts->overwrite (docs/api.md).
 * report may be NULL; on failure it says whether the run can be resumed
 * and where its journal is. */
CTR_API ctr_status ctr_fdk_stream(ctr_context *ctx, const ctr_geometry *g,
                                  const ctr_fdk_stream_options *opts, ctr_stack_reader *projections,
                                  const char *out, ctr_file_format out_format,
                                  ctr_fdk_stream_report *report);

/* The same pipeline between arrays in memory (proj: nu x nv x nviews float32
 * or uint16; vol: nx x ny x nz float32), in host or GPU memory as for
 * ctr_fdk. ctr_fdk is this with default budgets. */
CTR_API ctr_status ctr_fdk_stream_memory(ctr_context *ctx, const ctr_geometry *g,
                                         const ctr_fdk_stream_options *opts, const ctr_array *proj,
                                         ctr_array *vol, ctr_fdk_stream_report *report);

/* Autotunes cone-beam backprojection for a run of (g, opts) on ctx's first
 * GPU (docs/tuning.md, "Autotuning"): the launch shape (bp_slices x
 * bp_block) of the kernel such a run uses (opts->interp), from the cache or
 * the context's earlier result, else (and always with force) by timing the
 * candidates' launches over g's whole volume (a run's class when the volume
 * fits the GPU in one slab; a run of smaller slabs tunes its own at its start);
 * the winner is cached, so later runs of that class use it without timing. report (required) is filled: every
 * candidate timed, the defaults first, and the choice; `note` says why
 * nothing was tuned (ctr_tuning.tune off, both fields set by hand, the
 * general kernel). CTR_E_UNSUPPORTED on a CPU context (nothing to tune). */
CTR_API ctr_status ctr_tune_fdk(ctr_context *ctx, const ctr_geometry *g, const ctr_fdk_options *opts,
                                int force, ctr_tune_report *report);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_CONEBEAM_H */
