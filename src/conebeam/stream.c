/* The streamed FDK executor (seed 000 Alg. 2 and Fig. 3b; seed 001 Sect. 3):
 * one code path for in-core (one subvolume) and out-of-core runs on either
 * backend. The first subvolume's pass reads every projection subset (reader
 * thread), filters it once and keeps the filtered copy where the plan says
 * (device, host memory or a scratch file); later subvolumes backproject the
 * kept copies. Finished subvolumes go, chunk by chunk, to the writer thread,
 * which journals each one once its slices are flushed. */
#include "io/io_internal.h"
#include "io/stack_partial.h"
#include "conebeam/engine.h"
#include "conebeam/journal.h"
#include "conebeam/fdk_internal.h"
#include "conebeam/plan_costs.h"
#include "conebeam/stream_ring.h"
#include "conebeam/stream_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct stream_run {
  ctr_context *ctx;
  const ctr_geometry *g;
  ctr_stream_options opts;
  ctr_fdk_options fdk;
  ctr_plan plan;
  ctr__engine *eng;
  /* source */
  ctr_stack_reader *in;     /* file source, or */
  const void *in_mem;       /* memory source */
  ctr_dtype in_dtype;
  ctr__ring ring, sring;    /* raw reads; scratch reads */
  int have_ring, have_sring;
  float **store;            /* CTR_STORE_HOST: one pinned buffer per batch, allocated
                               during the first pass (pinning is slow; there it hides
                               behind the reads) */
  float *bounce;            /* CTR_STORE_SCRATCH: filtered subset on its way to the file */
  int scratch_fd;
  char *scratch_path;
  int ring_started;         /* the first pass's reads began during setup */
  /* sink */
  float *vol_mem;           /* memory sink, or */
  ctr__writer writer;
  int have_writer;
  float *stage;             /* uint16 output: float chunk on its way to conversion */
  int64_t below, above;     /* uint16 output: clamped voxels */
  int64_t out_bad;          /* non-finite voxels replaced by 0 (the data policy) */
  /* progress */
  int64_t work_total, work_done;
  double t_store;
} stream_run;

static int64_t batch_len(const stream_run *r, int64_t b) {
  const int64_t v0 = b * r->plan.views_per_batch, left = r->g->nviews - v0;
  return left < r->plan.views_per_batch ? left : r->plan.views_per_batch;
}

static size_t view_px(const stream_run *r) { return (size_t)(r->g->nu * r->g->nv); }

/* ---- Fill functions of the reader threads --------------------------------- */

static ctr_status fill_raw(void *user, int64_t b, void *buf) {
  stream_run *r = user;
  return ctr_stack_read(r->in, b * r->plan.views_per_batch, batch_len(r, b), r->in_dtype, buf);
}

static ctr_status fill_scratch(void *user, int64_t b, void *buf) {
  stream_run *r = user;
  const size_t bytes = view_px(r) * sizeof(float);
  return ctr__pread_full(r->scratch_fd, buf, bytes * (size_t)batch_len(r, b),
                         (int64_t)bytes * b * r->plan.views_per_batch, r->scratch_path);
}

/* ---- Options and plan ----------------------------------------------------- */

static ctr_status resolve_options(const ctr_geometry *g, const ctr_stream_options *in,
                                  stream_run *r) {
  CTR_CHECK(ctr__struct_copy(&ctr__struct_stream_options, &r->opts, in));
  CTR_CHECK(ctr__fdk_options_resolve(g, &r->opts.fdk, &r->fdk));
  if (r->opts.input_scale == 0) r->opts.input_scale = 1.0;
  if (r->opts.out_scale == 0) r->opts.out_scale = 1.0;
  if (!(r->opts.input_scale > 0) || !isfinite(r->opts.input_scale))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "input_scale = %g: expected a positive number",
             r->opts.input_scale);
  if (!(r->opts.out_scale > 0) || !isfinite(r->opts.out_scale))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "out_scale = %g: expected a positive number",
             r->opts.out_scale);
  if (!r->opts.out_dtype) r->opts.out_dtype = CTR_DTYPE_FLOAT32;
  if (!ctr_dtype_size(r->opts.out_dtype))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "out_dtype %d: expected float32 or uint16",
             (int)r->opts.out_dtype);
  return CTR_OK;
}

