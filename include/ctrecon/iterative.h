/* ctrecon/iterative.h — iterative reconstruction: a projector (forward
 * projection A and its exact adjoint A^T) for cone-beam and parallel-beam
 * geometries, and SIRT, CGLS, OS-SART, FISTA-TV, PDHG-TV and PWLS on it, in
 * GPU memory or slab-wise beyond it. docs/iterative.md describes the model, the algorithms
 * and their memory. Include <ctrecon.h> (all of the API) or this header. */
#ifndef CTRECON_ITERATIVE_H
#define CTRECON_ITERATIVE_H

#include "ctrecon/export.h"
#include "ctrecon/geometry.h"
#include "ctrecon/parbeam.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Projector                                                                 */
/* ------------------------------------------------------------------------- */

/* Which adjoint a projector applies. */
typedef enum ctr_projector_pair {
  CTR_PAIR_MATCHED = 0, /* A^T is the exact transpose of A (ray-driven Joseph forward, its
                           transpose as a voxel-driven gather): <Ax, y> = <x, A^T y> to float
                           rounding */
  CTR_PAIR_FAST = 1     /* A with the voxel-driven FDK backprojector (ctr_backprojector) scaled
                           to approximate A^T: unmatched (ctr_projector_is_matched is 0), cone
                           beam only */
} ctr_projector_pair;

/* "matched", "fast". */
CTR_API const char *ctr_projector_pair_name(ctr_projector_pair p);
CTR_API ctr_status ctr_projector_pair_parse(const char *name, ctr_projector_pair *out);

#define CTR_PROJECTOR_OPTIONS_VERSION 2u
typedef struct ctr_projector_options {
  unsigned version;
  ctr_projector_pair pair;
  uint64_t gpu_budget;     /* bytes of GPU memory a forward or adjoint call may use; 0 = free
                              memory of the context's GPU less 1 GiB */
  int64_t max_slab_slices; /* at most this many slices per slab (forces slab-wise projection,
                              e.g. to test it); 0 = as the budget allows */
  /* version 2 */
  int workers;             /* CUDA: projectors sharing each forward projection (by views) and
                              matched adjoint (by slices), on the context's GPUs in turn
                              (several on one GPU when workers exceeds them); 0 = one per GPU
                              of the context; the results do not depend on it (docs/iterative.md,
                              "Several GPUs"). The CPU backend runs one (its threads share the
                              work). 0 .. 16 */
} ctr_projector_options;

#define CTR_PROJECTOR_OPTIONS_INIT { CTR_PROJECTOR_OPTIONS_VERSION, CTR_PAIR_MATCHED, 0, 0, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_PROJECTOR_OPTIONS_VERSION. */
CTR_API ctr_status ctr_projector_options_init(ctr_projector_options *s, unsigned version);

/* A linear operator A from a volume to projections, and its adjoint.
 *
 * Forward projection (Joseph 1982): each ray (one per detector pixel centre
 * and view) is sampled once per voxel plane across its dominant axis (the
 * axis it advances most along, in voxels), bilinearly in that plane (zero
 * outside the volume), and the samples are summed times the ray's length per
 * plane (mm). Projections are line integrals: a volume in 1/mm gives
 * projections in the phantom's units (density x mm).
 *
 * Layouts: a volume is nx x ny x nz float32, x fastest. Cone-beam
 * projections are nu x nv x nviews (u fastest, then v, then the view) as
 * everywhere in ctrecon; parallel-beam projections are sinograms, nbins x
 * nangles x nslices (bins fastest), and the volume nx x ny x nslices. */
/* Threads: a projector serves one thread at a time (it keeps scratch
 * vectors and GPU buffers); several projectors on one context work at
 * once and give the bits each gives alone (tests/test_threads.c). */
typedef struct ctr_projector ctr_projector;

/* A projector for a cone-beam geometry (circular orbit or per-view
 * matrices); g is copied. The source must be at least one voxel outside
 * the volume in every view (CTR_E_GEOMETRY otherwise). opts may be NULL. */
CTR_API ctr_status ctr_projector_create_cone(ctr_context *ctx, const ctr_geometry *g,
                                             const ctr_projector_options *opts,
                                             ctr_projector **out);
/* A projector for nslices parallel-beam slices of g's slice grid (one
 * sinogram row per slice; slices are pixel_size mm apart, the pixel_size of
 * g, or 1). g's parameters are copied. opts may be NULL. */
