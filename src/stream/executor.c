/* The streamed executor (executor.h). */
#include "stream/executor.h"

ctr_status ctr__stream_execute(const ctr__stream_ops *ops, void *self, const ctr_context *ctx,
                               const char *out, ctr_file_format fmt, int resume,
                               ctr__stream_output *o, double *t_setup) {
  ctr__writer *writer = NULL;
  uint64_t fp = 0;
  *t_setup = 0;
  ctr_status st = ctr__stream_output_init(o, out, fmt, ops->resume_option);
  if (st == CTR_OK && ops->prepare) st = ops->prepare(self, o);
  if (st == CTR_OK) st = ops->fingerprint(self, o, &fp);
  if (st == CTR_OK) st = ctr__stream_output_resume(o, resume, fp);
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