static ctr_status make_plan(stream_run *r, int in_memory, const ctr__journal *resumed) {
  ctr_plan_request q = CTR_PLAN_REQUEST_INIT;
  q.device = ctr_context_get_device(r->ctx);
  uint64_t gpu = 0, host = 0;
  if (!r->opts.gpu_budget || !r->opts.host_budget)
    CTR_CHECK(ctr_plan_default_budgets(r->ctx, &gpu, &host));
  q.gpu_budget = r->opts.gpu_budget ? r->opts.gpu_budget : gpu;
  q.host_budget = r->opts.host_budget ? r->opts.host_budget : host;
  q.proj_dtype = r->in_dtype;
  q.vol_dtype = r->opts.out_dtype;
  q.interp = r->fdk.interp;
  q.z0 = r->fdk.z0;
  q.nz = r->fdk.nz;
  q.views_per_batch = r->fdk.views_per_batch;
  q.max_slab_slices = r->opts.max_slab_slices;
  q.store = r->opts.store;
  q.input_in_memory = q.output_in_memory = in_memory;
  if (resumed) {
    q.views_per_batch = resumed->views_per_batch;
    q.max_slab_slices = resumed->slab_slices;
    q.store = (ctr_store)resumed->store;
  }
  r->plan = (ctr_plan)CTR_PLAN_INIT;
  CTR_CHECK(ctr_plan_fdk(r->g, &q, &r->plan));
  if (resumed && (r->plan.slab_slices != resumed->slab_slices || r->plan.pair != resumed->pair))
    CTR_FAIL(CTR_E_OUT_OF_MEMORY,
             "cannot resume: the interrupted run used subvolumes of %lld slices, the memory "
             "budgets now allow only %lld; give the budgets of the interrupted run (gpu_budget, "
             "host_budget)",
             (long long)resumed->slab_slices, (long long)r->plan.slab_slices);
  return CTR_OK;
}

/* Everything that decides the volume's bytes; a journal only resumes a run
 * with the same fingerprint. */
static ctr_status fingerprint(const stream_run *r, const char *out, ctr_file_format fmt,
                              uint64_t *fp) {
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
  if (r->in) {
    struct stat s;
    char *real = realpath(r->in->path, NULL);
    const char *name = real ? real : r->in->path;
    h = ctr__fnv1a(h, name, strlen(name));
    free(real);
    if (stat(r->in->path, &s) == 0) {
      const int64_t id[3] = {(int64_t)s.st_size, (int64_t)s.st_mtim.tv_sec,
                             (int64_t)s.st_mtim.tv_nsec};
      h = ctr__fnv1a(h, id, sizeof id);
    }
  }
  /* The output by its directory's real path: "./r.raw" resumes "r.raw". */
  const char *slash = strrchr(out, '/');
  char *dir = slash ? strndup(out, (size_t)(slash - out + 1)) : strdup(".");
  char *real = dir ? realpath(dir, NULL) : NULL;
  if (real) h = ctr__fnv1a(h, real, strlen(real));
  else h = ctr__fnv1a(h, out, strlen(out));
  const char *base = slash ? slash + 1 : out;
  h = ctr__fnv1a(h, base, strlen(base));
  free(real);
  free(dir);
  *fp = h;
  return CTR_OK;
}

/* ---- The pipeline ----------------------------------------------------------- */

