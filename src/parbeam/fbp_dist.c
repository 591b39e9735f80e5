/* The distributed FBP (docs/distributed.md): ctr_fbp_stream called by every
 * rank of a cluster with the same arguments. Rank 0 plans the bands (its
 * host budget's, or the interrupted run's) and finds the rotation centre
 * once; the bands still to do are cut into one contiguous share per rank;
 * each rank runs its share as pieces (the executor's distributed entry,
 * stream/executor.h, over the piece ops below) of the streamed FBP
 * (fbp_stream.c), reading only its bands' sinogram rows (and, with Paganin,
 * a neighbouring band on each side of its share), with its own reader and
 * writer threads, claiming
 * band after band from rank 0's ledger; a rank that runs out of work takes
 * over bands of the slowest (distributed.h). A slice is computed from its
 * own rows whatever band holds it (tested), so the output is byte-identical
 * to one process's. */
#include "stream/dist_output.h"
#include "parbeam/fbp_stream_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The counts a rank adds to the summary (ctr__dist_stats.count). */
enum { N_INPUT, N_CALIBRATION, N_CLAMPED, N_OUTPUT, N_DEZINGERED, N_BELOW, N_ABOVE };

typedef struct dist_fbp {
  int64_t band_slices;
} dist_fbp;

/* Rank 0: the bands with a slice not done, in order, cut into one
 * contiguous share of equal band count per rank. */
static ctr_status plan_work(void *user, ctr__dist *d, const unsigned char *done, int64_t n) {
  const dist_fbp *f = user;
  const int size = ctr__dist_size(d);
  const int64_t bs = f->band_slices, nbands = (n + bs - 1) / bs;
  int64_t todo = 0;
  unsigned char *need = ctr__calloc((size_t)nbands, 1, "bands to do");
  ctr__piece *pieces = ctr__calloc((size_t)nbands + 1, sizeof *pieces, "the run's pieces");
  int *owner = ctr__calloc((size_t)nbands + 1, sizeof *owner, "the run's pieces");
  ctr_status st = CTR_OK;
  if (!need || !pieces || !owner) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  for (int64_t k = 0; k < nbands; k++) {
    for (int64_t z = k * bs; z < n && z < (k + 1) * bs && !need[k]; z++) need[k] = !done[z];
    todo += need[k];
  }
  int64_t np = 0, i = 0;
  for (int64_t k = 0; k < nbands; k++) {
    if (!need[k]) continue;
    const int r = (int)(i++ * size / todo);
    const int64_t z0 = k * bs, nz = (k + 1) * bs < n ? bs : n - z0;
    if (np > 0 && owner[np - 1] == r && pieces[np - 1].z0 + pieces[np - 1].nz == z0) {
      pieces[np - 1].nz += nz;
    } else {
      pieces[np] = (ctr__piece){z0, nz};
      owner[np++] = r;
    }
  }
  st = ctr__dist_set_work(d, pieces, owner, np);
cleanup:
  free(need);
  free(pieces);
  free(owner);
  return st;
}

/* What rank 0 decided for every rank: the axis (found once) and the bands. */
typedef struct shared_plan {
  double axis;
  int64_t center_used, band_slices;
} shared_plan;

/* A run's state on this rank up to its bands and output geometry: the
 * options, the input, the geometry; `plan` NULL: find the centre and plan
 * the bands here (rank 0), else take rank 0's. */
static ctr_status setup(ctr__fbp_run *r, ctr_context *ctx, const ctr_parallel_params *params,
                        const ctr_fbp_stream_options *opts, ctr_stack_reader *input,
                        const float *flat, const float *dark, const shared_plan *plan,
                        int64_t band_slices) {
  memset(r, 0, sizeof *r);
  r->min = INFINITY;
  r->max = -INFINITY;
  r->ctx = ctx;
  CTR_CHECK(ctr__fbp_resolve(r, opts));
  CTR_CHECK(ctr__fbp_open_input(r, input, flat, dark));
  CTR_CHECK(ctr__fbp_prepare_input(r, params));
  if (plan) {
    r->axis_in = plan->axis;
    r->center_used = (ctr_center_method)plan->center_used;
    r->centre_known = 1;
    band_slices = plan->band_slices;
  }
  return ctr__fbp_prepare(r, params, band_slices);
}

/* Bytes of input rows [r0, r0 + n) of every projection (sinogram) used. */
static int64_t rows_bytes(const ctr__fbp_run *q, int64_t n) {
  return n * q->W * (q->sino ? q->NP : q->nsel) * (int64_t)ctr_dtype_size(q->dtype);
}

