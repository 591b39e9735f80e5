/* The streamed parallel-beam FBP (fbp_stream.c) as the distributed FBP
 * (fbp_dist.c) runs it on each rank: the state of a run and the steps it is
 * made of. Not installed. */
#ifndef CTR_FBP_STREAM_INTERNAL_H
#define CTR_FBP_STREAM_INTERNAL_H

#include "distributed/distributed.h"
#include "io/io_internal.h"
#include "stream/journal.h"
#include "stream/ring.h"
#include "stream/writer.h"
#include "stream/executor.h"
#include "parbeam/sync.h"

/* The live FBP's summed volume, as the final run takes it (fbp_live.c): get puts
 * slices [s0, s0 + ns) of the rows reconstructed (each ny x nx) into dst with
 * their non-finite values replaced as the data policy replaces a backend's, adding
 * how many to *bad_output. Called from the run's compute thread, band by band in
 * order, while the writer writes the band before; arg is the caller's. */
typedef struct ctr__fbp_acc_slices {
  ctr_status (*get)(void *arg, int64_t s0, int64_t ns, float *dst, int64_t *bad_output);
  void *arg;
} ctr__fbp_acc_slices;

typedef struct ctr__fbp_run {
  ctr_context *ctx;
  ctr_fbp_stream_options o;
  ctr_fbp_options fbp;
  ctr_corrections c;
  ctr_value_counts counts;
  ctr_value_counts *caller_counts; /* the caller's ctr_fbp_options.counts: added to, no warning */
  int transmission;           /* binning or Paganin: corrections on transmissions */
  int sino_corr;              /* dezinger, stripes or stitching */
  /* input */
  ctr_stack_reader *in;       /* file, or */
  const ctr_array *mem;       /* memory */
  ctr_dtype dtype;            /* of the ring's buffers (sinograms: float32) */
  int sino;
  int64_t W, H, NP;           /* image width, rows (sinograms: slices), projections (angles) */
  const float *flat, *dark;
  float *ones;                /* flat when none is given */
  int64_t *sel, nsel;         /* the projections used */
  int64_t row0, nrows;        /* input rows reconstructed */
  int bx, by;
  int64_t nbins_b;            /* bins after binning */
  int64_t margin;             /* Paganin: binned rows on each side */
  double axis_in;             /* the axis in input bins */
  ctr_center_method center_used;
  int axis_found;
  ctr_parallel_geometry *gsel, *gout;
  /* bands (input rows; by divides them) */
  int64_t band_rows, nbands, band_slices;
  int64_t nslices;            /* output slices */
  size_t band_bytes;          /* ring buffer */
  /* ring and writer */
  ctr__ring ring;
  int have_ring;
  int64_t *items;             /* ring item -> band */
  int64_t nitems;
  ctr__writer writer;
  int have_writer;
  ctr_file_format out_fmt;    /* the output's format: its writer's own buffers are planned
                                 (CTR_FORMAT_AUTO: memory output, none) */
  /* work buffers */
  float *sbuf, *sino2, *trans, *slices;
  int trans_pinned; /* trans is page-locked (ctr_host_register): Paganin's copies to the GPU */
  int sbuf_pinned;  /* sbuf is page-locked: the sorting filter's copies to the GPU */
  void *window;
  /* statistics */
  float min, max;
  int64_t below, above, dezingered;
  double t_compute;
  /* a distributed rank (fbp_dist.c) */
  int64_t k0, k1;             /* the piece's bands [k0, k1) (k1 0: all) */
  ctr__dist *dist;            /* claims each band before computing it (NULL: none) */
  int centre_known;           /* axis_in holds the axis rank 0 found: not found again */
  /* the live FBP's full volume, summed as the projections arrived (fbp_live.c):
   * each band is fetched from it (acc.get not NULL), nothing is read */
  ctr__fbp_acc_slices acc;
} ctr__fbp_run;

/* The steps of ctr__fbp_stream_local, in order. The options (opts: the
 * caller's, any version). */
ctr_status ctr__fbp_resolve(ctr__fbp_run *r, const ctr_fbp_stream_options *opts);
/* The input's sizes and type from the reader, flat and dark. */
ctr_status ctr__fbp_open_input(ctr__fbp_run *r, ctr_stack_reader *input, const float *flat,
                               const float *dark);