CTR_API ctr_status ctr_projector_create_parallel(ctr_context *ctx, const ctr_parallel_geometry *g,
                                                 int64_t nslices,
                                                 const ctr_projector_options *opts,
                                                 ctr_projector **out);
/* Frees a projector; accepts NULL. */
CTR_API void ctr_projector_free(ctr_projector *p);

/* The volume's nx, ny, nz and the projections' three dimensions (fastest
 * first: nu, nv, nviews for cone beam; nbins, nangles, nslices for parallel
 * beam). */
CTR_API void ctr_projector_get_volume_dims(const ctr_projector *p, int64_t dims[3]);
CTR_API void ctr_projector_get_projection_dims(const ctr_projector *p, int64_t dims[3]);
/* 1 when the adjoint is the exact transpose of the forward projection
 * (CTR_PAIR_MATCHED), 0 for the fast unmatched pair. */
CTR_API int ctr_projector_is_matched(const ctr_projector *p);

/* proj = A vol (overwritten). Host arrays in the layouts above. On a CUDA
 * context the work runs on the GPU, slab by slab when vol and proj do not fit
 * the budget. */
CTR_API ctr_status ctr_projector_forward(ctr_projector *p, const float *vol, float *proj);
/* vol = A^T proj (overwritten); with CTR_PAIR_FAST the unmatched
 * backprojector instead. */
CTR_API ctr_status ctr_projector_adjoint(ctr_projector *p, const float *proj, float *vol);
/* The same on arrays in GPU memory of the projector's device (a CUDA
 * context): vol and proj are device pointers (cudaMalloc, managed memory, or
 * another library's GPU arrays, e.g. CuPy's, as the Python package passes
 * them) in the layouts above, read and written in place: nothing passes
 * through host memory. The call synchronises the device first (the arrays'
 * producers on any stream finish) and returns when the result is written.
 * CTR_E_UNSUPPORTED on a CPU context or a build without CUDA;
 * CTR_E_INVALID_ARGUMENT naming the argument when a pointer is not GPU
 * memory of the projector's device. */
CTR_API ctr_status ctr_projector_forward_device(ctr_projector *p, const float *vol, float *proj);
CTR_API ctr_status ctr_projector_adjoint_device(ctr_projector *p, const float *proj, float *vol);

/* ------------------------------------------------------------------------- */
/* Iterative reconstruction                                                  */
/* ------------------------------------------------------------------------- */

typedef enum ctr_iterate_algorithm {
  CTR_ITERATE_SIRT = 0,    /* simultaneous iterations, row and column sum weights */
  CTR_ITERATE_CGLS = 1,    /* conjugate gradients on the normal equations (unconstrained) */
  CTR_ITERATE_OS_SART = 2, /* ordered subsets of views, SART weights per subset */
  CTR_ITERATE_FISTA_TV = 3, /* accelerated proximal gradient with total variation */
  CTR_ITERATE_PDHG_TV = 4,  /* primal-dual hybrid gradient (Chambolle and Pock 2011) with
                               isotropic total variation: FISTA-TV's problem, exact TV steps */
  CTR_ITERATE_PWLS = 5      /* penalised weighted least squares by preconditioned conjugate
                               gradients (unconstrained): statistical weights, an optional
                               quadratic or Huber roughness penalty */
} ctr_iterate_algorithm;

/* "sirt", "cgls", "os-sart", "fista-tv", "pdhg-tv", "pwls". */
CTR_API const char *ctr_iterate_algorithm_name(ctr_iterate_algorithm a);
CTR_API ctr_status ctr_iterate_algorithm_parse(const char *name, ctr_iterate_algorithm *out);

/* PWLS's roughness penalty R(x): a sum over every pair of 6-neighbours of
 * the voxel grid (each pair once, pairs inside the volume) of psi(x_j -
 * x_k) (docs/iterative.md, "PWLS"). */
typedef enum ctr_iterate_penalty {
  CTR_PENALTY_NONE = 0,      /* R = 0: weighted least squares */
  CTR_PENALTY_QUADRATIC = 1, /* psi(t) = t^2 / 2 */
  CTR_PENALTY_HUBER = 2      /* Huber's psi: t^2 / 2 for |t| <= delta, delta |t| - delta^2 / 2
                                beyond (edges cost linearly) */
} ctr_iterate_penalty;

/* "none", "quadratic", "huber". */
CTR_API const char *ctr_iterate_penalty_name(ctr_iterate_penalty p);
CTR_API ctr_status ctr_iterate_penalty_parse(const char *name, ctr_iterate_penalty *out);

