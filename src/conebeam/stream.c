/* The streamed FDK executor (Lu et al. 2016, Alg. 2 and Fig. 3b; Okitsu et
 * al. 2010, Sect. 3-4): one code path for in-core (one subvolume) and
 * out-of-core runs, on one worker or several (GPUs, or CPU engines), on
 * either backend.
 *
 * One worker: the first subvolume's pass reads every projection subset
 * (reader thread), filters it once and keeps the filtered copy where the plan
 * says (device, host memory or a scratch file); later subvolumes backproject
 * the kept copies. Finished subvolumes go, chunk by chunk, to the writer
 * thread, which journals each one once its slices are flushed.
 *
 * Volume split (several workers, each reconstructing whole subvolumes from
 * every view): the workers take subvolumes from a queue (a faster one takes
 * more). On each worker's first subvolume, subset b is read and filtered once,
 * by worker b mod W of the workers that started; its filtered copy goes to
 * host memory (or the scratch file), where the others take it. Every voxel
 * adds the same views in the same order as with one worker, so the volume is
 * bit-identical whatever the worker count.
 *
 * Projection split (each worker a contiguous share of the subsets, into its
 * own copy of every subvolume): all workers take the same subvolume; when
 * all have finished it, worker w adds the others' partial sums of its share
 * of the slices into its own (add_from: device to device), then delivers
 * them. The sum's order depends on the worker count (docs/multi-gpu.md
 * bounds the difference).
 *
 * Workers run on threads of their own; the calling thread reports progress
 * and relays a cancellation. A file to file run is this modality's side of
 * the streamed executor (src/stream/executor.h: the output, its journal and
 * resume, the writer thread); the ops are at the end of this file. */
#include "io/io_internal.h"
#include "io/stack_partial.h"
#include "conebeam/engine.h"
#include "stream/journal.h"
#include "conebeam/fdk_internal.h"
#include "filter/filter.h"
#include "conebeam/plan_costs.h"
#include "conebeam/plan_split.h"
#include "stream/ring.h"
#include "stream/writer.h"
#include "stream/executor.h"
#include "conebeam/stream_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct stream_run stream_run;

typedef struct worker {
  stream_run *r;
  int index;            /* 0 .. workers - 1 */
  int device;           /* GPU ordinal (0 on the CPU) */
  ctr__engine *eng;
  int64_t b0, b1;       /* projection split: its subsets [b0, b1); else all */
  int64_t first;        /* volume split: its first subvolume (-1: none) */
  int rank;             /* volume split: its place among the workers that started */
  float *bounce;        /* scratch store: its filtered subset on the way to the file */
  float *fetch;         /* scratch store, volume split: another worker's subset read back */
  float *stage;         /* uint16 output: a float chunk before conversion */
  ctr__ring sring;      /* scratch store: its reader of later passes */
  int have_sring;
  int64_t out_seen;     /* the engine's out_nonfinite already checked */
  double t_store, t_wait;
  pthread_t thread;
  int started;
  ctr_status status;
  char detail[1024];
} worker;

struct stream_run {
  ctr_context *ctx;
  const ctr_geometry *g;
  ctr_fdk_stream_options opts;
  ctr_fdk_options fdk;
  ctr_fdk_plan plan;
  ctr_file_format out_fmt;  /* the output's format (its writer's own buffers are planned);
                               CTR_FORMAT_AUTO: memory output */
  int64_t kept_nu;          /* columns of a filtered view the engines keep and take back: an
                               offset detector's extended rows (ctr__fdk_row_width), else nu */
  int64_t pad_lo;           /* the extension's columns before column 0 */
  int nw;                   /* workers */
  worker w[CTR_MAX_WORKERS];
  /* source */
  ctr_stack_reader *in;     /* file source, or */
  const void *in_mem;       /* memory source */
  ctr_dtype in_dtype;
  ctr__ring ring;           /* raw reads, shared by the workers (get/put by subset) */
  int have_ring;
  int ring_started;         /* the first pass's reads began during setup */
  float **store;            /* host store (CTR_FDK_STORE_HOST, or the volume split's shared copies):
                               one pinned buffer per subset, allocated during the first pass */
  int scratch_fd;
  char *scratch_path;
  /* shared state */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int have_sync;
  unsigned char *ready;     /* per subset: its filtered copy is in the store */
  /* volume split, views resident on each device: filtered subsets pass
   * through a ring of pinned host buffers (CTR__TRANSIT_SLOTS) */
  int ntransit;
  float *transit[CTR__TRANSIT_SLOTS(CTR_MAX_WORKERS)];
  int transit_left[CTR__TRANSIT_SLOTS(CTR_MAX_WORKERS)]; /* consumers to come; 0: free */
  int *ready_slot;          /* per subset: its transit buffer */
  int64_t *todo;            /* subvolumes to compute, in order */
  int64_t ntodo, next;      /* volume split: the queue */
  int participants;         /* volume split: workers that started (share the filtering) */
  int stop;                 /* a worker failed or the run was cancelled */
  int first_fail;           /* the worker whose error stopped the run (-1: none) */
  int running;              /* worker threads not yet returned */
  int64_t barrier_count, barrier_gen;
  /* sink */
  float *vol_mem;           /* memory sink, or */
  const char *out;          /* the file's name (ctr__stream_execute) */
  ctr__writer writer;
  int have_writer;
  int64_t below, above;     /* uint16 output: clamped voxels */
  int64_t out_bad;          /* bad voxels replaced by 0 (the data policy) */
  /* progress */
  int64_t work_total, work_done;
  /* a distributed rank's piece (ctr__fdk_stream_pieces) */
  int64_t read_row0, read_rows; /* rows of the file's images read (read_rows 0: all) */
  ctr__dist *dist;              /* claims each subvolume before computing it (NULL: none) */
  pthread_mutex_t claim_mu;     /* subvolumes taken and claimed in order */
  int64_t slices_granted;
};

static int64_t batch_len(const stream_run *r, int64_t b) {
  const int64_t v0 = b * r->plan.views_per_batch, left = r->g->nviews - v0;
  return left < r->plan.views_per_batch ? left : r->plan.views_per_batch;
}

/* Pixels of a raw view, and of a filtered one as the engines keep it (the
 * store, the transit buffers, the scratch file). */
static size_t view_px(const stream_run *r) { return (size_t)(r->g->nu * r->g->nv); }
static size_t kept_px(const stream_run *r) { return (size_t)(r->kept_nu * r->g->nv); }

static int64_t slab_len(const stream_run *r, int64_t s) {
  const int64_t z = s * r->plan.slab_slices;
  return r->plan.nz - z < r->plan.slab_slices ? r->plan.nz - z : r->plan.slab_slices;
}

/* ---- Fill functions of the reader threads --------------------------------- */

static ctr_status fill_raw(void *user, int64_t b, void *buf) {
  stream_run *r = user;
  const int64_t v0 = b * r->plan.views_per_batch, n = batch_len(r, b);
  if (!r->read_rows) return ctr_stack_read(r->in, v0, n, r->in_dtype, buf);
  if (r->read_rows == r->g->nv) /* the engines see these rows only */
    return ctr_stack_read_rows(r->in, v0, n, r->read_row0, r->read_rows, r->in_dtype, buf);
  /* whole views, zero outside the rows (a backend without row windows) */
  const size_t es = ctr_dtype_size(r->in_dtype), row = (size_t)r->g->nu * es;
  memset(buf, 0, view_px(r) * es * (size_t)n);
  for (int64_t k = 0; k < n; k++)
    CTR_CHECK(ctr_stack_read_rows(r->in, v0 + k, 1, r->read_row0, r->read_rows, r->in_dtype,
                                  (char *)buf + ((size_t)k * (size_t)r->g->nv +
                                                 (size_t)r->read_row0) * row));
  return CTR_OK;
}

static ctr_status fill_scratch(void *user, int64_t b, void *buf) {
  worker *w = user;
  stream_run *r = w->r;
  const size_t bytes = kept_px(r) * sizeof(float);
  return ctr__pread_full(r->scratch_fd, buf, bytes * (size_t)batch_len(r, b),
                         (int64_t)bytes * b * r->plan.views_per_batch, r->scratch_path);
}

/* ---- Options and plan ----------------------------------------------------- */

static ctr_status resolve_options(const ctr_geometry *g, const ctr_fdk_stream_options *in,
                                  stream_run *r) {
  CTR_CHECK(ctr__struct_copy(&ctr__struct_fdk_stream_options, &r->opts, in));
  CTR_CHECK(ctr__fdk_options_resolve(g, &r->opts.fdk, &r->fdk));
  CTR_CHECK(ctr__fdk_row_width(r->ctx, g, &r->fdk, &r->pad_lo, &r->kept_nu));
  if (r->opts.input_scale == 0) r->opts.input_scale = 1.0;
  if (r->opts.out_scale == 0) r->opts.out_scale = 1.0;
  if (!(r->opts.input_scale > 0) || !isfinite(r->opts.input_scale))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "input_scale = %g: expected a positive number",
             r->opts.input_scale);
  if (!(r->opts.out_scale > 0) || !isfinite(r->opts.out_scale))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "out_scale = %g: expected a positive number",
             r->opts.out_scale);
  if (!r->opts.out_dtype) r->opts.out_dtype = CTR_DTYPE_FLOAT32;
  if (r->opts.out_dtype != CTR_DTYPE_FLOAT32 && r->opts.out_dtype != CTR_DTYPE_UINT16)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fdk_stream_options.out_dtype",
                   CTR__V_INT(r->opts.out_dtype),
                   "ctr_fdk_stream_options.out_dtype %d (%s): FDK writes float32 "
                   "or uint16", (int)r->opts.out_dtype, ctr_dtype_name(r->opts.out_dtype));
  return CTR_OK;
}

