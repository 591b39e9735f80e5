/* Iterative reconstruction internals shared by the projector, the planner,
 * the algorithms and the CPU and CUDA backends: the projector object, the
 * vectors the algorithms work on and the CPU kernels (cpu/). The backends
 * are reached through their tables (backend.h); the CUDA entry points are
 * declared in cuda/iterative_cuda.h. */
#ifndef CTR_ITERATIVE_INTERNAL_H
#define CTR_ITERATIVE_INTERNAL_H

#include "core/internal.h"
#include "iterative/itmath.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A vector of the volume's or the projections' space, in host or GPU
 * memory. Projections are views after views ("slots"), each nu x nv, u
 * fastest; slot w holds geometry view order[w] of the projector. */
typedef struct ctr__vec {
  float *data;
  int64_t n;
  int device; /* 1: GPU memory of the projector's device */
} ctr__vec;

struct ctr__it_backend;

struct ctr_projector {
  ctr_context *ctx;
  const struct ctr__it_backend *be; /* the context's backend (backend.h) */
  int parallel;               /* 0: cone beam, 1: parallel beam */
  ctr_geometry *g;            /* cone beam: own copy (the fast pair's backprojector and the
                                 FDK start use it) */
  ctr_parallel_geometry *pg;  /* parallel beam: own copy (the FBP start uses it) */
  ctr_projector_options o;
  int64_t n[3];               /* volume nx, ny, nz */
  double vox[3];              /* voxel size, mm */
  int64_t nu, nv, nviews;     /* projection slots: nviews of nu x nv */
  int64_t user_dims[3];       /* the projections as the API lays them out */
  ctr__it_view *views;        /* per geometry view */
  int64_t *order;             /* slot -> geometry view (identity unless an algorithm set one) */
  float *cols;                /* per geometry view, per detector column, the line (A_p, B_p)
                                 its rays share when the view is column-separable (itmath.h,
                                 "The adjoint of column-separable views"); nviews x nu x 2 */
  ctr_device_kind device;     /* the context's resolved backend */
  int gpu;                    /* its CUDA ordinal */
  /* How the next operations decompose (the plan in force; ctr__proj_use). */
  int64_t slab_slices;        /* slices per slab of the forward projection (and of the adjoint
                                 when the volume is in host memory) */
  int64_t block_views;        /* views per block when both spaces are in host memory */
  int64_t batch_views;        /* views per adjoint batch */
  void *cuda;                 /* the CUDA backend's buffers (NULL until first used) */
  ctr_backprojector *fast_bp; /* the fast pair's backprojector (NULL until first used), kept
                                 for the projector's lifetime: slabs of up to fast_nz slices */
  int64_t fast_nz;
  void *cuda_fast;            /* the CUDA backend's fast-pair chunk buffer and events */
  int order_changed;          /* the CUDA backend's copy of the views is stale */
  /* Accounting for the report. */
  double seconds_forward, seconds_adjoint;
  int64_t views_forward, views_adjoint;
  /* A split over workers (workers.c, ctr_projector_options.workers):
   * workers[0] is this projector, workers[1 ..] share its views and order
   * (owner points back here), each on its GPU with its backend buffers;
   * wx[k], wy[k] are worker k's copies of backend vectors (until freed). */
  int nworkers;
  struct ctr_projector **workers;
  ctr__vec *wx, *wy;
  struct ctr_projector *owner; /* a worker's owner; NULL for a projector of the API */
};

/* ---- Workers (workers.c) --------------------------------------------------- */

/* The workers of ctr_projector_options.workers on the context's GPUs (one,
 * the projector itself, on the CPU); CTR_E_INVALID_ARGUMENT naming the field
 * for a count outside 0 .. CTR_MAX_WORKERS. */
ctr_status ctr__proj_workers_create(ctr_projector *p);
void ctr__proj_workers_free(ctr_projector *p);
/* After the plan or the slot order changed: the workers follow. */
void ctr__proj_workers_follow(ctr_projector *p);
/* The forward projection of slots [w0, w1) (split by views) or the matched
 * adjoint (split by slices) over the workers, at once; the bits of one. */
ctr_status ctr__proj_workers_run(ctr_projector *p, int forward, ctr__vec *x, ctr__vec *y,
                                 int64_t w0, int64_t w1);

/* ---- Projector (projector.c) --------------------------------------------- */

