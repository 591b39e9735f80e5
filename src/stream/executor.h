/* The streamed executor: the one orchestration of a streamed run, of one
 * process (FDK's ctr__fdk_stream_local, FBP's ctr__fbp_stream_local) or of
 * a distributed rank's pieces (ctr__stream_dist_execute, below). It owns
 * the output's side (output.h: format capabilities, journal, partial
 * output, resume and its verification, commit) and the writer thread's
 * life (writer.h); a modality says what a unit of the output is and how it
 * is computed through the operations below. ctr__stream_execute calls them
 * in this order, each after the previous one succeeded:
 *   prepare       (optional) the output's format is known (o->caps): adapt
 *                 to it or refuse it (FDK: one worker for in-order formats),
 *                 and prepare what the fingerprint needs (FBP: the input)
 *   fingerprint   what decides the output's bytes
 *   plan          the units (repeating a resumed journal's)
 *   setup         buffers, engines, the writer thread's buffers
 *   run           computes the units not done and hands them to the writer
 *   finish        after the writer drained, before the commit: final checks
 *                 and the report's values
 * Every operation runs on the caller's thread; `self` is the modality's run
 * state, owned by the caller (it releases it after ctr__stream_execute
 * returns, then calls ctr__stream_output_end and _free on o). */
#ifndef CTR_STREAM_EXECUTOR_H
#define CTR_STREAM_EXECUTOR_H

#include "stream/dist_output.h"
#include "stream/output.h"

typedef struct ctr__stream_ops {
  const char *resume_option; /* "ctr_fdk_stream_options.resume": named in messages */
  ctr_status (*prepare)(void *self, const ctr__stream_output *o);
  /* The journal's fingerprint (the output's format: o->fmt). */
  ctr_status (*fingerprint)(void *self, const ctr__stream_output *o, uint64_t *fp);
  /* Plans the run; resumed: the interrupted run's journal (repeat its
   * units, or refuse naming it), NULL for a fresh run. Fills the journal's
   * layout, the output's description and its units. */
  ctr_status (*plan)(void *self, const ctr__journal *resumed, ctr__journal_layout *layout,
                     ctr_stack_info *info, ctr__stream_units *units);
  /* Sets up the run (done: per unit, 1 when resumed; NULL: none) and the
   * writer thread's buffers, dtype and slice size: *writer is set as soon
   * as it is initialised (the executor settles it when a later step fails). */
  ctr_status (*setup)(void *self, const unsigned char *done, ctr__writer **writer);
  ctr_status (*run)(void *self, const unsigned char *done);
  ctr_status (*finish)(void *self);
} ctr__stream_ops;

/* Runs the modality `self` into `out` (fmt; CTR_FORMAT_AUTO: from the
 * name), resuming an interrupted run when `resume`. An output that exists
 * is refused first, unless `overwrite` (then the commit replaces it);
 * resuming concerns the partial names, not the output. o is initialised
 * here (whatever happens: the caller ends and frees it); *t_setup gets the
 * moment (ctr__now_s) the writer thread started, 0 when it did not. */
ctr_status ctr__stream_execute(const ctr__stream_ops *ops, void *self, const ctr_context *ctx,
                               const char *out, ctr_file_format fmt, int resume, int overwrite,
                               ctr__stream_output *o, double *t_setup);

/* ---- A distributed rank's pieces --------------------------------------------
 * The rank runs the pieces rank 0's ledger hands it (ctr__dist_next) into
 * the run's one output o (opened: ctr__dist_output_open), each as
 *   setup    piece p of the output: its plan, buffers and engines, the
 *            writer thread's buffers, dtype, slice size and z_offset (its
 *            jobs' slices relative to o's image 0); *writer is set as soon
 *            as it is initialised
 *   (the executor hands the writer o's partial output and this rank's
 *    journal, in test builds the fault hooks (ctr__writer_inject), and
 *    starts it)
 *   run      computes the piece's units, claiming each from the ledger
 *            (ctr__dist_claim: the piece ends early when another rank took
 *            the rest over), and hands them to the writer
 *   (the writer drains)
 *   finish   (optional) the piece's final checks
 *   (a failed piece's writer settles)
 *   end      whatever happened (st: the piece's status): adds the piece's
 *            slices, counts, value range and bytes read to *mine and
 *            releases the piece's state (the executor keeps st's detail)
 * Every operation runs on the caller's thread; `self` is the modality's,
 * owned by the caller. */
typedef struct ctr__stream_piece_ops {
  ctr_status (*setup)(void *self, ctr__piece p, ctr__writer **writer);
  ctr_status (*run)(void *self);
  ctr_status (*finish)(void *self);
  void (*end)(void *self, ctr_status st, ctr__dist_stats *mine);
} ctr__stream_piece_ops;

/* Collective: this rank's pieces, one after the other until the ledger has
 * none or one failed, then the run's end (ctr__dist_fail,
 * ctr__dist_output_finish with input_bytes: the whole input's size, for the
 * ranks' log). *mine gets what this rank did (its pieces, their time, the
 * units it journalled and what `end` added); o->total the whole run's.
 * Returns the run's status (the first failing rank's on every rank). */
ctr_status ctr__stream_dist_execute(const ctr__stream_piece_ops *ops, void *self,
                                    ctr__dist_output *o, double input_bytes,
                                    ctr__dist_stats *mine);

#endif