/* The GPU budget of each worker: the budget of its device (given, or its
 * free memory less the reserve) shared by the workers on that device; the
 * smallest over the workers (every engine runs the same plan). */
static ctr_status worker_gpu_budget(stream_run *r, int workers, uint64_t *out) {
  *out = 0;
  if (ctr_context_get_device(r->ctx) != CTR_DEVICE_CUDA) return CTR_OK;
  const int ndev = ctr_context_get_device_count(r->ctx);
  uint64_t budget[CTR_MAX_WORKERS];
  for (int d = 0; d < ndev && d < workers && d < CTR_MAX_WORKERS; d++) {
    budget[d] = r->opts.gpu_budget;
    if (!budget[d]) CTR_CHECK(ctr__gpu_budget_detect(r->ctx, ctr_context_get_device_ordinal(r->ctx, d), &budget[d]));
  }
  *out = ctr__split_gpu_budget(budget, ndev < CTR_MAX_WORKERS ? ndev : CTR_MAX_WORKERS, workers);
  return CTR_OK;
}

static int requested_workers(const stream_run *r) {
  if (r->opts.workers > 0) return r->opts.workers;
  const int n = ctr_context_get_device(r->ctx) == CTR_DEVICE_CUDA ? ctr_context_get_device_count(r->ctx) : 1;
  return n < 1 ? 1 : n > CTR_MAX_WORKERS ? CTR_MAX_WORKERS : n;
}

static ctr_status make_plan(stream_run *r, int in_memory, const ctr__journal *resumed) {
  ctr_fdk_plan_request q = CTR_FDK_PLAN_REQUEST_INIT;
  q.device = ctr_context_get_device(r->ctx);
  q.workers = requested_workers(r);
  q.split = r->opts.split;
  q.host_budget = r->opts.host_budget;
  CTR_CHECK(ctr__budgets_resolve(r->ctx, NULL, &q.host_budget));
  CTR_CHECK(worker_gpu_budget(r, q.workers, &q.gpu_budget));
  q.proj_dtype = r->in_dtype;
  q.vol_dtype = r->opts.out_dtype;
  q.interp = r->fdk.interp;
  q.z0 = r->fdk.z0;
  q.nz = r->fdk.nz;
  q.views_per_batch = r->fdk.views_per_batch;
  q.max_slab_slices = r->opts.max_slab_slices;
  q.store = r->opts.store;
  q.input_in_memory = q.output_in_memory = in_memory;
  q.out_format = in_memory ? CTR_FORMAT_AUTO : r->out_fmt;
  if (resumed) {
    /* the interrupted run's decomposition. A volume split's result does not
     * depend on the workers; a projection split's sums do (each worker's
     * share of the views): the same split on as many workers as before
     * (sharing the GPUs there are now) gives the same bytes. A split given
     * now overrides (its subvolumes then differ within the summation-order
     * bound, docs/multi-gpu.md). */
    q.views_per_batch = resumed->views_per_batch;
    q.max_slab_slices = resumed->slab_slices;
    q.store = (ctr_fdk_store)resumed->store;
    if (q.split == CTR_FDK_SPLIT_AUTO) {
      q.split = resumed->split == CTR_FDK_SPLIT_PROJECTIONS ? CTR_FDK_SPLIT_PROJECTIONS : CTR_FDK_SPLIT_VOLUME;
      if (q.split == CTR_FDK_SPLIT_PROJECTIONS && r->opts.workers <= 0) {
        q.workers = resumed->workers;
        CTR_CHECK(worker_gpu_budget(r, q.workers, &q.gpu_budget));
      }
    }
  }
  r->plan = (ctr_fdk_plan)CTR_FDK_PLAN_INIT;
  if (r->kept_nu != r->g->nu) {
    const ctr__engine_backend *be;
    CTR_CHECK(ctr__engine_backend_of(r->ctx, &be));
    if (!be->extends_rows)
      CTR_FAIL_FIELD(CTR_E_UNSUPPORTED, "ctr_fdk_options.offset_weight",
                     "an offset (half-fan) detector needs its weighted rows filtered with %lld "
                     "zero columns beyond the narrow edge, which the %s backend does not do yet: "
                     "reconstruct on the CPU (ctr_context_options.device = CTR_DEVICE_CPU; the "
                     "CLI's --device cpu), or set offset_weight = CTR_OFFSET_WEIGHT_OFF (--offset-weight "
                     "off) to accept the error of the unweighted rows (docs/geometry.md, \"Offset "
                     "detectors\")", (long long)(r->kept_nu - r->g->nu), be->head.name);
  }
  if (r->kept_nu == r->g->nu) {
    CTR_CHECK(ctr_fdk_plan_compute(r->g, &q, &r->plan));
  } else {
    /* an offset detector's rows are extended before the filter: planned
     * with the extended detector's views everywhere (raw views then
     * counted as wide as the filtered ones: at most twice their bytes) */
    ctr_geometry *gx = NULL;
    CTR_CHECK(ctr__geometry_columns(r->g, r->pad_lo, r->kept_nu, &gx));
    const ctr_status st = ctr_fdk_plan_compute(gx, &q, &r->plan);
    ctr_geometry_free(gx);
    CTR_CHECK(st);
  }
  if (resumed && (r->plan.slab_slices != resumed->slab_slices || r->plan.pair != resumed->pair))
    CTR_FAIL_FIELD(CTR_E_OUT_OF_MEMORY, "gpu_budget",
             "cannot resume: the interrupted run used subvolumes of %lld slices, the memory "
             "budgets now allow only %lld; give the budgets of the interrupted run (gpu_budget, "
             "host_budget)",
             (long long)resumed->slab_slices, (long long)r->plan.slab_slices);
  return CTR_OK;
}

/* Everything that decides the volume's bytes; a journal only resumes a run
 * with the same fingerprint. */
static ctr_status fingerprint(const stream_run *r, const char *out, ctr_file_format fmt,
                              int with_input, uint64_t *fp) {
  char *json = NULL;
  CTR_CHECK(ctr_geometry_to_json_string(r->g, &json));
  uint64_t h = ctr__fnv1a(CTR__FNV_SEED, json, strlen(json));
  free(json);
  const ctr_fdk_options *o = &r->fdk;
  const double d[4] = {o->cutoff, r->opts.input_scale, r->opts.out_scale, 0.0};
  const int64_t i[9] = {o->window, o->short_scan, o->interp, o->z0, o->nz,
                        (int64_t)r->opts.out_dtype, (int64_t)fmt,
                        (int64_t)ctr_context_get_device(r->ctx), (int64_t)r->in_dtype};
  h = ctr__fnv1a(h, d, sizeof d);
  h = ctr__fnv1a(h, i, sizeof i);
  if (r->in && with_input) h = ctr__stream_fp_input(h, r->in->path);
  h = ctr__stream_fp_output(h, out); /* "./r.raw" resumes "r.raw" */
  *fp = h;
  return CTR_OK;
}

/* ---- Shared state ----------------------------------------------------------- */

static ctr_status progress(stream_run *r) {
  return ctr__progress(r->ctx, "fdk", r->work_total ? (double)r->work_done / (double)r->work_total : 1.0);
}

/* Stops every worker (waits on subsets, barriers and the reader return);
 * `failed` is the worker whose own error it is, if none failed before (-1:
 * the calling thread's reason). */
static void stop_all(stream_run *r, int failed) {
  pthread_mutex_lock(&r->mu);
  if (!r->stop && failed >= 0) r->first_fail = failed;
  r->stop = 1;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  if (r->have_ring) ctr__ring_abort(&r->ring);
}

static ctr_status stopped(const stream_run *r) {
  CTR_FAIL(CTR_E_CANCELLED, "stopped: another worker failed or the run was cancelled");
}

/* One subset done. A lone worker runs on the calling thread and reports
 * progress itself, after every subset (a cancellation stops it there);
 * several wake the calling thread, which reports. */
static ctr_status work_done(stream_run *r) {
  pthread_mutex_lock(&r->mu);
  r->work_done++;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  return r->nw == 1 ? progress(r) : CTR_OK;
}

/* All workers meet; CTR_E_CANCELLED if the run stops meanwhile. */
static ctr_status barrier(stream_run *r) {
  pthread_mutex_lock(&r->mu);
  const int64_t gen = r->barrier_gen;
  if (++r->barrier_count == r->nw) {
    r->barrier_count = 0;
    r->barrier_gen++;
    pthread_cond_broadcast(&r->cv);
  } else {
    while (r->barrier_gen == gen && !r->stop) pthread_cond_wait(&r->cv, &r->mu);
  }
  const int stop = r->barrier_gen == gen && r->stop;
  pthread_mutex_unlock(&r->mu);
  return stop ? stopped(r) : CTR_OK;
}

