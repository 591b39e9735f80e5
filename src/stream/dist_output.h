/* The one output of a distributed run and its journals (docs/distributed.md,
 * "What each rank reads and writes", "Resume"), shared by the distributed
 * FDK and FBP:
 *  - rank 0 reads the journals of an interrupted run (any rank count, or a
 *    one-process run's), checks every journalled slice range against the
 *    partial output (its CRC-32), decides the work of this run (a callback
 *    of the modality: ctr__dist_set_work), writes the master journal of a
 *    new generation and creates (or reopens) "<out>.partial", header first;
 *  - then every other rank opens the same partial output and each rank
 *    creates its own journal; each writes its slices at their offsets;
 *  - at the end, when every rank finished, rank 0 renames the output onto
 *    its name and removes the journals; a failed run keeps them when a slice
 *    range is journalled (resumable with any rank count), else removes all.
 * Not installed. */
#ifndef CTR_DIST_OUTPUT_H
#define CTR_DIST_OUTPUT_H

#include "distributed/distributed.h"
#include "io/io_internal.h"
#include "stream/journal.h"

/* What a rank adds to the whole run's summary (gathered at the end). */
#define CTR__DIST_COUNTS 8
typedef struct ctr__dist_stats {
  int64_t count[CTR__DIST_COUNTS]; /* summed over the ranks (the modality says what) */
  double min, max;                 /* value range (+inf / -inf: none) */
  int64_t journalled;              /* slabs (bands) this rank journalled */
  double seconds;                  /* this rank's time in its pieces */
  int64_t slices, pieces;          /* slices it computed, pieces it ran */
  int64_t bytes_read;              /* of the input: the rows of its pieces */
} ctr__dist_stats;

/* Rank 0's plan of the work: done[i] (n slices of the output) tells the
 * slices that need no work; the callback calls ctr__dist_set_work. */
typedef ctr_status (*ctr__dist_plan_fn)(void *user, ctr__dist *d, const unsigned char *done,
                                        int64_t n);

typedef struct ctr__dist_output {
  ctr__dist *d;
  const ctr_context *ctx;
  char *out;
  ctr_file_format fmt;
  ctr_stack_info info;
  uint64_t fp;
  const char *resume_name; /* the caller's resume option, for messages */
  char *master;            /* "<out>.partial.journal" */
  ctr__journal_ranges state; /* rank 0: generation, ranks, verified ranges */
  int64_t generation;
  ctr_stack_writer *w;     /* this rank's handle on the partial output */
  ctr__journal journal;    /* this rank's journal */
  int have_journal;
  int created;             /* rank 0 created (or reopened) the partial output (every rank
                              knows it after open) */
  int unusable;            /* a resume found the journal or the partial output damaged */
  /* the slices resumed (shared by rank 0) */
  ctr__slab_record kept;
  int64_t nkept, kept_slices;
  /* the whole run's summary (after finish) */
  ctr__dist_stats total;
  int resumable;           /* the reports' `resumable` (ctr__stream_resumable) */
  int overwrite;           /* the commit may replace an existing output */
} ctr__dist_output;

/* Collective: the partial output `out` (fmt, info: the whole output) of a
 * run with fingerprint fp, fresh or resumed (its commit replaces an output
 * that appeared meanwhile only with `overwrite`), and this rank's journal;
 * `what` names a journalled unit in warnings ("subvolume", "band"), `chunk`
 * slices are read back at a time to check them, `unit` is recorded in the
 * master journal (FBP: the band's slices; 0). `st` is the rank's status
 * so far (a failure of any rank fails the call on all). */
ctr_status ctr__dist_output_open(ctr__dist *d, const ctr_context *ctx, ctr_status st,
                                 const char *out, ctr_file_format fmt, const ctr_stack_info *info,
                                 uint64_t fp, int resume, int overwrite, const char *resume_name,
                                 const char *what, int64_t chunk, int64_t unit,
                                 ctr__dist_plan_fn plan, void *plan_user, ctr__dist_output *o);
/* Collective end: every rank's status and stats; when all succeeded rank 0
 * commits the output (renamed onto its name) and removes the journals, and
 * the rank that speaks for the job logs one line per rank (slices, pieces,
 * bytes of `input_bytes` read, time).
 * Returns the run's status (the first failing rank's error on every rank);
 * o->total gets the sums over the ranks, o->resumable whether a call with
 * resume continues what the run left (ctr__stream_resumable: also set when
 * ctr__dist_output_open fails, which finishes o). Frees what open
 * allocated. */
ctr_status ctr__dist_output_finish(ctr__dist_output *o, ctr_status st,
                                   const ctr__dist_stats *mine, double input_bytes);

/* 1 if `out` has a distributed run's master journal ("<out>.partial.journal"):
 * a one-process call resumes it as a run of one rank. */
int ctr__dist_output_is_distributed(const char *out);

/* A fingerprint of what r reads (ctr__dist_same_run's fp[2]): its sizes,
 * its dtype and the bytes of up to 16 rows at the start of its first image
 * and at the end of its last. Ranks reading node-local copies compare it: a
 * copy that differs differs there as a rule, and a whole pass over the data
 * would cost a read of it. */
ctr_status ctr__dist_input_hash(ctr_stack_reader *r, uint64_t *out);

/* ---- The distributed wrapper's common part --------------------------------
 * A distributed streamed run (FDK's ctr_fdk_stream, FBP's ctr_fbp_stream
 * with a cluster, or resuming such a run's output): its cluster (a local
 * one of one process when the caller gave none) and its control. */
typedef struct ctr__stream_dist {
  ctr__dist *d;
  const ctr_cluster *cluster; /* the caller's, or `local` */
  ctr_cluster *local;
  int rank, size;
} ctr__stream_dist;

/* Begins the run `what` ("fdk", "fbp") on every rank (collective); on
 * failure nothing is left to end. */
ctr_status ctr__stream_dist_begin(ctr__stream_dist *s, const ctr_cluster *cluster,
                                  ctr_context *ctx, const char *what);
/* Ends it (collective) and frees the local cluster; a failed run's error
 * detail (st != CTR_OK) stays the calling thread's. */
void ctr__stream_dist_end(ctr__stream_dist *s, ctr_status st);
/* The output format of a distributed run (CTR_FORMAT_AUTO: from `out`):
 * one its ranks write at once (the format table's many_ranks), else
 * CTR_E_UNSUPPORTED naming out, its format and those a run writes
 * (ctr__format_list; `stem` begins their example names: "vol"); and an
 * output that exists is refused unless `overwrite` (ctr_stack_check_output),
 * before anything is read: callers pass 1 for a resumed run, whose output
 * ctr__dist_output_open checks once it has found the journal. */
ctr_status ctr__dist_output_format(const char *out, ctr_file_format *fmt, const char *stem,
                                   int overwrite);
/* The host memory budget of one rank: `given`, or (0) the host's default
 * shared by the ranks on this rank's host. */
ctr_status ctr__stream_dist_host_budget(const ctr__stream_dist *s, ctr_context *ctx,
                                        uint64_t given, uint64_t *out);

#endif