static ctr_status progress(stream_run *r) {
  return ctr__progress(r->ctx, "fdk", r->work_total ? (double)r->work_done / (double)r->work_total : 1.0);
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

static ctr_status check_output(stream_run *r) {
  const int64_t total = r->eng->ops->out_nonfinite(r->eng), bad = total - r->out_bad;
  r->out_bad = total;
  return r->fdk.strict ? ctr__values_report_kind(r->ctx, 1, bad, "the reconstruction",
                                                 CTR__BAD_VOXELS, "stored as 0")
                       : CTR_OK;
}

/* Warnings of a run that succeeded (bad input values, bad voxels). */
static void report_values(stream_run *r) {
  char name[4200];
  if (r->eng)
    ctr__values_report(r->ctx, 0, r->eng->ops->nonfinite(r->eng), input_name(r, name, sizeof name));
  ctr__values_report_kind(r->ctx, 0, r->out_bad, "the reconstruction", CTR__BAD_VOXELS,
                          "stored as 0");
}

/* The first pass: read, filter once, keep the filtered copy, backproject. */
static ctr_status filter_pass(stream_run *r) {
  const size_t px = view_px(r), esize = ctr_dtype_size(r->in_dtype);
  if (r->have_ring && !r->ring_started) CTR_CHECK(ctr__ring_start(&r->ring, 0, r->plan.nbatches));
  r->ring_started = 0;
  for (int64_t b = 0; b < r->plan.nbatches; b++) {
    const int64_t v0 = b * r->plan.views_per_batch, n = batch_len(r, b);
    const void *raw;
    void *buf = NULL;
    if (r->have_ring) {
      CTR_CHECK(ctr__ring_next(&r->ring, &buf));
      raw = buf;
    } else {
      raw = (const char *)r->in_mem + (size_t)v0 * px * esize;
    }
    if (r->plan.store == CTR_STORE_HOST && !r->store[b]) {
      r->store[b] = ctr_host_alloc((size_t)n * px * sizeof(float));
      if (!r->store[b]) return CTR_E_OUT_OF_MEMORY;
    }
    float *keep = r->plan.store == CTR_STORE_HOST      ? r->store[b]
                  : r->plan.store == CTR_STORE_SCRATCH ? r->bounce
                                                       : NULL;
    CTR_CHECK(r->eng->ops->filter_bp(r->eng, v0, n, raw, r->in_dtype, keep));
    /* Strict: stop at the first batch with bad values, before any subvolume
     * is written. */
    if (r->fdk.strict) {
      char name[4200];
      CTR_CHECK(ctr__values_report(r->ctx, 1, r->eng->ops->nonfinite(r->eng),
                                   input_name(r, name, sizeof name)));
    }
    if (r->have_ring) ctr__ring_release(&r->ring);
    if (r->plan.store == CTR_STORE_SCRATCH) {
      const double t0 = ctr__now_s();
      CTR_CHECK(ctr__pwrite_full(r->scratch_fd, r->bounce, (size_t)n * px * sizeof(float),
                                 (int64_t)(px * sizeof(float)) * v0, r->scratch_path));
      r->t_store += ctr__now_s() - t0;
    }
    r->work_done++;
    CTR_CHECK(progress(r));
  }
  return CTR_OK;
}

/* A later pass: backproject the kept filtered copies. */
static ctr_status reuse_pass(stream_run *r) {
  if (r->plan.store == CTR_STORE_SCRATCH) CTR_CHECK(ctr__ring_start(&r->sring, 0, r->plan.nbatches));
  for (int64_t b = 0; b < r->plan.nbatches; b++) {
    const int64_t v0 = b * r->plan.views_per_batch, n = batch_len(r, b);
    const float *src = NULL;
    void *buf = NULL;
    if (r->plan.store == CTR_STORE_HOST) src = r->store[b];
    if (r->plan.store == CTR_STORE_SCRATCH) {
      CTR_CHECK(ctr__ring_next(&r->sring, &buf));
      src = buf;
    }
    CTR_CHECK(r->eng->ops->bp(r->eng, v0, n, src));
    if (buf) ctr__ring_release(&r->sring);
    r->work_done++;
    CTR_CHECK(progress(r));
  }
  return CTR_OK;
}

/* Hands subvolume s (slices [z, z + nz) of the run) to the sink, chunk by
 * chunk: download, the caller's callback, conversion to the file's dtype
 * here (the writer thread only writes), then the writer. */
static ctr_status deliver(stream_run *r, int64_t s, int64_t z, int64_t nz) {
  const int64_t slice = r->g->vol.nx * r->g->vol.ny;
  /* The engine wrote into the caller's volume. */
  if (r->vol_mem) return check_output(r);
  const int64_t below0 = r->below, above0 = r->above;
  ctr__slab_record rec = {0, INFINITY, -INFINITY, 0, 0};
  r->eng->ops->range(r->eng, &rec.min, &rec.max); /* this run's subvolumes so far */
  for (int64_t k0 = 0; k0 < nz; k0 += r->plan.chunk_slices) {
    const int64_t k1 = k0 + r->plan.chunk_slices < nz ? k0 + r->plan.chunk_slices : nz;
    int buf;
    CTR_CHECK(ctr__writer_acquire(&r->writer, &buf));
    float *data = r->stage ? r->stage : (float *)r->writer.buf[buf];
    ctr_status st = r->eng->ops->download(r->eng, k0, k1, data);
    if (st != CTR_OK) {
      ctr__writer_giveback(&r->writer, buf);
      return st;
    }
    st = check_output(r);
    if (st != CTR_OK) {
      ctr__writer_giveback(&r->writer, buf);
      return st;
    }
    if (r->opts.on_slab) r->opts.on_slab(r->opts.user, r->plan.z0 + z + k0, k1 - k0, data);
    if (r->stage)
      ctr__to_u16(data, (k1 - k0) * slice, r->opts.out_scale, (uint16_t *)r->writer.buf[buf],
                  &r->below, &r->above);
    rec.below = r->below - below0;
    rec.above = r->above - above0;
    const ctr__writer_job job = {buf, z + k0, k1 - k0, k1 == nz ? s : -1, r->plan.z0 + z, nz, rec};
    ctr__writer_submit(&r->writer, &job);
  }
  return CTR_OK;
}

static ctr_status run_slabs(stream_run *r, const unsigned char *done) {
  int filtered = 0;
  int64_t todo = 0;
  for (int64_t s = 0; s < r->plan.nslabs; s++) todo += !done || !done[s];
  r->work_total = todo * r->plan.nbatches;
  const int64_t slice = r->g->vol.nx * r->g->vol.ny;
  for (int64_t s = 0; s < r->plan.nslabs; s++) {
    if (done && done[s]) continue;
    const int64_t z = s * r->plan.slab_slices;
    const int64_t nz = r->plan.nz - z < r->plan.slab_slices ? r->plan.nz - z : r->plan.slab_slices;
    float *target = r->vol_mem ? r->vol_mem + z * slice : NULL;
    CTR_CHECK(r->eng->ops->slab_begin(r->eng, r->plan.z0 + z, nz, target));
    CTR_CHECK(filtered ? reuse_pass(r) : filter_pass(r));
    filtered = 1;
    CTR_CHECK(r->eng->ops->slab_end(r->eng));
    CTR_CHECK(deliver(r, s, z, nz));
  }
  if (r->have_ring) ctr__ring_finish(&r->ring);
  return CTR_OK;
}

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
    const ctr_status st = ctr__error_set(CTR_E_IO, "cannot create a scratch file for filtered projections in '%s': %s "
                                         "(choose another directory with scratch_dir)",
                                         dir ? dir : out, strerror(errno));
    r->scratch_path = NULL;
    return st;
  }
  if (0)
    CTR_FAIL(CTR_E_IO, "cannot create the scratch file '%s' for filtered projections: %s "
             "(choose another directory with scratch_dir)", r->scratch_path, strerror(errno));
  return CTR_OK;
}