/* "'file'" or "projections" (in memory) for the data policy's messages. */
static const char *input_name(const stream_run *r, char *buf, size_t n) {
  if (!r->in) return "projections";
  snprintf(buf, n, "'%s'", r->in->path);
  return buf;
}

/* The result's bad voxels: the engine replaced them by 0 and counted them
 * (out_nonfinite) in what it delivered, in the same pass as its range (CPU)
 * or on the GPU; in strict mode any is an error, so nothing non-finite gets
 * the output's final name. */
#define CTR__BAD_VOXELS "voxels NaN, infinite or beyond +-1e+24"

static ctr_status check_output(worker *w) {
  stream_run *r = w->r;
  const int64_t total = w->eng->ops->out_nonfinite(w->eng), bad = total - w->out_seen;
  w->out_seen = total;
  pthread_mutex_lock(&r->mu);
  r->out_bad += bad;
  pthread_mutex_unlock(&r->mu);
  return r->fdk.strict ? ctr__values_report_kind(r->ctx, 1, bad, "the reconstruction",
                                                 CTR__BAD_VOXELS, "stored as 0")
                       : CTR_OK;
}

static int64_t input_bad(const stream_run *r) {
  int64_t n = 0;
  for (int i = 0; i < r->nw; i++)
    if (r->w[i].eng) n += r->w[i].eng->ops->nonfinite(r->w[i].eng);
  return n;
}

/* Warnings of a run that succeeded (bad input values, bad voxels). */
void ctr__fdk_stream_warn(const ctr_context *ctx, const char *path, int64_t in_bad,
                          int64_t out_bad) {
  char name[4200];
  if (path) snprintf(name, sizeof name, "'%s'", path);
  else snprintf(name, sizeof name, "projections");
  ctr__values_report(ctx, 0, in_bad, name);
  ctr__values_report_kind(ctx, 0, out_bad, "the reconstruction", CTR__BAD_VOXELS, "stored as 0");
}

void ctr__fdk_report_resume(ctr_fdk_stream_report *rep, ctr_status st, int resumable,
                            const char *journal) {
  rep->resumable = resumable;
  rep->journal[0] = '\0';
  if (st != CTR_OK && journal && ctr__file_exists(journal) && strlen(journal) < sizeof rep->journal)
    memcpy(rep->journal, journal, strlen(journal) + 1);
}

static void report_values(stream_run *r) {
  ctr__fdk_stream_warn(r->ctx, r->in ? r->in->path : NULL, input_bad(r), r->out_bad);
}

/* Strict: stop at the first subset with bad values, before any subvolume is
 * written. */
static ctr_status check_input(worker *w) {
  stream_run *r = w->r;
  if (!r->fdk.strict) return CTR_OK;
  char name[4200];
  return ctr__values_report(r->ctx, 1, w->eng->ops->nonfinite(w->eng),
                            input_name(r, name, sizeof name));
}

/* ---- The passes ---------------------------------------------------------------- */

/* Reads (or finds in memory), weights, filters and backprojects subset b,
 * keeping the filtered copy in `keep` when given; the raw buffer goes back
 * to the reader at once. */
static ctr_status filter_subset(worker *w, int64_t b, float *keep) {
  stream_run *r = w->r;
  const int64_t v0 = b * r->plan.views_per_batch, n = batch_len(r, b);
  const void *raw;
  void *buf = NULL;
  if (r->have_ring) {
    CTR_CHECK(ctr__ring_get(&r->ring, b, &buf));
    raw = buf;
  } else {
    raw = (const char *)r->in_mem + (size_t)v0 * view_px(r) * ctr_dtype_size(r->in_dtype);
  }
  const ctr_status st = w->eng->ops->filter_bp(w->eng, v0, n, raw, r->in_dtype, keep);
  if (r->have_ring) ctr__ring_put(&r->ring, b);
  CTR_CHECK(st);
  return check_input(w);
}

/* The host buffer that keeps subset b's filtered copy, allocated at first
 * use (pinning is slow: during the first pass it hides behind the reads). */
static ctr_status host_copy_of(stream_run *r, int64_t b, float **out) {
  pthread_mutex_lock(&r->mu);
  if (!r->store[b]) r->store[b] = ctr_host_alloc((size_t)batch_len(r, b) * kept_px(r) * sizeof(float));
  *out = r->store[b];
  pthread_mutex_unlock(&r->mu);
  return *out ? CTR_OK : CTR_E_OUT_OF_MEMORY;
}

static ctr_status scratch_write(worker *w, int64_t b, const float *data) {
  stream_run *r = w->r;
  const size_t px = kept_px(r);
  const double t0 = ctr__now_s();
  CTR_CHECK(ctr__pwrite_full(r->scratch_fd, data, (size_t)batch_len(r, b) * px * sizeof(float),
                             (int64_t)(px * sizeof(float)) * b * r->plan.views_per_batch,
                             r->scratch_path));
  w->t_store += ctr__now_s() - t0;
  return CTR_OK;
}

