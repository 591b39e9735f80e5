/* The streamed executor (executor.h). */
#include "stream/executor.h"

#include <math.h>
#include <stdio.h>

ctr_status ctr__stream_execute(const ctr__stream_ops *ops, void *self, const ctr_context *ctx,
                               const char *out, ctr_file_format fmt, int resume, int overwrite,
                               ctr__stream_output *o, double *t_setup) {
  ctr__writer *writer = NULL;
  uint64_t fp = 0;
  *t_setup = 0;
  ctr_status st = ctr__stream_output_init(o, out, fmt, ops->resume_option);
  o->overwrite = overwrite;
  /* an existing output is refused before anything is read or computed; a
   * resumed run's once its journal is found (without one, nothing to resume
   * is the error) */
  if (st == CTR_OK && !resume) st = ctr_stack_check_output(out, o->fmt, overwrite);
  if (st == CTR_OK && ops->prepare) st = ops->prepare(self, o);
  if (st == CTR_OK) st = ops->fingerprint(self, o, &fp);
  if (st == CTR_OK) st = ctr__stream_output_resume(o, resume, fp);
  if (st == CTR_OK && resume) st = ctr_stack_check_output(out, o->fmt, overwrite);
  if (st != CTR_OK) return st;
  {
    ctr__journal_layout layout;
    ctr_stack_info info;
    ctr__stream_units units;
    CTR_CHECK(ops->plan(self, o->have_journal ? &o->journal : NULL, &layout, &info, &units));
    CTR_CHECK(ctr__stream_output_open(o, ctx, fp, &layout, &info, &units));
  }
  const unsigned char *done = ctr__stream_output_done_units(o);
  st = ops->setup(self, done, &writer);
  if (st == CTR_OK) {
    ctr__stream_output_attach(o, writer);
    st = ctr__writer_start(writer);
  }
  if (st == CTR_OK) {
    *t_setup = ctr__now_s();
    st = ops->run(self, ctr__stream_output_done_units(o)); /* a fresh journal: none done */
  }
  if (st == CTR_OK) st = ctr__writer_drain(writer);
  if (st == CTR_OK) st = ops->finish(self);
  if (st == CTR_OK) st = ctr__stream_output_commit(o, writer);
  if (st != CTR_OK && writer) ctr__writer_settle(writer, st);
  return st;
}

/* One piece of a distributed rank (executor.h). */
static ctr_status run_piece(const ctr__stream_piece_ops *ops, void *self, ctr__dist_output *o,
                            ctr__piece p, ctr__dist_stats *mine) {
  ctr__writer *writer = NULL;
  ctr_status st = ops->setup(self, p, &writer);
  if (st == CTR_OK) {
    writer->out = o->w;
    writer->journal = &o->journal;
#ifdef CTR_FAULT_INJECTION
    ctr__writer_inject(writer, ctr__dist_rank(o->d));
    if (writer->delay_s > 0) ctr__dist_set_delay(o->d, writer->delay_s);
#endif
    st = ctr__writer_start(writer);
  }
  if (st == CTR_OK) st = ops->run(self);
  if (st == CTR_OK) st = ctr__writer_drain(writer);
  if (st == CTR_OK && ops->finish) st = ops->finish(self);
  if (st != CTR_OK && writer) ctr__writer_settle(writer, st);
  mine->journalled += writer ? writer->slabs_written : 0;
  char detail[1024];
  snprintf(detail, sizeof detail, "%s", ctr_error_detail());
  ops->end(self, st, mine);
  if (st != CTR_OK) ctr__error_set(st, "%s", detail);
  return st;
}

ctr_status ctr__stream_dist_execute(const ctr__stream_piece_ops *ops, void *self,
                                    ctr__dist_output *o, double input_bytes,
                                    ctr__dist_stats *mine) {
  *mine = (ctr__dist_stats){{0}, INFINITY, -INFINITY, 0, 0, 0, 0, 0};
  ctr_status st = CTR_OK;
  double before = 0; /* slices this rank computed before the piece */
  for (;;) {
    ctr__piece p;
    int got = 0;
    st = ctr__dist_next(o->d, &p, &got);
    if (st != CTR_OK || !got) break;
    ctr__dist_piece_progress(o->d, before, (double)p.nz);
    const int64_t slices0 = mine->slices;
    const double t0 = ctr__now_s();
    st = run_piece(ops, self, o, p, mine);
    mine->seconds += ctr__now_s() - t0;
    mine->pieces++;
    before += (double)(mine->slices - slices0);
    if (st != CTR_OK) break;
  }
  ctr__dist_fail(o->d, st);
  return ctr__dist_output_finish(o, st, mine, input_bytes);
}