/* Buffers, the reader (started at once when a first pass is due, so that
 * the backend's setup overlaps the first reads) and the backend. */
static ctr_status setup_common(stream_run *r, const char *out, int start_reading) {
  const size_t px = view_px(r);
  ctr_status st;
  if (r->plan.store == CTR_STORE_HOST) {
    r->store = ctr__calloc((size_t)r->plan.nbatches, sizeof *r->store, "filtered projection store");
    if (!r->store) return CTR_E_OUT_OF_MEMORY;
  }
  if (r->plan.store == CTR_STORE_SCRATCH) {
    CTR_CHECK(open_scratch(r, out ? out : "ctrecon"));
    r->bounce = ctr_host_alloc(px * (size_t)r->plan.views_per_batch * sizeof(float));
    if (!r->bounce) return CTR_E_OUT_OF_MEMORY;
    st = ctr__ring_init(&r->sring, CTR__READ_BUFFERS, px * (size_t)r->plan.views_per_batch * sizeof(float),
                        fill_scratch, r);
    r->have_sring = 1;
    if (st != CTR_OK) return st;
  }
  if (r->in) {
    st = ctr__ring_init(&r->ring, r->plan.read_buffers,
                        px * (size_t)r->plan.views_per_batch * ctr_dtype_size(r->in_dtype), fill_raw, r);
    r->have_ring = 1;
    if (st != CTR_OK) return st;
    if (start_reading) {
      CTR_CHECK(ctr__ring_start(&r->ring, 0, r->plan.nbatches));
      r->ring_started = 1;
    }
  }
  if (out && r->opts.out_dtype == CTR_DTYPE_UINT16) {
    r->stage = ctr_host_alloc((size_t)(r->plan.chunk_slices * r->g->vol.nx * r->g->vol.ny) * sizeof(float));
    if (!r->stage) return CTR_E_OUT_OF_MEMORY;
  }
#if CTR_HAVE_CUDA
  if (ctr_context_get_device(r->ctx) == CTR_DEVICE_CUDA)
    return ctr__engine_cuda_create(r->ctx, r->g, &r->fdk, &r->plan, r->opts.input_scale, &r->eng);
#endif
  return ctr__engine_cpu_create(r->ctx, r->g, &r->fdk, &r->plan, r->opts.input_scale, &r->eng);
}