/* Subset b is filtered and in the store: wake the workers waiting for it. */
static void mark_ready(stream_run *r, int64_t b) {
  pthread_mutex_lock(&r->mu);
  r->ready[b] = 1;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static ctr_status wait_ready(worker *w, int64_t b) {
  stream_run *r = w->r;
  const double t0 = ctr__now_s();
  pthread_mutex_lock(&r->mu);
  while (!r->ready[b] && !r->stop) pthread_cond_wait(&r->cv, &r->mu);
  const int ok = r->ready[b];
  pthread_mutex_unlock(&r->mu);
  w->t_wait += ctr__now_s() - t0;
  return ok ? CTR_OK : stopped(r);
}

/* A volume split's first pass (one worker: the first pass): subset b is
 * filtered by the participant of rank b mod participants and kept where the
 * plan says (and where the other participants find it); the others
 * backproject the kept copy. */
/* A transit buffer for a filtered subset that `consumers` other workers
 * will take: a free one (waiting while none is), allocated at first use. */
static ctr_status transit_claim(stream_run *r, int consumers, int *slot) {
  pthread_mutex_lock(&r->mu);
  int k = -1;
  while (!r->stop) {
    for (int i = 0; i < r->ntransit && k < 0; i++)
      if (!r->transit_left[i]) k = i;
    if (k >= 0) break;
    pthread_cond_wait(&r->cv, &r->mu);
  }
  if (k >= 0) r->transit_left[k] = consumers;
  pthread_mutex_unlock(&r->mu);
  if (k < 0) return stopped(r);
  if (!r->transit[k]) {
    r->transit[k] = ctr_host_alloc((size_t)r->plan.views_per_batch * kept_px(r) * sizeof(float));
    if (!r->transit[k]) return CTR_E_OUT_OF_MEMORY;
  }
  *slot = k;
  return CTR_OK;
}

/* A consumer is done with transit buffer `slot`. */
static void transit_release(stream_run *r, int slot) {
  pthread_mutex_lock(&r->mu);
  if (--r->transit_left[slot] == 0) pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

/* A volume split's first pass (one worker: the first pass): subset b is
 * filtered by the participant of rank b mod participants and kept where the
 * plan says, and where the other participants find it (the host store, the
 * scratch file, or a transit buffer when the views stay on each device);
 * the others backproject that copy. No worker passes the first subset not
 * yet filtered, so a worker is at most one subset ahead of the slowest and
 * CTR__TRANSIT_SLOTS buffers never run out for good. */
/* A timeline of the in-memory run's steps on stderr, for the multi-GPU
 * breakdown (docs/multi-gpu.md): built with -DCTR_STREAM_TRACE only. */
#ifdef CTR_STREAM_TRACE
static double tr_t0;
#define TR_START(t) (tr_t0 = (t))
#define TR(...)                                                  \
  do {                                                           \
    fprintf(stderr, "TRACE %8.4f ", ctr__now_s() - tr_t0);       \
    fprintf(stderr, __VA_ARGS__);                                \
    fputc('\n', stderr);                                         \
  } while (0)
#else
#define TR_START(t) ((void)0)
#define TR(...) ((void)0)
#endif
static ctr_status first_pass(worker *w) {
  stream_run *r = w->r;
  const int shared = r->participants > 1;
  const ctr_fdk_store store = r->plan.store;
  const int transit = shared && store != CTR_FDK_STORE_HOST && store != CTR_FDK_STORE_SCRATCH;
  for (int64_t b = 0; b < r->plan.nbatches; b++) {
    if (r->stop) return stopped(r);
    if (b % r->participants == w->rank) {
      float *keep = NULL;
      if (store == CTR_FDK_STORE_SCRATCH) keep = w->bounce;
      else if (store == CTR_FDK_STORE_HOST) CTR_CHECK(host_copy_of(r, b, &keep));
      else if (transit) {
        int slot = -1;
        CTR_CHECK(transit_claim(r, r->participants - 1, &slot));
        keep = r->transit[slot];
        r->ready_slot[b] = slot;
      }
      CTR_CHECK(filter_subset(w, b, keep));
      if (store == CTR_FDK_STORE_SCRATCH) CTR_CHECK(scratch_write(w, b, keep));
      if (shared) mark_ready(r, b);
    } else {
      CTR_CHECK(wait_ready(w, b));
      const float *src = NULL;
      if (store == CTR_FDK_STORE_HOST) src = r->store[b];
      else if (transit) src = r->transit[r->ready_slot[b]];
      if (store == CTR_FDK_STORE_SCRATCH) {
        const size_t bytes = kept_px(r) * sizeof(float);
        const double t0 = ctr__now_s();
        CTR_CHECK(ctr__pread_full(r->scratch_fd, w->fetch, bytes * (size_t)batch_len(r, b),
                                  (int64_t)bytes * b * r->plan.views_per_batch, r->scratch_path));
        w->t_wait += ctr__now_s() - t0;
        src = w->fetch;
      }
      const ctr_status st =
          w->eng->ops->bp(w->eng, b * r->plan.views_per_batch, batch_len(r, b), src);
      if (transit) transit_release(r, r->ready_slot[b]);
      CTR_CHECK(st);
    }
    CTR_CHECK(work_done(r));
  }
  return CTR_OK;
}

/* A projection split's first pass: the worker's own subsets, each filtered
 * and kept for the later subvolumes where the plan says. */
static ctr_status first_pass_own(worker *w) {
  stream_run *r = w->r;
  for (int64_t b = w->b0; b < w->b1; b++) {
    if (r->stop) return stopped(r);
    float *keep = NULL;
    if (r->plan.store == CTR_FDK_STORE_SCRATCH) keep = w->bounce;
    else if (r->plan.store == CTR_FDK_STORE_HOST) CTR_CHECK(host_copy_of(r, b, &keep));
    CTR_CHECK(filter_subset(w, b, keep));
    if (r->plan.store == CTR_FDK_STORE_SCRATCH) CTR_CHECK(scratch_write(w, b, keep));
    CTR_CHECK(work_done(r));
  }
  return CTR_OK;
}

/* The subsets [*b0, *b1) of w's share that slices [z, z + nz) of the run
 * need: on a helix those holding the views its window weights there
 * (ctr__helix_slab_views; the others would add exactly nothing), else all. */
static void slab_batches(const worker *w, int64_t z, int64_t nz, int64_t *b0, int64_t *b1) {
  const stream_run *r = w->r;
  int64_t v0, v1;
  ctr__helix_slab_views(r->g, r->plan.z0 + z, nz, &v0, &v1);
  const int64_t per = r->plan.views_per_batch;
  const int64_t a = v0 / per, e = v1 > v0 ? (v1 + per - 1) / per : a;
  *b0 = a > w->b0 ? a : w->b0;
  *b1 = e < w->b1 ? e : w->b1;
  if (*b1 < *b0) *b1 = *b0;
}

/* A later pass: backproject the kept filtered copies of subsets [b0, b1) that
 * slices [z, z + nz) need (nz 0: all of them); the others count as done. */
static ctr_status reuse_pass(worker *w, int64_t z, int64_t nz) {
  stream_run *r = w->r;
  int64_t b0 = w->b0, b1 = w->b1;
  if (nz > 0) slab_batches(w, z, nz, &b0, &b1);
  for (int64_t b = w->b0; b < b0; b++) CTR_CHECK(work_done(r));
  for (int64_t b = b1; b < w->b1; b++) CTR_CHECK(work_done(r));
  if (r->plan.store == CTR_FDK_STORE_SCRATCH && b1 > b0)
    CTR_CHECK(ctr__ring_start(&w->sring, b0, b1 - b0));
  for (int64_t b = b0; b < b1; b++) {
    if (r->stop) return stopped(r);
    const int64_t v0 = b * r->plan.views_per_batch, n = batch_len(r, b);
    const float *src = NULL;
    void *buf = NULL;
    if (r->plan.store == CTR_FDK_STORE_HOST) src = r->store[b];
    if (r->plan.store == CTR_FDK_STORE_SCRATCH) {
      CTR_CHECK(ctr__ring_next(&w->sring, &buf));
      src = buf;
    }
    CTR_CHECK(w->eng->ops->bp(w->eng, v0, n, src));
    if (buf) ctr__ring_release(&w->sring);
    CTR_CHECK(work_done(r));
  }
  return CTR_OK;
}

/* ---- Delivery ---------------------------------------------------------------- */

/* Hands slices [k0, k1) of subvolume s (slices [z, z + nz) of the run) to the
 * sink, chunk by chunk: download from the worker's engine, the caller's
 * callback, conversion to the file's dtype here (the writer thread only
 * writes), then the writer. */
static ctr_status deliver(worker *w, int64_t s, int64_t z, int64_t nz, int64_t k0, int64_t k1) {
  stream_run *r = w->r;
  const int64_t slice = r->g->vol.nx * r->g->vol.ny;
  if (r->vol_mem) {
    /* projection split: the summed slices; else the engine wrote them at
     * slab_end */
    if (r->plan.split == CTR_FDK_SPLIT_PROJECTIONS && r->nw > 1)
      CTR_CHECK(w->eng->ops->download(w->eng, k0, k1, r->vol_mem + (z + k0) * slice));
    return check_output(w);
  }
  for (int64_t c0 = k0; c0 < k1; c0 += r->plan.chunk_slices) {
    const int64_t c1 = c0 + r->plan.chunk_slices < k1 ? c0 + r->plan.chunk_slices : k1;
    int buf;
    CTR_CHECK(ctr__writer_acquire(&r->writer, &buf));
    float *data = w->stage ? w->stage : (float *)r->writer.buf[buf];
    ctr__slab_record rec = {0, INFINITY, -INFINITY, 0, 0};
    ctr_status st = w->eng->ops->download(w->eng, c0, c1, data);
    if (st == CTR_OK) st = check_output(w);
    if (st != CTR_OK) {
      ctr__writer_giveback(&r->writer, buf);
      return st;
    }
    /* the chunk's range (bad voxels are 0 by now) */
    ctr__slab_range(&rec, data, (c1 - c0) * slice);
    if (r->opts.on_slab) r->opts.on_slab(r->opts.user, r->plan.z0 + z + c0, c1 - c0, data);
    if (w->stage) {
      int64_t below = 0, above = 0;
      ctr__to_u16(data, (c1 - c0) * slice, r->opts.out_scale, (uint16_t *)r->writer.buf[buf],
                  &below, &above);
      rec.below = below;
      rec.above = above;
      pthread_mutex_lock(&r->mu);
      r->below += below;
      r->above += above;
      pthread_mutex_unlock(&r->mu);
    }
    const ctr__writer_job job = {buf, z + c0, c1 - c0, s, r->plan.z0 + z, nz, rec};
    ctr__writer_submit(&r->writer, &job);
  }
  return CTR_OK;
}

/* ---- The workers ---------------------------------------------------------------- */

/* The next subvolume of the queue (-1: none); a distributed rank claims it
 * first (the queue ends where another rank took the rest over). */
static int64_t take_slab(stream_run *r) {
  if (r->dist) pthread_mutex_lock(&r->claim_mu);
  pthread_mutex_lock(&r->mu);
  const int64_t i = r->next < r->ntodo ? r->next++ : -1;
  pthread_mutex_unlock(&r->mu);
  int64_t s = i < 0 ? -1 : r->todo[i];
  if (s >= 0 && r->dist) {
    int granted = 0;
    if (ctr__dist_claim(r->dist, r->plan.z0 + s * r->plan.slab_slices, slab_len(r, s), &granted) !=
            CTR_OK ||
        !granted) {
      pthread_mutex_lock(&r->mu);
      r->next = r->ntodo;
      pthread_mutex_unlock(&r->mu);
      s = -1;
    } else {
      r->slices_granted += slab_len(r, s);
    }
  }
  if (r->dist) pthread_mutex_unlock(&r->claim_mu);
  return s;
}

/* Volume split (and one worker): subvolumes from the queue, the first with
 * the shared filtering pass. */
static ctr_status run_volume(worker *w) {
  stream_run *r = w->r;
  const int64_t slice = r->g->vol.nx * r->g->vol.ny;
  int first = 1;
  for (int64_t s = w->first; s >= 0; s = take_slab(r)) {
    if (r->stop) return stopped(r);
    const int64_t z = s * r->plan.slab_slices, nz = slab_len(r, s);
    float *target = r->vol_mem ? r->vol_mem + z * slice : NULL;
    CTR_CHECK(w->eng->ops->slab_begin(w->eng, r->plan.z0 + z, nz, target));
    TR("v%d start", w->index);
    CTR_CHECK(first ? first_pass(w) : reuse_pass(w, z, nz));
    first = 0;
    TR("v%d queued", w->index);
    CTR_CHECK(w->eng->ops->slab_end(w->eng));
    TR("v%d slab_end", w->index);
    CTR_CHECK(deliver(w, s, z, nz, 0, nz));
    TR("v%d delivered", w->index);
  }
  return CTR_OK;
}

/* Projection split: every subvolume by all workers, then the reduction of
 * each worker's share of its slices. */
static ctr_status run_projections(worker *w) {
  stream_run *r = w->r;
  for (int64_t i = 0; i < r->ntodo; i++) {
    const int64_t s = r->todo[i], z = s * r->plan.slab_slices, nz = slab_len(r, s);
    CTR_CHECK(w->eng->ops->slab_begin(w->eng, r->plan.z0 + z, nz, NULL));
    const int64_t k0 = nz * w->index / r->nw, k1 = nz * (w->index + 1) / r->nw;
    /* In memory, the last batches' slabs summed and delivered as they finish
     * (engine.h, tail_*). Every engine must hold or none: each has two
     * batches or more, and what else tail_hold asks (the store, the slices)
     * is the plan's, the same for all. */
    const int tail = r->vol_mem && w->eng->ops->tail_hold && r->plan.nbatches >= 2 * r->nw &&
                     w->eng->ops->tail_hold(w->eng, k1 - k0, r->nw);
    TR("w%d start", w->index);
    CTR_CHECK(i == 0 ? first_pass_own(w) : reuse_pass(w, 0, 0));
    TR("w%d queued", w->index);
    if (tail) {
      CTR_CHECK(w->eng->ops->tail_queue(w->eng, r->nw));
      CTR_CHECK(barrier(r)); /* every engine's tail is queued: its events exist */
      ctr__engine *all[CTR_MAX_WORKERS];
      for (int u = 0; u < r->nw; u++) all[u] = r->w[u].eng;
      CTR_CHECK(w->eng->ops->tail_sum(w->eng, all, r->nw, w->index, k0, k1,
                                      r->vol_mem + (z + k0) * r->g->vol.nx * r->g->vol.ny));
      CTR_CHECK(check_output(w));
      TR("w%d tail summed and delivered", w->index);
      CTR_CHECK(barrier(r)); /* nobody reads a partial any more */
      continue;
    }
    CTR_CHECK(w->eng->ops->slab_end(w->eng));
    TR("w%d bp done", w->index);
    CTR_CHECK(barrier(r)); /* every partial sum is complete */
    TR("w%d barrier1", w->index);
    /* the sum in worker order, whichever worker holds it */
    if (r->vol_mem && w->eng->ops->sum_download) { /* the sums and the download at once */
      ctr__engine *src[CTR_MAX_WORKERS];
      int n = 0;
      for (int u = 0; u < r->nw; u++)
        if (u != w->index) src[n++] = r->w[u].eng;
      CTR_CHECK(w->eng->ops->sum_download(w->eng, src, n, k0, k1,
                                          r->vol_mem + (z + k0) * r->g->vol.nx * r->g->vol.ny));
      CTR_CHECK(check_output(w));
      TR("w%d summed and delivered", w->index);
      CTR_CHECK(barrier(r)); /* nobody reads a partial any more */
      continue;
    }
    for (int u = 0; u < r->nw; u++)
      if (u != w->index) CTR_CHECK(w->eng->ops->add_from(w->eng, r->w[u].eng, k0, k1));
    TR("w%d reduced", w->index);
    CTR_CHECK(barrier(r)); /* nobody reads a partial any more */
    TR("w%d barrier2", w->index);
    CTR_CHECK(deliver(w, s, z, nz, k0, k1));
    TR("w%d delivered", w->index);
  }
  return CTR_OK;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  stream_run *r = w->r;
  const ctr_status st = r->plan.split == CTR_FDK_SPLIT_PROJECTIONS && r->nw > 1 ? run_projections(w)
                                                                            : run_volume(w);
  w->status = st;
  if (st != CTR_OK) {
    snprintf(w->detail, sizeof w->detail, "%s", ctr_error_detail());
    stop_all(r, w->index);
  }
  pthread_mutex_lock(&r->mu);
  r->running--;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

/* Runs the workers on their threads; the calling thread reports progress and
 * relays a cancellation. The first worker error (not a consequence of
 * another's) is the run's. */
static ctr_status run_workers(stream_run *r, const unsigned char *done) {
  r->ntodo = 0;
  for (int64_t s = 0; s < r->plan.nslabs; s++)
    if (!done || !done[s]) r->todo[r->ntodo++] = s;
  const int proj = r->plan.split == CTR_FDK_SPLIT_PROJECTIONS && r->nw > 1;
  r->work_total = r->ntodo * r->plan.nbatches;
  r->work_done = 0;
  /* volume split: each worker's first subvolume; the rest form the queue */
  r->participants = 0;
  r->next = proj ? r->ntodo : 0;
  for (int i = 0; i < r->nw; i++) {
    worker *w = &r->w[i];
    w->first = -1;
    w->rank = -1;
    if (proj) {
      w->b0 = r->plan.nbatches * i / r->nw;
      w->b1 = r->plan.nbatches * (i + 1) / r->nw;
    } else {
      w->b0 = 0;
      w->b1 = r->plan.nbatches;
      w->first = take_slab(r);
      if (w->first >= 0) w->rank = r->participants++;
    }
  }
  if (r->participants > 1) memset(r->ready, 0, (size_t)r->plan.nbatches);
  if (r->have_ring && !r->ring_started && r->ntodo > 0)
    CTR_CHECK(ctr__ring_start(&r->ring, 0, r->plan.nbatches));
  r->ring_started = 0;
  r->first_fail = -1;
  if (r->nw == 1) { /* on this thread, progress after every subset */
    const ctr_status st = run_volume(&r->w[0]);
    if (st != CTR_OK) return st;
    if (r->have_ring) ctr__ring_finish(&r->ring);
    return CTR_OK;
  }
  int nstarted = 0;
  ctr_status st = CTR_OK;
  for (int i = 0; i < r->nw; i++) {
    worker *w = &r->w[i];
    w->status = CTR_OK;
    w->detail[0] = '\0';
    pthread_mutex_lock(&r->mu);
    r->running++;
    pthread_mutex_unlock(&r->mu);
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
      pthread_mutex_lock(&r->mu);
      r->running--;
      pthread_mutex_unlock(&r->mu);
      st = ctr__error_set(CTR_E_INTERNAL, "cannot start worker thread %d", i);
      stop_all(r, -1);
      break;
    }
    nstarted++;
  }
  /* progress from this thread after every subset a worker finishes, until
   * every worker has returned */
  int64_t reported = 0;
  for (;;) {
    pthread_mutex_lock(&r->mu);
    while (r->running > 0 && r->work_done == reported && !r->stop) pthread_cond_wait(&r->cv, &r->mu);
    const int running = r->running, halted = r->stop;
    const int64_t done = r->work_done;
    pthread_mutex_unlock(&r->mu);
    for (; st == CTR_OK && !halted && reported < done; reported++) {
      if (ctr__progress(r->ctx, "fdk", (double)(reported + 1) / (double)r->work_total) != CTR_OK) {
        st = CTR_E_CANCELLED;
        char detail[1024];
        snprintf(detail, sizeof detail, "%s", ctr_error_detail());
        stop_all(r, -1);
        ctr__error_set(st, "%s", detail);
      }
    }
    if (halted) reported = done;
    if (!running) break;
    if (halted) { /* wait for the workers to return */
      pthread_mutex_lock(&r->mu);
      while (r->running > 0) pthread_cond_wait(&r->cv, &r->mu);
      pthread_mutex_unlock(&r->mu);
      break;
    }
  }
  for (int i = 0; i < nstarted; i++) pthread_join(r->w[i].thread, NULL);
  if (st != CTR_OK) return st;
  /* the first worker that failed on its own (the others were stopped) */
  if (r->first_fail >= 0)
    return ctr__error_set(r->w[r->first_fail].status, "%s", r->w[r->first_fail].detail);
  if (r->have_ring) ctr__ring_finish(&r->ring);
  return CTR_OK;
}

/* ---- Setup and teardown ------------------------------------------------------------ */

static ctr_status open_scratch(stream_run *r, const char *out) {
  const char *dir = r->opts.scratch_dir;
  const char *slash = strrchr(out, '/');
  const char *base = slash ? slash + 1 : out;
  /* A name no other run (thread or process) uses: O_EXCL over a counter. */
  static _Atomic unsigned counter;
  for (int attempt = 0; attempt < 1000; attempt++) {
    const unsigned k = counter++;
    free(r->scratch_path);
    r->scratch_path = dir ? ctr__io_sprintf("%s/%s.scratch.%ld.%u", dir, base, (long)getpid(), k)
                          : ctr__io_sprintf("%s.scratch.%ld.%u", out, (long)getpid(), k);
    if (!r->scratch_path) return CTR_E_OUT_OF_MEMORY;
    r->scratch_fd = open(r->scratch_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (r->scratch_fd >= 0 || errno != EEXIST) break;
  }
  if (r->scratch_fd < 0) {
    free(r->scratch_path);
    const ctr_status st = ctr__error_set_field(CTR_E_IO, "scratch_dir",
                                               "cannot create a scratch file for filtered "
                                               "projections in '%s': %s (choose another "
                                               "directory with scratch_dir)",
                                               dir ? dir : out, strerror(errno));
    r->scratch_path = NULL;
    return st;
  }
  if (0)
    CTR_FAIL_FIELD(CTR_E_IO, "scratch_dir",
                   "cannot create the scratch file '%s' for filtered projections: %s "
                   "(choose another directory with scratch_dir)", r->scratch_path, strerror(errno));
  return CTR_OK;
}

/* Subsets [b0, b1) of worker i (projection split: a contiguous share; else
 * all). */
static void worker_batches(const stream_run *r, int i, int64_t *b0, int64_t *b1) {
  if (r->plan.split == CTR_FDK_SPLIT_PROJECTIONS && r->nw > 1) {
    *b0 = r->plan.nbatches * i / r->nw;
    *b1 = r->plan.nbatches * (i + 1) / r->nw;
  } else {
    *b0 = 0;
    *b1 = r->plan.nbatches;
  }
}

/* Worker w's engine: its device, its views (a projection split's share). */
static ctr_status create_engine(worker *w, const ctr__engine_backend *be) {
  stream_run *r = w->r;
  const int64_t v0 = w->b0 * r->plan.views_per_batch;
  const int64_t v1 = w->b1 * r->plan.views_per_batch < r->g->nviews
                         ? w->b1 * r->plan.views_per_batch
                         : r->g->nviews;
  return be->create(r->ctx, w->device, r->g, &r->fdk, &r->plan, r->opts.input_scale, v0, v1,
                    &w->eng);
}

typedef struct create_job {
  worker *w;
  const ctr__engine_backend *be;
  ctr_status st;
  char detail[1024]; /* the thread's error detail */
} create_job;

static void *create_main(void *p) {
  create_job *j = p;
  TR("create w%d begin", j->w->index);
  j->st = create_engine(j->w, j->be);
  TR("create w%d end", j->w->index);
  if (j->st != CTR_OK) snprintf(j->detail, sizeof j->detail, "%s", ctr_error_detail());
  return NULL;
}

/* Shared state, buffers, the reader (started at once when a first pass is
 * due, so that the backends' setup overlaps the first reads) and one engine
 * per worker, on the context's devices in turn. */
static ctr_status setup(stream_run *r, const char *out, int start_reading) {
  const size_t batch_floats = view_px(r) * (size_t)r->plan.views_per_batch;
  const size_t kept_floats = kept_px(r) * (size_t)r->plan.views_per_batch;
  const int64_t slice = r->g->vol.nx * r->g->vol.ny;
  r->nw = r->plan.workers > 0 ? r->plan.workers : 1;
  const int shared = r->nw > 1 && r->plan.split == CTR_FDK_SPLIT_VOLUME;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  pthread_mutex_init(&r->claim_mu, NULL);
  r->have_sync = 1;
  r->ready = ctr__calloc((size_t)r->plan.nbatches, 1, "subset flags");
  r->ready_slot = ctr__calloc((size_t)r->plan.nbatches, sizeof *r->ready_slot, "subset flags");
  r->todo = ctr__calloc((size_t)r->plan.nslabs, sizeof *r->todo, "subvolume queue");
  if (!r->ready || !r->ready_slot || !r->todo) return CTR_E_OUT_OF_MEMORY;
  if (shared && r->plan.store != CTR_FDK_STORE_HOST && r->plan.store != CTR_FDK_STORE_SCRATCH)
    r->ntransit = CTR__TRANSIT_SLOTS(r->nw);
  if (r->plan.store == CTR_FDK_STORE_HOST) {
    r->store = ctr__calloc((size_t)r->plan.nbatches, sizeof *r->store, "filtered projection store");
    if (!r->store) return CTR_E_OUT_OF_MEMORY;
  }
  if (r->plan.store == CTR_FDK_STORE_SCRATCH) CTR_CHECK(open_scratch(r, out ? out : "ctrecon"));
  for (int i = 0; i < r->nw; i++) {
    worker *w = &r->w[i];
    w->r = r;
    w->index = i;
    worker_batches(r, i, &w->b0, &w->b1);
    if (r->plan.store == CTR_FDK_STORE_SCRATCH) {
      w->bounce = ctr_host_alloc(kept_floats * sizeof(float));
      if (!w->bounce) return CTR_E_OUT_OF_MEMORY;
      if (shared) {
        w->fetch = ctr_host_alloc(kept_floats * sizeof(float));
        if (!w->fetch) return CTR_E_OUT_OF_MEMORY;
      }
      const ctr_status st = ctr__ring_init(&w->sring, CTR__READ_BUFFERS, kept_floats * sizeof(float),
                                           fill_scratch, w);
      w->have_sring = 1;
      if (st != CTR_OK) return st;
    }
    if (out && r->opts.out_dtype == CTR_DTYPE_UINT16) {
      w->stage = ctr_host_alloc((size_t)(r->plan.chunk_slices * slice) * sizeof(float));
      if (!w->stage) return CTR_E_OUT_OF_MEMORY;
    }
  }
  if (r->in) {
    const ctr_status st = ctr__ring_init(&r->ring, r->plan.read_buffers,
                                         batch_floats * ctr_dtype_size(r->in_dtype), fill_raw, r);
    r->have_ring = 1;
    if (st != CTR_OK) return st;
    if (start_reading) {
      CTR_CHECK(ctr__ring_start(&r->ring, 0, r->plan.nbatches));
      r->ring_started = 1;
    }
  }
  const ctr__engine_backend *be;
  CTR_CHECK(ctr__engine_backend_of(r->ctx, &be));
  const int ndev = ctr_context_get_device_count(r->ctx);
  for (int i = 0; i < r->nw; i++) {
    worker *w = &r->w[i];
    w->device = ndev > 0 ? ctr_context_get_device_ordinal(r->ctx, i % ndev) : 0;
  }
  /* The engines at once, one thread each: on several GPUs each allocates a
   * (sub)volume and its views, which one after the other cost every GPU's
   * allocation in turn before any of them starts. */
  if (r->nw == 1) return create_engine(&r->w[0], be);
  pthread_t th[CTR_MAX_WORKERS];
  int started[CTR_MAX_WORKERS] = {0};
  create_job jobs[CTR_MAX_WORKERS];
  for (int i = 0; i < r->nw; i++) {
    jobs[i] = (create_job){&r->w[i], be, CTR_OK, {0}};
    started[i] = pthread_create(&th[i], NULL, create_main, &jobs[i]) == 0;
    if (!started[i]) create_main(&jobs[i]); /* no thread: on this one */
  }
  for (int i = 0; i < r->nw; i++)
    if (started[i]) pthread_join(th[i], NULL);
  for (int i = 0; i < r->nw; i++) /* the first failure in worker order */
    if (jobs[i].st != CTR_OK) return ctr__error_set(jobs[i].st, "%s", jobs[i].detail);
  return CTR_OK;
}

/* Adds u's steps on the workers' threads (upload to wait: not the reader's
 * and writer's, nor total and setup) to t. */
static void add_steps(ctr_fdk_stream_timings *t, const ctr_fdk_stream_timings *u) {
  t->upload += u->upload;
  t->filter += u->filter;
  t->store += u->store;
  t->reload += u->reload;
  t->backproject += u->backproject;
  t->download += u->download;
  t->reduce += u->reduce;
  t->wait += u->wait;
}

static void finish_report(stream_run *r, double t_start, double t_setup, ctr_fdk_stream_report *rep) {
  if (!rep) return;
  ctr_fdk_stream_timings *t = &rep->timings;
  memset(t, 0, sizeof *t);
  rep->min = INFINITY;
  rep->max = -INFINITY;
  rep->workers = r->nw;
  ctr__fdk_report_helix(r->g, rep);
  for (int i = 0; i < r->nw && i < CTR_MAX_WORKERS; i++) {
    worker *w = &r->w[i];
    ctr_fdk_stream_timings *wt = &rep->worker_timings[i];
    memset(wt, 0, sizeof *wt);
    rep->worker_device[i] = ctr_context_get_device(r->ctx) == CTR_DEVICE_CUDA ? w->device : -1;
    if (w->eng) {
      w->eng->ops->timings(w->eng, wt);
      w->eng->ops->range(w->eng, &rep->min, &rep->max);
    }
    if (w->have_sring) wt->reload += w->sring.busy;
    wt->store += w->t_store;
    wt->wait += w->t_wait;
    add_steps(t, wt);
  }
  if (r->have_ring) t->read = r->ring.busy;
  if (r->have_writer) t->write = r->writer.busy_s;
  rep->below = r->below;
  rep->above = r->above;
  t->setup = t_setup;
  t->total = ctr__now_s() - t_start;
  rep->plan = r->plan;
  rep->nonfinite = input_bad(r);
  rep->out_nonfinite = r->out_bad;
}

static void *free_engine_main(void *p) {
  worker *w = p;
  ctr__engine_free(w->eng);
  w->eng = NULL;
  return NULL;
}

static void release(stream_run *r) {
  if (r->have_ring) ctr__ring_free(&r->ring);
  if (r->have_writer) ctr__writer_free(&r->writer);
  /* The engines at once, one thread each, as they were made: on several GPUs
   * each waits for its device and gives its buffers back (setup). */
  pthread_t th[CTR_MAX_WORKERS];
  int started[CTR_MAX_WORKERS] = {0};
  for (int i = 0; r->nw > 1 && i < r->nw && i < CTR_MAX_WORKERS; i++)
    if (r->w[i].eng) started[i] = pthread_create(&th[i], NULL, free_engine_main, &r->w[i]) == 0;
  for (int i = 0; i < CTR_MAX_WORKERS; i++)
    if (started[i]) pthread_join(th[i], NULL);
  for (int i = 0; i < CTR_MAX_WORKERS; i++) {
    worker *w = &r->w[i];
    if (w->have_sring) ctr__ring_free(&w->sring);
    ctr__engine_free(w->eng);
    ctr_host_free(w->bounce);
    ctr_host_free(w->fetch);
    ctr_host_free(w->stage);
  }
  for (int64_t b = 0; r->store && b < r->plan.nbatches; b++) ctr_host_free(r->store[b]);
  free(r->store);
  for (int i = 0; i < r->ntransit; i++) ctr_host_free(r->transit[i]);
  free(r->ready);
  free(r->ready_slot);
  free(r->todo);
  if (r->scratch_fd > 0) close(r->scratch_fd);
  if (r->scratch_path) unlink(r->scratch_path);
  free(r->scratch_path);
  if (r->have_sync) {
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->claim_mu);
  }
}

static ctr_status check_geometry(const ctr_geometry *g) {
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "streamed FDK: geometry is NULL");
  return CTR_OK;
}

ctr_status ctr__fdk_check_projections(const ctr_geometry *g, const ctr_stack_reader *in,
                                     ctr_dtype *dtype) {
  const ctr_stack_info *pi = ctr_stack_reader_get_info(in);
  if (pi->width != g->nu || pi->height != g->nv || pi->count != g->nviews)
    CTR_FAIL(CTR_E_SIZE_MISMATCH,
             "'%s' holds %lld images of %lld x %lld pixels, the geometry expects %lld views of "
             "%lld x %lld", in->path, (long long)pi->count, (long long)pi->width,
             (long long)pi->height, (long long)g->nviews, (long long)g->nu, (long long)g->nv);
  if (pi->dtype != CTR_DTYPE_FLOAT32 && pi->dtype != CTR_DTYPE_UINT16)
    CTR_FAIL(CTR_E_FORMAT, "'%s' holds %s projections: FDK reads float32 or uint16", in->path,
             ctr_dtype_name(pi->dtype));
  *dtype = pi->dtype;
  return CTR_OK;
}

/* A format written image after image (multi-page TIFF) takes its images in
 * order; several workers finish subvolumes (or their shares of one) in any
 * order: one worker. */
static ctr_status one_worker_in_order(stream_run *r, const ctr__stream_output *o) {
  if (!o->caps->in_order || requested_workers(r) <= 1) return CTR_OK;
  char list[256];
  ctr__format_list(CTR__CAP_ANY_ORDER, "vol", list, sizeof list);
  if (r->opts.workers > 1)
    CTR_FAIL_FIELD_VALUE(CTR_E_UNSUPPORTED, "ctr_fdk_stream_options.workers",
                   CTR__V_INT(r->opts.workers),
                   "'%s' (%s) is written image after image, by one worker "
                   "(ctr_fdk_stream_options.workers is %d): write %s to use several", o->out,
                   o->caps->name, r->opts.workers, list);
  ctr__log(r->ctx, CTR_LOG_INFO, "'%s' (%s) is written image after image: one GPU reconstructs "
           "it (%s use every GPU)", o->out, o->caps->name, list);
  r->opts.workers = 1;
  return CTR_OK;
}

/* The caller's report: checked first and zeroed, filled (in its version)
 * from the run's own at the end. */
static ctr_status report_begin(ctr_fdk_stream_report *caller, ctr_fdk_stream_report *full) {
  memset(full, 0, sizeof *full);
  if (!caller) return CTR_OK;
  CTR_CHECK(ctr__struct_check(&ctr__struct_fdk_stream_report, caller));
  return ctr__struct_store(&ctr__struct_fdk_stream_report, caller, full);
}

/* ---- The modality's side of the streamed executor (stream/executor.h) ---- */

static ctr_status op_fingerprint(void *self, const ctr__stream_output *o, uint64_t *fp) {
  stream_run *r = self;
  return fingerprint(r, o->out, o->fmt, 1, fp);
}

static ctr_status op_prepare(void *self, const ctr__stream_output *o) {
  ((stream_run *)self)->out_fmt = o->fmt;
  return one_worker_in_order(self, o);
}

static ctr_status op_plan(void *self, const ctr__journal *resumed, ctr__journal_layout *layout,
                          ctr_stack_info *info, ctr__stream_units *units) {
  stream_run *r = self;
  CTR_CHECK(make_plan(r, 0, resumed));
  *layout = (ctr__journal_layout){r->plan.slab_slices, r->plan.views_per_batch,
                                  (int)r->plan.store, r->plan.pair, r->plan.nslabs,
                                  (int)r->plan.split, r->plan.workers};
  *info = ctr__fdk_stream_info(r->g, r->plan.z0, r->plan.nz, r->opts.out_dtype);
  *units = (ctr__stream_units){"subvolume", r->plan.slab_slices, r->plan.z0,
                               r->plan.chunk_slices};
  return CTR_OK;
}

static ctr_status op_setup(void *self, const unsigned char *done, ctr__writer **writer) {
  stream_run *r = self;
  const ctr_geometry *g = r->g;
  int todo = 0;
  for (int64_t s = 0; s < r->plan.nslabs; s++) todo |= !done || !done[s];
  CTR_CHECK(setup(r, r->out, todo));
  CTR_CHECK(ctr__writer_init(&r->writer, r->plan.host_slab_buffers,
                             (size_t)(r->plan.chunk_slices * g->vol.nx * g->vol.ny) *
                                 ctr_dtype_size(r->opts.out_dtype),
                             r->plan.nslabs));
  r->have_writer = 1;
  r->writer.dtype = r->opts.out_dtype;
  r->writer.slice_bytes = (size_t)(g->vol.nx * g->vol.ny) * ctr_dtype_size(r->opts.out_dtype);
  *writer = &r->writer;
  return CTR_OK;
}

static ctr_status op_run(void *self, const unsigned char *done) { return run_workers(self, done); }

static ctr_status op_finish(void *self) {
  stream_run *r = self;
  CTR_CHECK(ctr__progress(r->ctx, "fdk", 1.0));
  report_values(r);
  return CTR_OK;
}

static const ctr__stream_ops k_fdk_ops = {"ctr_fdk_stream_options.resume", op_prepare,
                                          op_fingerprint, op_plan, op_setup, op_run, op_finish};

ctr_status ctr__fdk_stream_local(ctr_context *ctx, const ctr_geometry *g,
                                 const ctr_fdk_stream_options *opts, ctr_stack_reader *projections,
                                 const char *out, ctr_file_format out_format,
                                 ctr_fdk_stream_report *report_out) {
  const double t_start = ctr__now_s();
  stream_run r;
  memset(&r, 0, sizeof r);
  r.scratch_fd = -1;
  ctr__stream_output o;
  double t_setup = 0;
  ctr_fdk_stream_report full_report, *report = report_out ? &full_report : NULL;
  CTR_CHECK(report_begin(report_out, &full_report));
  CTR_CHECK(check_geometry(g));
  if (!projections || !out || !*out)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fdk_stream: projections and out are required");
  r.ctx = ctx;
  r.g = g;
  r.in = projections;
  r.out = out;
  if (ctr__tuning(ctx)->direct_io < 0) ctr_stack_reader_set_direct_io(projections, 0);
  ctr_stack_reader_set_read_threads(projections, ctr__tuning(ctx)->read_threads);
  CTR_CHECK(resolve_options(g, opts, &r));
  CTR_CHECK(ctr__fdk_check_projections(g, projections, &r.in_dtype));
  const ctr_status st = ctr__stream_execute(&k_fdk_ops, &r, ctx, out, out_format, r.opts.resume,
                                            r.opts.overwrite, &o, &t_setup);
  if (t_setup > 0) t_setup -= t_start;
  finish_report(&r, t_start, t_setup, report);
  if (report) { /* the whole output: what this run computed and what it resumed */
    report->slabs_resumed = o.nkept;
    report->slices_resumed = o.kept_slices;
    report->min = fminf(report->min, o.kept.min);
    report->max = fmaxf(report->max, o.kept.max);
    report->below += o.kept.below;
    report->above += o.kept.above;
  }
  release(&r);
  /* Keep the partial output for --resume only if a subvolume of it is done. */
  const int resumable = ctr__stream_output_end(&o, st);
  if (report) { /* the whole call: freeing the buffers and the engines counts too */
    report->timings.total = ctr__now_s() - t_start;
    ctr__fdk_report_resume(report, st, resumable, o.jpath);
    ctr__struct_store(&ctr__struct_fdk_stream_report, report_out, report);
  }
  ctr__stream_output_free(&o);
  return st;
}

/* Arrays in GPU memory (device or managed: CuPy, PyTorch, cudaMalloc) are
 * used in place by a CUDA context: the engines copy from and to them on the
 * GPU, nothing passes through the host. A CPU context cannot read them. Their
 * producers, on any stream, finish first. */
ctr_status ctr_fdk_stream_memory(ctr_context *ctx, const ctr_geometry *g,
                                 const ctr_fdk_stream_options *opts, const ctr_array *proj,
                                 ctr_array *vol, ctr_fdk_stream_report *report_out) {
  const double t_start = ctr__now_s();
  TR_START(t_start);
  ctr_status st = CTR_OK;
  stream_run r;
  memset(&r, 0, sizeof r);
  r.scratch_fd = -1;
  ctr_fdk_stream_report full_report, *report = report_out ? &full_report : NULL;
  CTR_CHECK(report_begin(report_out, &full_report));
  CTR_CHECK(check_geometry(g));
  r.ctx = ctx;
  r.g = g;
  CTR_CHECK(resolve_options(g, opts, &r));
  CTR_CHECK(ctr__fdk_geometry_report(ctx, g, &r.fdk));
  TR("options");
  CTR_CHECK(ctr__check_fdk_arrays(g, &r.fdk, proj, vol));
  CTR_CHECK(ctr__gpu_rule(ctx, "FDK", 1, proj->data, "projections", vol->data, "volume"));
  r.in_mem = proj->data;
  r.in_dtype = proj->dtype;
  r.vol_mem = vol->data;
  CTR_CHECK(make_plan(&r, 1, NULL));
  TR("planned");
  CTR_CHECK_GOTO(st, setup(&r, NULL, 1));
  TR("setup");
  const double t_setup = ctr__now_s() - t_start;
  CTR_CHECK_GOTO(st, run_workers(&r, NULL));
  TR("workers");
  CTR_CHECK_GOTO(st, op_finish(&r));
  if (r.opts.on_slab) r.opts.on_slab(r.opts.user, r.plan.z0, r.plan.nz, r.vol_mem);
  finish_report(&r, t_start, t_setup, report);
  TR("reported");
cleanup:
  release(&r);
  TR("released");
  if (st == CTR_OK && report) { /* the whole call: freeing the engines counts too */
    report->timings.total = ctr__now_s() - t_start;
    ctr__struct_store(&ctr__struct_fdk_stream_report, report_out, report);
  }
  return st;
}

/* ---- A distributed rank's piece (stream_internal.h) ----------------------------- */

ctr_stack_info ctr__fdk_stream_info(const ctr_geometry *g, int64_t z0, int64_t nz,
                                    ctr_dtype dtype) {
  const ctr_volume_geometry vg = g->vol;
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = vg.nx;
  info.height = vg.ny;
  info.count = nz;
  info.dtype = dtype;
  info.spacing[0] = vg.voxel_x;
  info.spacing[1] = vg.voxel_y;
  info.spacing[2] = vg.voxel_z;
  info.origin[0] = vg.offset_x - 0.5 * (double)(vg.nx - 1) * vg.voxel_x;
  info.origin[1] = vg.offset_y - 0.5 * (double)(vg.ny - 1) * vg.voxel_y;
  info.origin[2] = vg.offset_z + ((double)z0 - 0.5 * (double)(vg.nz - 1)) * vg.voxel_z;
  return info;
}

ctr_status ctr__fdk_stream_fingerprint(const ctr_geometry *g, const ctr_fdk_stream_options *opts,
                                       ctr_context *ctx, ctr_stack_reader *projections,
                                       const char *out, ctr_file_format fmt, int with_input,
                                       uint64_t *fp) {
  stream_run r;
  memset(&r, 0, sizeof r);
  r.ctx = ctx;
  r.g = g;
  r.in = projections;
  CTR_CHECK(resolve_options(g, opts, &r));
  r.in_dtype = ctr_stack_reader_get_info(projections)->dtype;
  return fingerprint(&r, out, fmt, with_input, fp);
}


/* One piece of a distributed rank: its run, and the detector rows it reads
 * (gw: the geometry of those rows where the backend takes a window). */
typedef struct piece_run {
  ctr__fdk_pieces *pc;
  ctr__dist *d;
  stream_run r;
  ctr_geometry *gw;
  int64_t row0, rows;
  double view_bytes; /* of one projection's row in the file */
  double t_start;
} piece_run;

static ctr_status piece_setup(void *self, ctr__piece piece, ctr__writer **writer) {
  piece_run *pr = self;
  const ctr__fdk_pieces *pc = pr->pc;
  const ctr_geometry *g = pc->g;
  stream_run *r = &pr->r;
  pr->t_start = ctr__now_s();
  memset(r, 0, sizeof *r);
  r->scratch_fd = -1;
  pr->gw = NULL;
  pr->rows = 0;
  r->ctx = pc->ctx;
  r->in = pc->projections;
  r->dist = pr->d;
  CTR_CHECK(resolve_options(g, pc->opts, r));
  r->fdk.z0 = piece.z0;
  r->fdk.nz = piece.nz;
  const int64_t max_slab = pc->subvolumes > 0 ? (piece.nz + pc->subvolumes - 1) / pc->subvolumes : 0;
  if (max_slab > 0 && (!r->opts.max_slab_slices || max_slab < r->opts.max_slab_slices))
    r->opts.max_slab_slices = max_slab;
  if (pc->host_budget) r->opts.host_budget = pc->host_budget;
  r->opts.split = CTR_FDK_SPLIT_VOLUME; /* subvolumes claimed one by one */
  r->in_dtype = ctr_stack_reader_get_info(pc->projections)->dtype;
  /* the rows this piece's slices project onto: the engines see only these
   * where the backend takes a window of rows */
  ctr__geometry_row_band(g, piece.z0, piece.nz, &pr->row0, &pr->rows);
  const ctr__engine_backend *be;
  CTR_CHECK(ctr__engine_backend_of(pc->ctx, &be));
  if (be->row_window) CTR_CHECK(ctr__geometry_rows(g, pr->row0, pr->rows, &pr->gw));
  r->g = pr->gw ? pr->gw : g;
  r->read_row0 = pr->row0;
  r->read_rows = pr->rows;
  CTR_CHECK(make_plan(r, 0, NULL));
  CTR_CHECK(setup(r, pc->out_path, 1));
  CTR_CHECK(ctr__writer_init(&r->writer, r->plan.host_slab_buffers,
                             (size_t)(r->plan.chunk_slices * g->vol.nx * g->vol.ny) *
                                 ctr_dtype_size(r->opts.out_dtype),
                             r->plan.nslabs));
  r->have_writer = 1;
  r->writer.z_offset = piece.z0 - pc->out_z0;
  r->writer.dtype = r->opts.out_dtype;
  r->writer.slice_bytes = (size_t)(g->vol.nx * g->vol.ny) * ctr_dtype_size(r->opts.out_dtype);
  *writer = &r->writer;
  return CTR_OK;
}

static ctr_status piece_run_op(void *self) {
  piece_run *pr = self;
  return run_workers(&pr->r, NULL);
}

static void piece_end(void *self, ctr_status st, ctr__dist_stats *mine) {
  piece_run *pr = self;
  ctr__fdk_pieces *pc = pr->pc;
  stream_run *r = &pr->r;
  (void)st;
  ctr_fdk_stream_report rep;
  finish_report(r, pr->t_start, 0, &rep);
  mine->count[CTR__FDK_NONFINITE] += rep.nonfinite;
  mine->count[CTR__FDK_OUT_BAD] += rep.out_nonfinite;
  mine->count[CTR__FDK_BELOW] += rep.below;
  mine->count[CTR__FDK_ABOVE] += rep.above;
  mine->slices += r->slices_granted;
  mine->bytes_read += (int64_t)((double)pr->rows * pr->view_bytes) * pc->g->nviews;
  mine->min = fmin(mine->min, rep.min);
  mine->max = fmax(mine->max, rep.max);
  pc->plan = rep.plan;
  pc->timings.read += rep.timings.read;
  pc->timings.write += rep.timings.write;
  add_steps(&pc->timings, &rep.timings);
  release(r);
  ctr_geometry_free(pr->gw);
  pr->gw = NULL;
}

static const ctr__stream_piece_ops k_fdk_piece_ops = {piece_setup, piece_run_op, NULL, piece_end};

ctr_status ctr__fdk_stream_pieces(ctr__fdk_pieces *pc, ctr__dist_output *o, ctr__dist_stats *mine) {
  const ctr_geometry *g = pc->g;
  piece_run pr;
  memset(&pr, 0, sizeof pr);
  pr.pc = pc;
  pr.d = o->d;
  pr.view_bytes =
      (double)(g->nu * ctr_dtype_size(ctr_stack_reader_get_info(pc->projections)->dtype));
  return ctr__stream_dist_execute(&k_fdk_piece_ops, &pr, o,
                                  pr.view_bytes * (double)g->nv * (double)g->nviews, mine);
}