static void add_counts(ctr__dist_stats *m, const ctr__fbp_run *q, int64_t slices) {
  m->count[N_INPUT] += q->counts.input;
  m->count[N_CALIBRATION] += q->counts.calibration;
  m->count[N_CLAMPED] += q->counts.clamped;
  m->count[N_OUTPUT] += q->counts.output;
  m->count[N_DEZINGERED] += q->dezingered;
  m->count[N_BELOW] += q->below;
  m->count[N_ABOVE] += q->above;
  m->slices += slices;
  /* the bands the reader was given: with Paganin one more on each side */
  for (int64_t i = 0; i < q->nitems; i++) {
    const int64_t k = q->items[i], r0 = q->row0 + k * q->band_rows;
    const int64_t n = q->row0 + q->nrows - r0 < q->band_rows ? q->row0 + q->nrows - r0 : q->band_rows;
    m->bytes_read += rows_bytes(q, n);
  }
  m->min = fmin(m->min, q->min);
  m->max = fmax(m->max, q->max);
}

/* ---- This rank's pieces: the modality's side of the streamed executor's
 * distributed entry (stream/executor.h) ---- */

/* The run's arguments and rank 0's plan; q: the piece's own run. */
typedef struct fbp_pieces {
  ctr_context *ctx;
  const ctr_parallel_params *params;
  const ctr_fbp_stream_options *o;
  ctr_stack_reader *input;
  const float *flat, *dark;
  const shared_plan *plan;
  ctr__dist *d;
  ctr_fbp_stream_report *rep; /* the pieces' read and write times summed */
  ctr__fbp_run q;
} fbp_pieces;

/* Piece p: slices [p.z0, p.z0 + p.nz), whole bands. */
static ctr_status piece_setup(void *self, ctr__piece p, ctr__writer **writer) {
  fbp_pieces *f = self;
  ctr__fbp_run *q = &f->q;
  CTR_CHECK(setup(q, f->ctx, f->params, f->o, f->input, f->flat, f->dark, f->plan, 0));
  const int64_t bs = q->band_slices;
  q->k0 = p.z0 / bs;
  q->k1 = (p.z0 + p.nz + bs - 1) / bs;
  q->dist = f->d;
  CTR_CHECK(ctr__fbp_writer_setup(q));
  *writer = &q->writer;
  return CTR_OK;
}

static ctr_status piece_run(void *self) {
  fbp_pieces *f = self;
  return ctr__fbp_run_bands(&f->q, NULL, NULL);
}

static ctr_status piece_finish(void *self) {
  const fbp_pieces *f = self;
  return ctr__fbp_strict(&f->q);
}

static void piece_end(void *self, ctr_status st, ctr__dist_stats *mine) {
  fbp_pieces *f = self;
  ctr__fbp_run *q = &f->q;
  int64_t slices = 0; /* the slices this piece wrote */
  for (int64_t k = 0; q->have_writer && k < q->nbands; k++) slices += q->writer.slabs[k].slices;
  add_counts(mine, q, slices);
  f->rep->seconds_read += q->have_ring ? q->ring.busy : 0;
  f->rep->seconds_write += q->have_writer ? q->writer.busy_s : 0;
  ctr__fbp_release(q, st);
}

static const ctr__stream_piece_ops k_fbp_piece_ops = {piece_setup, piece_run, piece_finish,
                                                      piece_end};