/* The geometry of what is read (a flat of ones when none is given). */
ctr_status ctr__fbp_prepare_input(ctr__fbp_run *r, const ctr_parallel_params *params);
/* The bands (band_slices > 0: that many slices each), the buffers, the
 * centre (unless centre_known) and the output geometry. */
ctr_status ctr__fbp_prepare(ctr__fbp_run *r, const ctr_parallel_params *params,
                            int64_t band_slices);
/* Everything that decides the slices' bytes; `with_input` adds the input
 * file's identity. */
uint64_t ctr__fbp_fingerprint(const ctr__fbp_run *r, const ctr_parallel_params *p,
                              const char *out, ctr_file_format fmt, int with_input);
/* The bands of a run without a journal (band_rows, band_slices, nbands),
 * as ctr__fbp_prepare plans them (after ctr__fbp_output_geometry; r->in
 * NULL: rows of one row's block; r->out_fmt: the output's, whose writer's
 * own buffers count), nothing allocated: the live FBP's sum on a GPU
 * follows the bands (fbp_live.c). */
ctr_status ctr__fbp_plan_bands(ctr__fbp_run *r);
/* The output's description. */
ctr_stack_info ctr__fbp_output_info(const ctr__fbp_run *r);
/* The writer thread's buffers, dtype and slice size (not started; the
 * executor gives it the output). */
ctr_status ctr__fbp_writer_setup(ctr__fbp_run *r);
/* Bands [k0, k1) (all without a piece) not done (done[k]: journalled;
 * NULL: none) into the writer, or into vol. */
ctr_status ctr__fbp_run_bands(ctr__fbp_run *r, const unsigned char *done, float *vol);
/* ctr_fbp_options.strict: CTR_E_FORMAT when a slice value was not finite. */
ctr_status ctr__fbp_strict(const ctr__fbp_run *r);
void ctr__fbp_report_fill(const ctr__fbp_run *r, ctr_fbp_stream_report *rep);
/* The data policy's warnings, once per run (`name`: the input); none when
 * the caller gave ctr_fbp_options.counts (r->caller_counts): the counts are
 * added there, for the caller to report in its own words. */
void ctr__fbp_report_values(const ctr__fbp_run *r, const ctr_value_counts *c, const char *name);
/* Frees r's buffers, threads and geometry; a failed run's (st) error
 * detail stays the calling thread's. */
void ctr__fbp_release(ctr__fbp_run *r, ctr_status st);
/* The output geometry (r->gout) of the geometry read (r->gsel) and the
 * centre (r->axis_in), as ctr__fbp_prepare makes it. */
ctr_status ctr__fbp_output_geometry(ctr__fbp_run *r, const ctr_parallel_params *params);
/* ctr__fbp_stream_local writing the bands `acc` gives (the volume's slices of
 * the rows reconstructed, summed already: the live FBP's, fbp_live.c) instead of
 * reconstructing bands of the input: the same output file, journal and
 * report; `counts` (may be NULL): the data policy's counts of the
 * accumulation, reported as the run's (with the bands' bad outputs added). */
ctr_status ctr__fbp_stream_accumulated(ctr_context *ctx, const ctr_parallel_params *params,
                                       const ctr_fbp_stream_options *opts,
                                       ctr_stack_reader *input, const float *flat,
                                       const float *dark, const ctr__fbp_acc_slices *acc,
                                       const ctr_value_counts *counts, const char *out,
                                       ctr_file_format out_format, ctr_fbp_stream_report *report);
/* ctr_fbp_stream of one process; ctr_fbp_stream (fbp_dist.c) hands a run
 * with a cluster, or the resume of a distributed run's output, to the
 * distributed FBP. */
ctr_status ctr__fbp_stream_local(ctr_context *ctx, const ctr_parallel_params *params,
                                 const ctr_fbp_stream_options *opts, ctr_stack_reader *input,
                                 const float *flat, const float *dark, const char *out,
                                 ctr_file_format out_format, ctr_fbp_stream_report *report);

#endif
