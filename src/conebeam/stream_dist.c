/* The distributed FDK (docs/distributed.md): ctr_fdk_stream called by every
 * rank of a cluster with the same arguments. Rank 0 cuts the slices still
 * to do into one contiguous share per rank (equal counts); each rank runs
 * its share as pieces (the executor's distributed entry,
 * stream/executor.h, over stream.c's piece ops), each piece
 * reading only the detector rows its slices project onto (ramp filtering
 * is along rows, so a row filtered alone is the row filtered with the rest),
 * with its own reader and writer threads, claiming subvolume after
 * subvolume from rank 0's ledger. A rank that runs out of work takes over
 * the tail of the rank whose unclaimed slices take longest at its measured
 * rate, in proportion to the two rates (distributed.h): the split follows
 * the measured rates, not the slab counts. On the CPU a slice's bytes do
 * not depend on the subvolumes it was computed in (docs/architecture.md),
 * so the output is byte-identical to one process's whatever the rank count,
 * the balancing and a resume with another rank count. */
#include "conebeam/fdk_internal.h"
#include "conebeam/stream_internal.h"
#include "stream/dist_output.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Subvolumes a rank's share is cut into at least (when there are several
 * ranks): the units another rank can take over. Four leave a rank that
 * finishes early three quarters of a slower rank's share to take, at the
 * price of keeping the filtered rows between subvolumes (host memory or the
 * scratch file) where one subvolume would have needed none. */
#define CTR__DIST_SUBVOLUMES 4

typedef struct dist_fdk {
  int64_t z0; /* the run's first slice (the output's image 0) */
} dist_fdk;

/* Rank 0: the slices not done, in z order, cut into one contiguous share of
 * equal slice count per rank (a share may span several runs of slices:
 * one piece each). */
static ctr_status plan_work(void *user, ctr__dist *d, const unsigned char *done, int64_t n) {
  const dist_fdk *f = user;
  const int size = ctr__dist_size(d);
  int64_t todo = 0;
  for (int64_t z = 0; z < n; z++) todo += !done[z];
  ctr__piece *pieces = ctr__calloc((size_t)(n + size), sizeof *pieces, "the run's pieces");
  int *owner = ctr__calloc((size_t)(n + size), sizeof *owner, "the run's pieces");
  if (!pieces || !owner) {
    free(pieces);
    free(owner);
    return CTR_E_OUT_OF_MEMORY;
  }
  int64_t np = 0, k = 0; /* k: slices to do before z */
  for (int64_t z = 0; z < n; z++) {
    if (done[z]) continue;
    const int r = (int)(k * size / todo);
    if (np > 0 && owner[np - 1] == r && pieces[np - 1].z0 + pieces[np - 1].nz == f->z0 + z) {
      pieces[np - 1].nz++;
    } else {
      pieces[np] = (ctr__piece){f->z0 + z, 1};
      owner[np++] = r;
    }
    k++;
  }
  const ctr_status st = ctr__dist_set_work(d, pieces, owner, np);
  free(pieces);
  free(owner);
  return st;
}

/* What every rank checks before the run: the arguments, and that its
 * geometry, options and output are rank 0's (the input's identity aside:
 * ranks may read node-local copies). */
static ctr_status check_local(ctr_context *ctx, const ctr_geometry *g,
                              const ctr_fdk_stream_options *opts, int overwrite,
                              ctr_stack_reader *in, const char *out, ctr_file_format *fmt,
                              uint64_t fp[2]) {
  if (!g || !in || !out || !*out)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fdk_stream: geometry, projections and out are required");
  ctr_dtype dtype;
  CTR_CHECK(ctr__fdk_check_projections(g, in, &dtype));
  CTR_CHECK(ctr__dist_output_format(out, fmt, "vol", overwrite));
  CTR_CHECK(ctr__fdk_stream_fingerprint(g, opts, ctx, in, out, *fmt, 0, &fp[0]));
  return ctr__fdk_stream_fingerprint(g, opts, ctx, in, out, *fmt, 1, &fp[1]);
}

static ctr_status report_check(ctr_fdk_stream_report *caller, ctr_fdk_stream_report *full) {
  memset(full, 0, sizeof *full);
  full->min = INFINITY;
  full->max = -INFINITY;
  return caller ? ctr__struct_check(&ctr__struct_fdk_stream_report, caller) : CTR_OK;
}