/* The volume and projection sizes in elements (inline: the backends below
 * the projector's object file use them). */
static inline int64_t ctr__proj_vol_count(const ctr_projector *p) {
  return p->n[0] * p->n[1] * p->n[2];
}
static inline int64_t ctr__proj_proj_count(const ctr_projector *p) {
  return p->nu * p->nv * p->nviews;
}
/* Sets the slot order (NULL = identity); the views of slot w become
 * order[w]. */
ctr_status ctr__proj_set_order(ctr_projector *p, const int64_t *order);
/* Puts a plan's decomposition in force for the internal operations. */
void ctr__proj_use(ctr_projector *p, const ctr_iterate_plan *plan);
/* y[w0, w1) = A x for slots [w0, w1) (the other slots are untouched). */
ctr_status ctr__proj_forward(ctr_projector *p, const ctr__vec *x, ctr__vec *y, int64_t w0,
                             int64_t w1);
/* x = A^T y over slots [w0, w1) (the fast pair's backprojector when the
 * projector is unmatched). */
ctr_status ctr__proj_adjoint(ctr_projector *p, const ctr__vec *y, ctr__vec *x, int64_t w0,
                             int64_t w1);
/* The fast pair's weighting of geometry view `view` (itmath.h
 * ctr__it_fast_weight; cone beam). */
ctr_status ctr__proj_fast_view(const ctr_projector *p, int64_t view, ctr__it_fast_view *w);
/* From the API's projection layout to the slots and back (slot w holds
 * view order[w]; the other views of `user` are untouched). */
void ctr__proj_to_slots(const ctr_projector *p, const float *user, float *slots);
void ctr__proj_from_slots(const ctr_projector *p, const float *slots, float *user);
/* The grid box of slices [z0, z1): b0 = (0, 0, z0), b1 = (nx, ny, z1). */
static inline void ctr__proj_box(const ctr_projector *p, int64_t z0, int64_t z1, int64_t b0[3],
                                 int64_t b1[3]) {
  b0[0] = 0, b0[1] = 0, b0[2] = z0;
  b1[0] = p->n[0], b1[1] = p->n[1], b1[2] = z1;
}

/* ---- CPU backend (cpu/) --------------------------------------------------- */

/* y (slots [w0, w1), nu x nv each, at their places in y) = (accumulate ? y :
 * 0) + the Joseph projection of slab [z0, z1) of the volume (x_slab: its
 * nx x ny x (z1 - z0) voxels; voxels outside the slab count as 0). */
ctr_status ctr__it_cpu_forward(const ctr_projector *p, const float *x_slab, int64_t z0, int64_t z1,
                               float *y, int64_t w0, int64_t w1, int accumulate);
/* x_slab (slices [z0, z1)) = (accumulate ? x_slab : 0) + the exact adjoint of
 * slots [w0, w1) of y, views in slot order. */
ctr_status ctr__it_cpu_adjoint(const ctr_projector *p, const float *y, int64_t w0, int64_t w1,
                               float *x_slab, int64_t z0, int64_t z1, int accumulate);
/* The double-precision reference of the forward projection of the whole
 * volume, slot order: out[r] = the projection of ray r, and (mag not NULL)
 * mag[r] = len * the sum over its samples of |each of the four neighbours|
 * (zero-weight ones too) and planes[r] = the planes the float projection
 * steps over: the terms of the summation-order bound (docs/iterative.md). */
ctr_status ctr__it_reference_forward(const ctr_projector *p, const float *x, double *out,
                                     double *mag, int64_t *planes);

/* Host vector operations (cpu/vecops_cpu.c). Every reduction adds in double
 * over fixed chunks of CTR__VEC_CHUNK elements, then the chunks in order: the
 * result does not depend on the number of threads. Elementwise float
 * operations are never contracted, the same bits as the GPU's. nt: OpenMP
 * threads. */
#define CTR__VEC_CHUNK 65536
void ctr__hvec_fill(int nt, float *y, int64_t n, float c);
void ctr__hvec_copy(int nt, float *dst, const float *src, int64_t n);
void ctr__hvec_comb(int nt, float *z, int64_t n, float a, const float *x, float b, const float *y);
void ctr__hvec_mul(int nt, float *z, int64_t n, const float *x, const float *y);
void ctr__hvec_recip(int nt, float *y, int64_t n, const float *x, float threshold);
void ctr__hvec_clip(int nt, float *y, int64_t n, float lo, float hi);
double ctr__hvec_dot(int nt, const float *x, const float *y, int64_t n);
double ctr__hvec_dist2(int nt, const float *x, const float *y, int64_t n);
/* TV prox steps on an nx x ny x nz volume (docs/iterative.md): z = clip(g +
 * mu div P, lo, hi); P = proj(P + tau grad z). P holds three volumes. */