static void finish_report(stream_run *r, double t_start, double t_setup, ctr_stream_report *rep) {
  if (!rep) return;
  ctr_stream_timings *t = &rep->timings;
  memset(t, 0, sizeof *t);
  if (r->eng) r->eng->ops->timings(r->eng, t);
  if (r->have_ring) t->read = r->ring.busy;
  if (r->have_sring) t->reload += r->sring.busy;
  t->store += r->t_store;
  if (r->have_writer) t->write = r->writer.busy_s;
  rep->below = r->below;
  rep->above = r->above;
  rep->min = INFINITY;
  rep->max = -INFINITY;
  if (r->eng) r->eng->ops->range(r->eng, &rep->min, &rep->max);
  t->setup = t_setup;
  t->total = ctr__now_s() - t_start;
  rep->plan = r->plan;
  rep->nonfinite = r->eng ? r->eng->ops->nonfinite(r->eng) : 0;
  rep->out_nonfinite = r->out_bad;
}

static void release(stream_run *r) {
  if (r->have_ring) ctr__ring_free(&r->ring);
  if (r->have_sring) ctr__ring_free(&r->sring);
  if (r->have_writer) ctr__writer_free(&r->writer);
  ctr__engine_free(r->eng);
  for (int64_t b = 0; r->store && b < r->plan.nbatches; b++) ctr_host_free(r->store[b]);
  free(r->store);
  ctr_host_free(r->bounce);
  ctr_host_free(r->stage);
  if (r->scratch_fd > 0) close(r->scratch_fd);
  if (r->scratch_path) unlink(r->scratch_path);
  free(r->scratch_path);
}

static ctr_status check_geometry(const ctr_geometry *g) {
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "streamed FDK: geometry is NULL");
  return CTR_OK;
}

static int64_t env_int(const char *name) {
  const char *v = getenv(name);
  return v && *v ? strtoll(v, NULL, 10) : 0;
}

/* A resumed run trusts a journalled subvolume only if the partial output
 * still holds its bytes: each one's CRC-32 is compared with the journal's.
 * A subvolume that changed on disk (or cannot be read back) is recomputed,
 * with a warning naming it. What the kept ones recorded (value range,
 * clamped voxels) goes into *kept, so the summary covers the whole output. */
