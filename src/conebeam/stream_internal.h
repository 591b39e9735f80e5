/* The streamed FDK executor (stream.c) as the distributed FDK
 * (stream_dist.c) runs it on each rank: one piece of the volume at a time,
 * reading only the detector rows the piece's slices project onto, into the
 * one output the ranks share, journalled in the rank's journal. */
#ifndef CTR_STREAM_INTERNAL_H
#define CTR_STREAM_INTERNAL_H

#include "distributed/distributed.h"
#include "geometry/geometry_internal.h"
#include "stream/dist_output.h"
#include "stream/journal.h"

/* The counts a rank adds to the distributed run's summary
 * (ctr__dist_stats.count). */
enum { CTR__FDK_NONFINITE, CTR__FDK_OUT_BAD, CTR__FDK_BELOW, CTR__FDK_ABOVE };

/* What a rank's pieces share. */
typedef struct ctr__fdk_pieces {
  /* in */
  ctr_context *ctx;
  const ctr_geometry *g;
  const ctr_fdk_stream_options *opts; /* the caller's: z0/nz are replaced by each piece's */
  ctr_stack_reader *projections;
  int64_t out_z0;        /* the output's image 0 is slice out_z0 of the volume */
  const char *out_path;  /* names the scratch file */
  int subvolumes;        /* a piece is cut into at least this many (0: as the budgets allow) */
  uint64_t host_budget;  /* 0: the options' */
  /* out: the last piece's plan, the pieces' timings summed */
  ctr_fdk_plan plan;
  ctr_fdk_stream_timings timings;
} ctr__fdk_pieces;

/* Runs this rank's pieces of the streamed FDK into the distributed output o
 * (stream/executor.h, ctr__stream_dist_execute): each piece reads rows of
 * every projection once (those its slices project onto:
 * ctr__geometry_row_band), filters them once, claims each subvolume from
 * the run's ledger before computing it; the writer journals it in the
 * rank's journal once written. *mine: what this rank did (counts indexed by
 * the enum above). Returns the run's status (collective). */
ctr_status ctr__fdk_stream_pieces(ctr__fdk_pieces *pc, ctr__dist_output *o, ctr__dist_stats *mine);
/* The fingerprint of a streamed FDK into `out` (stream.c): what decides the
 * output's bytes; `with_input` adds the input file's identity (the journal's
 * fingerprint; ranks reading node-local copies compare without it). */
ctr_status ctr__fdk_stream_fingerprint(const ctr_geometry *g, const ctr_fdk_stream_options *opts,
                                       ctr_context *ctx, ctr_stack_reader *projections,
                                       const char *out, ctr_file_format fmt, int with_input,
                                       uint64_t *fp);
/* The projections must be g's views, in float32 or uint16 (*dtype: theirs);
 * CTR_E_SIZE_MISMATCH / CTR_E_FORMAT naming the file. */
ctr_status ctr__fdk_check_projections(const ctr_geometry *g, const ctr_stack_reader *in,
                                      ctr_dtype *dtype);
/* The output's description: slices [z0, z0 + nz) of g's volume in dtype
 * (spacing, origin). */
ctr_stack_info ctr__fdk_stream_info(const ctr_geometry *g, int64_t z0, int64_t nz,
                                    ctr_dtype dtype);
/* The data policy's warnings of a run that succeeded: `in_bad` values of
 * the projections (file `path`, NULL: in memory) and `out_bad` voxels
 * replaced by 0. */
void ctr__fdk_stream_warn(const ctr_context *ctx, const char *path, int64_t in_bad,
                          int64_t out_bad);
/* The report's `resumable` (the executor's answer: ctr__stream_resumable)
 * and `journal`: the journal's name when a failed call (st) leaves it on
 * disk, usable or not ("" otherwise). */
void ctr__fdk_report_resume(ctr_fdk_stream_report *rep, ctr_status st, int resumable,
                            const char *journal);
/* ctr_fdk_stream of one process (stream.c); ctr_fdk_stream itself
 * (stream_dist.c) hands a run with a cluster, or the resume of a distributed
 * run's output, to the distributed FDK instead. */
ctr_status ctr__fdk_stream_local(ctr_context *ctx, const ctr_geometry *g,
                                 const ctr_fdk_stream_options *opts, ctr_stack_reader *projections,
                                 const char *out, ctr_file_format out_format,
                                 ctr_fdk_stream_report *report);

#endif
