/* The streamed FDK executor (stream.c) as the distributed FDK
 * (stream_dist.c) runs it on each rank: one piece of the volume at a time,
 * reading only the detector rows the piece's slices project onto, into the
 * one output the ranks share, journalled in the rank's journal. */
#ifndef CTR_STREAM_INTERNAL_H
#define CTR_STREAM_INTERNAL_H

#include "distributed/distributed.h"
#include "geometry/geometry_internal.h"
#include "stream/journal.h"

typedef struct ctr__fdk_piece {
  /* in */
  ctr_stack_writer *out; /* the whole output (its image 0 is slice out_z0 of the volume) */
  int64_t out_z0;
  const char *out_path;  /* names the scratch file */
  ctr__journal *journal; /* the rank's */
  ctr__dist *dist;       /* claims each subvolume */
  int64_t z0, nz;        /* the piece's slices of the volume */
  int64_t max_slab;      /* subvolumes of at most this many slices (0: as the budgets allow) */
  uint64_t host_budget;  /* 0: the options' */
  /* out: what this piece did */
  int64_t row0, rows;    /* detector rows read */
  int64_t slices;        /* slices computed (the subvolumes this rank was granted) */
  int64_t journalled;    /* subvolumes journalled */
  int64_t nonfinite, out_bad, below, above;
  float min, max;
  ctr_fdk_plan plan;
  ctr_fdk_stream_timings timings;
} ctr__fdk_piece;

/* Runs piece p of the streamed FDK of g (opts: the caller's options; their
 * z0/nz are replaced by the piece's): rows [p->row0, p->row0 + p->rows) of
 * every projection read once (ctr__geometry_row_band), filtered once, each
 * subvolume claimed from the run's ledger before it is computed and
 * journalled in p->journal once written. */
ctr_status ctr__fdk_stream_piece(ctr_context *ctx, const ctr_geometry *g,
                                 const ctr_fdk_stream_options *opts, ctr_stack_reader *projections,
                                 ctr__fdk_piece *p);
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
/* ctr_fdk_stream of one process (stream.c); ctr_fdk_stream itself
 * (stream_dist.c) hands a run with a cluster, or the resume of a distributed
 * run's output, to the distributed FDK instead. */
ctr_status ctr__fdk_stream_local(ctr_context *ctx, const ctr_geometry *g,
                                 const ctr_fdk_stream_options *opts, ctr_stack_reader *projections,
                                 const char *out, ctr_file_format out_format,
                                 ctr_fdk_stream_report *report);

#endif