typedef enum ctr_iterate_init {
  CTR_ITERATE_INIT_ZERO = 0,  /* x0 = 0 */
  CTR_ITERATE_INIT_FDK = 1,   /* x0 = FDK (cone beam) or FBP (parallel beam), ramp filter */
  CTR_ITERATE_INIT_GIVEN = 2  /* x0 = the volume passed in */
} ctr_iterate_init;

/* Where a run keeps its vectors (docs/iterative.md, "Memory"). */
typedef enum ctr_iterate_placement {
  CTR_PLACE_HOST = 0,     /* CPU backend: everything in host memory */
  CTR_PLACE_DEVICE = 1,   /* volumes and projections in GPU memory for the whole run */
  CTR_PLACE_PROJ_DEVICE = 2, /* projections in GPU memory; volumes in host memory, projected
                                slab by slab */
  CTR_PLACE_STREAMED = 3  /* both in host memory: slabs of the volume times blocks of views */
} ctr_iterate_placement;

CTR_API const char *ctr_iterate_placement_name(ctr_iterate_placement p);

/* What one finished iteration reports to ctr_iterate_options.on_iteration.
 * The struct only ever grows at its end. */
typedef struct ctr_iterate_info {
  int64_t iteration;        /* 1-based, counting iterations of a resumed run too */
  int64_t iterations;       /* the run's total (ctr_iterate_options.iterations) */
  double residual;          /* ||b - A x_k|| (OS-SART: the subsets' residuals as they were used,
                               sqrt of the sum of their squares) */
  double relative_residual; /* residual / ||b|| */
  double error;             /* ||x_k - truth|| / ||truth|| with a truth, else -1 */
  double seconds;           /* since the call started (resumed: since the run's first call) */
  int resumed;              /* 1: an iteration finished by an earlier call, reported again from
                               the checkpoint's history before this call's first (a resumed
                               run's callback sees the whole run; the return value is ignored) */
  /* This iteration's time in forward projections, adjoints and the rest (vector operations
     and the host's work between them); 0 for an iteration reported again (resumed). */
  double seconds_forward, seconds_adjoint, seconds_vector;
} ctr_iterate_info;

/* Return non-zero to stop after this iteration (the run then ends normally
 * with stop = CTR_ITERATE_STOP_CALLBACK). Called on the calling thread. */
typedef int (*ctr_iterate_fn)(void *user, const ctr_iterate_info *info);

#define CTR_ITERATE_OPTIONS_VERSION 2u
typedef struct ctr_iterate_options {
  unsigned version;
  ctr_iterate_algorithm algorithm;
  int64_t iterations;        /* at most this many (>= 1) */
  double tolerance;          /* also stop when ||b - A x_k|| <= tolerance ||b|| (0 = off) */
  int64_t subsets;           /* OS-SART: ordered subsets of interleaved views (0 = 10) */
  double relaxation;         /* SIRT, OS-SART: step lambda in (0, 2) (0 = 1) */
  double tv_weight;          /* FISTA-TV, PDHG-TV: W >= 0, in the volume's units: both minimise
                                ||A x - b||^2 / (2 L) + W TV(x) (L: the estimate of ||A||^2,
                                ctr_iterate_report.lipschitz); FISTA applies the prox of W TV
                                each iteration (0 = no TV: least squares) */
  int64_t tv_iterations;     /* FISTA-TV: inner iterations of the TV prox (0 = 10) */
  int64_t power_iterations;  /* FISTA-TV, PDHG-TV: iterations estimating ||A||^2 (0 = 15) */
  int nonneg;                /* x >= 0 after each update (SIRT, OS-SART, FISTA-TV, PDHG-TV) */
  int box;                   /* clamp x to [lower, upper] after each update (ditto) */
  double lower, upper;
  ctr_iterate_init init;
  const float *truth;        /* optional reference volume (the volume's layout; host or GPU
                                memory as ctr_iterate's vol): ctr_iterate_info.error each
                                iteration */
  ctr_iterate_fn on_iteration;
  void *user;
  uint64_t gpu_budget;       /* 0 = free memory of the context's GPU less 1 GiB */
  uint64_t host_budget;      /* 0 = available host memory less 10 % */
  int64_t max_slab_slices;   /* force slab-wise projection (tests); 0 = as budgets allow */
  const char *checkpoint;    /* file for the state after finished iterations and their history
                                (NULL = none); the call holds an fcntl lock on
                                "<checkpoint>.lock" (removed at the end): another process's
                                call on the same checkpoint fails, "... is in use by process N".
                                It stays after the call (a later call with resume and more
                                iterations continues from it) */
  int64_t checkpoint_every;  /* write it every N iterations and after the last (0 = 1) */
  int resume;                /* continue from `checkpoint`: the run then gives the volume an
                                uninterrupted run gives (bit for bit on the CPU). The streamed
                                FDK's and FBP's rules: without resume, a checkpoint there is
                                refused (CTR_E_INVALID_ARGUMENT naming this field and the file
                                to delete); with it, a missing one is (CTR_E_IO) */
  int strict;                /* data policy (docs/architecture.md, "Bad values") */
  /* version 2: PWLS, min_x (A x - b)^T W (A x - b) / 2 + beta R(x) (the other algorithms
     refuse these members set) */
  const float *weights;      /* W: the statistical weight of each ray, in the projections'
                                layout (host or GPU memory as proj), finite and >= 0 (0: a
                                dead pixel); the detected counts are the weights of
                                log-transformed transmission data. NULL: from i0, or W = 1 */
  double i0;                 /* > 0 (up to 1e20): W = i0 exp(-b), the expected counts of
                                log data b taken with i0 counts per unattenuated ray (0: off);
                                a weight beyond 1e24 is refused naming this field */
  ctr_iterate_penalty penalty; /* R (CTR_PENALTY_NONE) */
  double beta;               /* the penalty's weight beta >= 0, in the units of W times
                                (projection / volume unit)^2 (0 with CTR_PENALTY_NONE) */
  double huber_delta;        /* CTR_PENALTY_HUBER: delta > 0, in the volume's units */
} ctr_iterate_options;