static ctr_status verify_resumed(stream_run *r, ctr__journal *j, ctr_stack_writer *w,
                                 const char *out, ctr__slab_record *kept, int64_t *nkept,
                                 int64_t *kept_slices) {
  const size_t slice = (size_t)(r->g->vol.nx * r->g->vol.ny) * ctr_dtype_size(r->opts.out_dtype);
  const int64_t chunk = r->plan.chunk_slices > 0 ? r->plan.chunk_slices : 1;
  void *buf = ctr__malloc(slice * (size_t)chunk, "resume check buffer");
  if (!buf) return CTR_E_OUT_OF_MEMORY;
  for (int64_t s = 0; s < r->plan.nslabs; s++) {
    if (!j->done[s]) continue;
    const int64_t z = s * r->plan.slab_slices;
    const int64_t nz = r->plan.nz - z < r->plan.slab_slices ? r->plan.nz - z : r->plan.slab_slices;
    uint32_t crc = 0;
    ctr_status st = CTR_OK;
    for (int64_t k = 0; k < nz && st == CTR_OK; k += chunk) {
      const int64_t n = nz - k < chunk ? nz - k : chunk;
      st = ctr__stack_read_back(w, z + k, n, buf);
      if (st == CTR_OK) crc = ctr__crc32(crc, buf, (size_t)n * slice);
    }
    if (st == CTR_OK && crc == j->rec[s].crc) {
      kept->min = fminf(kept->min, j->rec[s].min);
      kept->max = fmaxf(kept->max, j->rec[s].max);
      kept->below += j->rec[s].below;
      kept->above += j->rec[s].above;
      ++*nkept;
      *kept_slices += nz;
      continue;
    }
    if (st == CTR_OK)
      ctr__log(r->ctx, CTR_LOG_WARNING,
               "'%s': subvolume %lld (slices %lld..%lld) changed on disk after it was journalled "
               "(CRC-32 %08x, the journal says %08x): computing it again",
               out, (long long)s, (long long)(r->plan.z0 + z), (long long)(r->plan.z0 + z + nz - 1),
               (unsigned)crc, (unsigned)j->rec[s].crc);
    else
      ctr__log(r->ctx, CTR_LOG_WARNING,
               "'%s': subvolume %lld (slices %lld..%lld) cannot be read back (%s): computing it "
               "again", out, (long long)s, (long long)(r->plan.z0 + z),
               (long long)(r->plan.z0 + z + nz - 1), ctr_error_detail());
    j->done[s] = 0;
    ctr__stack_forget(w, z, nz);
  }
  free(buf);
  return CTR_OK;
}

/* A resume that fails on these found the journal or the partial output
 * damaged, truncated or gone: resuming again cannot help. */
static int resume_unusable(ctr_status st) {
  return st == CTR_E_FORMAT || st == CTR_E_SIZE_MISMATCH || st == CTR_E_IO;
}

/* The caller's report: checked first and zeroed, filled (in its version)
 * from the run's own at the end. */
static ctr_status report_begin(ctr_stream_report *caller, ctr_stream_report *full) {
  memset(full, 0, sizeof *full);
  if (!caller) return CTR_OK;
  CTR_CHECK(ctr__struct_check(&ctr__struct_stream_report, caller));
  return ctr__struct_store(&ctr__struct_stream_report, caller, full);
}