void ctr__hvec_tv_primal(int nt, float *z, const float *g, const float *P, const int64_t n[3], float mu,
                         float lo, float hi);
void ctr__hvec_tv_dual(int nt, float *P, const float *z, const int64_t n[3], float tau);
/* The PWLS penalty operation (itmath.h ctr__it_penalty_at) on slices [z0,
 * z1) of an nx x ny x nz volume: out there from x and v (either may be
 * NULL, as there), read on slices [z0 - 1, z1 + 1) within the volume (the
 * slab's one-plane halos); the three point at slice 0 of whole volumes and
 * out is neither x nor v. */
void ctr__hvec_penalty(int nt, float *out, const float *x, const float *v, const int64_t n[3],
                       float delta, int64_t z0, int64_t z1);
/* y = i0 exp(-x) (itmath.h ctr__it_count_weight). */
void ctr__hvec_count_weights(int nt, float *y, int64_t n, const float *x, double i0);

/* ---- Vectors (vecops.c): dispatch on where each lives ------------------------ */

/* A vector of n floats on the device (device = 1) or in host memory
 * (pinned when a GPU is usable); zeroed. */
ctr_status ctr__vec_alloc(ctr_projector *p, int64_t n, int device, ctr__vec *out);
void ctr__vec_free(ctr_projector *p, ctr__vec *v);
/* The part [off, off + n) of v. */
ctr__vec ctr__vec_part(const ctr__vec *v, int64_t off, int64_t n);
ctr_status ctr__vec_fill(ctr_projector *p, ctr__vec *y, float c);
/* dst = src (same length; either may be on the device). */
ctr_status ctr__vec_copy(ctr_projector *p, ctr__vec *dst, const ctr__vec *src);
/* Between a vector and host memory the caller owns. */
ctr_status ctr__vec_upload(ctr_projector *p, ctr__vec *dst, const float *src);
ctr_status ctr__vec_download(ctr_projector *p, float *dst, const ctr__vec *src);
/* z = a x + b y (z may be x or y; y may be NULL when b is 0). */
ctr_status ctr__vec_comb(ctr_projector *p, ctr__vec *z, float a, const ctr__vec *x, float b,
                         const ctr__vec *y);
/* z = x * y elementwise. */
ctr_status ctr__vec_mul(ctr_projector *p, ctr__vec *z, const ctr__vec *x, const ctr__vec *y);
/* y = 1 / x where x > threshold, else 0. */
ctr_status ctr__vec_recip(ctr_projector *p, ctr__vec *y, const ctr__vec *x, float threshold);
/* y = min(max(y, lo), hi). */
ctr_status ctr__vec_clip(ctr_projector *p, ctr__vec *y, float lo, float hi);
/* <x, y> and ||x - y||^2 in double. */
ctr_status ctr__vec_dot(ctr_projector *p, const ctr__vec *x, const ctr__vec *y, double *out);
ctr_status ctr__vec_dist2(ctr_projector *p, const ctr__vec *x, const ctr__vec *y, double *out);
/* The data policy: bad values of v replaced by 0, their count added to *bad. */
ctr_status ctr__vec_sanitize(ctr_projector *p, ctr__vec *v, int64_t *bad);
/* The TV prox steps on volume vectors (P: one vector of three volumes). */
ctr_status ctr__vec_tv_primal(ctr_projector *p, ctr__vec *z, const ctr__vec *g, const ctr__vec *P,
                              float mu, float lo, float hi);
ctr_status ctr__vec_tv_dual(ctr_projector *p, ctr__vec *P, const ctr__vec *z, float tau);
/* The PWLS penalty operation on whole volume vectors: out = op(x, v)
 * (itmath.h ctr__it_penalty_at; x or v NULL as there). */
ctr_status ctr__vec_penalty(ctr_projector *p, ctr__vec *out, const ctr__vec *x, const ctr__vec *v,
                            float delta);
/* y = i0 exp(-x): the count weights of log-transformed projections x. */
ctr_status ctr__vec_count_weights(ctr_projector *p, ctr__vec *y, const ctr__vec *x, double i0);

