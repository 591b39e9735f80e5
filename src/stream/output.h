/* The output of a one-process streamed run, shared by the streamed FDK
 * (conebeam/stream.c) and FBP (parbeam/fbp_stream.c): one resume semantics
 * for every command, answered by the format table (ctr__format_info):
 *  - a resumable format (raw, NRRD, TIFF stacks, OME-Zarr) is written under its fixed
 *    partial names with a journal "<out>.partial.journal"; a resume reopens
 *    both, checks the fingerprint and every journalled unit's bytes, and
 *    the run computes only the units that are not done;
 *  - any other format (multi-page TIFF, HDF5) is written to a temporary name
 *    without a journal; a resume into it is refused naming the caller's
 *    resume option.
 * A run left by an interrupted one (its journal) is never overwritten
 * silently: without resume it is refused, naming the option and the files
 * to delete (the rules: "Resume", below).
 *
 * The steps, in order (each after the previous one succeeded; end always):
 *   ctr__stream_output_init     the format, its capabilities, the journal's name
 *   ctr__stream_output_resume   the interrupted run's journal, or the check
 *                               that there is none
 *   (the modality plans its units, repeating a resumed journal's)
 *   ctr__stream_output_open     a fresh run's journal, the (partial) output,
 *                               a resumed run's verification
 *   ctr__stream_output_attach   hands the output and the journal to the
 *                               writer thread
 *   ctr__stream_output_commit   renames the output into place (keeping a file that
 *                               appeared there unless o->overwrite)
 *   ctr__stream_output_end      keeps a failed run's partial output and
 *                               journal when a unit of it is done, else
 *                               removes them; says whether a resume
 *                               continues what is left (the report's
 *                               `resumable`)
 *   ctr__stream_output_free     frees the journal's name
 * Not thread-safe: one thread (the run's) calls these; the writer thread
 * uses the output and the journal between attach and commit only. Not
 * installed. */
#ifndef CTR_STREAM_OUTPUT_H
#define CTR_STREAM_OUTPUT_H

#include "io/io_internal.h"
#include "stream/journal.h"
#include "stream/writer.h"

/* ---- Resume: one semantics for every command --------------------------------
 * A run that can be continued keeps its state on disk: a streamed output
 * (FDK, FBP, of one process or distributed) its partial output and the
 * journal "<out>.partial.journal", an iterative run its checkpoint
 * (checkpoint.h). Every command follows the same rules, and each refusal
 * names the caller's resume option (raised with it as the error's field:
 * the CLI says --resume):
 *  - state there and no resume: refused (CTR_E_INVALID_ARGUMENT), naming
 *    the option and the files to delete to start over; nothing is touched;
 *  - resume and no state: refused (CTR_E_IO), naming the option and the
 *    missing file;
 *  - a resume of another run (its fingerprint differs) is refused naming
 *    what differs (a journal: CTR_E_INVALID_ARGUMENT; a checkpoint, whose
 *    fingerprint is typed: CTR_E_FORMAT naming the field and both values),
 *    and damaged state is CTR_E_FORMAT; the state stays as it was;
 *  - state whose run is still going (its lock held: the journal itself,
 *    "<checkpoint>.lock") is refused naming that run's process instead
 *    (ctr__file_lock);
 *  - a resumed run gives the bits of an uninterrupted one.
 * The one intended difference is what a run that succeeded leaves: a
 * journal is transient (removed with the partial output once the output
 * has its name), a checkpoint is a continuation point (it stays: a later
 * call with resume and more iterations continues from it; a caller that
 * does not want it deletes it, as the CLI does without --keep-checkpoint).
 * A failed streamed call's report says whether a call with resume
 * continues what it left on disk: `resumable` (ctr__stream_resumable). */

/* The rules above for the state file `path` of a run (noun: "journal",
 * "checkpoint"): without resume, a file there is refused, "'path' holds
 * HOLDS: set OPTION to continue it, or delete 'path' (and 'OUT.partial'
 * when out is not NULL) to start over", unless the lock of a run still
 * going is on it (ctr__file_lock_check: that run is named); with resume,
 * a missing one is refused. */
ctr_status ctr__stream_resume_rule(const char *path, const char *noun, const char *holds,
                                   const char *out, int resume, const char *option);
/* The reports' `resumable` (ctr_fdk_stream_report, ctr_fbp_stream_report:
 * one meaning), for a call that returned st: 1 when it failed and left on
 * disk a partial output and its journal `journal` (a one-process run's or
 * a distributed run's master: ctr__journal_kind) that a call with resume
 * continues: the ones this call kept, or those of an interrupted run that
 * it refused to overwrite, or to resume with other inputs or options. 0
 * after success, with no journal on disk, and when this call found the
 * journal or the partial output damaged (unusable: delete both). */