ctr_status ctr_fdk_stream(ctr_context *ctx, const ctr_geometry *g, const ctr_stream_options *opts,
                          ctr_stack_reader *projections, const char *out,
                          ctr_file_format out_format, ctr_stream_report *report_out) {
  const double t_start = ctr__now_s();
  ctr_status st = CTR_OK;
  stream_run r;
  memset(&r, 0, sizeof r);
  r.scratch_fd = -1;
  ctr__journal journal;
  memset(&journal, 0, sizeof journal);
  journal.fd = -1;
  int have_journal = 0, resumable = 0, unusable = 0;
  ctr_stack_writer *w = NULL;
  unsigned char *done_images = NULL;
  char *jpath = NULL;
  double t_setup = 0;
  ctr__slab_record kept = {0, INFINITY, -INFINITY, 0, 0}; /* resumed subvolumes */
  int64_t nkept = 0, kept_slices = 0;
  ctr_stream_report full_report, *report = report_out ? &full_report : NULL;
  CTR_CHECK(report_begin(report_out, &full_report));
  CTR_CHECK(check_geometry(g));
  if (!projections || !out || !*out)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fdk_stream: projections and out are required");
  r.ctx = ctx;
  r.g = g;
  r.in = projections;
  CTR_CHECK(resolve_options(g, opts, &r));
  const ctr_stack_info *pi = ctr_stack_reader_get_info(projections);
  if (pi->width != g->nu || pi->height != g->nv || pi->count != g->nviews)
    CTR_FAIL(CTR_E_SIZE_MISMATCH,
             "'%s' holds %lld images of %lld x %lld pixels, the geometry expects %lld views of "
             "%lld x %lld", projections->path, (long long)pi->count, (long long)pi->width,
             (long long)pi->height, (long long)g->nviews, (long long)g->nu, (long long)g->nv);
  r.in_dtype = pi->dtype;
  if (out_format == CTR_FORMAT_AUTO) CTR_CHECK(ctr_format_guess(out, &out_format));
  resumable = out_format != CTR_FORMAT_TIFF;
  uint64_t fp = 0;
  CTR_CHECK(fingerprint(&r, out, out_format, &fp));
  jpath = ctr__io_sprintf("%s.partial.journal", out);
  if (!jpath) return CTR_E_OUT_OF_MEMORY;
  if (r.opts.resume) {
    if (!resumable)
      CTR_FAIL_GOTO(st, CTR_E_UNSUPPORTED, "cannot resume into the multi-page TIFF '%s': write "
                    "raw, nrrd or a TIFF stack pattern to make a run resumable", out);
    if ((st = ctr__journal_resume(&journal, jpath, fp)) != CTR_OK) {
      unusable = resume_unusable(st);
      goto cleanup;
    }
    have_journal = 1;
  } else if (ctr__file_exists(jpath)) {
    CTR_FAIL_GOTO(st, CTR_E_INVALID_ARGUMENT,
                  "'%s' holds an interrupted run of this output: set ctr_stream_options.resume to "
                  "continue it, or "
                  "delete '%s' and '%s.partial' to start over", jpath, jpath, out);
  }
  CTR_CHECK_GOTO(st, make_plan(&r, 0, have_journal ? &journal : NULL));
  /* The output, under its partial name. */
  {
    const ctr_volume_geometry vg = g->vol;
    ctr_stack_info info = CTR_STACK_INFO_INIT;
    info.width = vg.nx;
    info.height = vg.ny;
    info.count = r.plan.nz;
    info.dtype = r.opts.out_dtype;
    info.spacing[0] = vg.voxel_x;
    info.spacing[1] = vg.voxel_y;
    info.spacing[2] = vg.voxel_z;
    info.origin[0] = vg.offset_x - 0.5 * (double)(vg.nx - 1) * vg.voxel_x;
    info.origin[1] = vg.offset_y - 0.5 * (double)(vg.ny - 1) * vg.voxel_y;
    info.origin[2] = vg.offset_z + ((double)r.plan.z0 - 0.5 * (double)(vg.nz - 1)) * vg.voxel_z;
    if (resumable) {
      if (have_journal) {
        done_images = ctr__calloc((size_t)r.plan.nz, 1, "resume flags");
        if (!done_images) {
          st = CTR_E_OUT_OF_MEMORY;
          goto cleanup;
        }
        for (int64_t s = 0; s < r.plan.nslabs; s++) {
          if (!journal.done[s]) continue;
          const int64_t z = s * r.plan.slab_slices;
          const int64_t nz = r.plan.nz - z < r.plan.slab_slices ? r.plan.nz - z : r.plan.slab_slices;
          memset(done_images + z, 1, (size_t)nz);
        }
      }
      st = ctr__stack_create_partial(out, out_format, &info, have_journal, done_images, &w);
      if (st == CTR_OK && have_journal)
        st = verify_resumed(&r, &journal, w, out, &kept, &nkept, &kept_slices);
      if (st != CTR_OK) {
        unusable = have_journal && resume_unusable(st);
        goto cleanup;
      }
    } else {
      CTR_CHECK_GOTO(st, ctr_stack_create(out, out_format, &info, &w));
    }
  }
  int todo = 0;
  for (int64_t s = 0; s < r.plan.nslabs; s++) todo |= !have_journal || !journal.done[s];
  CTR_CHECK_GOTO(st, setup_common(&r, out, todo));
  CTR_CHECK_GOTO(st, ctr__writer_init(&r.writer, r.plan.host_slab_buffers,
                                      (size_t)(r.plan.chunk_slices * g->vol.nx * g->vol.ny) *
                                          ctr_dtype_size(r.opts.out_dtype)));
  r.have_writer = 1;
  r.writer.out = w;
  r.writer.dtype = r.opts.out_dtype;
  r.writer.slice_bytes = (size_t)(g->vol.nx * g->vol.ny) * ctr_dtype_size(r.opts.out_dtype);
  r.writer.stop_after = env_int("CTRECON_INJECT_STOP_AFTER_SLABS");
  /* The journal of a fresh run exists only once everything is set up: a
   * failed setup leaves nothing that asks for --resume. */
  if (resumable && !have_journal) {
    CTR_CHECK_GOTO(st, ctr__journal_create(&journal, jpath, fp, &r.plan));
    have_journal = 1;
  }
  r.writer.journal = have_journal ? &journal : NULL;
  CTR_CHECK_GOTO(st, ctr__writer_start(&r.writer));
  t_setup = ctr__now_s() - t_start;
  CTR_CHECK_GOTO(st, run_slabs(&r, have_journal ? journal.done : NULL));
  CTR_CHECK_GOTO(st, ctr__writer_drain(&r.writer));
  CTR_CHECK_GOTO(st, ctr__progress(ctx, "fdk", 1.0));
  report_values(&r);
  r.writer.out = NULL;
  st = ctr_stack_commit(w); /* frees w */
  w = NULL;
  if (st == CTR_OK && have_journal) {
    ctr__journal_close(&journal, 1);
    have_journal = 0;
  }
cleanup:
  if (st != CTR_OK && r.have_writer) {
    /* Let the writer finish what it holds: journalled subvolumes stay valid. */
    const ctr_status keep = st;
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", ctr_error_detail());
    ctr__writer_drain(&r.writer);
    ctr__error_set(keep, "%s", detail);
  }
  finish_report(&r, t_start, t_setup, report);
  if (report) { /* the whole output: what this run computed and what it resumed */
    report->slabs_resumed = nkept;
    report->slices_resumed = kept_slices;
    report->min = fminf(report->min, kept.min);
    report->max = fmaxf(report->max, kept.max);
    report->below += kept.below;
    report->above += kept.above;
  }
  release(&r);
  /* Keep the partial output for --resume only if a subvolume of it is done. */
  int journalled = 0;
  for (int64_t s = 0; have_journal && s < journal.nslabs; s++) journalled |= journal.done[s];
  if (w) {
    if (resumable && journalled) ctr__stack_suspend(w);
    else ctr_stack_abort(w);
  }
  if (have_journal) ctr__journal_close(&journal, !journalled);
  if (report) { /* a journal left behind, and whether a resume can continue it */
    if (st != CTR_OK && jpath && ctr__file_exists(jpath) &&
        strlen(jpath) < sizeof report->journal) {
      report->resumable = !unusable;
      memcpy(report->journal, jpath, strlen(jpath) + 1);
    }
    ctr__struct_store(&ctr__struct_stream_report, report_out, report);
  }
  free(done_images);
  free(jpath);
  return st;
}