/* ---- Plans (plan.c) --------------------------------------------------------- */

/* Vectors of each space an algorithm keeps (options resolved). */
void ctr__it_vectors(const ctr_iterate_options *o, int64_t *volumes, int64_t *projections);
/* The plan for n_vol / n_proj vectors (ctr_iterate_plan_compute with explicit
 * counts: the projector's own forward and adjoint calls use 1 and 1). */
ctr_status ctr__it_plan(const ctr_projector *p, int64_t volumes, int64_t projections, int fast,
                        ctr_device_kind device, uint64_t gpu_budget, uint64_t host_budget,
                        int64_t max_slab_slices, ctr_iterate_plan *out);
/* Bytes of the plane stacks, ray tables and staging of a slab of zs slices
 * and an adjoint batch of nb views (the CUDA backend allocates by it). */
uint64_t ctr__it_layout_bytes(const ctr_projector *p, int64_t zs);
uint64_t ctr__it_table_bytes(const ctr_projector *p, int64_t nb);
/* Largest slab thickness whose plane stacks index within int (the kernels'
 * in-plane offsets) and fit the GPU's launch grids. */
int64_t ctr__it_max_slab(const ctr_projector *p);

/* ---- Checkpoints (checkpoint.c) ---------------------------------------------
 * A kind of the streamed executor's checkpoint (stream/checkpoint.h); its
 * resume semantics are every command's (stream/output.h, "Resume"). */

/* What identifies a run's mathematics: a checkpoint resumes only a run
 * that matches it field by field. */
typedef struct ctr__it_fingerprint {
  int64_t algorithm, n[3], nu, nv, nviews, subsets, tv_iterations, nonneg, box, pair;
  double relaxation, tv_weight, lower, upper;
  int64_t geometry, data; /* checksums of the views' rays and of the projections */
  int64_t slab_slices;    /* the plan's slab: another one sums the forward in another order */
  int64_t penalty, weights; /* PWLS: the penalty, the checksum of the caller's weights (0:
                               none) */
  double beta, huber_delta, i0;
} ctr__it_fingerprint;

/* CRC-32 of n bytes; beyond 256 MiB, of 1024 evenly spaced blocks of 256 KiB
 * (a different data set differs there; a sum of everything would cost a
 * pass over up to the whole projections). */
int64_t ctr__it_checksum(const void *data, int64_t n);

#define CTR__IT_MAX_STATE 8
#define CTR__IT_SCALARS 8
typedef struct ctr__it_state {
  int64_t iteration;                   /* finished iterations */
  double scalars[CTR__IT_SCALARS];     /* the algorithm's (step sizes, norms) */
  int nvec;
  ctr__vec *vec[CTR__IT_MAX_STATE];    /* the vectors of the state, in order */
  /* the history: CTR__IT_HIST doubles per finished iteration from the first
     (residual, relative residual, error or -1, seconds since the run's start) */
  double *hist;
  int64_t nhist, hist_cap;
} ctr__it_state;
#define CTR__IT_HIST 4

/* Writes the state to `path` atomically (a temporary renamed into place). */
ctr_status ctr__it_checkpoint_write(ctr_projector *p, const char *path,
                                    const ctr__it_fingerprint *fp, const ctr__it_state *s);
/* The start of a run with a checkpoint (ctr__checkpoint_begin): the run's
 * lock on "<checkpoint>.lock" (another process's run holding it:
 * CTR_E_INVALID_ARGUMENT "... is in use by process N"), then the resume
 * rules naming ctr_iterate_options.resume: a checkpoint there without
 * resume is refused, and so is resume without one. End removes the lock
 * file and releases the lock (lock -1: none); the checkpoint stays. */
ctr_status ctr__it_checkpoint_begin(const char *checkpoint, int resume, int *lock);
void ctr__it_checkpoint_end(const char *checkpoint, int lock);
/* Reads a checkpoint into the state's vectors (their sizes must match),
 * scalars and history (s->hist replaced: malloc'd, or NULL for a checkpoint
 * without one; all only when the whole file checked); errors name the file
 * and the field that differs. */
ctr_status ctr__it_checkpoint_read(ctr_projector *p, const char *path,
                                   const ctr__it_fingerprint *fp, ctr__it_state *s);

#ifdef __cplusplus
}
#endif
#endif