static ctr_status fbp_stream_dist(ctr_context *ctx, const ctr_parallel_params *params,
                                  const ctr_fbp_stream_options *opts, const ctr_cluster *cluster,
                                  ctr_stack_reader *input, const float *flat, const float *dark,
                                  const char *out, ctr_file_format fmt,
                                  ctr_fbp_stream_report *report_out) {
  const double t_start = ctr__now_s();
  ctr_fbp_stream_report rep = CTR_FBP_STREAM_REPORT_INIT;
  if (report_out) CTR_CHECK(ctr__struct_check(&ctr__struct_fbp_stream_report, report_out));
  if (!input || !out || !*out)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream: input and out are required");
  ctr__stream_dist sd;
  ctr_status st = ctr__stream_dist_begin(&sd, cluster, ctx, "fbp");
  if (st != CTR_OK) return st;
  ctr__dist *d = sd.d;
  const int rank = sd.rank;
  ctr__fbp_run r;
  ctr_fbp_stream_options o;
  ctr__dist_output dout;
  int have_r = 0, have_out = 0, tried_out = 0;
  st = ctr__struct_copy(&ctr__struct_fbp_stream_options, &o, opts);
  o.cluster = NULL;
  /* ranks on one host share its memory */
  if (st == CTR_OK) st = ctr__stream_dist_host_budget(&sd, ctx, o.host_budget, &o.host_budget);
  if (st == CTR_OK) st = ctr__dist_output_format(out, &fmt, "rec", o.overwrite || o.resume);
  /* rank 0: the bands (an interrupted run's) and the centre */
  uint64_t fp[3] = {0, 0, 0}, journal_fp = 0;
  shared_plan plan = {0, 0, 0};
  if (st == CTR_OK && rank == 0) {
    char *master = ctr__io_sprintf("%s.partial.journal", out);
    const int64_t unit = master && o.resume ? ctr__journal_unit(master) : 0;
    free(master);
    st = setup(&r, ctx, params, &o, input, flat, dark, NULL, unit);
    have_r = 1;
    plan = (shared_plan){r.axis_in, (int64_t)r.center_used, r.band_slices};
  }
  void *blob = &plan;
  size_t nb = sizeof plan;
  st = ctr__dist_share(d, st, &blob, &nb);
  if (rank != 0) {
    if (st == CTR_OK && nb == sizeof plan) memcpy(&plan, blob, sizeof plan);
    free(blob);
    if (st == CTR_OK) {
      st = setup(&r, ctx, params, &o, input, flat, dark, &plan, 0);
      have_r = 1;
    }
  }
  if (st == CTR_OK) {
    fp[0] = ctr__fbp_fingerprint(&r, params, out, fmt, 0);
    fp[1] = ctr__fbp_fingerprint(&r, params, out, fmt, 1);
  }
  if (st == CTR_OK && input && ctr__dist_size(d) > 1) st = ctr__dist_input_hash(input, &fp[2]);
  st = ctr__dist_same_run(d, st, fp, input ? input->path : "", &journal_fp);
  if (st != CTR_OK) goto end;
  {
    dist_fbp f = {plan.band_slices};
    const ctr_stack_info info = ctr__fbp_output_info(&r);
    st = ctr__dist_output_open(d, ctx, st, out, fmt, &info, journal_fp, o.resume, o.overwrite,
                               "ctr_fbp_stream_options.resume", "band", plan.band_slices,
                               plan.band_slices, plan_work, &f, &dout);
    tried_out = 1; /* its resumable too when it failed */
    if (st != CTR_OK) goto end;
    have_out = 1;
  }
  fbp_pieces pieces = {ctx, params, &o, input, flat, dark, &plan, d, &rep, {0}};
  ctr__dist_stats mine;
  st = ctr__stream_dist_execute(&k_fbp_piece_ops, &pieces, &dout, (double)rows_bytes(&r, r.H),
                                &mine);
  {
    const ctr__dist_stats *a = &dout.total;
    const ctr_value_counts c = {CTR_VALUE_COUNTS_VERSION, a->count[N_INPUT],
                                a->count[N_CALIBRATION], a->count[N_CLAMPED],
                                a->count[N_OUTPUT]};
    r.counts = c;
    r.min = fminf((float)a->min, dout.kept.min);
    r.max = fmaxf((float)a->max, dout.kept.max);
    r.below = a->count[N_BELOW] + dout.kept.below;
    r.above = a->count[N_ABOVE] + dout.kept.above;
    r.dezingered = a->count[N_DEZINGERED];
    r.t_compute = mine.seconds; /* this rank's pieces, wall time */
    if (st == CTR_OK && rank == ctr_cluster_get_reporter(sd.cluster))
      ctr__fbp_report_values(&r, &r.counts, input->path);
  }
end:
  if (have_r) {
    /* the reader's and writer's times are the pieces' sums (piece_end):
     * the fill's whole-run figures are those of a one-process run */
    const double t_read = rep.seconds_read, t_write = rep.seconds_write;
    ctr__fbp_report_fill(&r, &rep);
    rep.seconds_read = t_read;
    rep.seconds_write = t_write;
    rep.bands_resumed = have_out ? dout.nkept : 0;
    rep.resumable = tried_out && dout.resumable;
  }
  rep.seconds_total = ctr__now_s() - t_start;
  if (have_r) ctr__fbp_release(&r, st);
  if (report_out) ctr__struct_store(&ctr__struct_fbp_stream_report, report_out, &rep);
  ctr__stream_dist_end(&sd, st);
  return st;
}

ctr_status ctr_fbp_stream(ctr_context *ctx, const ctr_parallel_params *params,
                          const ctr_fbp_stream_options *opts, ctr_stack_reader *input,
                          const float *flat, const float *dark, const char *out,
                          ctr_file_format out_format, ctr_fbp_stream_report *report) {
  /* shared by the ranks of a cluster, or resuming such a run's output (as a
   * run of one rank) */
  ctr_fbp_stream_options o;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_fbp_stream_options, &o, opts));
  if (o.cluster || (o.resume && out && ctr__dist_output_is_distributed(out)))
    return fbp_stream_dist(ctx, params, opts, o.cluster, input, flat, dark, out, out_format,
                           report);
  return ctr__fbp_stream_local(ctx, params, opts, input, flat, dark, out, out_format, report);
}