int ctr__stream_resumable(ctr_status st, int unusable, const char *journal);

typedef struct ctr__stream_output {
  const char *out;                   /* the caller's target */
  ctr_file_format fmt;               /* resolved */
  const ctr_file_format_info *caps;  /* its row of the format table */
  const char *resume_option;         /* "ctr_fdk_stream_options.resume", for messages */
  char *jpath;                       /* "<out>.partial.journal" */
  ctr__journal journal;
  int have_journal;  /* resumed, or a fresh one that counts (after attach) */
  int fresh_journal; /* created by this run */
  int unusable;      /* a resume found the journal or the partial output damaged */
  ctr_stack_writer *w;               /* until commit; end suspends or aborts it */
  unsigned char *done;               /* per image: resumed and verified */
  ctr__slab_record kept;             /* what the resumed units recorded */
  int64_t nkept, kept_slices;
  int overwrite;                     /* the caller's overwrite option: the commit may replace
                                        an existing output (set after init) */
} ctr__stream_output;

/* Zeroes o, resolves fmt (CTR_FORMAT_AUTO: from `out`), its capabilities
 * and the journal's name. */
ctr_status ctr__stream_output_init(ctr__stream_output *o, const char *out, ctr_file_format fmt,
                                   const char *resume_option);
/* resume: the format must be resumable (else CTR_E_UNSUPPORTED naming the
 * resume option), and the journal must exist and carry fingerprint fp
 * (ctr__journal_resume); then o->journal holds the interrupted run's plan
 * and done units. Otherwise a journal there is refused (CTR_E_INVALID_ARGUMENT
 * naming the option; a run still writing it is named by its process). */
ctr_status ctr__stream_output_resume(ctr__stream_output *o, int resume, uint64_t fp);

/* How the output is cut into journalled units (FDK: subvolumes, FBP:
 * bands): unit u holds images [u x unit, min(+unit, count)). */
typedef struct ctr__stream_units {
  const char *what;  /* "subvolume", "band": in warnings */
  int64_t unit;      /* images per unit */
  int64_t z0;        /* the first image's slice number, in warnings */
  int64_t chunk;     /* images read back at a time to verify */
} ctr__stream_units;

/* A fresh run of a resumable format creates its journal (recording
 * `layout`, locked, so that a second run of the output stops here) before
 * the output is touched; then the output `info` is created: under its
 * partial names (a resumed run's reopened, its journalled units verified
 * against their CRC-32; a unit that changed is computed again), or, for a
 * format that is not resumable, under a temporary name. Direct I/O follows
 * ctx's ctr_tuning.direct_io. */
ctr_status ctr__stream_output_open(ctr__stream_output *o, const ctr_context *ctx, uint64_t fp,
                                   const ctr__journal_layout *layout, const ctr_stack_info *info,
                                   const ctr__stream_units *units);
/* Per unit: 1 when a resumed unit is done (NULL for a fresh run). */
const unsigned char *ctr__stream_output_done_units(const ctr__stream_output *o);
/* Once everything is set up: a fresh journal counts from now on (a failed
 * setup leaves nothing that asks for a resume); the writer thread gets the
 * output and the journal (test builds: and CTRECON_INJECT_STOP_AFTER_SLABS). */
void ctr__stream_output_attach(ctr__stream_output *o, ctr__writer *writer);
/* Commits the output (its name in place) and removes the journal. */
ctr_status ctr__stream_output_commit(ctr__stream_output *o, ctr__writer *writer);
/* After a failure (st: the run's status) the output and journal are kept
 * for a resume when a unit is journalled, else removed. Returns the
 * report's `resumable` (ctr__stream_resumable; 0 for a format that is not
 * resumable). o->jpath stays (for the caller's report) until
 * ctr__stream_output_free. */
int ctr__stream_output_end(ctr__stream_output *o, ctr_status st);
void ctr__stream_output_free(ctr__stream_output *o);

/* ---- Fingerprints ----------------------------------------------------------
 * A journal resumes only a run with the same fingerprint: the modality
 * hashes what decides the output's bytes, and these the files. */
/* The input by its real path and its file's size and modification time
 * ("file.h5:/dataset": the file's). */
uint64_t ctr__stream_fp_input(uint64_t h, const char *path);
/* The output by its directory's real path and its name: "./r.raw" is
 * "r.raw". */
uint64_t ctr__stream_fp_output(uint64_t h, const char *out);

#endif