#define CTR_ITERATE_OPTIONS_INIT                                                            \
  { CTR_ITERATE_OPTIONS_VERSION, CTR_ITERATE_SIRT, 10, 0.0, 0, 0.0, 0.0, 0, 0, 0, 0, 0.0, \
    0.0, CTR_ITERATE_INIT_ZERO, NULL, NULL, NULL, 0, 0, 0, NULL, 0, 0, 0, NULL, 0.0,      \
    CTR_PENALTY_NONE, 0.0, 0.0 }
/* The defaults in the layout of `version`, 1 .. CTR_ITERATE_OPTIONS_VERSION. */
CTR_API ctr_status ctr_iterate_options_init(ctr_iterate_options *s, unsigned version);

/* The decomposition of a run: where vectors live, slabs and view blocks,
 * memory. */
#define CTR_ITERATE_PLAN_VERSION 1u
typedef struct ctr_iterate_plan {
  unsigned version;
  ctr_device_kind device;
  ctr_iterate_placement placement;
  int64_t volumes, projections; /* vectors of each size the algorithm keeps */
  int64_t slab_slices, nslabs;  /* slices per slab, slabs per projection */
  int64_t block_views, nblocks; /* views per block of projections (STREAMED), blocks */
  int64_t batch_views;          /* views per adjoint batch (its ray tables) */
  uint64_t gpu_bytes, host_bytes; /* peak memory of the plan (host: what the library allocates;
                                     with volumes in host memory the caller's volume is the
                                     iterate, so one volume is the caller's) */
} ctr_iterate_plan;

#define CTR_ITERATE_PLAN_INIT { CTR_ITERATE_PLAN_VERSION, CTR_DEVICE_CPU, CTR_PLACE_HOST, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
CTR_API ctr_status ctr_iterate_plan_init(ctr_iterate_plan *s, unsigned version);

/* Why a run stopped. */
typedef enum ctr_iterate_stop {
  CTR_ITERATE_STOP_ITERATIONS = 0, /* the iteration count */
  CTR_ITERATE_STOP_TOLERANCE = 1,  /* the residual fell below tolerance ||b|| */
  CTR_ITERATE_STOP_CALLBACK = 2,   /* on_iteration asked */
  CTR_ITERATE_STOP_CONVERGED = 3   /* CGLS: the gradient vanished (exact solution) */
} ctr_iterate_stop;