ctr_status ctr_fdk_stream_memory(ctr_context *ctx, const ctr_geometry *g,
                                 const ctr_stream_options *opts, const ctr_array *proj,
                                 ctr_array *vol, ctr_stream_report *report_out) {
  const double t_start = ctr__now_s();
  ctr_status st = CTR_OK;
  stream_run r;
  memset(&r, 0, sizeof r);
  r.scratch_fd = -1;
  ctr_stream_report full_report, *report = report_out ? &full_report : NULL;
  CTR_CHECK(report_begin(report_out, &full_report));
  CTR_CHECK(check_geometry(g));
  r.ctx = ctx;
  r.g = g;
  CTR_CHECK(resolve_options(g, opts, &r));
  CTR_CHECK(ctr__check_fdk_arrays(g, &r.fdk, proj, vol));
  r.in_mem = proj->data;
  r.in_dtype = proj->dtype;
  r.vol_mem = vol->data;
  CTR_CHECK(make_plan(&r, 1, NULL));
  CTR_CHECK_GOTO(st, setup_common(&r, NULL, 1));
  const double t_setup = ctr__now_s() - t_start;
  CTR_CHECK_GOTO(st, run_slabs(&r, NULL));
  CTR_CHECK_GOTO(st, ctr__progress(ctx, "fdk", 1.0));
  report_values(&r);
  if (r.opts.on_slab) r.opts.on_slab(r.opts.user, r.plan.z0, r.plan.nz, r.vol_mem);
  finish_report(&r, t_start, t_setup, report);
  if (report) ctr__struct_store(&ctr__struct_stream_report, report_out, report);
cleanup:
  release(&r);
  return st;
}
