/* `ctrecon fbp`'s options, shared by its offline run (cmd_fbp.c) and its
 * live mode (cmd_fbp_follow.c). */
#ifndef CTRECON_CMD_FBP_H
#define CTRECON_CMD_FBP_H

#include "cli.h"

typedef struct fbp_args {
  const char *sinograms, *projections, *flat, *dark, *out, *angles, *shifts, *preview, *kernel;
  ctr_file_format out_format;
  double angle_start, angle_range, axis, voxel, pixel;
  int64_t size[2], rows[2], batch, subset[3], center_row, bin[2];
  int batch_given;
  int64_t read_ahead;
  int rows_given, axis_given, size_given, out_scale_given, out_range_given, subset_given;
  int center_range_given, bin_given, resume, timings, angle_units, force;
  int uniform_given, center_row_given, dezinger_size_given, ring_size_given, ring_level_given,
      ring_sigma_given, ring_wavelet_given;
  double center_range[2], out_range[2];
  uint64_t host_mem, gpu_mem;
  ctr_fbp_options fbp;
  ctr_corrections corr;
  ctr_dtype out_dtype;
  double out_scale, out_offset, input_scale;
  double rank_timeout;
  double tilt; /* --tilt (laminography) and --slices */
  int tilt_given, pixel_given;
  /* --geometry: a parallel-beam geometry file (its parameters replace the
   * options above that it holds; freed by cmd_fbp) */
  const char *geometry;
  ctr_parallel_geometry *pgeom;
  int64_t tilt_slices;
  /* live mode (cmd_fbp_follow.c) */
  int follow, bind;
  const char *input, *live_preview, *spool, *preview_rows_text;
  int accumulate, accumulate_given; /* --accumulate */
  int64_t preview_every, count;
  double preview_seconds, follow_timeout;
  cli_common common;
} fbp_args;

/* The streamed run's options from the command line (r_height: the input's
 * rows; the previews' callback is the caller's). */
void fbp_stream_options(fbp_args *a, ctr_fbp_stream_options *so);
/* One warning per kind of bad data the library met. */
void fbp_report_counts(const fbp_args *a, const ctr_fbp_stream_report *c);
/* `ctrecon fbp --follow` (cmd_fbp_follow.c): returns the exit code. */
int fbp_follow(fbp_args *a, const cli_opt *opts);

#endif