static ctr_status fdk_stream_dist(ctr_context *ctx, const ctr_geometry *g,
                                  const ctr_fdk_stream_options *opts, const ctr_cluster *cluster,
                                  ctr_stack_reader *projections, const char *out,
                                  ctr_file_format out_format, ctr_fdk_stream_report *report_out) {
  const double t_start = ctr__now_s();
  ctr_fdk_stream_report rep;
  CTR_CHECK(report_check(report_out, &rep));
  ctr__stream_dist sd;
  ctr_status st = ctr__stream_dist_begin(&sd, cluster, ctx, "fdk");
  if (st != CTR_OK) return st;
  ctr__dist *d = sd.d;
  const int rank = sd.rank, size = sd.size;
  ctr_fdk_stream_options o;
  ctr_fdk_options fdk;
  ctr__dist_output dout;
  int have_out = 0;
  uint64_t fp[3] = {0, 0, 0};
  st = ctr__struct_copy(&ctr__struct_fdk_stream_options, &o, opts);
  if (st == CTR_OK) st = ctr__fdk_options_resolve(g, &o.fdk, &fdk);
  if (st == CTR_OK)
    st = check_local(ctx, g, opts, o.overwrite || o.resume, projections, out, &out_format, fp);
  if (st == CTR_OK && ctr__tuning(ctx)->direct_io < 0) ctr_stack_reader_set_direct_io(projections, 0);
  if (st == CTR_OK) ctr_stack_reader_set_read_threads(projections, ctr__tuning(ctx)->read_threads);
  /* the same run everywhere; rank 0's fingerprint (with its input) names the journals */
  uint64_t journal_fp = 0;
  if (st == CTR_OK && size > 1) st = ctr__dist_input_hash(projections, &fp[2]);
  st = ctr__dist_same_run(d, st, fp, projections ? projections->path : "", &journal_fp);
  if (st != CTR_OK) goto end;
  /* ranks on one host share its memory */
  st = ctr__stream_dist_host_budget(&sd, ctx, o.host_budget, &o.host_budget);
  dist_fdk f = {fdk.z0};
  const ctr_stack_info info = ctr__fdk_stream_info(g, fdk.z0, fdk.nz, o.out_dtype ? o.out_dtype
                                                                         : CTR_DTYPE_FLOAT32);
  st = ctr__dist_output_open(d, ctx, st, out, out_format, &info, journal_fp, o.resume,
                             o.overwrite, "ctr_fdk_stream_options.resume", "subvolume", 16, 0,
                             plan_work, &f, &dout);
  have_out = 1; /* its resumable too when it failed */
  if (st != CTR_OK) goto end;
  ctr__fdk_pieces pc = {ctx, g, opts, projections, fdk.z0, out,
                        size > 1 ? CTR__DIST_SUBVOLUMES : 0, o.host_budget, {0}, {0}};
  ctr__dist_stats mine;
  st = ctr__fdk_stream_pieces(&pc, &dout, &mine);
  rep.plan = pc.plan;
  rep.timings = pc.timings;
  {
    const ctr__dist_stats *a = &dout.total;
    rep.nonfinite = a->count[CTR__FDK_NONFINITE];
    rep.out_nonfinite = a->count[CTR__FDK_OUT_BAD];
    rep.below = a->count[CTR__FDK_BELOW] + dout.kept.below;
    rep.above = a->count[CTR__FDK_ABOVE] + dout.kept.above;
    rep.min = fminf((float)a->min, dout.kept.min);
    rep.max = fmaxf((float)a->max, dout.kept.max);
    rep.slabs_resumed = dout.nkept;
    rep.slices_resumed = dout.kept_slices;
    rep.workers = 1;
    ctr__fdk_report_helix(g, &rep);
  }
  if (st == CTR_OK && rank == ctr_cluster_get_reporter(sd.cluster))
    ctr__fdk_stream_warn(ctx, projections->path, rep.nonfinite, rep.out_nonfinite);
end:
  if (have_out) {
    char *j = ctr__io_sprintf("%s.partial.journal", out);
    ctr__fdk_report_resume(&rep, st, dout.resumable, j);
    free(j);
  }
  rep.timings.total = ctr__now_s() - t_start;
  if (report_out) ctr__struct_store(&ctr__struct_fdk_stream_report, report_out, &rep);
  ctr__stream_dist_end(&sd, st);
  return st;
}

ctr_status ctr_fdk_stream(ctr_context *ctx, const ctr_geometry *g, const ctr_fdk_stream_options *opts,
                          ctr_stack_reader *projections, const char *out,
                          ctr_file_format out_format, ctr_fdk_stream_report *report) {
  /* shared by the ranks of a cluster, or resuming such a run's output (as a
   * run of one rank) */
  ctr_fdk_stream_options o;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_fdk_stream_options, &o, opts));
  if (g) CTR_CHECK(ctr__fdk_geometry_report(ctx, g, &o.fdk));
  if (o.cluster || (o.resume && out && ctr__dist_output_is_distributed(out)))
    return fdk_stream_dist(ctx, g, opts, o.cluster, projections, out, out_format, report);
  return ctr__fdk_stream_local(ctx, g, opts, projections, out, out_format, report);
}