#define CTR_ITERATE_REPORT_VERSION 3u
typedef struct ctr_iterate_report {
  unsigned version;
  ctr_iterate_plan plan;
  int64_t iterations;        /* finished, resumed ones included */
  int64_t resumed;           /* iterations found in the checkpoint (0: a fresh run) */
  ctr_iterate_stop stop;
  double initial_residual;   /* ||b - A x_0|| */
  double residual;           /* the last iteration's */
  double norm_b;             /* ||b|| */
  double lipschitz;          /* FISTA-TV: the step's L (estimate of ||A||^2, x 1.05) */
  int64_t nonfinite;         /* projection values NaN, infinite or beyond +-1e24, replaced by 0 */
  int64_t out_nonfinite;     /* voxels replaced by 0 in the result */
  int64_t forward_calls, adjoint_calls; /* projections of all views' worth */
  double seconds_forward, seconds_adjoint, seconds_total;
  /* version 2 */
  int64_t checkpointed;      /* the finished iterations the checkpoint file holds when the call
                                returns, failed or not (0: none written
                                or resumed by this call) */
  /* version 3: where the time went (seconds_total = setup + the iterations'
     forward, adjoint and vector work + the iterations' reports, checkpoints
     and callbacks + the result's copy; seconds_forward and seconds_adjoint
     count the setup's projections too, e.g. SIRT's weights) */
  double seconds_setup;      /* from the call to the first iteration's start */
  double seconds_vector;     /* the iterations' time outside the projections: vector
                                operations and the host's work between them */
} ctr_iterate_report;

#define CTR_ITERATE_REPORT_INIT \
  { CTR_ITERATE_REPORT_VERSION, CTR_ITERATE_PLAN_INIT, 0, 0, CTR_ITERATE_STOP_ITERATIONS, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
CTR_API ctr_status ctr_iterate_report_init(ctr_iterate_report *s, unsigned version);

/* The plan ctr_iterate would make for projector p and options o within the
 * budgets (a pure function of sizes: no GPU is touched, device says which
 * backend to plan for). Prefers DEVICE, then PROJ_DEVICE, then STREAMED,
 * slabs as thick as the budgets allow. A budget too small for any plan is
 * CTR_E_DEVICE_OUT_OF_MEMORY or CTR_E_OUT_OF_MEMORY naming what would fit. */
CTR_API ctr_status ctr_iterate_plan_compute(const ctr_projector *p, const ctr_iterate_options *o,
                                    ctr_device_kind device, uint64_t gpu_budget,
                                    uint64_t host_budget, ctr_iterate_plan *out);
/* One line describing the plan. Returns what snprintf would have written. */
CTR_API int ctr_iterate_plan_describe(const ctr_iterate_plan *p, char *buf, size_t n);

/* Reconstructs vol from proj with the projector's geometry and backend (the
 * context p was created with). proj: the projections (layout of
 * ctr_projector_forward); vol: the volume, overwritten (read first with
 * CTR_ITERATE_INIT_GIVEN). report may be NULL. On cancellation through the
 * context's progress callback the call returns CTR_E_CANCELLED; finished
 * iterations are in the checkpoint when one was asked for.
 *
 * Memory: with a CUDA projector, proj, vol, o->truth and o->weights may each be host
 * memory or GPU memory (device or managed: cudaMalloc, CuPy, PyTorch) of
 * the projector's GPU, detected per pointer; another GPU's memory is
 * CTR_E_INVALID_ARGUMENT naming the array, and so is any GPU array on a
 * CPU projector. The producers of GPU arrays, on any stream, finish first;
 * the call returns when vol is written. Nothing passes through host memory
 * when the plan keeps volumes and projections on the GPU
 * (CTR_PLACE_DEVICE): a GPU vol is itself the iterate (no copy; with
 * CTR_ITERATE_INIT_GIVEN its values are the start), GPU projections are
 * copied (parallel beam: transposed) into the run's device vectors on the
 * GPU. With the slab-wise placements (PROJ_DEVICE, STREAMED), whose vectors
 * are in host memory, GPU arrays are simply copied with cudaMemcpyDefault
 * (projections once in, the volume once in with CTR_ITERATE_INIT_GIVEN and
 * once out). With a checkpoint, GPU projections are also copied to host
 * memory once for its fingerprint. The result has the same bits as from
 * host arrays. */
CTR_API ctr_status ctr_iterate(ctr_projector *p, const ctr_iterate_options *o, const float *proj,
                               float *vol, ctr_iterate_report *report);

/* A convergence plot (PNG, 640 x 480): the relative residual of each
 * iteration and, when error is not NULL, the relative error, on a
 * logarithmic axis against the iteration number 1 .. n. An existing path is
 * refused unless overwrite (as ctr_stack_create). */
CTR_API ctr_status ctr_iterate_plot(const char *path, const double *relative_residual,
                                    const double *error, int64_t n, const char *title,
                                    int overwrite);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_ITERATIVE_H */
